/**
 * `BENCH_ONLY=schedules npm run bench` (or `node dist/test/bench/watchlist-schedules.js` after a build): one
 * account's watchlist schedules against everyone else's webhooks (issue 17's acceptance). riskwatch runs as
 * in production: `api`, `worker` and `scheduler` in separate processes.
 *
 * Account A holds BENCH_SCHEDULE_LISTS (3,000) lists, its ceiling raised by its setting, in two shapes:
 *   - `rare`: the schedule the security review found costliest to evaluate, `59 23 * 2 4#5` (the fifth
 *     Thursday of February, next in 2052). The API now refuses it (no run within a year), so these lists
 *     are written in SQL as an install upgraded with them would hold them: due time null;
 *   - `every-minute`: `* * * * *` created through the API, every list due every minute: the most work the
 *     minute's job can be given now that it reads the lists due, not every list.
 * The baseline, in the same run: the pass the minute's job made before, evaluating both crons of every
 * list to find the due ones (on the 3,000 rare schedules), timed in this process.
 * For each shape, three minutes' `watchlists-due` jobs are run (enqueued as the scheduler would, the lists
 * made due) and timed from the worker's own start and finish of the job; while each runs, account B asks
 * for a `webhook.test` on its endpoint, and the time from the API call to the receiver's verified receipt
 * is measured.
 *
 * Knobs: BENCH_SCHEDULE_LISTS (3000); through `npm run bench`, BENCH_OUT (the results JSON, under `schedules`).
 */
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Queue, QueueEvents } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import { Redis } from 'ioredis';
import pg from 'pg';
import { JobQueues } from '../../src/jobs/queues.js';
import { REDIS_URL } from '../support/env.js';
import { cliJson, freePort, prepareEnv, startService, type RunningService } from '../support/service.js';
import { startReceiver } from '../support/webhook-receiver.js';
import { intEnv } from './env.js';

const LISTS = intEnv('BENCH_SCHEDULE_LISTS', 3000, 1, 100_000);
const RARE = '59 23 * 2 4#5';
const ROUNDS = 3;

export interface ScheduleRound {
  shape: string;
  lists: number;
  /** Tick jobs the minute's job enqueued. */
  ticks: number;
  /** The minute's job, as the worker ran it (processedOn → finishedOn), ms. */
  dueJobMs: number;
  /** Account B's webhook.test, API call → verified receipt, ms. */
  otherWebhookMs: number;
}

export interface SchedulesReport {
  lists: number;
  refusedRare: { status: number; code: string };
  /** What the minute's job did before due times were stored: both crons of every list evaluated, ms. */
  everyListPassMs: number;
  createSeconds: number;
  rounds: ScheduleRound[];
}

export async function benchSchedules(log: (line?: string) => void = console.log): Promise<SchedulesReport> {
  const { env, dropDatabase } = await prepareEnv({
    RISKWATCH_MAX_WATCHLISTS_PER_ACCOUNT: String(LISTS + 10),
    RISKWATCH_WEBHOOK_ALLOW_HTTP: 'true',
    RISKWATCH_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    LOG_LEVEL: 'warn',
  });
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  const bull = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queues = new JobQueues(bull, env.REDIS_KEY_PREFIX!);
  const prefix = `${env.REDIS_KEY_PREFIX}bull`;
  const events = new QueueEvents('watchlists-due', { connection: bull.duplicate(), prefix });
  const services: RunningService[] = [];
  try {
    for (const role of ['api', 'worker', 'scheduler'] as const) services.push(await startService(env, role));
    const api = services[0]!;
    const customer = async (name: string) => {
      const account = await cliJson<{ id: string }>(env, ['accounts', 'create', '--name', name]);
      await cliJson(env, ['entitlements', 'grant', account.id, '--rate-limit-per-min', '1000000']);
      const key = await cliJson<{ key: string }>(env, ['keys', 'create', account.id, '--name', 'bench']);
      return { id: account.id, key: key.key };
    };
    const [a, b] = [await customer('scheduler-heavy'), await customer('bystander')];
    const call = (key: string, path: string, body?: unknown) =>
      fetch(`${api.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify(body ?? {}),
      });

    // B's endpoint; its receiver verifies with the secret the API made.
    const port = await freePort();
    const created = (await (
      await call(b.key, '/api/v1/webhooks/endpoints', {
        url: `http://127.0.0.1:${port}/hooks`,
        events: ['watchlist.alert'],
      })
    ).json()) as { id: string; secret: string };
    const bReceiver = await startReceiver(created.secret, port);

    const refused = await call(a.key, '/api/v1/watchlists', { name: 'rare', schedule: RARE });
    const refusedRare = { status: refused.status, code: ((await refused.json()) as { code: string }).code };
    log(`schedules: ${RARE} through the API → ${refusedRare.status} ${refusedRare.code}`);

    // The baseline: the pass the minute's job made before (every list's two crons, is it due this minute?),
    // timed here in this process on the same 3,000 rare schedules.
    const passStarted = performance.now();
    const minuteStart = Math.floor(Date.now() / 60_000) * 60_000;
    for (let i = 0; i < LISTS * 2; i++)
      CronExpressionParser.parse(RARE, { currentDate: new Date(minuteStart - 1), tz: 'UTC' }).next();
    const everyListPassMs = Math.round(performance.now() - passStarted);
    log(
      `schedules: the former pass over every list (${LISTS} × 2 evaluations of ${RARE}): ${everyListPassMs} ms`,
    );

    const rounds: ScheduleRound[] = [];
    const measure = async (shape: string) => {
      for (let round = 0; round < ROUNDS; round++) {
        // Each round is its own minute (ids are per minute): minutes after now, as the scheduler's would be.
        const minute = new Date((Math.floor(Date.now() / 60_000) + 10 * (rounds.length + 1)) * 60_000);
        await db.query('update watchlists set next_tick_at = $1 where next_tick_at is not null', [minute]);
        const jobId = `watchlists-due-bench-${minute.getTime() / 1000}`;
        await queues.enqueue('watchlists-due', { scheduled_at: minute.toISOString() }, jobId);
        const before = bReceiver.received.length;
        const asked = performance.now();
        const test = await call(b.key, `/api/v1/webhooks/endpoints/${created.id}/test`);
        if (test.status !== 202) throw new Error(`webhook test: ${test.status} ${await test.text()}`);
        while (bReceiver.received.length === before) await new Promise((r) => setTimeout(r, 2));
        const otherWebhookMs = Math.round(performance.now() - asked);
        const job = await new Queue('watchlists-due', { connection: bull, prefix }).getJob(jobId);
        const result = (await job!.waitUntilFinished(events, 120_000)) as { ticks: number };
        const done = await new Queue('watchlists-due', { connection: bull, prefix }).getJob(jobId);
        const r: ScheduleRound = {
          shape,
          lists: LISTS,
          ticks: result.ticks,
          dueJobMs: (done!.finishedOn ?? 0) - (done!.processedOn ?? 0),
          otherWebhookMs,
        };
        rounds.push(r);
        log(
          `schedules: ${shape.padEnd(13)} ${LISTS} lists  due job ${String(r.dueJobMs).padStart(5)} ms  ` +
            `ticks ${String(r.ticks).padStart(5)}  another account's webhook.test ${String(otherWebhookMs).padStart(5)} ms`,
        );
        // Let the tick jobs of this round drain before the next (they are the worker's, not the bench's).
        const tick = queues.queue('watchlist-tick');
        while ((await tick.getWaitingCount()) + (await tick.getActiveCount()) > 0)
          await new Promise((res) => setTimeout(res, 200));
      }
    };

    // `rare`, as an upgraded install holds them: due times null (never due).
    await db.query(
      `insert into watchlists (id, account_id, name, schedule, deep_schedule, thresholds, next_tick_at, next_deep_at,
              created_at, updated_at)
       select 'wl_' || substr(md5(random()::text || g), 1, 28), $1, 'rare ' || g, $2, $2, '{}', null, null, now(), now()
         from generate_series(1, $3) g`,
      [a.id, RARE, LISTS],
    );
    await measure('rare');
    await db.query('delete from watchlists where account_id = $1', [a.id]);

    // `every-minute`, through the API.
    const createdAt = performance.now();
    for (let i = 0; i < LISTS; i += 50)
      await Promise.all(
        Array.from({ length: Math.min(50, LISTS - i) }, async (_, k) => {
          const res = await call(a.key, '/api/v1/watchlists', { name: `m${i + k}`, schedule: '* * * * *' });
          if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
        }),
      );
    const createSeconds = (performance.now() - createdAt) / 1000;
    log(`schedules: ${LISTS} every-minute lists created through the API in ${createSeconds.toFixed(1)} s`);
    await measure('every-minute');
    await bReceiver.close();
    return { lists: LISTS, refusedRare, everyListPassMs, createSeconds, rounds };
  } finally {
    await Promise.all(services.map((s) => s.stop()));
    await events.close();
    await queues.close();
    bull.disconnect();
    await db.end();
    await dropDatabase();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  console.log(`riskwatch bench (schedules): node ${process.version}, ${cpus().length} CPUs`);
  await benchSchedules();
  process.exit(0);
}
