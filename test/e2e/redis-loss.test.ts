import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAccounts, type Customer } from '../support/auth-helpers.js';
import { eventually, freePort, prepareEnv, startService, type RunningService } from '../support/service.js';

/*
 * A lost Redis (README, "What a lost Redis costs"): the service on a Redis of its own, flushed under a
 * light load. Nothing is restarted: the API keeps answering, and the worker's usage drain, which reads
 * the usage stream through a consumer group that went with the flush, makes the group again and stores
 * the calls made after it.
 */

let redisServer: ChildProcess;
let redis: Redis;
let env: Record<string, string>;
let dropDatabase: () => Promise<void>;
let closeAccounts: () => Promise<void>;
let db: pg.Client;
let api: RunningService;
let worker: RunningService;
let acme: Customer;

async function usageCall(): Promise<number> {
  const res = await fetch(`${api.baseUrl}/api/v1/usage?limit=1`, {
    headers: { 'x-api-key': acme.key.key },
  });
  await res.arrayBuffer();
  return res.status;
}

const storedCalls = async () =>
  Number(
    (
      await db.query<{ n: string }>('select count(*) as n from usage_records where account_id = $1', [
        acme.account.id,
      ])
    ).rows[0]!.n,
  );

beforeAll(async () => {
  const port = await freePort();
  redisServer = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  redis = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 3 });
  expect(await eventually(async () => (await redis.ping().catch(() => '')) === 'PONG', 10_000)).toBe(true);
  ({ env, dropDatabase } = await prepareEnv({ REDIS_URL: `redis://127.0.0.1:${port}` }));
  const accounts = await openAccounts(env);
  closeAccounts = accounts.close;
  acme = await accounts.customer('redis-loss-acme', { rateLimitPerMin: 100_000 });
  db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  api = await startService(env, 'api');
  worker = await startService(env, 'worker');
}, 180_000);

afterAll(async () => {
  await api?.stop();
  await worker?.stop();
  await closeAccounts?.();
  await db?.end();
  await dropDatabase?.();
  redis?.disconnect();
  redisServer?.kill('SIGKILL');
});

describe('Redis flushed under load', () => {
  it('the API keeps answering and the usage drain recovers by itself, without a restart', async () => {
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
    expect(api.process.exitCode).toBeNull();
    expect(worker.process.exitCode).toBeNull();
  }, 120_000);
});
