import { randomBytes } from 'node:crypto';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobQueues } from '../../src/jobs/queues.js';
import { newId } from '../../src/platform/ids.js';
import type { RescanAcceptedBody, WatchlistBody } from '../../src/watchlists/schemas.js';
import {
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import { REDIS_URL } from '../support/env.js';
import { freePort, prepareEnv, startService, type RunningService, type TestEnv } from '../support/service.js';

/*
 * What keeps one account from stalling the watchlist machinery for the others (README, "Watchlists"):
 * the ceiling of watchlists per account, schedules that must run within a year, due times stored so the
 * minute's job reads only the lists due, one rescan at a time per list and a floor between rescans.
 * Built service (api, then worker), real PostgreSQL, Redis and BullMQ.
 */

const AGENT_KEY = randomBytes(16).toString('hex');
/** The fifth Thursday of February: next in 2052 (cron-parser's costliest search of a 5-field cron). */
const RARE = '59 23 * 2 4#5';

describe('watchlist limits', () => {
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let sql: pg.Client;
  let api: RunningService;
  let acme: Customer;
  let globex: Customer;

  const call = (customer: Customer, path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${api.baseUrl}/api/v1/watchlists${path}`, {
      method: init.method ?? 'GET',
      headers: {
        'x-api-key': customer.key.key,
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
  const create = (customer: Customer, body: Record<string, unknown> = {}) =>
    call(customer, '', { method: 'POST', body: { name: 'list', ...body } });
  const rescan = (customer: Customer, id: string) => call(customer, `/${id}/rescan`, { method: 'POST' });

  beforeAll(async () => {
    const unused = `http://127.0.0.1:${await freePort()}`;
    testEnv = await prepareEnv({
      RISKWATCH_RPC_ETHEREUM_MAINNET: unused,
      RISKWATCH_MAX_WATCHLISTS_PER_ACCOUNT: '3',
      AGENT_KEYS: AGENT_KEY,
    });
    db = await openAccounts(testEnv.env);
    [acme, globex] = await Promise.all([db.customer('acme'), db.customer('globex')]);
    sql = new pg.Client({ connectionString: testEnv.env.DATABASE_URL });
    await sql.connect();
    api = await startServiceRetrying(testEnv.env, 'api');
  }, 120_000);

  afterAll(async () => {
    await api?.stop();
    await sql?.end();
    await db?.close();
    await testEnv?.dropDatabase();
  });

  it('holds at most watchlists.max_per_account lists per account: one more is 409 limit_exceeded', async () => {
    // Five at once: the account row is locked while each is counted, so exactly three pass.
    const answers = await Promise.all([1, 2, 3, 4, 5].map((i) => create(acme, { name: `l${i}` })));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 201, 409, 409]);
    const refused = answers.find((r) => r.status === 409)!;
    const problem = await expectProblem(refused, 409, 'limit_exceeded');
    expect(problem.detail).toMatch(/limit is 3/);
    expect(problem.detail).toMatch(/RISKWATCH_MAX_WATCHLISTS_PER_ACCOUNT/);
    // Another account's ceiling is its own.
    await expectJson(await create(globex), 201);
    // Deleting one makes room again.
    const [first] = (
      await sql.query<{ id: string }>('select id from watchlists where account_id = $1', [acme.account.id])
    ).rows;
    await expectJson(await call(acme, `/${first!.id}`, { method: 'DELETE' }), 200);
    await expectJson(await create(acme), 201);
  });

  it('refuses a schedule that does not run within a year, on create and on change, naming the field', async () => {
    const created = await create(globex, { schedule: RARE });
    const problem = await expectProblem(created, 400, 'invalid_request');
    expect(problem.errors).toEqual([
      { path: 'schedule', message: expect.stringMatching(/within the next year/) as unknown },
    ]);
    const [list] = (
      await sql.query<{ id: string }>('select id from watchlists where account_id = $1', [globex.account.id])
    ).rows;
    const patched = await call(globex, `/${list!.id}`, {
      method: 'PATCH',
      body: { deep_schedule: '0 0 29 2 *' },
    });
    expect((await expectProblem(patched, 400, 'invalid_request')).errors).toEqual([
      { path: 'deep_schedule', message: expect.stringMatching(/within the next year/) as unknown },
    ]);
  });

  describe('rescans', () => {
    let listId: string;
    const entries = async (n: number) => {
      const body = {
        entries: Array.from({ length: n }, () => ({ target: `0x${randomBytes(20).toString('hex')}` })),
      };
      await expectJson(await call(globex, `/${listId}/entries`, { method: 'POST', body }), 200);
    };

    beforeAll(async () => {
      await sql.query('delete from watchlists where account_id = $1', [globex.account.id]);
      listId = (await expectJson<WatchlistBody>(await create(globex, { name: 'rescanned' }), 201)).id;
      await entries(3);
    });

    it('one at a time per list: asked again while it runs, the answer is the running rescan', async () => {
      // The entries were deep-scanned a day ago (the daily deep scan): that is no progress of this rescan.
      await sql.query(
        "update watchlist_entries set deep_checked_at = now() - interval '1 day' where watchlist_id = $1",
        [listId],
      );
      const answers = await Promise.all(Array.from({ length: 10 }, () => rescan(globex, listId)));
      const bodies = await Promise.all(answers.map((a) => expectJson<RescanAcceptedBody>(a, 202)));
      expect(new Set(bodies.map((b) => b.rescan_id)).size).toBe(1);
      expect(bodies.every((b) => b.status === 'queued')).toBe(true);
      expect(answers[0]!.headers.get('location')).toBe(bodies[0]!.status_url);
      const { rows } = await sql.query('select id from watchlist_rescans where watchlist_id = $1', [listId]);
      expect(rows).toHaveLength(1);
    });

    it('a finished rescan is followed by another only after rescan_min_interval_s: sooner is 429 with Retry-After', async () => {
      // The scanner's part, done here: every entry deep-scanned, so the rescan is complete.
      await sql.query('update watchlist_entries set deep_checked_at = now() where watchlist_id = $1', [
        listId,
      ]);
      const soon = await rescan(globex, listId);
      const problem = await expectProblem(soon, 429, 'rate_limited');
      expect(problem.detail).toMatch(/once every 300 s/);
      const retryAfter = Number(soon.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(290);
      expect(retryAfter).toBeLessThanOrEqual(300);
      // Five minutes later (moved back in time here), a new one starts.
      await sql.query(
        "update watchlist_rescans set created_at = created_at - interval '301 seconds' where watchlist_id = $1",
        [listId],
      );
      const later = await expectJson<RescanAcceptedBody>(await rescan(globex, listId), 202);
      const { rows } = await sql.query<{ id: string; finished_at: Date | null }>(
        'select id, finished_at from watchlist_rescans where watchlist_id = $1 order by created_at',
        [listId],
      );
      expect(rows.map((r) => r.id)[1]).toBe(later.rescan_id);
      expect(rows[0]!.finished_at).not.toBeNull();
    });

    it('a rescan whose job still waits runs however long; one that made no progress for an hour after its job ended no longer blocks', async () => {
      const [latest] = (
        await sql.query<{ id: string }>(
          'select id from watchlist_rescans where watchlist_id = $1 order by created_at desc limit 1',
          [listId],
        )
      ).rows;
      // Asked for two hours ago, nothing analysed since: its tick job is still waiting (a busy queue).
      await sql.query(
        "update watchlist_rescans set created_at = created_at - interval '2 hours' where watchlist_id = $1",
        [listId],
      );
      await sql.query(
        `update watchlist_entries set created_at = now() - interval '4 hours',
                deep_checked_at = now() - interval '3 hours' where watchlist_id = $1`,
        [listId],
      );
      const waiting = await expectJson<RescanAcceptedBody>(await rescan(globex, listId), 202);
      expect(waiting.rescan_id).toBe(latest!.id);
      // Its job is gone (failed and dropped by the job retention): the rescan has stalled.
      const bull = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
      const ticks = new Queue('watchlist-tick', {
        connection: bull,
        prefix: `${testEnv.env.REDIS_KEY_PREFIX}bull`,
      });
      await ticks.remove(latest!.id);
      await ticks.close();
      bull.disconnect();
      const next = await expectJson<RescanAcceptedBody>(await rescan(globex, listId), 202);
      expect(next.rescan_id).not.toBe(latest!.id);
      expect(next.status).toBe('queued');
      const { rows } = await sql.query('select id from watchlist_rescans where watchlist_id = $1', [listId]);
      expect(rows).toHaveLength(3);
    });
  });

  describe('the minute’s job reads the lists due, by their stored due times', () => {
    let worker: RunningService;
    let bull: Redis;
    let queues: JobQueues;

    beforeAll(async () => {
      worker = await startService(testEnv.env, 'worker');
      bull = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
      queues = new JobQueues(bull, testEnv.env.REDIS_KEY_PREFIX!);
    }, 60_000);

    afterAll(async () => {
      await queues?.close();
      bull?.disconnect();
      await worker?.stop();
    });

    it('enqueues a tick for each list due, a deep scan where that is due, and moves their due times on', async () => {
      const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000);
      const past = new Date(minute.getTime() - 3 * 60_000); // missed while no scheduler ran
      const future = new Date(minute.getTime() + 3_600_000);
      const insert = async (schedule: string, deep: string, nextTick: Date | null, nextDeep: Date | null) => {
        const id = newId('wl');
        await sql.query(
          `insert into watchlists (id, account_id, name, schedule, deep_schedule, thresholds, next_tick_at,
                  next_deep_at, created_at, updated_at)
           values ($1, $2, 'seeded', $3, $4, '{}', $5, $6, now(), now())`,
          [id, acme.account.id, schedule, deep, nextTick, nextDeep],
        );
        return id;
      };
      const tickDue = await insert('*/5 * * * *', '0 3 * * *', past, future);
      const deepDue = await insert('*/5 * * * *', '0 3 * * *', future, minute);
      const notDue = await insert('* * * * *', '0 3 * * *', future, future);
      // A list stored before the one-year rule: its cron costs the most to evaluate, and it is never due.
      const unscheduled = await insert(RARE, RARE, null, null);

      const events = new QueueEvents('watchlists-due', {
        connection: bull.duplicate(),
        prefix: `${testEnv.env.REDIS_KEY_PREFIX}bull`,
      });
      await events.waitUntilReady();
      const jobId = `watchlists-due-${minute.getTime() / 1000}`;
      await queues.enqueue('watchlists-due', { scheduled_at: minute.toISOString() }, jobId);
      const job = await new Queue('watchlists-due', {
        connection: bull,
        prefix: `${testEnv.env.REDIS_KEY_PREFIX}bull`,
      }).getJob(jobId);
      expect(await job!.waitUntilFinished(events, 20_000)).toEqual({ ticks: 2 });
      await events.close();

      // The scheduled ones (the rescans above are tick jobs too, with their rescan's id).
      const scheduled = async () =>
        (await queues.queue('watchlist-tick').getJobs(['waiting', 'active', 'completed', 'failed'])).filter(
          (j) => !j.id!.startsWith('rsc_'),
        );
      const ticks = await scheduled();
      const seconds = minute.getTime() / 1000;
      expect(ticks.map((j) => j.id).sort()).toEqual(
        [`deep-${deepDue}-${seconds}`, `tick-${tickDue}-${seconds}`].sort(),
      );
      const { rows } = await sql.query<{ id: string; next_tick_at: Date | null; next_deep_at: Date | null }>(
        'select id, next_tick_at, next_deep_at from watchlists where id = any($1)',
        [[tickDue, deepDue, notDue, unscheduled]],
      );
      const due = new Map(rows.map((r) => [r.id, r]));
      // The tick's next run: the next 5th minute after this one; the deep scan's: the next 03:00 UTC.
      const nextFifth = (Math.floor(minute.getTime() / 300_000) + 1) * 300_000;
      expect(due.get(tickDue)!.next_tick_at!.getTime()).toBe(nextFifth);
      expect(due.get(tickDue)!.next_deep_at).toEqual(future);
      expect(due.get(deepDue)!.next_deep_at!.getUTCHours()).toBe(3);
      expect(due.get(deepDue)!.next_deep_at!.getTime()).toBeGreaterThan(minute.getTime());
      expect(due.get(deepDue)!.next_tick_at!.getTime()).toBe(nextFifth); // the deep scan read the state too
      expect(due.get(notDue)).toMatchObject({ next_tick_at: future, next_deep_at: future });
      expect(due.get(unscheduled)).toMatchObject({ next_tick_at: null, next_deep_at: null });

      // The same minute again (a retry, a second scheduler): nothing more.
      await queues.enqueue('watchlists-due', { scheduled_at: minute.toISOString() }, `${jobId}-again`);
      await new Promise((r) => setTimeout(r, 1500));
      expect(await scheduled()).toHaveLength(2);

      // Agent health names the list that is never scanned.
      const health = await fetch(`${api.baseUrl}/api/agent/health`, {
        headers: { 'x-service-agent-key': AGENT_KEY },
      });
      const report = (await health.json()) as {
        checks: Record<string, { status: string; observed_value?: number; output?: string }[]>;
      };
      expect(report.checks['watchlists:unscheduled']).toEqual([
        expect.objectContaining({
          status: 'warn',
          observed_value: 1,
          output: expect.stringContaining(unscheduled) as unknown,
        }),
      ]);
    }, 60_000);
  });
});
