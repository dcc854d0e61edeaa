import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { PG_ADMIN_URL, REDIS_URL, testRedisPrefix } from '../support/env.js';
import { freePort } from '../support/service.js';
import pg from 'pg';

/*
 * The README's quick start, as a newcomer runs it: `bash deploy/local.sh` (demo chain included), then every
 * curl line of the banner, exactly as printed. Each line's comment says the answer it gets
 * (`# … → 200, risk_level "critical"`); this test holds the banner to it, so the quick start cannot
 * silently break.
 */

const run = promisify(execFile);
const BANNER_CALL = /^# (.+) → (\d{3})(?:, (\w+) "([^"]+)")?$/;

interface BannerCall {
  say: string;
  status: number;
  field?: string;
  equals?: string;
  curl: string;
}

let local: ChildProcess;
let output = '';
let exited: Promise<number | null>;
const dbName = `rw_test_quickstart_${process.pid}`;

async function dropDatabase(): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`drop database if exists ${dbName} with (force)`);
  await admin.end();
}

function bannerCalls(text: string): BannerCall[] {
  const lines = text.split('\n').map((l) => l.trim());
  const calls: BannerCall[] = [];
  lines.forEach((line, i) => {
    const m = BANNER_CALL.exec(line);
    if (!m) return;
    const curl = lines[i + 1] ?? '';
    expect(curl, `the line after "${line}"`).toMatch(/^curl -s /);
    calls.push({ say: m[1]!, status: Number(m[2]), field: m[3], equals: m[4], curl });
  });
  return calls;
}

beforeAll(async () => {
  await dropDatabase();
  const port = await freePort();
  const env: Record<string, string> = {};
  // A newcomer's shell: no provider, no identity provider, no configuration file.
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(RISKWATCH_|JWT_|AGENT_KEYS$|DATABASE_URL$|REDIS_|PORT$|METRICS_PORT$)/.test(k))
      env[k] = v;
  }
  Object.assign(env, {
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    PORT: String(port),
    METRICS_PORT: String(await freePort()),
    DATABASE_URL: `${PG_ADMIN_URL.replace(/\/[^/]*$/, '')}/${dbName}`,
    REDIS_URL,
    REDIS_KEY_PREFIX: testRedisPrefix(),
    RISKWATCH_DEMO_SOLANA_PORT: '0',
    RISKWATCH_DEMO_EVM_PORT: '0',
  });
  local = spawn('bash', [join(PROJECT_ROOT, 'deploy', 'local.sh')], {
    cwd: PROJECT_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  exited = new Promise((resolve) => local.once('exit', (code) => resolve(code)));
  local.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  local.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const deadline = Date.now() + 150_000;
  while (!output.includes('riskwatch (all roles) on')) {
    if (local.exitCode !== null) throw new Error(`deploy/local.sh exited ${local.exitCode}:\n${output}`);
    if (Date.now() > deadline) throw new Error(`deploy/local.sh did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}, 180_000);

afterAll(async () => {
  if (local && local.exitCode === null) {
    local.kill('SIGTERM');
    await exited;
  }
  await dropDatabase();
});

describe('the quick start: bash deploy/local.sh, then the banner', () => {
  it('says it runs a demo chain, not mainnet, and how to use a real provider', () => {
    expect(output).toContain(
      'DEMO CHAIN: the networks solana/demo and ethereum/demo are local simulations, not mainnet',
    );
    expect(output).toContain('RISKWATCH_RPC_SOLANA_MAINNET=');
    expect(output).toMatch(/demo jwt {5}ey/);
    expect(output).toMatch(/local mode only/);
  });

  it('every curl line answers as its comment says', async () => {
    const calls = bannerCalls(output);
    const paths = calls.map((c) => /'https?:\/\/[^/]+(\/[^?']*)/.exec(c.curl)?.[1]);
    // The main job and the rest: scan/token, preflight, risk-v2, usage, impact, agent health, /docs.
    for (const path of [
      '/api/v1/scan/token',
      '/api/v1/shield/preflight',
      '/api/web3/risk-v2',
      '/api/v1/usage',
      '/api/public/impact',
      '/api/agent/health',
      '/docs',
    ])
      expect(paths, path).toContain(path);
    // Before the user signs: the transaction and the signature themselves (approve, Permit2, a Solana
    // owner hand-over blocked; a swap allowed).
    const payloadLines = calls.filter((c) => /"(transaction|typed_data)":/.test(c.curl));
    expect(payloadLines.map((c) => c.equals).sort()).toEqual(['allow', 'block', 'block', 'block']);
    expect(payloadLines.some((c) => c.curl.includes('"typed_data"'))).toBe(true);
    const levels = new Set(calls.map((c) => c.equals));
    for (const shown of ['low', 'high', 'critical', 'block', 'warn', 'allow'])
      expect(levels).toContain(shown);

    for (const call of calls) {
      // The line exactly as printed, plus the status code on a line of its own.
      const { stdout } = await run('bash', ['-c', `${call.curl} -w '\\n%{http_code}'`], { timeout: 30_000 });
      const cut = stdout.lastIndexOf('\n');
      const [body, status] = [stdout.slice(0, cut), Number(stdout.slice(cut + 1))];
      expect({ say: call.say, status }).toEqual({ say: call.say, status: call.status });
      if (!call.field) continue;
      const answer = JSON.parse(body) as Record<string, unknown>;
      expect({ say: call.say, [call.field]: answer[call.field] }).toEqual({
        say: call.say,
        [call.field]: call.equals,
      });
      // Every risk answer names the demo network, so nobody mistakes it for mainnet.
      expect(answer.network, call.say).toBe('demo');
    }
  }, 120_000);

  it('stops the demo chain with the service', async () => {
    const solanaUrl = /solana\/demo {3}= LiteSVM state behind a JSON-RPC at (\S+)/.exec(output)?.[1];
    expect(solanaUrl).toBeDefined();
    local.kill('SIGTERM');
    expect(await exited).toBe(0);
    await expect(fetch(solanaUrl!, { method: 'POST', body: '{}' })).rejects.toThrow();
  }, 30_000);
});
