import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../../db/orm.js';
import { run, textArray } from '../../db/sql.js';
import type { ChunkWrite, PreviousSnapshot, ScannedEntry } from '../judge.js';

/*
 * The scans' SQL (scan.ts runs the pipeline): the due lists of a minute, a list's entry ids by network,
 * one chunk's entries and their last snapshots, and a chunk's write in one transaction.
 */

/** A list whose tick or deep scan is due. */
export interface DueList {
  id: string;
  schedule: string;
  deep_schedule: string;
  tick_due: boolean | null;
  deep_due: boolean | null;
}

/** A due list's schedules moved on (undefined: that schedule was not due and stays). */
export interface MovedList {
  id: string;
  next_tick_at: Date | null | undefined;
  next_deep_at: Date | null | undefined;
}

/**
 * A list's networks, smallest first: the first, then each next one after it (`network > n.network`), each
 * the first key of an index range.
 */
export const NETWORKS_SQL = `with recursive n(network) as (
    (select network from watchlist_entries where watchlist_id = ? order by network limit 1)
    union all
    select (select e.network from watchlist_entries e
             where e.watchlist_id = ? and e.network > n.network order by e.network limit 1)
      from n where n.network is not null)
  select network from n where network is not null`;

/** A page of the fan-out: up to `limit` ids of the list on a network after an id (?, ?, ?), in id order. */
export const entryIdsSql = (limit: number) =>
  `select id from watchlist_entries where watchlist_id = ? and network = ? and id > ?
    order by id limit ${limit}`;

/**
 * Runs `fn` (reads that page or probe an index in its order) in a transaction whose planner may not sort.
 * While a list has no statistics (imported after the table's last ANALYZE: autovacuum analyses after 10 %
 * of the table changed, which a new list of millions on a table of tens of millions may never reach
 * before its first ticks), the planner believes the list holds one row and takes the smallest index on
 * watchlist_id (one deduplicated down to a few pages: `last_checked_at`, all NULL on a new list), then
 * sorts the list: every row of it for each page of 1,000 (65 ms instead of 0.5 ms at 100,000 entries).
 * Without a sort, only an index in the order asked for is left: (watchlist_id, network, id).
 * test/e2e/watchlists-scale.test.ts explains both on a list the planner has not seen.
 */
export function inIndexOrder<T>(orm: Orm, fn: (em: EntityManager) => Promise<T>): Promise<T> {
  return orm.em.fork().transactional(async (em) => {
    await em.execute('set local enable_sort = off', [], 'run');
    return fn(em);
  });
}

export class ScanRepository {
  constructor(private readonly orm: Orm) {}

  /**
   * Entries on every watchlist (the public impact's `targets_monitored`): the accounts' counters
   * (watchlist_entry_counts, kept by triggers), not a count of millions of rows.
   */
  async countEntries(): Promise<number> {
    const [row] = await run<{ n: string | null }[]>(
      this.orm,
      'select sum(entries) as n from watchlist_entry_counts',
    );
    return Number(row?.n ?? 0);
  }

  /**
   * Up to `limit` lists (ids after `after`) due at `minute`, locked in `em`'s transaction until their due
   * times are moved on (`moveDue`).
   */
  lockDue(em: EntityManager, minute: Date, after: string, limit: number): Promise<DueList[]> {
    return em.execute<DueList[]>(
      `select id, schedule, deep_schedule, next_tick_at <= ?::timestamptz as tick_due,
              next_deep_at <= ?::timestamptz as deep_due
         from watchlists
        where (next_tick_at <= ?::timestamptz or next_deep_at <= ?::timestamptz) and id > ?
        order by id limit ${limit} for update`,
      [minute, minute, minute, minute, after],
      'all',
    );
  }

  async moveDue(em: EntityManager, moved: readonly MovedList[]): Promise<void> {
    if (moved.length === 0) return;
    await em.execute(
      `update watchlists w
          set next_tick_at = case when u.tick then u.next_tick_at else w.next_tick_at end,
              next_deep_at = case when u.deep then u.next_deep_at else w.next_deep_at end
         from jsonb_to_recordset(?::jsonb) as u(id text, tick boolean, next_tick_at timestamptz,
              deep boolean, next_deep_at timestamptz)
        where w.id = u.id`,
      [
        JSON.stringify(
          moved.map((m) => ({
            id: m.id,
            tick: m.next_tick_at !== undefined,
            next_tick_at: m.next_tick_at ?? null,
            deep: m.next_deep_at !== undefined,
            next_deep_at: m.next_deep_at ?? null,
          })),
        ),
      ],
      'run',
    );
  }

  /**
   * The networks of a list's entries, in order: one index probe per network (a skip scan of
   * (watchlist_id, network, id)), not a read of every entry of the list.
   */
  async networksOf(watchlistId: string): Promise<string[]> {
    const rows = await inIndexOrder(this.orm, (em) =>
      em.execute<{ network: string }[]>(NETWORKS_SQL, [watchlistId, watchlistId], 'all'),
    );
    return rows.map((r) => r.network);
  }

  /** Up to `limit` entry ids of the list on `network`, after `after`, in id order. */
  async entryIds(watchlistId: string, network: string, after: string, limit: number): Promise<string[]> {
    const rows = await inIndexOrder(this.orm, (em) =>
      em.execute<{ id: string }[]>(entryIdsSql(limit), [watchlistId, network, after], 'all'),
    );
    return rows.map((r) => r.id);
  }

  /** The list's stored thresholds; undefined when the list is gone. */
  async thresholds(watchlistId: string): Promise<Record<string, number> | undefined> {
    const [row] = await run<{ thresholds: Record<string, number> }[]>(
      this.orm,
      'select thresholds from watchlists where id = ?',
      [watchlistId],
    );
    return row?.thresholds;
  }

  /** The chunk's entries still on list `watchlistId`, in id order. */
  async entries(watchlistId: string, ids: readonly string[]): Promise<ScannedEntry[]> {
    const rows = await run<ScannedEntry[]>(
      this.orm,
      // By primary key alone: with stale statistics the planner would scan the list for the watchlist id.
      `select id, account_id, watchlist_id, chain, network, target, target_type, state_hash, snapshot_id, verdict,
              approvals_cursor_block
         from watchlist_entries where id = any(?::text[]) order by id`,
      [textArray(ids)],
    );
    return rows.filter((r) => r.watchlist_id === watchlistId);
  }

  /** The entries' last snapshots, by id. */
  async snapshotsOf(entries: readonly ScannedEntry[]): Promise<Map<string, PreviousSnapshot>> {
    const ids = entries.map((e) => e.snapshot_id).filter((id): id is string => id !== null);
    if (ids.length === 0) return new Map();
    const rows = await run<PreviousSnapshot[]>(
      this.orm,
      'select id, state, hash, read_at_height from watchlist_snapshots where id = any(?::text[])',
      [textArray(ids)],
    );
    return new Map(rows.map((r) => [r.id, r]));
  }

  /**
   * A chunk's snapshots, alerts and entry columns, in `em`'s transaction; returns the snapshots and the
   * alerts written (an entry removed while its chunk ran leaves nothing behind; a retried scan's snapshot
   * keeps the first attempt's row, and a repeated alert is skipped). The approvals cursor never moves back
   * (`greatest` skips the null of a scan that did not read the approvals, and a slower scan's older head).
   */
  async writeChunk(
    em: EntityManager,
    w: ChunkWrite,
    now: Date,
  ): Promise<{
    snapshots: number;
    alerts: { id: string; entry_id: string; type: string; severity: string }[];
  }> {
    const written = w.snapshots.length
      ? await em.execute<{ id: string; entry_id: string }[]>(
          `insert into watchlist_snapshots (id, account_id, entry_id, scan_id, state, hash, read_at_height, read_at, verdict)
           select id, account_id, entry_id, scan_id, state, hash, read_at_height, read_at, verdict
             from jsonb_to_recordset(?::jsonb) as r(id text, account_id text, entry_id text, scan_id text,
                  state jsonb, hash text, read_at_height bigint, read_at timestamptz, verdict jsonb)
            where exists (select 1 from watchlist_entries e where e.id = r.entry_id)
           on conflict (entry_id, scan_id) do update
             set state = excluded.state, hash = excluded.hash, read_at_height = excluded.read_at_height,
                 read_at = excluded.read_at, verdict = excluded.verdict
           returning id, entry_id`,
          [JSON.stringify(w.snapshots)],
          'all',
        )
      : [];
    const byEntry = new Map(written.map((r) => [r.entry_id, r.id]));
    const updates = w.updates.map((u) => ({
      ...u,
      snapshot_id: u.snapshot_id ? (byEntry.get(u.id) ?? u.snapshot_id) : null,
    }));
    const raised = w.alerts.length
      ? await em.execute<{ id: string; entry_id: string; type: string; severity: string }[]>(
          `insert into watchlist_alerts (id, account_id, watchlist_id, entry_id, target, network, type, severity,
                  previous, current, evidence, fingerprint, scan_id, status, created_at, updated_at)
           select id, account_id, watchlist_id, entry_id, target, network, type, severity, previous, current,
                  evidence, fingerprint, scan_id, 'open', created_at, created_at
             from jsonb_to_recordset(?::jsonb) as r(id text, account_id text, watchlist_id text, entry_id text,
                  target text, network text, type text, severity text, previous jsonb, current jsonb,
                  evidence jsonb, fingerprint text, scan_id text, created_at timestamptz)
            where exists (select 1 from watchlist_entries e where e.id = r.entry_id)
           on conflict (entry_id, fingerprint) do nothing
           returning id, entry_id, type, severity`,
          [JSON.stringify(w.alerts)],
          'all',
        )
      : [];
    await em.execute(
      `update watchlist_entries e
          set last_checked_at = ?::timestamptz,
              last_outcome = u.outcome,
              state_hash = u.state_hash,
              snapshot_id = coalesce(u.snapshot_id, e.snapshot_id),
              changed_at = coalesce(u.changed_at, e.changed_at),
              risk_level = coalesce(u.risk_level, e.risk_level),
              risk_score = coalesce(u.risk_score, e.risk_score),
              verdict = coalesce(u.verdict, e.verdict),
              deep_checked_at = case when u.deep then ?::timestamptz else e.deep_checked_at end,
              approvals_cursor_block = greatest(e.approvals_cursor_block, u.approvals_cursor_block)
         from jsonb_to_recordset(?::jsonb) as u(id text, outcome text, state_hash text, snapshot_id text,
              changed_at timestamptz, risk_level text, risk_score int, verdict jsonb, deep boolean,
              approvals_cursor_block bigint)
        where e.id = u.id`,
      [now.toISOString(), now.toISOString(), JSON.stringify(updates)],
      'run',
    );
    return { snapshots: written.length, alerts: raised };
  }

  /** Records why a chunk could not read its states (best effort: the job is retried). */
  async markOutcome(entryIds: readonly string[], outcome: string): Promise<void> {
    await run(this.orm, 'update watchlist_entries set last_outcome = ? where id = any(?::text[])', [
      outcome,
      textArray(entryIds),
    ]).catch(() => undefined);
  }

  /** Entries on every list, and the oldest check (or addition, for one never checked). */
  async overview(): Promise<{ entries: number; oldest: Date | null }> {
    const [row] = await run<{ entries: string; oldest: Date | null }[]>(
      this.orm,
      'select count(*) as entries, min(coalesce(last_checked_at, created_at)) as oldest from watchlist_entries',
    );
    return { entries: Number(row?.entries ?? 0), oldest: row?.oldest ? new Date(row.oldest) : null };
  }
}
