import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_BY_ID_SQL, AuditLogService } from '../../src/audit/service.js';
import { connectDatabase as connectOrm } from '../../src/database.js';
import { dayPartitionName, maintainPartitions, startOfUtcDay } from '../../src/db/partitions.js';
import { newId } from '../../src/platform/ids.js';
import type { UsageEntry } from '../../src/usage/recorder.js';
import { insertCalls } from '../../src/usage/repository.js';
import { UsageService } from '../../src/usage/service.js';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { createTestDatabase, REDIS_URL, testRedisPrefix } from '../support/env.js';
import { eventLog } from '../support/event-log.js';
import { eventually, MAIN, startService } from '../support/service.js';

const DAY = 86_400_000;
const TODAY = startOfUtcDay(new Date());
/** The migration's historical range ends at the start of tomorrow (no row present is later). */
const TOMORROW = TODAY + DAY;

/** A call as the usage drain stores it. */
const callAt = (at: number, account = 'acc_part'): UsageEntry => {
  const id = newId('use', at);
  return {
    id,
    account_id: account,
    api_key_id: 'key_a',
    api_key_prefix: 'rwk_part',
    method: 'GET',
    endpoint: '/api/v1/usage',
    status: 200,
    latency_ms: 12,
    request_id: id,
    at: new Date(at).toISOString(),
  };
};

/** `riskwatch doctor --json`'s finding on the day partitions of the database at `url`. */
async function doctorPartitions(url: string): Promise<{ status: string; detail: string }> {
  const { stdout } = await promisify(execFile)(process.execPath, [MAIN, 'doctor', '--json'], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, DATABASE_URL: url, REDIS_URL, REDIS_KEY_PREFIX: testRedisPrefix() },
  }).catch((e: { stdout: string }) => e); // exit 1 or 2: other checks (no worker) may warn
  const report = JSON.parse(stdout) as { checks: { check: string; status: string; detail: string }[] };
  const finding = report.checks.find((c) => c.check === 'postgres:partitions');
  if (!finding) throw new Error(`no postgres:partitions in ${stdout}`);
  return { status: finding.status, detail: finding.detail };
}

const ymd = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** A database migrated up to `to` (all when omitted), its ORM and a client. */
async function database(to?: string) {
  const db = await createTestDatabase();
  const orm = await connectOrm(db.url);
  await orm.migrator.up(to ? { to } : undefined);
  const sql = new pg.Client({ connectionString: db.url });
  await sql.connect();
  return {
    url: db.url,
    orm,
    sql,
    close: async () => {
      await sql.end();
      await orm.close();
      await db.drop();
    },
  };
}

const scalar = async (sql: pg.Client, query: string, params: unknown[] = []) =>
  Number(Object.values((await sql.query(query, params)).rows[0] as Record<string, unknown>)[0]);

/** Which partition holds each of `ids` of `table`. */
async function partitionOf(sql: pg.Client, table: string, ids: string[]): Promise<Record<string, string>> {
  const rows = await sql.query<{ id: string; p: string }>(
    `select id, tableoid::regclass::text as p from ${table} where id = any($1)`,
    [ids],
  );
  return Object.fromEntries(rows.rows.map((r) => [r.id, r.p]));
}

/** Calls counted by the day rollups (all dimensions), and calls stored: equal while the trigger works. */
const rolledUp = (sql: pg.Client) =>
  scalar(sql, "select coalesce(sum(calls), 0) from usage_rollups where grain = 'day' and dims = 0");

describe('day partitions: the migration', () => {
  let t: Awaited<ReturnType<typeof database>>;
  beforeAll(async () => {
    t = await database('Migration20261128024154');
  }, 60_000);
  afterAll(() => t.close());

  it('keeps every row of a populated database, attaches it as the historical partition, moves the triggers', async () => {
    const { sql, orm } = t;
    const calls = Array.from({ length: 500 }, (_, i) => callAt(TODAY - 40 * DAY + i * 2 * 3_600_000));
    // A row later than today (a clock ahead): the historical range must cover it too.
    const ahead = callAt(TODAY + 3 * DAY + 5_000);
    // As the drain stored calls before the migration (its key was the id alone).
    await sql.query(
      `insert into usage_records (id, account_id, api_key_id, api_key_prefix, method, endpoint, status,
              latency_ms, request_id, at)
       select id, account_id, api_key_id, api_key_prefix, method, endpoint, status, latency_ms, request_id, at
         from jsonb_populate_recordset(null::usage_records, $1::jsonb)
       on conflict (id) do nothing`,
      [JSON.stringify([...calls, ahead])],
    );
    for (let i = 0; i < 50; i++)
      await sql.query(
        `insert into audit_log (id, account_id, at, actor_type, actor_id, action, resource_type)
         values ($1, 'acc_part', $2, 'operator', 'test', 'test.old', 'test')`,
        [newId('aud'), new Date(TODAY - i * DAY)],
      );
    await sql.query(
      `insert into webhook_attempts (id, account_id, delivery_id, endpoint_id, attempted_at, latency_ms)
       select 'wha_' || g, 'acc_part', 'whd_' || g, 'we_1', now() - g * interval '1 hour', 5
         from generate_series(1, 200) g`,
    );
    const before = {
      usage: await scalar(sql, 'select count(*) from usage_records'),
      rollups: await rolledUp(sql),
      audit: await scalar(sql, 'select count(*) from audit_log'),
      attempts: await scalar(sql, 'select count(*) from webhook_attempts'),
      checksum: await scalar(sql, 'select sum(hashtext(id || at::text || latency_ms)) from usage_records'),
    };
    expect(before).toMatchObject({ usage: 501, rollups: 501, audit: 50, attempts: 200 });

    await orm.migrator.up();

    expect({
      usage: await scalar(sql, 'select count(*) from usage_records'),
      rollups: await rolledUp(sql),
      audit: await scalar(sql, 'select count(*) from audit_log'),
      attempts: await scalar(sql, 'select count(*) from webhook_attempts'),
      checksum: await scalar(sql, 'select sum(hashtext(id || at::text || latency_ms)) from usage_records'),
    }).toEqual(before);
    for (const table of ['usage_records', 'audit_log', 'webhook_attempts'])
      expect(await scalar(sql, `select count(*) from only ${table}_historical`)).toBe(
        await scalar(sql, `select count(*) from ${table}`),
      );
    const bound = await sql.query<{ b: string }>(
      "select pg_get_expr(relpartbound, oid) as b from pg_class where relname = 'usage_records_historical'",
    );
    const upper = new Date(TODAY + 4 * DAY).toISOString().slice(0, 10);
    expect(bound.rows[0]!.b).toMatch(
      new RegExp(`^FOR VALUES FROM \\(MINVALUE\\) TO \\('${upper} 00:00:00\\+00'\\)$`),
    );
    const kind = await sql.query<{ relname: string; relkind: string }>(
      "select relname, relkind from pg_class where relname in ('usage_records', 'audit_log', 'webhook_attempts') order by 1",
    );
    expect(kind.rows.map((r) => r.relkind)).toEqual(['p', 'p', 'p']);

    // New calls through the parent: counted once by the moved trigger, whichever partition takes them; a
    // replayed batch (same ids and times) inserts nothing and counts nothing.
    const fresh = [callAt(Date.now()), callAt(TODAY + 10 * DAY)];
    await insertCalls(orm, fresh);
    await insertCalls(orm, fresh);
    expect(await scalar(sql, 'select count(*) from usage_records')).toBe(503);
    expect(await rolledUp(sql)).toBe(503);
    expect(
      await partitionOf(
        sql,
        'usage_records',
        fresh.map((c) => c.id),
      ),
    ).toEqual({
      [fresh[0]!.id]: 'usage_records_historical',
      [fresh[1]!.id]: 'usage_records_default',
    });

    // The audit log is still append-only, through the parent or a partition.
    const refused = /audit_log is append-only/;
    await expect(sql.query("update audit_log set action = 'forged'")).rejects.toThrow(refused);
    await expect(sql.query('delete from audit_log_historical')).rejects.toThrow(refused);
    await expect(sql.query('truncate audit_log')).rejects.toThrow(refused);
    await expect(sql.query('truncate audit_log_historical')).rejects.toThrow(refused);
    await expect(sql.query('truncate audit_log_default')).rejects.toThrow(refused);
    expect(await scalar(sql, 'select count(*) from audit_log')).toBe(50);
  }, 60_000);
  it('goes back to plain tables (down) with every row of every partition, and up again', async () => {
    const { sql, orm } = t;
    const count = async () => ({
      usage: await scalar(sql, 'select count(*) from usage_records'),
      audit: await scalar(sql, 'select count(*) from audit_log'),
      attempts: await scalar(sql, 'select count(*) from webhook_attempts'),
      rollups: await rolledUp(sql),
    });
    const before = await count();
    await orm.migrator.down({ to: 'Migration20261128024154' });
    expect(await count()).toEqual(before);
    const kind = await sql.query<{ relkind: string }>(
      "select relkind from pg_class where relname in ('usage_records', 'audit_log', 'webhook_attempts')",
    );
    expect(kind.rows.map((r) => r.relkind)).toEqual(['r', 'r', 'r']);
    await expect(sql.query('truncate audit_log')).rejects.toThrow(/append-only/);
    await orm.migrator.up();
    expect(await count()).toEqual(before);
  }, 60_000);
});

describe('day partitions: made ahead, the default partition, retention', () => {
  let t: Awaited<ReturnType<typeof database>>;
  beforeAll(async () => {
    t = await database();
  }, 60_000);
  afterAll(() => t.close());

  it('lands inserts in DEFAULT while no job runs, then moves them into the day made for them', async () => {
    const { sql, orm } = t;
    // Just migrated, no job run yet: nothing waits, no day ahead is made (worth knowing, not a warning).
    const fresh = await doctorPartitions(t.url);
    expect(fresh.status).toBe('info');
    expect(fresh.detail).toMatch(/^day partitions made through \d{4}-\d{2}-\d{2} \(UTC\), none ahead yet: /);
    const waiting = [callAt(TOMORROW + 1000), callAt(TOMORROW + 2 * DAY + 1000), callAt(TODAY + 30 * DAY)];
    await insertCalls(orm, waiting);
    // A record's id carries its time, as the service makes them.
    const auditId = newId('aud', TOMORROW + 5000);
    await sql.query(
      `insert into audit_log (id, account_id, at, actor_type, actor_id, action, resource_type)
       values ($1, 'acc_part', $2, 'operator', 'test', 'test.ahead', 'test')`,
      [auditId, new Date(TOMORROW + 5000)],
    );
    expect(
      Object.values(
        await partitionOf(
          sql,
          'usage_records',
          waiting.map((c) => c.id),
        ),
      ),
    ).toEqual(['usage_records_default', 'usage_records_default', 'usage_records_default']);
    const counted = await rolledUp(sql);
    // The doctor sees them waiting: a warning naming each default and its rows.
    const before = await doctorPartitions(t.url);
    expect(before.status).toBe('warn');
    expect(before.detail).toMatch(
      /^usage_records_default 3 row\(s\), audit_log_default 1 row\(s\) wait in a default partition: /,
    );

    const made = await maintainPartitions(orm, 3);
    // Today is inside the historical range; tomorrow and the next two days are made, and the day of the
    // row waiting 30 days ahead too (a default holding rows of a day would refuse that day's partition).
    const days = [1, 2, 3, 30].map((d) => TODAY + d * DAY);
    expect(made.usage_records).toEqual(days.map((d) => dayPartitionName('usage_records', d)));
    expect(made.audit_log).toEqual(days.slice(0, 3).map((d) => dayPartitionName('audit_log', d)));
    expect(made.webhook_attempts).toEqual(
      days.slice(0, 3).map((d) => dayPartitionName('webhook_attempts', d)),
    );
    expect(
      await partitionOf(
        sql,
        'usage_records',
        waiting.map((c) => c.id),
      ),
    ).toEqual({
      [waiting[0]!.id]: dayPartitionName('usage_records', TOMORROW),
      [waiting[1]!.id]: dayPartitionName('usage_records', TOMORROW + 2 * DAY),
      [waiting[2]!.id]: dayPartitionName('usage_records', TODAY + 30 * DAY),
    });
    expect(await scalar(sql, 'select count(*) from usage_records_default')).toBe(0);
    // Made through the third day ahead on every table (the usage days run further).
    expect(await doctorPartitions(t.url)).toEqual({
      status: 'ok',
      detail: `usage_records, webhook_attempts, audit_log: day partitions made through ${ymd(TODAY + 3 * DAY)} (UTC); no default row`,
    });
    // Moved, not inserted again: the rollups count each call once.
    expect(await rolledUp(sql)).toBe(counted);
    expect(await partitionOf(sql, 'audit_log', [auditId])).toEqual({
      [auditId]: dayPartitionName('audit_log', TOMORROW),
    });
    // Read by id, it is found through the days around its id's time only: PostgreSQL plans those
    // partitions, not every day of the retention (nor the default).
    expect((await new AuditLogService(orm).get('acc_part', auditId)).id).toBe(auditId);
    let n = 0;
    const plan = await sql.query<{ 'QUERY PLAN': string }>(
      `explain ${AUDIT_BY_ID_SQL.replace(/\?/g, () => `$${++n}`)}`,
      ['acc_part', auditId, new Date(TOMORROW + 5000 - DAY), new Date(TOMORROW + 5000 + DAY)],
    );
    const scanned = [
      ...plan.rows
        .map((r) => r['QUERY PLAN'])
        .join('\n')
        .matchAll(/ on (audit_log_\w+)/g),
    ].map((m) => m[1]);
    expect(scanned.sort()).toEqual(
      [
        'audit_log_historical',
        dayPartitionName('audit_log', TOMORROW),
        dayPartitionName('audit_log', TOMORROW + DAY),
      ].sort(),
    );
    // The moved record and the re-attached default are guarded as before.
    await expect(sql.query('delete from audit_log where id = $1', [auditId])).rejects.toThrow(/append-only/);
    await expect(sql.query(`truncate ${dayPartitionName('audit_log', TOMORROW)}`)).rejects.toThrow(
      /append-only/,
    );
    await expect(sql.query('truncate audit_log_default')).rejects.toThrow(/append-only/);
    const defaults = await sql.query<{ n: string }>(
      "select count(*) as n from pg_inherits i join pg_class c on c.oid = i.inhrelid where c.relname like '%\\_default' and pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'",
    );
    expect(Number(defaults.rows[0]!.n)).toBe(3);

    // Idempotent: run again, nothing to make.
    expect(await maintainPartitions(orm, 3)).toEqual({
      usage_records: [],
      webhook_attempts: [],
      audit_log: [],
    });
    // New calls of a made day go straight to it.
    const direct = callAt(TOMORROW + DAY + 7);
    await insertCalls(orm, [direct]);
    expect(await partitionOf(sql, 'usage_records', [direct.id])).toEqual({
      [direct.id]: dayPartitionName('usage_records', TOMORROW + DAY),
    });
  }, 60_000);

  it('drops usage days past the retention whole, with their rollups', async () => {
    const { sql, orm } = t;
    const total = await scalar(sql, 'select count(*) from usage_records');
    // Seven days from now, a retention of 4 days: everything before the start of the day 3 days from now.
    const now = new Date(TODAY + 7 * DAY + 3_600_000);
    const kept = await scalar(sql, 'select count(*) from usage_records where at >= $1', [
      new Date(TODAY + 3 * DAY),
    ]);
    const result = await new UsageService(orm).prune(4, now);
    expect(result.dropped).toEqual([
      'usage_records_historical',
      dayPartitionName('usage_records', TODAY + DAY),
      dayPartitionName('usage_records', TODAY + 2 * DAY),
    ]);
    expect(result.deleted).toBe(0);
    expect(await scalar(sql, 'select count(*) from usage_records')).toBe(kept);
    expect(kept).toBeLessThan(total);
    expect(await rolledUp(sql)).toBe(kept);
    expect(
      await scalar(sql, 'select count(*) from usage_rollups where start < $1', [new Date(TODAY + 3 * DAY)]),
    ).toBe(0);
    // Once more: nothing left to drop.
    expect(await new UsageService(orm).prune(4, now)).toEqual({ deleted: 0, dropped: [] });
  }, 60_000);

  it('pages calls newest first across days: from the last day first, from every day when it holds less', async () => {
    const { orm } = t;
    const account = 'acc_page';
    const now = Date.now();
    const calls = [now - 5 * DAY, now - 3 * DAY, now - 2 * 3_600_000].map((at) => callAt(at, account));
    await insertCalls(orm, calls);
    const usage = new UsageService(orm);
    const first = await usage.query(account, { limit: 2 });
    expect(first.kind).toBe('calls');
    if (first.kind !== 'calls') return;
    expect(first.summary.total).toBe(3);
    expect(first.items.map((c) => c.id)).toEqual([calls[2]!.id, calls[1]!.id]);
    const second = await usage.query(account, { limit: 2, cursor: first.nextCursor! });
    if (second.kind !== 'calls') return;
    expect(second.items.map((c) => c.id)).toEqual([calls[0]!.id]);
    expect(second.nextCursor).toBeNull();
  }, 60_000);

  it('never drops a day of webhook attempts holding an attempt of a delivery still pending', async () => {
    const { sql, orm } = t;
    const attempt = (delivery: string, at: number) =>
      sql.query(
        `insert into webhook_attempts (id, account_id, delivery_id, endpoint_id, attempted_at, latency_ms)
         values ($1, 'acc_part', $2, 'we_1', $3, 5)`,
        [newId('wha', at), delivery, new Date(at)],
      );
    const delivery = async (id: string, status: string, eventAt: number) => {
      const eventId = newId('evt', eventAt);
      await sql.query(
        `insert into events (id, account_id, seq, type, watchlist_id, data, created_at)
         values ($1, 'acc_part', $2, 'watchlist.alert', null, '{}', $3)`,
        [eventId, Math.floor(Math.random() * 1e9), new Date(eventAt)],
      );
      await sql.query(
        `insert into webhook_deliveries (id, account_id, endpoint_id, event_id, event_seq, status, attempts,
                next_attempt_at, created_at)
         values ($1, 'acc_part', 'we_1', $2, 0, $3, 1, $4, $5)`,
        [id, eventId, status, status === 'pending' ? new Date(eventAt) : null, new Date(eventAt)],
      );
    };
    // The pending delivery's event is younger than the retention (it is kept, and so is its delivery).
    await delivery('whd_pending', 'pending', TODAY + 6 * DAY);
    await delivery('whd_done', 'succeeded', TODAY + DAY);
    await attempt('whd_pending', TODAY + DAY + 1000);
    await attempt('whd_done', TODAY + DAY + 2000);
    await attempt('whd_done', TODAY + 2 * DAY + 1000);

    const settings = {
      event_retention_days: 3,
      retry_schedule_s: [5],
      retry_jitter_pct: 0,
      retry_after_max_s: 0,
    };
    const now = new Date(TODAY + 7 * DAY);
    const first = await eventLog(orm, settings).prune(now);
    // Retention 3 days from 7 days on: every day before the 4th goes, but the one with a pending attempt.
    expect(first.dropped).toEqual([
      'webhook_attempts_historical',
      dayPartitionName('webhook_attempts', TODAY + 2 * DAY),
      dayPartitionName('webhook_attempts', TODAY + 3 * DAY),
    ]);
    expect(
      await scalar(sql, `select count(*) from ${dayPartitionName('webhook_attempts', TODAY + DAY)}`),
    ).toBe(2);

    // Delivered at last: its day goes at the next prune.
    await sql.query("update webhook_deliveries set status = 'succeeded' where id = 'whd_pending'");
    const second = await eventLog(orm, settings).prune(now);
    expect(second.dropped).toEqual([dayPartitionName('webhook_attempts', TODAY + DAY)]);
  }, 60_000);

  it('drops audit days whose whole day is past the retention', async () => {
    const { sql, orm } = t;
    const now = new Date(TODAY + 40 * DAY + 3_600_000);
    const result = await new AuditLogService(orm).prune(38, now);
    expect(result).toEqual({
      deleted: 0,
      dropped: ['audit_log_historical', dayPartitionName('audit_log', TODAY + DAY)],
    });
    expect(await scalar(sql, 'select count(*) from audit_log')).toBe(0);
    await expect(new AuditLogService(orm).prune(29, now)).rejects.toThrow(/30 at least/);
  }, 60_000);
});

describe('day partitions: the running service', () => {
  it('makes the partitions ahead when the scheduler starts', async () => {
    const t = await database();
    const service = await startService(
      {
        DATABASE_URL: t.url,
        REDIS_URL,
        REDIS_KEY_PREFIX: testRedisPrefix(),
        LOG_LEVEL: 'warn',
        RISKWATCH_SECRETS_KEY: randomBytes(32).toString('hex'),
        RISKWATCH_PARTITIONS_DAYS_AHEAD: '2',
      },
      'all',
    );
    try {
      // Every table's partitions of tomorrow and the day after (today is in the historical range), and
      // nothing else: the scheduler enqueued the job at start, a worker ran it.
      const days = [1, 2].map((d) => TODAY + d * DAY);
      const names = ['usage_records', 'webhook_attempts', 'audit_log'].flatMap((table) =>
        days.map((d) => dayPartitionName(table, d)),
      );
      const made = () =>
        scalar(t.sql, "select count(*) from pg_class where relkind = 'r' and relname ~ '_p[0-9]{8}$'");
      await eventually(async () => (await made()) === names.length, 20_000);
      expect(await scalar(t.sql, 'select count(*) from pg_class where relname = any($1)', [names])).toBe(6);
    } finally {
      await service.stop();
      await t.close();
    }
  }, 60_000);

  it('refuses to start when the event retention is shorter than the webhook retry window', async () => {
    const run = promisify(execFile);
    const err = await run(process.execPath, [MAIN, 'api'], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, RISKWATCH_EVENT_RETENTION_DAYS: '1' },
    }).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err?.code).toBe(78);
    expect(err?.stderr.trim()).toMatch(
      /^config: RISKWATCH_EVENT_RETENTION_DAYS \(webhooks\.event_retention_days\): 1 days is shorter than the webhook retry window \(2\.0 days/,
    );
  });
});
