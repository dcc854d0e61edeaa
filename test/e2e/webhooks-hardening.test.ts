import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import { newId } from '../../src/platform/ids.js';
import { eventLog } from '../support/event-log.js';
import { eventually, prepareEnv, startService, type RunningService } from '../support/service.js';
import { newWebhookSecret, webhookFixtures } from '../support/webhook-fixtures.js';
import { startReceiver } from '../support/webhook-receiver.js';

/*
 * Webhook delivery when one account's receivers misbehave: an answer PostgreSQL cannot store, an endpoint
 * that fails while new events arrive, receivers that answer slowly enough to hold every drain slot, events
 * pruned before their delivery. A worker process (role `all`) sends to local receivers; each case has an
 * account of its own, so its endpoints receive only its events.
 */

let env: Record<string, string>;
let dropDatabase: () => Promise<void>;
let db: pg.Client;
let orm: Orm;
let worker: RunningService;

let fixtures: ReturnType<typeof webhookFixtures>;
const newSecret = newWebhookSecret;
const createEndpoint = (accountId: string, url: string, secret: string) =>
  fixtures.createEndpoint(accountId, url, secret);
const emit = (accountId: string, n: number, tag: string) => fixtures.emit(accountId, n, tag);
const attemptsOf = (endpointId: string) => fixtures.attemptsOf(endpointId);

beforeAll(async () => {
  ({ env, dropDatabase } = await prepareEnv({
    RISKWATCH_WEBHOOK_ALLOW_HTTP: 'true',
    RISKWATCH_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    RISKWATCH_WEBHOOK_RETRY_SCHEDULE_S: '1,1,2,2,2,2,2,2',
    RISKWATCH_WEBHOOK_RETRY_JITTER_PCT: '0',
    RISKWATCH_WEBHOOK_TIMEOUT_MS: '3000',
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

describe('webhook delivery hardening', () => {
  it('an answer with a NUL byte and invalid UTF-8 is logged as text: delivered once, the next event too', async () => {
    const account = 'acc_nul';
    const secret = newSecret();
    const receiver = await startReceiver(secret);
    const seen: string[] = [];
    receiver.behave((req, res) => {
      seen.push(req.headers['webhook-id'] as string);
      res.writeHead(200, { 'content-type': 'text/plain' }).end(Buffer.from([0x6f, 0x6b, 0x00, 0xff, 0x21]));
    });
    const endpoint = await createEndpoint(account, receiver.url, secret);
    const ids = await emit(account, 2, 'nul');
    await eventually(() => Promise.resolve(seen.length >= 2), 10_000, 50);
    // Sweeps run every second: a delivery whose attempt could not be recorded would be sent again.
    await new Promise((r) => setTimeout(r, 2500));
    expect(seen).toEqual(ids);
    const attempts = await attemptsOf(endpoint);
    expect(attempts.map((a) => [a.status_code, a.response_body])).toEqual([
      [200, 'ok\uFFFD\uFFFD!'],
      [200, 'ok\uFFFD\uFFFD!'],
    ]);
    const { rows } = await db.query<{ status: string }>(
      'select status from webhook_deliveries where endpoint_id = $1',
      [endpoint],
    );
    expect(rows.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    await receiver.close();
  }, 30_000);

  it('while an endpoint fails, a new event waits behind the failed one: delivered in sequence order', async () => {
    const account = 'acc_order';
    const secret = newSecret();
    const receiver = await startReceiver(secret);
    let failed = false;
    receiver.behave((_req, res) => {
      failed = true;
      receiver.behave(undefined); // only the first request fails
      res.writeHead(500).end();
    });
    const endpoint = await createEndpoint(account, receiver.url, secret);
    const [first] = await emit(account, 1, 'order-1');
    await eventually(async () => failed && (await attemptsOf(endpoint)).length === 1, 10_000, 20);
    // The retry is due a second after the failure; this event is written before then.
    const [second] = await emit(account, 1, 'order-2');
    await eventually(() => Promise.resolve(receiver.received.length === 2), 15_000, 50);
    expect(receiver.received.map((r) => r.id)).toEqual([first, second]);
    // The worker logs an attempt once the receiver has answered: the last one may still be on its way.
    await eventually(async () => (await attemptsOf(endpoint)).length === 3, 10_000, 20);
    const attempts = await attemptsOf(endpoint);
    const { rows } = await db.query<{ id: string; event_id: string }>(
      'select id, event_id from webhook_deliveries where endpoint_id = $1',
      [endpoint],
    );
    const deliveryOf = new Map(rows.map((r) => [r.event_id, r.id]));
    expect(attempts.map((a) => a.delivery_id)).toEqual([
      deliveryOf.get(first!),
      deliveryOf.get(first!),
      deliveryOf.get(second!),
    ]);
    await receiver.close();
  }, 30_000);

  it('slow receivers of one account hold at most three quarters of the drain slots: another account’s delivery goes at once', async () => {
    // 16 drain slots per worker (webhooks.delivery_concurrency): an account's further drains leave 4 free.
    const slowAccount = 'acc_slow';
    const slowSecret = newSecret();
    const slowVerifier = new Webhook(slowSecret);
    let inFlight = 0;
    let maxInFlight = 0;
    let firstSlowAnswerAt = Infinity;
    const slow: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        slowVerifier.verify(body, req.headers as Record<string, string>);
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        setTimeout(() => {
          inFlight--;
          firstSlowAnswerAt = Math.min(firstSlowAnswerAt, Date.now());
          res.writeHead(204).end();
        }, 2000);
      });
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', () => r()));
    const slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/hooks`;
    const slowEndpoints: string[] = [];
    for (let i = 0; i < 20; i++) slowEndpoints.push(await createEndpoint(slowAccount, slowUrl, slowSecret));

    const fastAccount = 'acc_fast';
    const fastSecret = newSecret();
    const fast = await startReceiver(fastSecret);
    let fastAt = Infinity;
    await createEndpoint(fastAccount, fast.url, fastSecret);

    await emit(slowAccount, 1, 'slow'); // one delivery per endpoint: 20 drains at once
    await eventually(() => Promise.resolve(inFlight >= 12), 10_000, 10);
    const emittedAt = Date.now();
    const [fastId] = await emit(fastAccount, 1, 'fast');
    await eventually(
      () => {
        if (fast.received.length > 0 && fastAt === Infinity) fastAt = Date.now();
        return Promise.resolve(fast.received.length > 0);
      },
      10_000,
      5,
    );
    expect(fast.received.map((r) => r.id)).toEqual([fastId]);
    // Delivered while the slow account's answers were all still pending, not after one freed a slot.
    expect(fastAt).toBeLessThan(firstSlowAnswerAt);
    expect(fastAt - emittedAt).toBeLessThan(2000);
    expect(maxInFlight).toBe(12);
    // The operators see it: the drains put back are counted.
    const metrics = await (await fetch(worker.metricsUrl)).text();
    const deferred = /^riskwatch_webhook_drains_deferred_total(?:\{[^}]*\})? (\d+)/m.exec(metrics);
    expect(Number(deferred?.[1])).toBeGreaterThan(0);
    // Every slow endpoint gets its delivery in the end.
    await eventually(
      async () =>
        (
          await db.query("select 1 from webhook_deliveries where account_id = $1 and status = 'succeeded'", [
            slowAccount,
          ])
        ).rowCount === slowEndpoints.length,
      20_000,
      100,
    );
    await fast.close();
    slow.closeAllConnections();
    await new Promise<void>((r) => slow.close(() => r()));
  }, 40_000);

  it('a pending delivery whose event was pruned is closed as expired, never attempted', async () => {
    const account = 'acc_pruned';
    const secret = newSecret();
    const receiver = await startReceiver(secret);
    const endpoint = await createEndpoint(account, receiver.url, secret);
    // A delivery left pending while its endpoint was disabled, whose event retention has since pruned.
    await db.query(
      `insert into webhook_deliveries (id, account_id, endpoint_id, event_id, event_seq, status, attempts,
              next_attempt_at, created_at)
       values ($1, $2, $3, $4, 1, 'pending', 0, now(), now() - interval '40 days')`,
      [newId('whd'), account, endpoint, newId('evt')],
    );
    const status = async () =>
      (
        await db.query<{ status: string }>('select status from webhook_deliveries where endpoint_id = $1', [
          endpoint,
        ])
      ).rows[0]?.status;
    await eventually(async () => (await status()) === 'expired', 10_000, 100);
    expect(await status()).toBe('expired');
    expect(receiver.hits).toBe(0);
    expect(await attemptsOf(endpoint)).toEqual([]);
    await receiver.close();
  }, 20_000);
});

describe('events-prune and the retry window', () => {
  /** Events and deliveries written `ageMs` ago, as the outbox writes them. */
  async function oldEvent(
    accountId: string,
    endpointId: string,
    ageMs: number,
    status: string,
    lastAttemptAgeMs?: number,
  ) {
    const at = new Date(Date.now() - ageMs);
    const eventId = newId('evt', at.getTime());
    await db.query(
      `insert into events (id, account_id, seq, type, watchlist_id, data, created_at)
       values ($1, $2::text, (select coalesce(max(seq), 0) + 1 from events where account_id = $2::text), 'watchlist.alert',
               null, '{}', $3)`,
      [eventId, accountId, at],
    );
    await db.query(
      `insert into webhook_deliveries (id, account_id, endpoint_id, event_id, event_seq, status, attempts,
              next_attempt_at, last_attempt_at, created_at)
       values ($1, $2, $3, $4, 0, $5, 1, $6, $7, $8)`,
      [
        newId('whd', at.getTime()),
        accountId,
        endpointId,
        eventId,
        status,
        status === 'pending' ? at : null,
        lastAttemptAgeMs === undefined ? null : new Date(Date.now() - lastAttemptAgeMs),
        at,
      ],
    );
    return eventId;
  }

  it('keeps an event past its retention while a delivery of it is pending inside its retry window', async () => {
    const account = 'acc_prune';
    const endpoint = await createEndpoint(account, 'http://127.0.0.1:9/hooks', newSecret());
    await db.query('update webhook_endpoints set enabled = false where id = $1', [endpoint]);
    const base = loadConfig({}).webhooks;
    // Retention 1 day, retries spread over 3 days (one wait of 2 days, one of 1): the window is 3 days.
    const settings = {
      ...base,
      event_retention_days: 1,
      retry_schedule_s: [172_800, 86_400],
      retry_jitter_pct: 0,
      retry_after_max_s: 0,
    };
    // The event log as the runtime composes it, webhooks' fan-out subscribed (its prune beside the log's).
    const deliverer = eventLog(orm, settings);
    const day = 86_400_000;
    const insideWindow = await oldEvent(account, endpoint, 2 * day, 'pending');
    const pastWindow = await oldEvent(account, endpoint, 4 * day, 'pending');
    const delivered = await oldEvent(account, endpoint, 2 * day, 'succeeded');
    // Held behind an older failing delivery, then attempted a day ago: still inside its own window.
    const heldBehind = await oldEvent(account, endpoint, 4 * day, 'pending', day);

    expect(await deliverer.prune()).toEqual({ events: 2, expired: 1, dropped: [] });
    const events = await db.query<{ id: string }>('select id from events where account_id = $1', [account]);
    expect(events.rows.map((r) => r.id).sort()).toEqual([insideWindow, heldBehind].sort());
    const deliveries = await db.query<{ event_id: string; status: string; next_attempt_at: Date | null }>(
      'select event_id, status, next_attempt_at from webhook_deliveries where account_id = $1',
      [account],
    );
    const byEvent = new Map(deliveries.rows.map((r) => [r.event_id, r]));
    expect(byEvent.get(insideWindow)).toMatchObject({ status: 'pending' });
    expect(byEvent.get(heldBehind)).toMatchObject({ status: 'pending' });
    expect(byEvent.get(pastWindow)).toMatchObject({ status: 'expired', next_attempt_at: null });
    expect(byEvent.has(delivered)).toBe(false);

    // Two and a half days later both are past their windows too: expired, and their events dropped.
    await deliverer.prune(new Date(Date.now() + 2.5 * day));
    const later = await db.query<{ status: string }>(
      'select status from webhook_deliveries where event_id = any($1)',
      [[insideWindow, heldBehind]],
    );
    expect(later.rows.map((r) => r.status)).toEqual(['expired', 'expired']);
    const left = await db.query('select 1 from events where account_id = $1', [account]);
    expect(left.rowCount).toBe(0);
  });
});
