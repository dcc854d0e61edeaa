import { decodeCursor, keysetPage, type Page } from '../platform/cursor.js';
import { idTime } from '../platform/ids.js';
import { AppError } from '../platform/errors.js';
import type { Orm } from '../db/orm.js';
import { AUDIT_LOG, DAY_MS, dropPartitionsBefore, rowPrunedPartitions } from '../db/partitions.js';
import { run, time, Where, type Time } from '../db/sql.js';
import type { ActorType } from './entities.js';

/** An audit record as the API and the export show it. */
export interface AuditView {
  id: string;
  accountId: string | null;
  at: Date;
  actor: { type: ActorType; id: string; label: string | null };
  action: string;
  resourceType: string;
  resourceId: string | null;
  requestId: string | null;
  clientAddress: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

/** Filters of a page of the log; every one optional. */
export interface AuditQuery {
  limit: number;
  cursor?: string | undefined;
  action?: string | undefined;
  resource_type?: string | undefined;
  resource_id?: string | undefined;
  actor_id?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
}

interface AuditRow {
  id: string;
  account_id: string | null;
  at: Time;
  actor_type: ActorType;
  actor_id: string;
  actor_label: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  request_id: string | null;
  client_address: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

const COLUMNS =
  'id, account_id, at, actor_type, actor_id, actor_label, action, resource_type, resource_id, ' +
  'request_id, client_address, before, after';

const viewOf = (r: AuditRow): AuditView => ({
  id: r.id,
  accountId: r.account_id,
  at: time(r.at),
  actor: { type: r.actor_type, id: r.actor_id, label: r.actor_label },
  action: r.action,
  resourceType: r.resource_type,
  resourceId: r.resource_id,
  requestId: r.request_id,
  clientAddress: r.client_address,
  before: r.before,
  after: r.after,
});

/** Rows per statement of the export and of the prune. */
const BATCH = 5000;
/** The trigger admits no DELETE with a younger cut-off (migration 20261128024154); a drop is held to it too. */
const MIN_RETENTION_DAYS = 30;

/** What an audit prune removed: records deleted one by one, and whole day partitions dropped. */
export interface AuditPrune {
  deleted: number;
  dropped: string[];
}

/**
 * A record looked up by id reads only the days around the id's time (a record's `at` is its transaction's
 * start, the id is made at its insert: milliseconds apart, a day is the margin for clocks): PostgreSQL
 * then plans those partitions, not every day of the retention (400 partitions: 17 ms of planning per
 * statement on a warm connection, 47–55 ms on a new one; 1–3 partitions: under 1 ms).
 */
export const AUDIT_BY_ID_SQL = `select ${COLUMNS} from audit_log where account_id = ? and id = ? and at >= ? and at < ?`;
/** How far below its top a page of the log is looked for first (see `page`). */
const RECENT_MS = 7 * DAY_MS;
const daysAround = (id: string, fallback: Date | string): [Date, Date] => {
  const t = idTime(id) ?? new Date(fallback).getTime();
  return [new Date(t - DAY_MS), new Date(t + DAY_MS)];
};

/**
 * The audit log as it is read: an account's records over the API (newest first, one index range per
 * page), every account's for the operator's export (oldest first, streamed in batches), and the retention
 * prune, the one DELETE the append-only trigger admits.
 */
export class AuditLogService {
  constructor(private readonly orm: Orm) {}

  /**
   * A page, newest first. It reads the week below its top first (the cursor's time, or now), and the
   * older days only when that week held less than a page: PostgreSQL plans only the days a statement can
   * reach, and a statement reaching every day of a 400-day retention costs 17–23 ms to plan (a week:
   * under 1 ms). A page after a cursor reads nothing newer than the cursor's row.
   */
  async page(accountId: string, q: AuditQuery): Promise<Page<AuditView>> {
    const c = q.cursor ? decodeCursor(q.cursor, 'aud') : undefined;
    const filtered = () => {
      const where = new Where('account_id = ?', accountId)
        .andIf(q.action, 'action = ?')
        .andIf(q.resource_type, 'resource_type = ?')
        .andIf(q.resource_id, 'resource_id = ?')
        .andIf(q.actor_id, 'actor_id = ?')
        .andIf(q.since, 'at >= ?')
        .andIf(q.until, 'at < ?');
      if (c) {
        // The cursor's time is to the millisecond; the row's own time (a record inserted with a finer
        // one) places the page exactly. A pruned row falls back to the cursor's time.
        const [from, to] = daysAround(c.id, c.at);
        where.and(
          `(at, id) < (coalesce((select p.at from audit_log p
             where p.id = ? and p.account_id = ? and p.at >= ? and p.at < ?), ?), ?)`,
          c.id,
          accountId,
          from,
          to,
          c.at,
          c.id,
        );
        where.and('at < ?', new Date(new Date(c.at).getTime() + 1));
      }
      return where;
    };
    const read = (where: Where, limit: number) =>
      run<AuditRow[]>(
        this.orm,
        `select ${COLUMNS} from audit_log where ${where.sql} order by at desc, id desc limit ?`,
        [...where.params, limit],
      );
    const recent = new Date((c ? new Date(c.at).getTime() : Date.now()) - RECENT_MS);
    let rows: AuditRow[];
    if (q.since && new Date(q.since) >= recent) rows = await read(filtered(), q.limit + 1);
    else {
      rows = await read(filtered().and('at >= ?', recent), q.limit + 1);
      if (rows.length <= q.limit)
        rows.push(...(await read(filtered().and('at < ?', recent), q.limit + 1 - rows.length)));
    }
    return keysetPage(rows.map(viewOf), q.limit, (r) => ({ at: r.at.toISOString(), id: r.id }));
  }

  /** One record of the account; another account's id is not found. */
  async get(accountId: string, id: string): Promise<AuditView> {
    const t = idTime(id);
    if (t === null) throw new AppError('not_found', `Audit record "${id.slice(0, 60)}" was not found.`);
    const [from, to] = daysAround(id, new Date(t));
    const [row] = await run<AuditRow[]>(this.orm, AUDIT_BY_ID_SQL, [accountId, id, from, to]);
    if (!row) throw new AppError('not_found', `Audit record "${id.slice(0, 60)}" was not found.`);
    return viewOf(row);
  }

  /**
   * Every record (of one account with `accountId`) in `[since, until)`, oldest first, in batches: what
   * `riskwatch audit export` writes as NDJSON. Keyset batches, so a log of any size streams in bounded
   * memory and records appended meanwhile (after `until`, or after the walk passed) are not half-read.
   */
  async *export(opts: { since?: Date; until?: Date; accountId?: string }): AsyncGenerator<AuditView[]> {
    // The last row's time as PostgreSQL's text, to the microsecond: a millisecond Date would repeat (for
    // ever) the rows of a batch whose times are finer.
    let after: { at: string; id: string } | undefined;
    const until = opts.until ?? new Date();
    for (;;) {
      const where = new Where('at < ?', until)
        .andIf(opts.since, 'at >= ?')
        .andIf(opts.accountId, 'account_id = ?');
      if (after) where.and('(at, id) > (?::timestamptz, ?)', after.at, after.id);
      const rows = await run<(AuditRow & { at_key: string })[]>(
        this.orm,
        `select ${COLUMNS}, at::text as at_key from audit_log where ${where.sql} order by at, id limit ?`,
        [...where.params, BATCH],
      );
      if (rows.length === 0) return;
      yield rows.map(viewOf);
      const last = rows[rows.length - 1]!;
      after = { at: last.at_key, id: last.id };
      if (rows.length < BATCH) return;
    }
  }

  /**
   * Removes records older than `retentionDays` (30 at least, as the trigger wants). Day partitions whose
   * whole day is older are dropped (a record outlives its retention by less than a day); the historical
   * and default partitions lose their old records by DELETE, in batches, each batch's transaction naming
   * its cut-off in `riskwatch.audit_prune_before`, which the trigger checks row by row.
   */
  async prune(retentionDays: number, now = new Date()): Promise<AuditPrune> {
    if (retentionDays < MIN_RETENTION_DAYS)
      throw new Error(`audit retention of ${retentionDays} days refused: ${MIN_RETENTION_DAYS} at least`);
    const cutoff = new Date(now.getTime() - retentionDays * DAY_MS);
    const dropped = await dropPartitionsBefore(this.orm, AUDIT_LOG, cutoff);
    let deleted = 0;
    for (const partition of await rowPrunedPartitions(this.orm, AUDIT_LOG)) {
      for (;;) {
        const n = await this.orm.em.fork().transactional(async (em) => {
          await run(em, `select set_config('riskwatch.audit_prune_before', ?, true)`, [cutoff.toISOString()]);
          // ctid names a row within one table: the partition's, never the parent's.
          const res = await run<{ affectedRows: number }>(
            em,
            `delete from "${partition}" where ctid = any(array(
               select ctid from "${partition}" where at < ? order by at limit ${BATCH}))`,
            [cutoff],
            'run',
          );
          return res.affectedRows;
        });
        deleted += n;
        if (n < BATCH) break;
      }
    }
    return { deleted, dropped };
  }
}
