import type { EntityManager } from '@mikro-orm/postgresql';
import { lockAccount } from '../accounts/lock.js';
import type { Actor } from '../audit/actor.js';
import { clip } from '../chains/registry.js';
import { Patch } from '../db/sql.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { AppError, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { auditWatchlistCreated, auditWatchlistDeleted, auditWatchlistUpdated } from './audit.js';
import type { WatchlistRepository } from './repository.js';
import type { ListRows } from './repository/lists.js';
import { nextRunAfter } from './schedule.js';
import type { NewWatchlist, WatchlistUpdate } from './schemas.js';
import { thresholdsOf, watchlistOf, type WatchlistView } from './views.js';

/*
 * An account's watchlists (the lists themselves; their entries: entries.ts; snapshots and alerts:
 * history.ts; rescans: rescans.ts; the scans that fill them: scan.ts, in the workers). Every statement
 * (repository/lists.ts) names the caller's account, so another account's id is simply not found. Every
 * change is audited (audit.ts) in its transaction, by the `Actor` that asked for it.
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
    private readonly repo: WatchlistRepository,
    private readonly options: WatchlistsOptions,
  ) {}

  /**
   * Creates a list, its due times computed from its crons now. An account holds at most
   * `maxWatchlistsPerAccount` lists: concurrent creations are counted one after the other (the account row
   * is locked), and one more is `limit_exceeded`.
   */
  async createWatchlist(accountId: string, input: NewWatchlist, actor: Actor): Promise<WatchlistView> {
    const schedule = input.schedule ?? this.options.defaultSchedule;
    const deepSchedule = input.deep_schedule ?? this.options.defaultDeepSchedule;
    const now = new Date();
    const row = await this.repo.transactional(async (em) => {
      const account = await lockAccount(em, accountId);
      const max = this.options.maxWatchlistsPerAccount;
      const n = await this.repo.lists.count(em, accountId);
      if (n >= max)
        throw new AppError(
          'limit_exceeded',
          `Account ${account} already has ${n} watchlists; the limit is ${max} ` +
            '(watchlists.max_per_account / RISKWATCH_MAX_WATCHLISTS_PER_ACCOUNT). Delete one to create ' +
            'another (a watchlist holds many entries, on any network).',
        );
      const created = await this.repo.lists.insert(em, {
        id: newId('wl'),
        accountId,
        name: input.name,
        schedule,
        deepSchedule,
        thresholds: { ...thresholdsOf(input.thresholds) },
        nextTickAt: nextRunAfter(schedule, now),
        nextDeepAt: nextRunAfter(deepSchedule, now),
        now,
      });
      await auditWatchlistCreated(em, actor, accountId, created);
      return created;
    });
    return watchlistOf(row);
  }

  /** The account's watchlists, newest first. */
  async listWatchlists(
    accountId: string,
    q: { limit: number; cursor?: string | undefined },
  ): Promise<Page<WatchlistView>> {
    const rows = await this.repo.lists.page(accountId, q.limit, q.cursor);
    return keysetPage(
      rows.map((r) => watchlistOf(r)),
      q.limit,
      (w) => ({ at: w.createdAt.toISOString(), id: w.id }),
    );
  }

  async getWatchlist(accountId: string, id: string): Promise<WatchlistView> {
    const row = await this.repo.lists.get(accountId, id);
    if (!row) throw watchlistNotFound(id);
    return watchlistOf(row);
  }

  /** Changes the fields given; `thresholds` replaces the thresholds (a field left out takes its default). */
  async updateWatchlist(
    accountId: string,
    id: string,
    patch: WatchlistUpdate,
    actor: Actor,
  ): Promise<WatchlistView> {
    const set = new Patch();
    if (patch.name !== undefined) set.set('name', patch.name);
    // A changed cron's next due time is computed from now.
    const now = new Date();
    if (patch.schedule !== undefined)
      set.set('schedule', patch.schedule).set('next_tick_at', nextRunAfter(patch.schedule, now));
    if (patch.deep_schedule !== undefined)
      set
        .set('deep_schedule', patch.deep_schedule)
        .set('next_deep_at', nextRunAfter(patch.deep_schedule, now));
    if (patch.thresholds !== undefined)
      set.set('thresholds', JSON.stringify(thresholdsOf(patch.thresholds)), '::jsonb');
    if (set.empty) return this.getWatchlist(accountId, id);
    const row = await this.repo.transactional(async (em) => {
      const before = await this.repo.lists.get(accountId, id, em);
      if (!before) throw watchlistNotFound(id);
      const after = await this.repo.lists.update(accountId, id, set, em);
      if (!after) throw watchlistNotFound(id);
      await auditWatchlistUpdated(em, actor, accountId, before, after);
      return after;
    });
    return watchlistOf(row);
  }

  /** Deletes the list with its entries, their snapshots, its alerts and rescans, in one transaction. */
  async deleteWatchlist(accountId: string, id: string, actor: Actor): Promise<WatchlistView> {
    const row = await this.repo.transactional(async (em) => {
      const deleted = await this.repo.lists.delete(em, accountId, id);
      if (!deleted) throw watchlistNotFound(id);
      await auditWatchlistDeleted(em, actor, accountId, deleted);
      return deleted;
    });
    return watchlistOf(row);
  }

  /** Which of `ids` are watchlists of the account (webhooks' endpoint filter asks, through the composition). */
  existing(accountId: string, ids: readonly string[]): Promise<ReadonlySet<string>> {
    return this.repo.lists.existing(accountId, ids);
  }
}

const watchlistNotFound = (id: string) => notFound(`Watchlist "${clip(id)}"`);

/**
 * The account's watchlist, else `not_found` (another account's list included); in `em`'s transaction,
 * held by `lock`.
 */
export async function requireWatchlist(
  lists: ListRows,
  accountId: string,
  watchlistId: string,
  em?: EntityManager,
  lock: '' | 'for share' | 'for update' = '',
): Promise<void> {
  if (!(await lists.exists(accountId, watchlistId, em, lock))) throw watchlistNotFound(watchlistId);
}
