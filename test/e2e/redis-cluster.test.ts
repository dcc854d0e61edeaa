import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { Cluster } from 'ioredis';
import pg from 'pg';
import { privateKeyToAddress } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/report.js';
import { JOB_NAMES } from '../../src/jobs/queues.js';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { createCustomer, type TestCustomer } from '../support/customers.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import {
  eventually,
  freePort,
  MAIN,
  prepareEnv,
  startService,
  type RunningService,
} from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

/*
 * riskwatch on a real Redis Cluster: 3 masters with a replica each (test/support/redis-cluster.ts), the
 * api, worker and scheduler roles as three processes, REDIS_CLUSTER_NODES naming the nodes and REDIS_URL
 * pointing nowhere (so nothing reaches a single Redis by mistake). Then a master is SIGKILLed mid-tick and
 * another with webhook deliveries pending: the replicas take over after cluster-node-timeout (2 s here) and
 * riskwatch carries on without a restart, what the lost master held being redone from PostgreSQL.
 */

const ENTRIES = 1000;
const NODE_TIMEOUT_MS = 2000;

let cluster: RedisCluster;
let anvil: RunningAnvil;
let env: Record<string, string>;
let dropDatabase: () => Promise<void>;
let db: pg.Client;
let redis: Cluster;
let api: RunningService;
let worker: RunningService;
let scheduler: RunningService;
let customer: TestCustomer;
/** An account whose key may make 5 calls a minute. */
let limited: TestCustomer;
let receiver: Receiver;
let endpointId: string;
let watchlistId: string;
/** When the first tick had checked every entry (PostgreSQL's clock, as `last_checked_at`). */
let firstTickDone: Date;

const keyOf = () => customer.keys.main!.key;

async function call(method: string, path: string, body?: unknown, key = keyOf()) {
  const res = await fetch(`${api.baseUrl}${path}`, {
    method,
    headers: { 'X-API-Key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function doctor(): Promise<{ code: number; report: DoctorReport }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'doctor', '--json', '--timeout', '5'],
      { env: { ...process.env, ...env }, cwd: PROJECT_ROOT, timeout: 60_000 },
      (err, stdout) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, report: JSON.parse(stdout) as DoctorReport });
      },
    );
  });
}

/** Entries of the list not checked since `since`. */
async function unchecked(since: Date): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `select count(*) as n from watchlist_entries
      where watchlist_id = $1 and (last_checked_at is null or last_checked_at < $2)`,
    [watchlistId, since],
  );
  return Number(rows[0]!.n);
}

/**
 * Makes the list's tick due (a minute ago: a list is due once its time is at or before the minute being
 * scheduled) instead of waiting for the next minute; the scheduler's next pass, within 2 s, enqueues it.
 */
async function tickNow(): Promise<Date> {
  const { rows } = await db.query<{ now: Date }>(
    `update watchlists set next_tick_at = now() - interval '1 minute' where id = $1 returning now() as now`,
    [watchlistId],
  );
  return rows[0]!.now;
}

/** Which pids run riskwatch: the same three before and after a failover, so nothing was restarted. */
const pids = () => [api, worker, scheduler].map((s) => (s.process.exitCode === null ? s.process.pid : -1));

beforeAll(async () => {
  cluster = await startRedisCluster({ nodeTimeoutMs: NODE_TIMEOUT_MS });
  anvil = await startAnvil();
  ({ env, dropDatabase } = await prepareEnv({
    // Nothing listens there: every connection must go to the cluster.
    REDIS_URL: 'redis://127.0.0.1:1',
    REDIS_CLUSTER_NODES: cluster.seeds,
    RISKWATCH_RPC_ETHEREUM_MAINNET: anvil.url,
    // Slow enough that a tick of ENTRIES entries lasts seconds: there is a "mid-tick" to kill a master in.
    RISKWATCH_RPC_RATE_PER_S: '1000',
    RISKWATCH_WATCHLIST_SCAN_CONCURRENCY: '1',
    RISKWATCH_WATCHLISTS_CRON: '*/2 * * * * *',
    RISKWATCH_WEBHOOKS_SWEEP_CRON: '* * * * * *',
    // The receiver listens on loopback, as an in-VPC receiver would be allow-listed.
    RISKWATCH_WEBHOOK_ALLOW_HTTP: 'true',
    RISKWATCH_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    // A retry a second for 40 s: the deliveries outlive a failover with the receiver down.
    RISKWATCH_WEBHOOK_RETRY_SCHEDULE_S: Array(40).fill(1).join(','),
  }));
  db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  redis = new Cluster(
    cluster.seeds.split(',').map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) })),
  );
  // The operator CLI takes seconds per command on a busy machine: both accounts at once.
  [customer, limited] = await Promise.all([
    createCustomer(env, 'cluster', ['main'], { rateLimitPerMin: 1000 }),
    createCustomer(env, 'cluster-limited', ['main'], { rateLimitPerMin: 5 }),
  ]);
  [api, worker, scheduler] = await Promise.all([
    startService(env, 'api'),
    startService(env, 'worker'),
    startService(env, 'scheduler'),
  ]);
}, 240_000);

afterAll(async () => {
  await Promise.allSettled([api?.stop(), worker?.stop(), scheduler?.stop()]);
  await receiver?.close();
  redis?.disconnect();
  await db?.end();
  await dropDatabase?.();
  await anvil?.stop();
  await cluster?.stop();
});

describe('riskwatch on a Redis Cluster (3 masters, a replica each)', () => {
  it('puts each queue on its own hash tag, spread over the masters; doctor passes its Redis and queue checks', async () => {
    const prefix = env.REDIS_KEY_PREFIX!;
    const masters = new Set<number>();
    for (const name of JOB_NAMES) {
      // The api and scheduler opened every queue: BullMQ wrote its meta hash under the queue's tag.
      expect(await redis.exists(`${prefix}bull:{${name}}:meta`), name).toBe(1);
      masters.add((await cluster.masterOf(`{${name}}`)).port);
    }
    expect(masters.size).toBe(3);

    const { report } = await doctor();
    const status = (check: string) => report.checks.find((c) => c.check === check);
    expect(status('redis')?.status).toBe('ok');
    expect(status('redis')?.detail).toMatch(/, 3 masters \(oldest: 127\.0\.0\.1:\d+\)$/);
    expect(status('redis:cluster')).toMatchObject({
      status: 'ok',
      detail: 'every slot served by 3 masters, each with a replica',
    });
    expect(status('redis:maxmemory-policy')?.status).toBe('ok');
    // The test's nodes run without an append-only file, and doctor names them.
    expect(status('redis:persistence')?.status).toBe('warn');
    expect(status('redis:persistence')?.detail).toMatch(/^masters (127\.0\.0\.1:\d+(, )?){3}: appendonly no/);
    for (const name of JOB_NAMES) expect(status(`queue:${name}`)?.status, name).toBe('ok');
    expect(status('workers')?.status).toBe('ok');
  });

  it('rate-limits API keys across the cluster (429 past the quota), and the usage stream drains into PostgreSQL', async () => {
    const key = limited.keys.main!.key;
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await call('GET', '/api/v1/usage', undefined, key)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    const stored = await eventually(async () => {
      const { rows } = await db.query<{ status: number; n: string }>(
        'select status, count(*) as n from usage_records where account_id = $1 group by status order by status',
        [limited.accountId],
      );
      return rows.length === 2 && rows.map((r) => [r.status, Number(r.n)]);
    }, 15_000);
    expect(stored).toEqual([
      [200, 5],
      [429, 2],
    ]);
  });

  it('delivers a webhook (its drain job on the cluster)', async () => {
    const port = await freePort();
    const created = await call('POST', '/api/v1/webhooks/endpoints', {
      url: `http://127.0.0.1:${port}/hooks`,
      events: ['watchlist.alert'],
    });
    expect(created.status).toBe(201);
    endpointId = created.body.id as string;
    receiver = await startReceiver(created.body.secret as string, port);
    expect((await call('POST', `/api/v1/webhooks/endpoints/${endpointId}/test`)).status).toBe(202);
    expect(await eventually(() => Promise.resolve(receiver.received.length === 1), 15_000)).toBe(true);
    expect(receiver.received.map((r) => r.type)).toEqual(['webhook.test']);
  });

  it('scans a watchlist on its scheduled tick', async () => {
    const list = await call('POST', '/api/v1/watchlists', { name: 'cluster', schedule: '* * * * *' });
    expect(list.status).toBe(201);
    watchlistId = list.body.id as string;
    const entries = Array.from({ length: ENTRIES }, () => ({
      chain: 'ethereum',
      network: 'eip155:1',
      target: privateKeyToAddress(`0x${randomBytes(32).toString('hex')}`),
    }));
    const added = await call('POST', `/api/v1/watchlists/${watchlistId}/entries`, { entries });
    expect(added.status).toBeLessThan(300);
    const since = await tickNow();
    const started = Date.now();
    expect(await eventually(async () => (await unchecked(since)) === 0, 60_000, 250)).toBe(true);
    console.log(`tick of ${ENTRIES} entries on the cluster: ${Date.now() - started} ms`);
    firstTickDone = (await db.query<{ now: Date }>('select now()')).rows[0]!.now;
  }, 90_000);

  it('survives a master SIGKILLed mid-tick: the replica takes over, no process restarts, every entry is scanned', async () => {
    const before = pids();
    // The list's next tick, at the next minute (a tick's id is its minute: one more this minute would be
    // the same job), mid-way: a chunk written (100 entries), the others still queued.
    const since = firstTickDone;
    expect(await eventually(async () => (await unchecked(since)) <= ENTRIES - 100, 75_000, 25)).toBe(true);
    const left = await unchecked(since);
    expect(left).toBeGreaterThan(0);
    const victim = await cluster.masterOf('{watchlist-chunk}');
    const killedAt = Date.now();
    await cluster.kill(victim);
    await cluster.waitHealthy(30_000);
    const failoverMs = Date.now() - killedAt;
    expect((await cluster.masterOf('{watchlist-chunk}')).port).not.toBe(victim.port);
    // Every entry of the tick checked: by its chunk jobs that the replica had, retried once the slot has a
    // master again, and by the next tick (at the next minute) for any job the kill took with it.
    const scanned = await eventually(async () => (await unchecked(since)) === 0, 90_000, 250);
    console.log(
      `master killed with ${left} of ${ENTRIES} entries left: failover ${failoverMs} ms, ` +
        `every entry scanned ${Date.now() - killedAt} ms after the kill`,
    );
    expect(scanned).toBe(true);
    expect(pids()).toEqual(before);
    expect((await call('GET', '/api/v1/usage')).status).toBe(200);
  }, 240_000);

  it('delivers webhooks left pending in PostgreSQL when the master of their drain queue is lost', async () => {
    const before = pids();
    await receiver.close();
    // Pending deliveries: the receiver is down, so each attempt fails and the delivery waits in PostgreSQL.
    for (let i = 0; i < 3; i++)
      expect((await call('POST', `/api/v1/webhooks/endpoints/${endpointId}/test`)).status).toBe(202);
    const victim = await cluster.masterOf('{webhook-drain}');
    await cluster.kill(victim);
    // While the slot has no master, the API still takes test events: the delivery is committed, the
    // enqueue of its drain may fail; the sweep enqueues it again from PostgreSQL.
    const during = await call('POST', `/api/v1/webhooks/endpoints/${endpointId}/test`);
    expect([202, 503]).toContain(during.status);
    await cluster.waitHealthy(30_000);
    await receiver.reopen();
    const reopened = Date.now();
    const { rows } = await db.query<{ n: string }>(
      'select count(*) as n from webhook_deliveries where endpoint_id = $1',
      [endpointId],
    );
    const all = Number(rows[0]!.n);
    expect(all).toBeGreaterThanOrEqual(5);
    expect(await eventually(() => Promise.resolve(receiver.received.length === all), 60_000, 250)).toBe(true);
    console.log(`${all} deliveries received ${Date.now() - reopened} ms after the receiver came back`);
    const pending = await db.query<{ n: string }>(
      `select count(*) as n from webhook_deliveries where endpoint_id = $1 and status <> 'succeeded'`,
      [endpointId],
    );
    expect(Number(pending.rows[0]!.n)).toBe(0);
    expect(pids()).toEqual(before);
  }, 120_000);
});
