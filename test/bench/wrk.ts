/**
 * The bench's load generator: wrk (C, one thread, Debian package `wrk`). A Node load generator such as
 * autocannon needs a core of its own to keep up with a fast target, and on a 2-core machine it takes that
 * core from the server: it caps the fast baseline more than the slower service and pulls every ratio
 * toward 1. wrk's one thread costs a fraction of that. The bench installs it the way `deploy/local.sh test`
 * installs promtool (apt-get, when it is missing and this runs as root).
 *
 * Each run gets a Lua script with the request (method, headers, body) and a `done` hook that prints the
 * totals as one JSON line: requests, duration, latency percentiles (µs), socket errors and non-2xx/3xx
 * answers (wrk's `status` error count). wrk's latencies cover every response, whatever its status.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface WrkRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
}

export interface WrkResult {
  /** Requests answered per second over the run. */
  rps: number;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers outside 2xx/3xx. */
  non2xx: number;
  /** Connect, read and write errors. */
  errors: number;
  timeouts: number;
}

/** wrk's version line, installing the Debian package first when it is missing (root only). */
export function ensureWrk(log: (line: string) => void): string {
  const version = () => {
    const r = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
    if (r.error) return undefined;
    return `${r.stdout}${r.stderr}`.split('\n')[0]!.trim();
  };
  const found = version();
  if (found) return found;
  if (process.getuid?.() !== 0)
    throw new Error('wrk is not installed: run `apt-get install -y wrk` (Debian package wrk) as root');
  log('installing wrk (Debian package wrk)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { env, stdio: 'ignore' });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'wrk'], {
    env,
    stdio: 'ignore',
  });
  const installed = version();
  if (!installed) throw new Error('wrk still missing after apt-get install wrk');
  return installed;
}

const luaString = (s: string) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`).replace(/\n/g, '\\n')}"`;

/** The Lua script of one run: the request, and a `done` hook printing the totals as JSON on stdout. */
function script(req: WrkRequest): string {
  const headers = Object.entries(req.headers)
    .map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`)
    .join('\n');
  return `wrk.method = ${luaString(req.method)}
${req.body !== undefined ? `wrk.body = ${luaString(req.body)}` : ''}
${headers}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"non2xx":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.status, e.connect, e.read, e.write, e.timeout))
end
`;
}

let current: ReturnType<typeof spawn> | undefined;

/** Stops a run in progress (the bench's clean-up on a signal). */
export function stopWrk(): void {
  current?.kill('SIGKILL');
}

/** One wrk run of `durationS` seconds with `connections` connections on one thread. */
export async function runWrk(req: WrkRequest, connections: number, durationS: number): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
  try {
    const file = join(dir, 'request.lua');
    writeFileSync(file, script(req));
    const child = spawn(
      'wrk',
      ['-t1', `-c${connections}`, `-d${durationS}s`, '--timeout', '10s', '-s', file, req.url],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    current = child;
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    current = undefined;
    const line = /^WRK_JSON (.*)$/m.exec(out)?.[1];
    if (code !== 0 || !line) throw new Error(`wrk ${req.method} ${req.url} failed (exit ${code}):\n${out}`);
    const r = JSON.parse(line) as Record<string, number>;
    const seconds = r.duration_us! / 1e6;
    return {
      rps: r.requests! / seconds,
      requests: r.requests!,
      p50Ms: r.p50_us! / 1000,
      p99Ms: r.p99_us! / 1000,
      non2xx: r.non2xx!,
      errors: r.connect! + r.read! + r.write!,
      timeouts: r.timeout!,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
