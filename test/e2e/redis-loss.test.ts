import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectJson, expectProblem, openAccounts, type Customer } from '../support/auth-helpers.js';
import { JsonRpcStub, type StubReply } from '../support/jsonrpc-stub.js';
import { parseSamples } from '../support/prometheus.js';
import { eventually, freePort, prepareEnv, startService, type RunningService } from '../support/service.js';

/*
 * A lost Redis (README, "What to back up, and what a lost Redis costs"): the service (an API and a worker
 * process) on a Redis of its own, flushed under a light load, flushed with a screening and a rescan in
 * flight, then killed and replaced by an empty one on the same port. Nothing of the service is restarted:
 * the API keeps answering (503 while Redis is gone), the usage drain makes its consumer group again, and
 * the worker's loss watch (src/jobs/redis-loss.ts) enqueues again from PostgreSQL the jobs that went with
 * Redis. An EVM provider stub answers (slowly while the test needs work in flight) an empty chain.
 */

/** An empty EVM chain: no code, no balance, no logs (enough for `state` screenings and watchlist scans). */
const EMPTY_CHAIN = {
  eth_chainId: () => '0x1',
  eth_blockNumber: () => '0x1000',
  eth_getCode: () => '0x',
  eth_getBalance: () => '0x0',
  eth_getTransactionCount: () => '0x0',
  eth_getStorageAt: () => `0x${'0'.repeat(64)}`,
  eth_call: () => '0x',
  eth_getLogs: () => [],
};
/** Targets of the screenings and entries of the list: 3 chunks of each, run one at a time. */
const TARGETS = 250;
const evmAddress = () => `0x${randomBytes(20).toString('hex')}`;

let redisPort: number;
let redisServer: ChildProcess;
let stub: JsonRpcStub;
/** The stub's delay per request: work stays in flight while the test flushes or kills Redis. */
let slowMs = 0;
let redis: Redis;
let env: Record<string, string>;
let dropDatabase: () => Promise<void>;
let closeAccounts: () => Promise<void>;
let db: pg.Client;
let apiService: RunningService;
let worker: RunningService;
let acme: Customer;

const usageFetch = () =>
  fetch(`${apiService.baseUrl}/api/v1/usage?limit=1`, { headers: { 'x-api-key': acme.key.key } });

async function usageCall(): Promise<number> {
  const res = await usageFetch();
  await res.arrayBuffer();
  return res.status;
}

const count = async (table: 'screenings') =>
  Number((await db.query<{ n: string }>(`select count(*) as n from ${table}`)).rows[0]!.n);

/** The account's calls stored by the drain, made in [from, to) (ms). */
const storedBetween = async (from: number, to: number) =>
  Number(
    (
      await db.query<{ n: string }>(
        'select count(*) as n from usage_records where account_id = $1 and at >= $2 and at < $3',
        [acme.account.id, new Date(from), new Date(to)],
      )
    ).rows[0]!.n,
  );

const storedCalls = async () =>
  Number(
    (
      await db.query<{ n: string }>('select count(*) as n from usage_records where account_id = $1', [
        acme.account.id,
      ])
    ).rows[0]!.n,
  );

/** An empty redis-server without persistence on `redisPort`, answering PING. */
async function startRedisServer(): Promise<ChildProcess> {
  const server = spawn(
    'redis-server',
    ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const probe = new Redis(`redis://127.0.0.1:${redisPort}`, {
    maxRetriesPerRequest: 1,
    retryStrategy: () => 50,
  });
  probe.on('error', () => undefined); // refused until the server listens
  try {
    expect(await eventually(async () => (await probe.ping().catch(() => '')) === 'PONG', 10_000, 50)).toBe(
      true,
    );
  } finally {
    probe.disconnect();
  }
  return server;
}

async function callJson<T>(path: string, status: number, init: { method?: string; body?: unknown } = {}) {
  const res = await fetch(`${apiService.baseUrl}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      'x-api-key': acme.key.key,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return expectJson<T>(res, status);
}

const submitScreening = () =>
  callJson<{ screening_id: string }>('/api/v1/screenings', 202, {
    method: 'POST',
    body: {
      depth: 'state',
      targets: Array.from({ length: TARGETS }, () => ({ target: evmAddress(), chain: 'ethereum' })),
    },
  });
const screeningStatus = async (id: string) =>
  (await db.query<{ status: string }>('select status from screenings where id = $1', [id])).rows[0]?.status;

/** Jobs waiting in a queue of the service (what a flush takes with it). */
async function waiting(name: string): Promise<number> {
  const queue = new Queue(name, { connection: redis, prefix: `${env.REDIS_KEY_PREFIX}bull` });
  try {
    return await queue.getWaitingCount();
  } finally {
    await queue.close();
  }
}

/** The worker's `riskwatch_redis_loss_detected_total`. */
async function lossesDetected(): Promise<number> {
  const text = await (await fetch(worker.metricsUrl)).text();
  return parseSamples(text).find((s) => s.name === 'riskwatch_redis_loss_detected_total')?.value ?? NaN;
}

beforeAll(async () => {
  redisPort = await freePort();
  redisServer = await startRedisServer();
  redis = new Redis(`redis://127.0.0.1:${redisPort}`, { maxRetriesPerRequest: 3 });
  redis.on('error', () => undefined); // while the test has Redis killed
  stub = await JsonRpcStub.start(EMPTY_CHAIN);
  stub.reply = (): StubReply => (slowMs > 0 ? { delayMs: slowMs } : undefined);
  ({ env, dropDatabase } = await prepareEnv({
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    RISKWATCH_RPC_ETHEREUM_MAINNET: stub.url(),
    RISKWATCH_RPC_RATE_PER_S: '0',
    // One chunk at a time: the others wait in Redis, where a flush takes them.
    RISKWATCH_SCREENINGS_CHUNK_CONCURRENCY: '1',
    RISKWATCH_WATCHLIST_SCAN_CONCURRENCY: '1',
  }));
  const accounts = await openAccounts(env);
  closeAccounts = accounts.close;
  acme = await accounts.customer('redis-loss-acme', { rateLimitPerMin: 100_000 });
  db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  apiService = await startService(env, 'api');
  worker = await startService(env, 'worker');
}, 180_000);

afterAll(async () => {
  await apiService?.stop();
  await worker?.stop();
  await closeAccounts?.();
  await db?.end();
  await dropDatabase?.();
  await stub?.close();
  redis?.disconnect();
  redisServer?.kill('SIGKILL');
});

describe('Redis flushed under load', () => {
  it('the API keeps answering and the usage drain recovers by itself, without a restart', async () => {
    // Seconds after the worker started: its first marker check ran once it was connected, so this flush
    // is a loss it counts, not the marker missing at its start.
    const lossesBefore = await lossesDetected();
    // Load before: every call is stored by the drain.
    for (let i = 0; i < 20; i++) expect(await usageCall()).toBe(200);
    expect(await eventually(async () => (await storedCalls()) >= 20, 20_000, 200)).toBe(true);

    // Calls keep coming while Redis is flushed.
    const statuses: number[] = [];
    const load = (async () => {
      for (let i = 0; i < 60; i++) {
        statuses.push(await usageCall());
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    await redis.flushall();
    const flushedAt = new Date();
    await load;
    // The API never failed: its rate-limit windows and caches simply start empty.
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(await eventually(async () => (await lossesDetected()) === lossesBefore + 1, 10_000, 250)).toBe(
      true,
    );

    // Calls after the flush are stored: the drain made its consumer group again.
    for (let i = 0; i < 20; i++) expect(await usageCall()).toBe(200);
    const storedSince = async (at: Date) =>
      Number(
        (
          await db.query<{ n: string }>(
            'select count(*) as n from usage_records where account_id = $1 and at > $2',
            [acme.account.id, at],
          )
        ).rows[0]!.n,
      );
    expect(await eventually(async () => (await storedSince(flushedAt)) >= 20, 30_000, 250)).toBe(true);
    // What the flush cost: the calls streamed but not yet drained when it came, at most a second's worth.
    await new Promise((r) => setTimeout(r, 2000));
    const lost = 100 - (await storedCalls());
    console.log(`redis-loss: ${lost} of 100 calls lost with the flush`);
    expect(lost).toBeGreaterThanOrEqual(0);
    expect(lost).toBeLessThan(60);
    expect(apiService.process.exitCode).toBeNull();
    expect(worker.process.exitCode).toBeNull();
  }, 120_000);
});

/** Polls each named check every 250 ms until all hold or `timeoutMs` passes; the seconds each took. */
async function timesUntil(
  from: number,
  checks: Record<string, () => Promise<boolean>>,
  timeoutMs: number,
): Promise<Record<string, number | undefined>> {
  const took: Record<string, number | undefined> = {};
  const until = Date.now() + timeoutMs;
  while (Date.now() < until && Object.keys(took).length < Object.keys(checks).length) {
    for (const [name, check] of Object.entries(checks))
      if (took[name] === undefined && (await check().catch(() => false)))
        took[name] = (Date.now() - from) / 1000;
    await new Promise((r) => setTimeout(r, 250));
  }
  return took;
}

/** The worker's last `Redis lost its data` log line. */
function lossLogLine(): Record<string, unknown> | undefined {
  return worker
    .output()
    .split('\n')
    .filter((line) => line.includes('Redis lost its data (marker gone)'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .at(-1);
}

describe('Redis flushed with a screening and a rescan in flight', () => {
  it('the screening completes and the rescan finishes without a restart: the loss watch enqueues them again', async () => {
    const list = await callJson<{ id: string }>('/api/v1/watchlists', 201, {
      method: 'POST',
      body: { name: 'flushed mid-rescan' },
    });
    await callJson(`/api/v1/watchlists/${list.id}/entries`, 200, {
      method: 'POST',
      body: { entries: Array.from({ length: TARGETS }, () => ({ target: evmAddress(), chain: 'ethereum' })) },
    });
    const lossesBefore = await lossesDetected();

    slowMs = 2000;
    // The rescan first: its chunks (100 full analyses each, every call slow) stay in flight the longest.
    const rescan = await callJson<{ rescan_id: string; status_url: string }>(
      `/api/v1/watchlists/${list.id}/rescan`,
      202,
      { method: 'POST' },
    );
    expect(await eventually(async () => (await waiting('watchlist-chunk')) > 0, 20_000, 100)).toBe(true);
    const screening = await submitScreening();
    // Both in flight: a chunk of each running, the others waiting in Redis, where the flush takes them.
    const inFlight = async () =>
      (await waiting('screening-chunk')) > 0 && (await waiting('watchlist-chunk')) > 0;
    expect(await eventually(inFlight, 20_000, 100)).toBe(true);
    const lost = { screening: await waiting('screening-chunk'), rescan: await waiting('watchlist-chunk') };
    await redis.flushall();
    const flushedAt = Date.now();
    slowMs = 0;

    const took = await timesUntil(
      flushedAt,
      {
        screening: async () => (await screeningStatus(screening.screening_id)) === 'completed',
        rescan: async () =>
          (await callJson<{ status: string }>(rescan.status_url, 200)).status === 'completed',
      },
      45_000,
    );
    console.log(
      `redis-loss: flushed with ${lost.screening} screening and ${lost.rescan} rescan chunk jobs waiting; ` +
        `screening completed ${took.screening} s, rescan finished ${took.rescan} s after the flush`,
    );
    expect(took.screening).toBeDefined();
    expect(took.rescan).toBeDefined();
    const screened = await db.query<{ pending: string }>(
      `select count(*) filter (where status = 'pending') as pending from screening_results where screening_id = $1`,
      [screening.screening_id],
    );
    expect(Number(screened.rows[0]!.pending)).toBe(0);
    // One loss seen, by one worker, with what it enqueued again.
    expect(await lossesDetected()).toBe(lossesBefore + 1);
    expect(lossLogLine()).toMatchObject({ level: 'warn', screening_accounts: 1, rescans: 1 });
    // Scan progress made again after the flush expires like any other (count and TTL in one MULTI).
    const progress = await redis.keys(`${env.REDIS_KEY_PREFIX}watch:scan:*`);
    expect(progress.length).toBeGreaterThan(0);
    for (const key of progress) expect(await redis.ttl(key)).toBeGreaterThan(0);
  }, 90_000);
});

describe('Redis killed and replaced by an empty one on the same port', () => {
  it('answers 503 dependency_unavailable while it is gone and 200 after; usage is stored again and the queued screening resumes', async () => {
    slowMs = 2000;
    const screening = await submitScreening();
    expect(await eventually(async () => (await waiting('screening-chunk')) > 0, 20_000, 100)).toBe(true);
    const exited = new Promise((r) => redisServer.once('exit', r));
    redisServer.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    slowMs = 0;

    // While Redis is gone: a call served from the rate-limit points already reserved answers 200; after
    // those (at most 50), every call answers 503 dependency_unavailable, and a screening is not stored.
    const outage: number[] = [];
    const codes = new Set<string>();
    let first503: number | undefined;
    while (first503 === undefined ? outage.length < 200 : Date.now() - first503 < 2000) {
      const res = await usageFetch();
      outage.push(res.status);
      if (res.status === 503) {
        first503 ??= Date.now();
        codes.add(((await res.json()) as { code: string }).code);
      } else await res.arrayBuffer();
      if (first503 !== undefined) await new Promise((r) => setTimeout(r, 50));
    }
    const screeningsBefore = await count('screenings');
    const refused = await fetch(`${apiService.baseUrl}/api/v1/screenings`, {
      method: 'POST',
      headers: { 'x-api-key': acme.key.key, 'content-type': 'application/json' },
      body: JSON.stringify({ targets: [{ target: evmAddress(), chain: 'ethereum' }] }),
    });
    await expectProblem(refused, 503, 'dependency_unavailable');
    expect(await count('screenings')).toBe(screeningsBefore);
    const ready = await fetch(`${apiService.baseUrl}/readyz`);
    await ready.arrayBuffer();
    expect(ready.status).toBe(503);
    expect(first503).toBeDefined();
    const after503 = outage.slice(outage.indexOf(503));
    expect(outage.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    expect(after503.filter((s) => s !== 503)).toEqual([]);
    expect([...codes]).toEqual(['dependency_unavailable']);
    const served = outage.filter((s) => s === 200).length;
    const downFor = Date.now() - killedAt;

    redisServer = await startRedisServer();
    const restartedAt = Date.now();
    const outageCalls = outage.length + 1;
    const took = await timesUntil(
      restartedAt,
      {
        api: async () => {
          const res = await usageFetch();
          await res.arrayBuffer();
          return res.status === 200;
        },
        // Every call made while Redis was gone (the recorder kept them) is stored.
        outageUsage: async () => (await storedBetween(killedAt, restartedAt)) >= outageCalls,
        // And calls made after it came back.
        newUsage: async () => (await storedBetween(restartedAt, Date.now())) > 0,
        screening: async () => (await screeningStatus(screening.screening_id)) === 'completed',
      },
      45_000,
    );
    console.log(
      `redis-loss: Redis down ${(downFor / 1000).toFixed(1)} s: ${served} calls served from reserved ` +
        `rate-limit points, then ${outage.length - served} answered 503 dependency_unavailable; after an ` +
        `empty Redis came back: API 200 in ${took.api} s, the ${outageCalls} calls made meanwhile stored in ` +
        `${took.outageUsage} s, new calls stored in ${took.newUsage} s, the screening completed in ` +
        `${took.screening} s`,
    );
    expect(took).toEqual({
      api: expect.any(Number) as unknown,
      outageUsage: expect.any(Number) as unknown,
      newUsage: expect.any(Number) as unknown,
      screening: expect.any(Number) as unknown,
    });
    // The recorder merges what it kept: sent within a couple of seconds, not one batch of one call at a time.
    expect(took.outageUsage).toBeLessThan(10);
    expect(apiService.process.exitCode).toBeNull();
    expect(worker.process.exitCode).toBeNull();
  }, 90_000);
});
