import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import { eventually, killHard, prepareEnv, startService, type RunningService } from '../support/service.js';
import { newWebhookSecret, webhookFixtures } from '../support/webhook-fixtures.js';
import { startReceiver } from '../support/webhook-receiver.js';

/*
 * Webhook delivery with the real parts: a worker process sends to a local receiver that verifies every
 * request with the standardwebhooks package (signature and timestamp tolerance) and de-duplicates on
 * `webhook-id`, as a consumer should. Events enter through the outbox the watchlist scanner writes with.
 * The retry schedule is shortened by configuration (seconds instead of hours); 127.0.0.0/8 is allow-listed
 * past the SSRF guard, as an operator would allow an in-VPC receiver.
 */

let env: Record<string, string>;
let dropDatabase: () => Promise<void>;
let db: pg.Client;
let orm: Orm;
let worker: RunningService;
const accountId = 'acc_webhooks_test';

let fixtures: ReturnType<typeof webhookFixtures>;
const newSecret = newWebhookSecret;
const createEndpoint = (url: string, secret: string, events?: string[]) =>
  fixtures.createEndpoint(accountId, url, secret, events);
const emit = (n: number, tag: string) => fixtures.emit(accountId, n, tag);
const attemptsOf = (endpointId: string) => fixtures.attemptsOf(endpointId);

/** Polls a condition on the receiver's side. */
const until = (condition: () => boolean, timeoutMs: number) =>
  eventually(() => Promise.resolve(condition()), timeoutMs, 50);

beforeAll(async () => {
  ({ env, dropDatabase } = await prepareEnv({
    RISKWATCH_WEBHOOK_ALLOW_HTTP: 'true',
    RISKWATCH_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    RISKWATCH_WEBHOOK_RETRY_SCHEDULE_S: '1,1,2,2,2,2,2,2',
    RISKWATCH_WEBHOOK_RETRY_JITTER_PCT: '0',
    RISKWATCH_WEBHOOK_TIMEOUT_MS: '1500',
    RISKWATCH_WEBHOOK_RETRY_AFTER_MAX_S: '10',
    RISKWATCH_WEBHOOKS_SWEEP_CRON: '* * * * * *',
  }));
  db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  orm = await connectOrm(env.DATABASE_URL!, 2);
  fixtures = webhookFixtures(db, orm);
  worker = await startService(env, 'all');
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await orm?.close();
  await db?.end();
  await dropDatabase?.();
});

describe('webhook delivery', () => {
  it('delivers every event once, signed (Standard Webhooks), webhook-id = the event id, in sequence order', async () => {
    const secret = newSecret();
    const receiver = await startReceiver(secret);
    await createEndpoint(receiver.url, secret);
    const ids = await emit(50, 'burst');
    await until(() => receiver.received.length === 50, 20_000);
    expect(receiver.received.map((r) => r.id)).toEqual(ids);
    expect(receiver.received[0]).toMatchObject({ type: 'watchlist.alert', data: { tag: 'burst', index: 0 } });
    expect(receiver.hits).toBe(50);
    await receiver.close();
  }, 30_000);

  it('a receiver that was down gets everything once it is back, with the same webhook-ids', async () => {
    const secret = newSecret();
    const receiver = await startReceiver(secret);
    const endpoint = await createEndpoint(receiver.url, secret);
    await receiver.close();
    const ids = await emit(5, 'down');
    await eventually(async () => (await attemptsOf(endpoint)).length >= 2, 15_000, 100);
    expect((await attemptsOf(endpoint)).every((a) => a.error === 'connection_refused')).toBe(true);
    await receiver.reopen();
    await until(() => receiver.received.length === 5, 20_000);
    expect(receiver.received.map((r) => r.id)).toEqual(ids);
    await receiver.close();
  }, 40_000);

  it('410 Gone disables the endpoint and says so in the event log', async () => {
    const secret = newSecret();
    const receiver = await startReceiver(secret);
    receiver.behave((_req, res) => res.writeHead(410).end());
    const endpoint = await createEndpoint(receiver.url, secret);
    await emit(1, 'gone');
    await eventually(
      async () =>
        (await db.query('select 1 from webhook_endpoints where id = $1 and not enabled', [endpoint]))
          .rowCount === 1,
      10_000,
      100,
    );
    const { rows } = await db.query<{ data: { endpoint_id: string; reason: string } }>(
      `select data from events where type = 'webhook.endpoint_disabled' and data->>'endpoint_id' = $1`,
      [endpoint],
    );
    expect(rows[0]!.data.reason).toMatch(/410/);
    await receiver.close();
  }, 20_000);

  it('429 with Retry-After is honoured before the next attempt', async () => {
    const secret = newSecret();
    const receiver = await startReceiver(secret);
    let first = true;
    receiver.behave((_req, res) => {
      if (first) {
        first = false;
        res.writeHead(429, { 'retry-after': '3' }).end();
      } else {
        receiver.behave(undefined);
        res.writeHead(503).end();
      }
    });
    const endpoint = await createEndpoint(receiver.url, secret);
    await emit(1, 'throttled');
    await eventually(async () => (await attemptsOf(endpoint)).length >= 2, 15_000, 100);
    const [a, b] = await attemptsOf(endpoint);
    expect(a!.status_code).toBe(429);
    expect(b!.attempted_at.getTime() - a!.attempted_at.getTime()).toBeGreaterThanOrEqual(2900);
    await until(() => receiver.received.length === 1, 15_000);
    await receiver.close();
  }, 30_000);

  it('a redirect to loopback is not followed; a hung receiver times out and is retried', async () => {
    const secret = newSecret();
    const target = await startReceiver(secret);
    const receiver = await startReceiver(secret);
    let step = 0;
    receiver.behave((_req, res) => {
      step++;
      if (step === 1) res.writeHead(302, { location: target.url }).end();
      else if (step === 2)
        return; // hangs: never answers
      else {
        receiver.behave(undefined);
        res.writeHead(500).end();
      }
    });
    const endpoint = await createEndpoint(receiver.url, secret);
    const [id] = await emit(1, 'redirect-hang');
    await until(() => receiver.received.length === 1, 25_000);
    expect(receiver.received[0]!.id).toBe(id);
    expect(target.hits).toBe(0);
    const errors = (await attemptsOf(endpoint)).map((a) => a.error);
    expect(errors.slice(0, 3)).toEqual(['http_3xx', 'timeout', 'http_500']);
    await Promise.all([target.close(), receiver.close()]);
  }, 40_000);

  it('kill -9 of the worker during a delivery: delivered after the restart, once at the consumer', async () => {
    const secret = newSecret();
    const receiver = await startReceiver(secret);
    let hung = false;
    receiver.behave(() => {
      hung = true; // the first request never gets an answer: the worker dies while it waits
    });
    await createEndpoint(receiver.url, secret);
    const [id] = await emit(1, 'killed');
    await until(() => hung, 10_000);
    await killHard(worker);
    receiver.behave(undefined);
    worker = await startService(env, 'all');
    await until(() => receiver.received.length === 1, 45_000);
    expect(receiver.received[0]!.id).toBe(id);
    await receiver.close();
  }, 60_000);
});
