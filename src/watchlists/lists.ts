import type { EntityManager } from '@mikro-orm/postgresql';
import { lockAccount } from '../accounts/lock.js';
import { clip } from '../chains/registry.js';
import type { Orm } from '../db/orm.js';
import { Patch, run, Where } from '../db/sql.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { AppError, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { nextRunAfter } from './schedule.js';
import type { NewWatchlist, WatchlistUpdate } from './schemas.js';
import {
  ENTRY_COUNT,
  thresholdsOf,
  WATCHLIST_COLUMNS,
  watchlistOf,
  type WatchlistRow,
  type WatchlistView,
} from './views.js';

/*
 * An account's watchlists (the lists themselves; their entries: entries.ts; snapshots and alerts:
 * history.ts; rescans: rescans.ts; the scans that fill them: scan.ts, in the workers). Every query names
 * the caller's account, so another account's id is simply not found.
 */

export interface WatchlistsOptions {
  /** `watchlists.default_schedule`, `watchlists.default_deep_schedule`. */
  defaultSchedule: string;
  defaultDeepSchedule: string;
  /** `watchlists.max_per_account`: watchlists of one account. */
  maxWatchlistsPerAccount: number;
}

/** Watchlists of an account: create, list, read, change, delete. */
export class WatchlistsService {
  constructor(
    private readonly orm: Orm,
    private readonly options: WatchlistsOptions,
  ) {}

  /**
   * Creates a list, its due times computed from its crons now. An account holds at most
   * `maxWatchlistsPerAccount` lists: concurrent creations are counted one after the other (the account row
   * is locked), and one more is `limit_exceeded`.
   */
  async createWatchlist(accountId: string, input: NewWatchlist): Promise<WatchlistView> {
    const schedule = input.schedule ?? this.options.defaultSchedule;
    const deepSchedule = input.deep_schedule ?? this.options.defaultDeepSchedule;
    const now = new Date();
    const row = await this.orm.em.fork().transactional(async (em) => {
      const account = await lockAccount(em, accountId);
      const max = this.options.maxWatchlistsPerAccount;
      const [counted] = await em.execute<{ n: number }[]>(
        'select count(*)::int as n from watchlists where account_id = ?',
        [accountId],
      );
      const n = counted?.n ?? 0;
      if (n >= max)
        throw new AppError(
          'limit_exceeded',
          `Account ${account} already has ${n} watchlists; the limit is ${max} ` +
            '(watchlists.max_per_account / RISKWATCH_MAX_WATCHLISTS_PER_ACCOUNT). Delete one to create ' +
            'another (a watchlist holds many entries, on any network).',
        );
      const [inserted] = await em.execute<WatchlistRow[]>(
        `insert into watchlists as w (id, account_id, name, schedule, deep_schedule, thresholds, next_tick_at,
                next_deep_at, created_at, updated_at)
         values (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?)
         returning ${WATCHLIST_COLUMNS}, 0 as entry_count`,
        [
          newId('wl'),
          accountId,
          input.name,
          schedule,
          deepSchedule,
          JSON.stringify(thresholdsOf(input.thresholds)),
          nextRunAfter(schedule, now),
          nextRunAfter(deepSchedule, now),
          now,
          now,
        ],
      );
      return inserted!;
    });
    return watchlistOf(row);
  }

  /** The account's watchlists, newest first. */
  async listWatchlists(
    accountId: string,
    q: { limit: number; cursor?: string | undefined },
  ): Promise<Page<WatchlistView>> {
    const where = new Where('w.account_id = ?', accountId).before(q.cursor, 'wl', 'w.created_at', 'w.id');
    const rows = await run<WatchlistRow[]>(
      this.orm,
      `select ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT} from watchlists w where ${where.sql}
        order by w.created_at desc, w.id desc limit ?`,
      [...where.params, q.limit + 1],
    );
    return keysetPage(
      rows.map((r) => watchlistOf(r)),
      q.limit,
      (w) => ({ at: w.createdAt.toISOString(), id: w.id }),
    );
  }

  async getWatchlist(accountId: string, id: string): Promise<WatchlistView> {
    const [row] = await run<WatchlistRow[]>(
      this.orm,
      `select ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT} from watchlists w where w.id = ? and w.account_id = ?`,
      [id, accountId],
    );
    if (!row) throw watchlistNotFound(id);
    return watchlistOf(row);
  }

  /** Changes the fields given; `thresholds` replaces the thresholds (a field left out takes its default). */
  async updateWatchlist(accountId: string, id: string, patch: WatchlistUpdate): Promise<WatchlistView> {
    const patchSet = new Patch();
    const set = (column: string, value: unknown, cast = '') => patchSet.set(column, value, cast);
    if (patch.name !== undefined) set('name', patch.name);
    // A changed cron's next due time is computed from now.
    const now = new Date();
    if (patch.schedule !== undefined) {
      set('schedule', patch.schedule);
      set('next_tick_at', nextRunAfter(patch.schedule, now));
    }
    if (patch.deep_schedule !== undefined) {
      set('deep_schedule', patch.deep_schedule);
      set('next_deep_at', nextRunAfter(patch.deep_schedule, now));
    }
    if (patch.thresholds !== undefined)
      set('thresholds', JSON.stringify(thresholdsOf(patch.thresholds)), '::jsonb');
    if (patchSet.empty) return this.getWatchlist(accountId, id);
    const [row] = await run<WatchlistRow[]>(
      this.orm,
      `update watchlists w set ${patchSet.sql}, updated_at = now() where w.id = ? and w.account_id = ?
       returning ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT}`,
      [...patchSet.params, id, accountId],
    );
    if (!row) throw watchlistNotFound(id);
    return watchlistOf(row);
  }

  /** Deletes the list with its entries, their snapshots, its alerts and rescans, in one transaction. */
  async deleteWatchlist(accountId: string, id: string): Promise<WatchlistView> {
    return this.orm.em.fork().transactional(async (em) => {
      // FOR UPDATE: a bulk add (which holds the list FOR SHARE) finishes first, or waits and finds no list.
      const [row] = await em.execute<WatchlistRow[]>(
        `select ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT} from watchlists w where w.id = ? and w.account_id = ? for update`,
        [id, accountId],
      );
      if (!row) throw watchlistNotFound(id);
      await em.execute(
        'delete from watchlist_alerts where watchlist_id = ? and account_id = ?',
        [id, accountId],
        'run',
      );
      await em.execute(
        `delete from watchlist_snapshots s using watchlist_entries e
          where s.entry_id = e.id and e.watchlist_id = ? and e.account_id = ?`,
        [id, accountId],
        'run',
      );
      await em.execute(
        'delete from watchlist_entries where watchlist_id = ? and account_id = ?',
        [id, accountId],
        'run',
      );
      await em.execute(
        'delete from watchlist_rescans where watchlist_id = ? and account_id = ?',
        [id, accountId],
        'run',
      );
      await em.execute('delete from watchlists where id = ? and account_id = ?', [id, accountId], 'run');
      return watchlistOf(row);
    });
  }

  /** Which of `ids` are watchlists of the account (webhooks' endpoint filter asks, through the composition). */
  async existing(accountId: string, ids: readonly string[]): Promise<ReadonlySet<string>> {
    const rows = await run<{ id: string }[]>(
      this.orm,
      'select id from watchlists where account_id = ? and id in (select jsonb_array_elements_text(?::jsonb))',
      [accountId, JSON.stringify(ids)],
    );
    return new Set(rows.map((r) => r.id));
  }
}

const watchlistNotFound = (id: string) => notFound(`Watchlist "${clip(id)}"`);

/** The account's watchlist, else `not_found` (another account's list included); `lock` holds it. */
export async function requireWatchlist(
  em: EntityManager,
  accountId: string,
  watchlistId: string,
  lock: '' | 'for share' | 'for update' = '',
): Promise<void> {
  const [row] = await em.execute<{ id: string }[]>(
    `select id from watchlists where id = ? and account_id = ? ${lock}`,
    [watchlistId, accountId],
  );
  if (!row) throw watchlistNotFound(watchlistId);
}
