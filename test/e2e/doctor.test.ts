import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { LiteSVM } from 'litesvm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../src/db/migrations/index.js';
import type { DoctorReport, Finding } from '../../src/doctor/report.js';
import { JOB_NAMES } from '../../src/jobs/queues.js';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { createTestDatabase } from '../support/env.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import { cli, freePort, MAIN, prepareEnv, startService, type RunningService } from '../support/service.js';
import { startSolanaFacade, type SolanaFacade } from '../support/solana/facade.js';

/*
 * `riskwatch doctor` (docs/operations.md) run as an operator runs it: the built CLI against real parts. A
 * private redis-server (password, AOF on, noeviction, as production wants it) with a worker process on it,
 * PostgreSQL, anvil (chain id 31337) and the LiteSVM facade as node providers. Each case changes one thing
 * and reads the finding it must cause, the exit code, and that no secret is printed.
 */

const T = 120_000;
const PG_PASSWORD = `pgpw${randomBytes(8).toString('hex')}`;
const REDIS_PASSWORD = `redispw${randomBytes(8).toString('hex')}`;
const RPC_KEY = `rpckey${randomBytes(8).toString('hex')}`;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `riskwatch doctor …` of the built service; never throws on a non-zero exit. */
function doctor(env: Record<string, string>, args: string[] = []): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'doctor', ...args],
      { env: { ...process.env, ...env }, cwd: PROJECT_ROOT, timeout: 90_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr, ms: Date.now() - started });
      },
    );
  });
}

/** The table's rows (a detail wrapped over several lines is joined) and its closing `result:` line. */
function parseTable(stdout: string): { rows: Finding[]; result: string } {
  const lines = stdout.split('\n');
  const header = lines[0] ?? '';
  expect(header).toMatch(/^CHECK\s+STATUS\s+DETAIL$/);
  const statusAt = header.indexOf('STATUS');
  const detailAt = header.indexOf('DETAIL');
  const rows: Finding[] = [];
  let i = 1;
  for (; i < lines.length && lines[i] !== ''; i++) {
    const line = lines[i]!;
    const check = line.slice(0, statusAt).trim();
    const detail = line.slice(detailAt).trim();
    if (check)
      rows.push({ check, status: line.slice(statusAt, detailAt).trim() as Finding['status'], detail });
    else rows.at(-1)!.detail += ` ${detail}`;
  }
  return { rows, result: lines.slice(i).join('\n').trim() };
}

const row = (rows: readonly Finding[], check: string): Finding => {
  const found = rows.find((r) => r.check === check);
  if (!found) throw new Error(`no row ${check} in:\n${rows.map((r) => r.check).join('\n')}`);
  return found;
};

function expectNoSecret(run: Run, extra: readonly string[] = []): void {
  for (const secret of [PG_PASSWORD, REDIS_PASSWORD, RPC_KEY, ...extra]) {
    expect(run.stdout).not.toContain(secret);
    expect(run.stderr).not.toContain(secret);
  }
}

/** A redis-server of this file's own: a password, the append-only file on, noeviction. */
async function startRedisServer(
  dir: string,
): Promise<{ url: string; port: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--requirepass',
      REDIS_PASSWORD,
      '--appendonly',
      'yes',
      '--save',
      '',
      '--maxmemory-policy',
      'noeviction',
      '--dir',
      dir,
    ],
    { stdio: 'ignore' },
  );
  const url = `redis://:${REDIS_PASSWORD}@127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null });
    probe.on('error', () => undefined);
    const up = await probe.connect().then(
      () => probe.ping().then(() => true),
      () => false,
    );
    probe.disconnect();
    if (up) break;
    if (Date.now() > deadline) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url,
    port,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

let tmp: string;
let redisServer: Awaited<ReturnType<typeof startRedisServer>>;
let anvil: RunningAnvil;
let facade: SolanaFacade;
let env: Record<string, string>;
let dropDatabase: () => Promise<void>;
let worker: RunningService;
const drops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'riskwatch-doctor-'));
  redisServer = await startRedisServer(tmp);
  anvil = await startAnvil({ chainId: 31337 });
  facade = await startSolanaFacade(new LiteSVM());
  // Custom networks (no environment variable names them): the facade as a demo-like Solana cluster whose
  // CAIP-2 id names no genesis hash, anvil as an EVM network of chain id 31337.
  const configFile = join(tmp, 'riskwatch.yaml');
  writeFileSync(
    configFile,
    [
      'chains:',
      '  networks:',
      '    solana:',
      '      local:',
      '        caip2: solana:riskwatch-doctor',
      '        fork_of: solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      `        rpc_urls: ['${facade.url}/v2/${RPC_KEY}']`,
      '    ethereum:',
      '      local:',
      "        caip2: 'eip155:31337'",
      "        fork_of: 'eip155:1'",
      `        rpc_urls: ['${anvil.url}']`,
      '',
    ].join('\n'),
  );
  ({ env, dropDatabase } = await prepareEnv({
    REDIS_URL: redisServer.url,
    RISKWATCH_CONFIG: configFile,
    RISKWATCH_RPC_RATE_PER_S: '0',
  }));
  // Trust authentication ignores the password: it is there to be masked.
  const dbUrl = new URL(env.DATABASE_URL!);
  dbUrl.password = PG_PASSWORD;
  env.DATABASE_URL = dbUrl.toString();
  worker = await startService(env, 'worker');
}, T);

afterAll(async () => {
  await worker?.stop();
  for (const drop of drops) await drop();
  await dropDatabase?.();
  await Promise.all([anvil?.stop(), facade?.close(), redisServer?.stop()]);
  rmSync(tmp, { recursive: true, force: true });
}, T);

describe('riskwatch doctor', () => {
  it(
    'a healthy install: every check ok or info, exit code 0, the same findings as a table and as JSON, no secret',
    async () => {
      const table = await doctor(env);
      expect(table.code, table.stdout + table.stderr).toBe(0);
      const { rows, result } = parseTable(table.stdout);
      expect(result).toBe(
        `result: ok (${rows.filter((r) => r.status === 'ok').length} ok, ` +
          `${rows.filter((r) => r.status === 'info').length} info, 0 warn, 0 fail); exit code 0`,
      );
      for (const r of rows) expect(['ok', 'info'], `${r.check}: ${r.detail}`).toContain(r.status);
      expect(row(rows, 'config').status).toBe('ok');
      expect(row(rows, 'postgres')).toMatchObject({ status: 'ok' });
      expect(row(rows, 'postgres').detail).toMatch(
        /^PostgreSQL \d+\.\d+ at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1/,
      );
      expect(row(rows, 'postgres:migrations').detail).toBe(
        `all ${migrations.length} applied (latest ${migrations.at(-1)!.name})`,
      );
      expect(row(rows, 'clock').status).toBe('ok');
      expect(row(rows, 'redis').detail).toMatch(
        /^Redis \d+\.\d+\.\d+ at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ /,
      );
      expect(row(rows, 'redis:maxmemory-policy').detail).toMatch(/^noeviction/);
      expect(row(rows, 'redis:persistence').status).toBe('ok');
      expect(rows.filter((r) => r.check.startsWith('queue:'))).toHaveLength(JOB_NAMES.length);
      expect(row(rows, 'queue:webhook-drain').detail).toMatch(
        /^waiting \d+ · active \d+ · delayed \d+ · failed 0$/,
      );
      expect(row(rows, 'workers')).toMatchObject({ status: 'ok' });
      expect(row(rows, 'workers').detail).toMatch(/^every queue has workers/);
      expect(row(rows, 'provider:ethereum/local#0')).toMatchObject({ status: 'ok' });
      expect(row(rows, 'provider:ethereum/local#0').detail).toMatch(
        /^chain id 31337 matches eip155:31337; head \d+/,
      );
      expect(row(rows, 'provider:solana/local#0')).toMatchObject({ status: 'info' });
      expect(row(rows, 'provider:solana/local#0').detail).toMatch(
        /^not compared: custom network solana:riskwatch-doctor names no genesis hash .*; head \d+/,
      );
      expect(row(rows, 'auth:jwt')).toMatchObject({ status: 'info' });
      expect(row(rows, 'webhooks:allow-cidrs').status).toBe('ok');
      expect(row(rows, 'webhooks:secrets-key').status).toBe('ok');
      expectNoSecret(table, [env.RISKWATCH_SECRETS_KEY!]);

      const json = await doctor(env, ['--json']);
      expect(json.code).toBe(0);
      const report = JSON.parse(json.stdout) as DoctorReport;
      expect(report).toMatchObject({ status: 'ok', exit_code: 0, timeout_ms: 5000 });
      const squash = (fs: readonly Finding[]) =>
        fs.map((f) => ({
          ...f,
          detail: f.detail.replace(/\s+/g, ' ').replace(/\(\d+ ms\)|±\d+ ms|\d+ ms/g, 'N ms'),
        }));
      const volatile = /^(clock|queue:|provider:|postgres$|redis$)/;
      expect(report.checks.map((f) => [f.check, f.status])).toEqual(rows.map((f) => [f.check, f.status]));
      expect(squash(report.checks.filter((f) => !volatile.test(f.check)))).toEqual(
        squash(rows.filter((f) => !volatile.test(f.check))),
      );
      expect(report.summary.ok + report.summary.info).toBe(report.checks.length);
      expectNoSecret(json, [env.RISKWATCH_SECRETS_KEY!]);
    },
    T,
  );

  it(
    'an Ethereum node configured as base: a failure naming the network, exit code 2',
    async () => {
      const run = await doctor({ ...env, RISKWATCH_RPC_BASE_MAINNET: anvil.url });
      expect(run.code, run.stdout).toBe(2);
      const { rows, result } = parseTable(run.stdout);
      expect(row(rows, 'provider:base/mainnet#0')).toEqual({
        check: 'provider:base/mainnet#0',
        status: 'fail',
        detail: expect.stringMatching(
          /^chain id 31337, but base\/mainnet is chain id 8453 \(eip155:8453\): this URL serves another network; head \d+/,
        ) as string,
      });
      expect(row(rows, 'provider:ethereum/local#0').status).toBe('ok');
      expect(rows.filter((r) => r.status === 'fail').map((r) => r.check)).toEqual([
        'provider:base/mainnet#0',
      ]);
      expect(result).toMatch(/^result: fail \(.*1 fail\); exit code 2$/);
      expectNoSecret(run);
    },
    T,
  );

  it(
    'Redis unreachable: a closed port fails at once, a Redis that never answers fails within --timeout',
    async () => {
      const closedPort = await freePort();
      const closed = await doctor({
        ...env,
        REDIS_URL: `redis://:${REDIS_PASSWORD}@127.0.0.1:${closedPort}`,
      });
      expect(closed.code).toBe(2);
      const { rows } = parseTable(closed.stdout);
      expect(row(rows, 'redis')).toEqual({
        check: 'redis',
        status: 'fail',
        detail: `cannot connect to redis://:***@127.0.0.1:${closedPort}: connect ECONNREFUSED 127.0.0.1:${closedPort}`,
      });
      expect(row(rows, 'queues')).toMatchObject({
        status: 'info',
        detail: 'not checked: Redis did not answer',
      });
      expect(row(rows, 'postgres').status).toBe('ok');
      expectNoSecret(closed);

      // Accepts the connection, never says a word.
      const sockets = new Set<Socket>();
      const silent: TcpServer = createTcpServer((s) => sockets.add(s));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const { port } = silent.address() as { port: number };
      try {
        const hung = await doctor({ ...env, REDIS_URL: `redis://127.0.0.1:${port}` }, ['--timeout', '2']);
        expect(hung.code).toBe(2);
        expect(row(parseTable(hung.stdout).rows, 'redis')).toEqual({
          check: 'redis',
          status: 'fail',
          detail: `cannot connect to redis://127.0.0.1:${port}: no answer within 2000 ms`,
        });
        // CLI start-up (a few seconds) plus one 2 s limit, not an endless wait.
        expect(hung.ms).toBeLessThan(30_000);
      } finally {
        for (const s of sockets) s.destroy();
        await new Promise((resolve) => silent.close(resolve));
      }
    },
    T,
  );

  it(
    'pending migrations: an empty database fails, and so does a database missing the latest migration',
    async () => {
      const fresh = await createTestDatabase();
      drops.push(fresh.drop);
      const empty = await doctor({ ...env, DATABASE_URL: fresh.url });
      expect(empty.code).toBe(2);
      expect(row(parseTable(empty.stdout).rows, 'postgres:migrations')).toEqual({
        check: 'postgres:migrations',
        status: 'fail',
        detail: expect.stringMatching(
          new RegExp(
            `^no migration applied \\(${migrations.length} pending: an empty database\\?\\): run \`riskwatch migrate\``,
          ),
        ) as string,
      });
      // Read-only: the doctor created nothing (the migrator would have created its table).
      const db = new pg.Client({ connectionString: fresh.url });
      await db.connect();
      try {
        const tables = await db.query(`select count(*)::int as n from pg_tables where schemaname = 'public'`);
        expect(tables.rows[0]).toEqual({ n: 0 });

        await cli({ ...env, DATABASE_URL: fresh.url }, ['migrate']);
        const latest = migrations.at(-1)!.name;
        await db.query('delete from mikro_orm_migrations where name = $1', [latest]);
      } finally {
        await db.end();
      }
      const behind = await doctor({ ...env, DATABASE_URL: fresh.url }, ['--json']);
      expect(behind.code).toBe(2);
      const report = JSON.parse(behind.stdout) as DoctorReport;
      expect(report.checks.find((c) => c.check === 'postgres:migrations')).toEqual({
        check: 'postgres:migrations',
        status: 'fail',
        detail: expect.stringContaining(
          `1 of ${migrations.length} pending (${migrations.at(-1)!.name}): the API is not ready until`,
        ) as string,
      });
    },
    T,
  );

  it(
    'a bad configuration is a failed check, not a crash: exit code 2, the variable named, no secret',
    async () => {
      const run = await doctor({ ...env, LOG_LEVEL: 'loud', JWT_SECRET: 'x'.repeat(8) + RPC_KEY }, [
        '--json',
      ]);
      expect(run.code, run.stderr).toBe(2);
      const report = JSON.parse(run.stdout) as DoctorReport;
      expect(report.status).toBe('fail');
      expect(report.checks).toEqual([
        {
          check: 'config',
          status: 'fail',
          detail: expect.stringMatching(/^config: LOG_LEVEL \(log\.level\): /) as string,
        },
        { check: 'other checks', status: 'info', detail: 'not run: they need a configuration that loads' },
      ]);
      expectNoSecret(run);
    },
    T,
  );

  it(
    'warnings: JWKS read but no issuer, private webhook receivers, http webhooks, no worker, many failed jobs',
    async () => {
      const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const jwks = JSON.stringify({
        keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'doctor-1', use: 'sig' }],
      });
      const idp: HttpServer = createHttpServer((_req, res) =>
        res.setHeader('content-type', 'application/json').end(jwks),
      );
      await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
      const jwksUrl = `http://127.0.0.1:${(idp.address() as { port: number }).port}/jwks.json`;

      // Another key prefix: no worker there, and 100 failed jobs on one queue.
      const prefix = `rwdoc${randomBytes(3).toString('hex')}:`;
      const connection = new Redis(redisServer.url, { maxRetriesPerRequest: null });
      const queue = new Queue('usage-prune', { connection, prefix: `${prefix}bull` });
      const failing = new Worker(
        'usage-prune',
        () => Promise.reject(new Error('doctor test: failed on purpose')),
        { connection, prefix: `${prefix}bull`, concurrency: 20 },
      );
      try {
        await queue.addBulk(
          Array.from({ length: 100 }, (_, i) => ({
            name: 'usage-prune',
            data: { i },
            opts: { attempts: 1 },
          })),
        );
        for (let i = 0; (await queue.getFailedCount()) < 100; i++) {
          if (i > 200) throw new Error('jobs did not fail');
          await new Promise((r) => setTimeout(r, 50));
        }
        await failing.close();

        const run = await doctor({
          ...env,
          REDIS_KEY_PREFIX: prefix,
          JWT_JWKS_URL: jwksUrl,
          JWT_AUDIENCE: 'riskwatch',
          RISKWATCH_WEBHOOK_ALLOW_CIDRS: '10.20.0.0/16',
          RISKWATCH_WEBHOOK_ALLOW_HTTP: 'true',
        });
        expect(run.code, run.stdout).toBe(1);
        const { rows, result } = parseTable(run.stdout);
        expect(row(rows, 'auth:jwt')).toEqual({
          check: 'auth:jwt',
          status: 'warn',
          detail:
            `RS256 with a JWKS (${jwksUrl}), but JWT_ISSUER is empty: riskwatch verifies tokens only with ` +
            'both set, so bearer tokens are refused',
        });
        expect(row(rows, 'auth:jwks')).toEqual({
          check: 'auth:jwks',
          status: 'ok',
          detail: `${jwksUrl} holds 1 signing key(s); fit for RS256: doctor-1`,
        });
        expect(row(rows, 'webhooks:allow-cidrs')).toMatchObject({ status: 'warn' });
        expect(row(rows, 'webhooks:allow-cidrs').detail).toMatch(
          /^10\.20\.0\.0\/16: webhooks may reach these private addresses;/,
        );
        expect(row(rows, 'webhooks:allow-http').status).toBe('warn');
        expect(row(rows, 'queue:usage-prune')).toMatchObject({ status: 'warn' });
        expect(row(rows, 'queue:usage-prune').detail).toMatch(
          /^waiting 0 · active 0 · delayed 0 · failed 100: 100\+ failed jobs kept/,
        );
        expect(row(rows, 'queue:webhook-drain').status).toBe('ok');
        expect(row(rows, 'workers')).toMatchObject({ status: 'warn' });
        expect(row(rows, 'workers').detail).toMatch(/^no worker is connected to any queue/);
        expect(rows.filter((r) => r.status === 'fail')).toEqual([]);
        expect(result).toMatch(/^result: warn \(.* 5 warn, 0 fail\); exit code 1$/);
        expectNoSecret(run);
      } finally {
        await failing.close();
        await queue.obliterate({ force: true });
        await queue.close();
        connection.disconnect();
        await new Promise((resolve) => idp.close(resolve));
      }
    },
    T,
  );

  it(
    'failures: an eviction policy with a memory limit, an allow list opening the cloud metadata address',
    async () => {
      const admin = new Redis(redisServer.url);
      try {
        await admin.config('SET', 'maxmemory', '1gb');
        await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
        const run = await doctor({ ...env, RISKWATCH_WEBHOOK_ALLOW_CIDRS: '10.0.0.0/8,169.254.0.0/16' });
        expect(run.code).toBe(2);
        const { rows } = parseTable(run.stdout);
        expect(row(rows, 'redis:maxmemory-policy')).toEqual({
          check: 'redis:maxmemory-policy',
          status: 'fail',
          detail:
            'allkeys-lru with maxmemory 1073741824 bytes: Redis may evict queued jobs and their locks; set ' +
            '`maxmemory-policy noeviction` (BullMQ requires it)',
        });
        expect(row(rows, 'webhooks:allow-cidrs')).toMatchObject({ status: 'fail' });
        expect(row(rows, 'webhooks:allow-cidrs').detail).toMatch(
          /^10\.0\.0\.0\/8, 169\.254\.0\.0\/16 lets webhooks reach the cloud metadata address 169\.254\.169\.254:/,
        );
        expect(
          rows
            .filter((r) => r.status === 'fail')
            .map((r) => r.check)
            .sort(),
        ).toEqual(['redis:maxmemory-policy', 'webhooks:allow-cidrs']);

        await admin.config('SET', 'maxmemory', '0');
        const unlimited = await doctor(env);
        expect(unlimited.code).toBe(1);
        expect(row(parseTable(unlimited.stdout).rows, 'redis:maxmemory-policy')).toMatchObject({
          status: 'warn',
          detail: expect.stringMatching(
            /^allkeys-lru: nothing is evicted while maxmemory is unlimited/,
          ) as string,
        });
      } finally {
        await admin.config('SET', 'maxmemory-policy', 'noeviction');
        await admin.config('SET', 'maxmemory', '0');
        admin.disconnect();
      }
    },
    T,
  );
});
