import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { createTestDatabase, REDIS_URL, testRedisPrefix } from './env.js';

export const MAIN = join(PROJECT_ROOT, 'dist', 'src', 'main.js');
const run = promisify(execFile);

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface TestEnv {
  env: Record<string, string>;
  dropDatabase: () => Promise<void>;
}

/**
 * A migrated database, a Redis prefix and a webhook secrets key of the test file's own, as environment for
 * the service (`RISKWATCH_SECRETS_KEY: ''` in `extra` runs it without a key).
 */
export async function prepareEnv(extra: Record<string, string> = {}): Promise<TestEnv> {
  const db = await createTestDatabase();
  const env = {
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_KEY_PREFIX: testRedisPrefix(),
    LOG_LEVEL: 'warn',
    RISKWATCH_SECRETS_KEY: randomBytes(32).toString('hex'),
    ...extra,
  };
  await cli(env, ['migrate']);
  return { env, dropDatabase: db.drop };
}

/** Runs a `riskwatch` CLI command of the built service; returns stdout (throws with stderr on failure). */
export async function cli(env: Record<string, string>, args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [MAIN, ...args], {
    env: { ...process.env, ...env },
    cwd: PROJECT_ROOT,
  });
  return stdout;
}

export async function cliJson<T = Record<string, unknown>>(
  env: Record<string, string>,
  args: string[],
): Promise<T> {
  return JSON.parse(await cli(env, args)) as T;
}

export interface RunningService {
  baseUrl: string;
  metricsUrl: string;
  process: ChildProcess;
  output: () => string;
  /** SIGTERM and wait for exit; returns the exit code. */
  stop: () => Promise<number | null>;
}

type Role = 'all' | 'api' | 'worker' | 'scheduler';

/**
 * Starts the built service (`riskwatch <role>`) on free ports and waits until its probe answers 200:
 * `/readyz` for roles that serve HTTP, the metrics port for the others. `/healthz` (liveness) lets a test
 * start an API that is alive yet deliberately not ready (migrations pending, Redis unreachable).
 */
export async function startService(
  env: Record<string, string>,
  role: Role = 'all',
  probe: '/readyz' | '/healthz' | 'metrics' = role === 'api' || role === 'all' ? '/readyz' : 'metrics',
): Promise<RunningService> {
  const port = await freePort();
  const metricsPort = await freePort();
  // RISKWATCH_TEST_CGROUP (a memory cgroup directory, test/support/cgroup.ts): the process starts inside it,
  // so Node sees the cgroup's memory limit as a container's (--max-old-space-size-percentage) and the
  // kernel enforces it. The shell joins the cgroup, then execs node under the same pid.
  const cgroup = env.RISKWATCH_TEST_CGROUP;
  const [command, args] = cgroup
    ? [
        '/bin/sh',
        [
          '-c',
          'echo $$ > "$RISKWATCH_TEST_CGROUP/cgroup.procs" && exec "$0" "$@"',
          process.execPath,
          MAIN,
          role,
        ],
      ]
    : [process.execPath, [MAIN, role]];
  const child = spawn(command, args, {
    env: {
      ...process.env,
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      RISKWATCH_HOST: '127.0.0.1',
      ...env,
    },
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  const url = probe === 'metrics' ? metricsUrl : `${baseUrl}${probe}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited early (${child.exitCode}):\n${out}`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`service not up in 30 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    baseUrl,
    metricsUrl,
    process: child,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** SIGKILL (no graceful shutdown at all) and wait until the process is gone. */
export async function killHard(service: RunningService): Promise<void> {
  const child = service.process;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await gone;
}

/** Polls `fn` until it returns a truthy value or the timeout passes. */
export async function eventually<T>(fn: () => Promise<T>, timeoutMs = 5000, stepMs = 100): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > until) return last;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
