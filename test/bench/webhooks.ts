/**
 * `BENCH_ONLY=webhooks npm run bench` (or `node dist/test/bench/webhooks.js` after a build): webhook delivery
 * throughput. A `worker` process of riskwatch sends to a receiver in this process that verifies every
 * request with the standardwebhooks package and de-duplicates on `webhook-id`, as a consumer should.
 *
 * Two runs of 10,000 events each, written through the same outbox the watchlist scanner writes alerts with
 * (in transactions of 500):
 *   - one endpoint: its deliveries go one after the other in event order (the design: no reordering);
 *   - ten endpoints on ten accounts, 1,000 events each: deliveries of different receivers in parallel.
 * Reported: deliveries per second (first event written → last receipt), and the latency from each event's
 * timestamp (its `created_at`, in the payload) to its receipt: p50, p99, max. Every event must arrive exactly
 * once after de-duplication, or the run exits 1.
 *
 * Knobs: BENCH_WEBHOOK_EVENTS (10000), BENCH_WEBHOOK_CONCURRENCY (the worker's webhooks.delivery_concurrency,
 * 16), BENCH_OUT (a JSON file the results are merged into, under `webhooks`).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { Redis } from 'ioredis';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import { loadConfig } from '../../src/config.js';
import { JobQueues } from '../../src/jobs/queues.js';
import { newId } from '../../src/platform/ids.js';
import { EventLog, type NewEvent } from '../../src/events/log.js';
import { WebhookFanOut } from '../../src/webhooks/fan-out.js';
import { WebhookRepository } from '../../src/webhooks/repository.js';
import { REDIS_URL } from '../support/env.js';
import { prepareEnv, startService, type RunningService } from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 10_000);
const CONCURRENCY = process.env.BENCH_WEBHOOK_CONCURRENCY ?? '16';
const WRITE_BATCH = 500;

interface RunResult {
  name: string;
  endpoints: number;
  events: number;
  seconds: number;
  deliveriesPerS: number;
  latencyMs: { p50: number; p99: number; max: number };
  receiverHits: number;
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;

async function run(
  name: string,
  endpoints: number,
  db: pg.Client,
  orm: Orm,
  queues: JobQueues,
): Promise<RunResult> {
  const perEndpoint = Math.floor(EVENTS / endpoints);
  // The event log as the runtime composes it: webhooks' fan-out subscribed, drains asked after each commit.
  const events = new EventLog(orm, 30);
  events.subscribe(new WebhookFanOut(new WebhookRepository(orm).deliveries, queues, loadConfig({}).webhooks));
  const receivers: { accountId: string; receiver: Receiver; receivedAt: Map<string, number> }[] = [];
  for (let i = 0; i < endpoints; i++) {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const receiver = await startReceiver(secret);
    const accountId = newId('acc');
    await db.query(
      `insert into webhook_endpoints (id, account_id, url, events, enabled, secret, created_at, updated_at)
       values ($1, $2, $3, '["watchlist.alert"]', true, $4, now(), now())`,
      [newId('we'), accountId, receiver.url, secret],
    );
    receivers.push({ accountId, receiver, receivedAt: new Map() });
  }
  // Receipt times, taken by polling the receivers' lists (cheap: they only grow).
  const timer = setInterval(() => {
    const now = Date.now();
    for (const r of receivers)
      for (let k = r.receivedAt.size; k < r.receiver.received.length; k++)
        r.receivedAt.set(r.receiver.received[k]!.id, now);
  }, 2);

  const started = Date.now();
  for (const r of receivers)
    for (let written = 0; written < perEndpoint; written += WRITE_BATCH) {
      const n = Math.min(WRITE_BATCH, perEndpoint - written);
      // As the scanner does: the events in a transaction, then a drain asked for each endpoint they reach.
      const { afterCommit } = await orm.em.fork().transactional((tx) =>
        events.append(
          tx,
          Array.from(
            { length: n },
            (_, i) =>
              ({
                accountId: r.accountId,
                type: 'watchlist.alert',
                watchlistId: null,
                data: { bench: name, index: written + i },
              }) as unknown as NewEvent,
          ),
        ),
      );
      await afterCommit();
    }
  const total = perEndpoint * endpoints;
  const deadline = Date.now() + Number(process.env.BENCH_WEBHOOK_DEADLINE_S ?? 600) * 1000;
  while (receivers.reduce((n, r) => n + r.receiver.received.length, 0) < total) {
    if (Date.now() > deadline) throw new Error(`${name}: not every event arrived within 10 minutes`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const finished = Date.now();
  clearInterval(timer);
  for (const r of receivers)
    for (let k = r.receivedAt.size; k < r.receiver.received.length; k++)
      r.receivedAt.set(r.receiver.received[k]!.id, finished);

  const { rows } = await db.query<{ id: string; created_at: Date }>(
    `select id, created_at from events where data->>'bench' = $1`,
    [name],
  );
  const createdAt = new Map(rows.map((r) => [r.id, new Date(r.created_at).getTime()]));
  const latencies: number[] = [];
  for (const r of receivers) {
    if (r.receiver.received.length !== perEndpoint)
      throw new Error(`${name}: a receiver got ${r.receiver.received.length} of ${perEndpoint} events`);
    for (const [id, at] of r.receivedAt) latencies.push(at - createdAt.get(id)!);
  }
  latencies.sort((a, b) => a - b);
  const seconds = (finished - started) / 1000;
  const hits = receivers.reduce((n, r) => n + r.receiver.hits, 0);
  await Promise.all(receivers.map((r) => r.receiver.close()));
  return {
    name,
    endpoints,
    events: total,
    seconds,
    deliveriesPerS: Math.round(total / seconds),
    latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) ?? 0 },
    receiverHits: hits,
  };
}

export async function benchWebhooks(): Promise<RunResult[]> {
  const { env, dropDatabase } = await prepareEnv({
    RISKWATCH_WEBHOOK_ALLOW_HTTP: 'true',
    RISKWATCH_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    RISKWATCH_WEBHOOK_DELIVERY_CONCURRENCY: CONCURRENCY,
    RISKWATCH_WEBHOOKS_SWEEP_CRON: '* * * * * *',
    LOG_LEVEL: 'warn',
  });
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  const orm = await connectOrm(env.DATABASE_URL!, 4);
  const bull = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queues = new JobQueues(bull, env.REDIS_KEY_PREFIX!);
  let worker: RunningService | undefined;
  let scheduler: RunningService | undefined;
  try {
    // As in production: the worker sends, the scheduler sweeps for retries and anything left behind.
    worker = await startService(env, 'worker');
    scheduler = await startService(env, 'scheduler');
    const results = [
      await run('one-endpoint', 1, db, orm, queues),
      await run('ten-endpoints', 10, db, orm, queues),
    ];
    console.log(
      `\nwebhooks: ${EVENTS} events per run, worker delivery_concurrency ${CONCURRENCY}, ` +
        `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`,
    );
    console.log(
      'run             endpoints  events  seconds  deliveries/s  p50 ms  p99 ms  max ms  receiver hits',
    );
    for (const r of results)
      console.log(
        `${r.name.padEnd(16)}${String(r.endpoints).padStart(9)}${String(r.events).padStart(8)}` +
          `${r.seconds.toFixed(1).padStart(9)}${String(r.deliveriesPerS).padStart(14)}` +
          `${String(r.latencyMs.p50).padStart(8)}${String(r.latencyMs.p99).padStart(8)}` +
          `${String(r.latencyMs.max).padStart(8)}${String(r.receiverHits).padStart(15)}`,
      );
    return results;
  } finally {
    await Promise.all([worker?.stop(), scheduler?.stop()]);
    await queues.close();
    bull.disconnect();
    await orm.close();
    await db.end();
    await dropDatabase();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const results = await benchWebhooks();
  const out = process.env.BENCH_OUT;
  if (out) {
    const previous = existsSync(out)
      ? (JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>)
      : {};
    writeFileSync(out, JSON.stringify({ ...previous, webhooks: results }, null, 2));
  }
}
