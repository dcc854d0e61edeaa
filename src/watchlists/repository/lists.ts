import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../../db/orm.js';
import { run, Where, type Patch } from '../../db/sql.js';
import type { WatchlistRow } from '../views.js';

const WATCHLIST_COLUMNS =
  'w.id, w.name, w.schedule, w.deep_schedule, w.thresholds, w.next_tick_at, w.next_deep_at, w.created_at, ' +
  'w.updated_at';
/** The list's counter (watchlist_entry_counts, kept by triggers), not a count of its entries. */
const ENTRY_COUNT =
  'coalesce((select c.entries::int from watchlist_entry_counts c ' +
  'where c.account_id = w.account_id and c.watchlist_id = w.id), 0) as entry_count';

/** A new list's row. */
export interface NewListRow {
  id: string;
  accountId: string;
  name: string;
  schedule: string;
  deepSchedule: string;
  thresholds: Record<string, number>;
  nextTickAt: Date | null;
  nextDeepAt: Date | null;
  now: Date;
}

/** The watchlists table: every statement names the account, so another account's list is not found. */
export class ListRows {
  constructor(private readonly orm: Orm) {}

  async count(em: EntityManager, accountId: string): Promise<number> {
    const [row] = await em.execute<{ n: number }[]>(
      'select count(*)::int as n from watchlists where account_id = ?',
      [accountId],
    );
    return row?.n ?? 0;
  }

  async insert(em: EntityManager, r: NewListRow): Promise<WatchlistRow> {
    const [row] = await em.execute<WatchlistRow[]>(
      `insert into watchlists as w (id, account_id, name, schedule, deep_schedule, thresholds, next_tick_at,
              next_deep_at, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?)
       returning ${WATCHLIST_COLUMNS}, 0 as entry_count`,
      [
        r.id,
        r.accountId,
        r.name,
        r.schedule,
        r.deepSchedule,
        JSON.stringify(r.thresholds),
        r.nextTickAt,
        r.nextDeepAt,
        r.now,
        r.now,
      ],
    );
    return row!;
  }

  /** One page of the account's lists, newest first (`limit + 1` rows: the extra one tells of a next page). */
  page(accountId: string, limit: number, cursor: string | undefined): Promise<WatchlistRow[]> {
    const where = new Where('w.account_id = ?', accountId).before(cursor, 'wl', 'w.created_at', 'w.id');
    return run<WatchlistRow[]>(
      this.orm,
      `select ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT} from watchlists w where ${where.sql}
        order by w.created_at desc, w.id desc limit ?`,
      [...where.params, limit + 1],
    );
  }

  /** The account's list; in `em`'s transaction, locked FOR UPDATE. */
  async get(accountId: string, id: string, em?: EntityManager): Promise<WatchlistRow | undefined> {
    const [row] = await run<WatchlistRow[]>(
      em ?? this.orm,
      `select ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT} from watchlists w where w.id = ? and w.account_id = ?` +
        (em ? ' for update of w' : ''),
      [id, accountId],
    );
    return row;
  }

  /** Sets the patch's columns (and `updated_at`); undefined when the account has no such list. */
  async update(
    accountId: string,
    id: string,
    patch: Patch,
    em?: EntityManager,
  ): Promise<WatchlistRow | undefined> {
    const [row] = await run<WatchlistRow[]>(
      em ?? this.orm,
      `update watchlists w set ${patch.sql}, updated_at = now() where w.id = ? and w.account_id = ?
       returning ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT}`,
      [...patch.params, id, accountId],
    );
    return row;
  }

  /**
   * The list locked FOR UPDATE and deleted with its entries, their snapshots, its alerts and rescans (a
   * bulk add, which holds the list FOR SHARE, finishes first, or waits and finds no list); its row as it
   * was, or undefined when the account has no such list.
   */
  async delete(em: EntityManager, accountId: string, id: string): Promise<WatchlistRow | undefined> {
    const [row] = await em.execute<WatchlistRow[]>(
      `select ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT} from watchlists w where w.id = ? and w.account_id = ? for update`,
      [id, accountId],
    );
    if (!row) return undefined;
    for (const sql of [
      'delete from watchlist_alerts where watchlist_id = ? and account_id = ?',
      `delete from watchlist_snapshots s using watchlist_entries e
        where s.entry_id = e.id and e.watchlist_id = ? and e.account_id = ?`,
      'delete from watchlist_entries where watchlist_id = ? and account_id = ?',
      'delete from watchlist_rescans where watchlist_id = ? and account_id = ?',
    ])
      await em.execute(sql, [id, accountId], 'run');
    await em.execute('delete from watchlists where id = ? and account_id = ?', [id, accountId], 'run');
    return row;
  }

  /** Which of `ids` are lists of the account. */
  async existing(accountId: string, ids: readonly string[]): Promise<Set<string>> {
    const rows = await run<{ id: string }[]>(
      this.orm,
      'select id from watchlists where account_id = ? and id in (select jsonb_array_elements_text(?::jsonb))',
      [accountId, JSON.stringify(ids)],
    );
    return new Set(rows.map((r) => r.id));
  }

  /** Whether the account has the list; in `em`'s transaction, held by `lock`. */
  async exists(
    accountId: string,
    watchlistId: string,
    em?: EntityManager,
    lock: '' | 'for share' | 'for update' = '',
  ): Promise<boolean> {
    const [row] = await run<{ id: string }[]>(
      em ?? this.orm,
      `select id from watchlists where id = ? and account_id = ? ${lock}`,
      [watchlistId, accountId],
    );
    return row !== undefined;
  }
}
