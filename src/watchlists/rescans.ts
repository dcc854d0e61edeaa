import type { Actor } from '../audit/actor.js';
import { clip } from '../chains/registry.js';
import { time, timeOrNull } from '../db/sql.js';
import type { JobQueues } from '../jobs/queues.js';
import { AppError, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { auditRescanRequested, auditRescanWithdrawn } from './audit.js';
import { requireWatchlist } from './lists.js';
import type { WatchlistRepository } from './repository.js';
import type { RescanRow } from './repository/rescans.js';

/*
 * Rescans (docs/api.md, "Watchlists"): a full re-analysis of every entry of a list, asked for through the
 * API and done by the workers (a `watchlist-tick` job in `rescan` mode whose id is the rescan's). Progress
 * is read from the entries' `deep_checked_at`, so it needs no bookkeeping of its own. Every query names the
 * caller's account: another account's list or rescan is not found.
 */

export type RescanStatus = 'queued' | 'running' | 'completed';

export interface RescanView {
  id: string;
  watchlistId: string;
  total: number;
  checked: number;
  status: RescanStatus;
  createdAt: Date;
  finishedAt: Date | null;
}

/**
 * A rescan that made no progress for this long (no entry of the list deep-scanned since it was asked for
 * or since the last one that was) and whose tick job is no longer waiting or running no longer counts as
 * running: its chunks failed for good (a provider down past their retries). Another may be asked for.
 */
const RESCAN_STALLED_S = 3600;

export class RescansService {
  constructor(
    private readonly repo: WatchlistRepository,
    private readonly queues: Pick<JobQueues, 'enqueue' | 'queue'>,
    /** `watchlists.rescan_min_interval_s`: how soon after one rescan of a list another may be asked for. */
    private readonly minIntervalS: number,
  ) {}

  /**
   * Asks for a full re-analysis of every entry now: a rescan row (its total: the entries on the list) and
   * a `watchlist-tick` job in `rescan` mode whose id is the rescan's. Its progress: `getRescan`.
   *
   * One at a time per list: asked for while the list's last rescan still runs, the answer is that rescan.
   * And at most one per `minIntervalS` (every entry's full analysis spends the provider rate every
   * account shares): sooner is `rate_limited` with the seconds to wait. The list row is locked while this
   * is decided, so two concurrent calls cannot both start one. A new rescan is audited
   * (`watchlist.rescan_requested`) with its row; one whose job could not be queued is deleted again and
   * audited `watchlist.rescan_withdrawn` (the answer to the running one writes nothing).
   */
  async requestRescan(accountId: string, watchlistId: string, actor: Actor): Promise<RescanView> {
    const id = newId('rsc');
    const started = await this.repo.transactional(async (em) => {
      await requireWatchlist(this.repo.lists, accountId, watchlistId, em, 'for update');
      const last = await this.repo.rescans.last(em, accountId, watchlistId, RESCAN_STALLED_S);
      if (last) {
        if (!last.finished_at && last.remaining > 0 && !(last.stalled && !(await this.jobPending(last.id))))
          return { running: last };
        const wait = Math.ceil(this.minIntervalS - Number(last.since_s));
        if (wait > 0)
          throw new AppError(
            'rate_limited',
            `Watchlist ${watchlistId} was rescanned ${Math.floor(Number(last.since_s))} s ago; a list may be ` +
              `rescanned once every ${this.minIntervalS} s (watchlists.rescan_min_interval_s). ` +
              `Try again in ${wait} s.`,
            { retryAfterS: wait },
          );
        if (!last.finished_at && last.remaining === 0) await this.repo.rescans.finish(last.id, em);
      }
      const created = await this.repo.rescans.insert(em, id, accountId, watchlistId);
      await auditRescanRequested(em, actor, accountId, watchlistId, created);
      return { created };
    });
    if ('running' in started) {
      const view = this.rescanOf(started.running!);
      return { ...view, status: view.checked > 0 || (await this.jobStarted(view.id)) ? 'running' : 'queued' };
    }
    try {
      await this.queues.enqueue(
        'watchlist-tick',
        { watchlist_id: watchlistId, scan_id: id, mode: 'rescan' },
        id,
      );
    } catch (err) {
      // Not queued: no rescan either (a status that would never move).
      await this.repo
        .transactional(async (em) => {
          await this.repo.rescans.delete(id, em);
          await auditRescanWithdrawn(em, actor, accountId, watchlistId, id);
        })
        .catch(() => undefined);
      throw err;
    }
    return { ...this.rescanOf(started.created), status: 'queued', checked: 0 };
  }

  /**
   * A rescan's progress. `checked`: of the entries on the list when it was asked for, those deep-scanned
   * since (an entry removed meanwhile counts as done); completed when none is left, which is then
   * recorded once (`finished_at`).
   */
  async getRescan(accountId: string, watchlistId: string, rescanId: string): Promise<RescanView> {
    const row = await this.repo.rescans.get(accountId, watchlistId, rescanId);
    if (!row) throw notFound(`Rescan "${clip(rescanId)}" of watchlist "${clip(watchlistId)}"`);
    const view = this.rescanOf(row);
    if (view.finishedAt) return { ...view, status: 'completed', checked: view.total };
    if (row.remaining === 0) {
      const finished = await this.repo.rescans.finish(rescanId);
      return {
        ...view,
        status: 'completed',
        checked: view.total,
        finishedAt: finished ? time(finished) : new Date(),
      };
    }
    return { ...view, status: view.checked > 0 || (await this.jobStarted(rescanId)) ? 'running' : 'queued' };
  }

  /**
   * Enqueues once more the tick job of every list's unfinished rescan (its id is the rescan's, so one
   * still queued is not doubled): after Redis lost its jobs (src/jobs/redis-loss.ts). The tick fans the
   * whole list out again; entries already re-analysed since the rescan was asked for are analysed again
   * (the cost of a lost Redis, not of a wrong answer). How many rescans were enqueued.
   */
  async requeueUnfinished(): Promise<number> {
    const rescans = await this.repo.rescans.unfinished();
    for (const r of rescans)
      await this.queues.enqueue(
        'watchlist-tick',
        { watchlist_id: r.watchlist_id, scan_id: r.id, mode: 'rescan' },
        r.id,
      );
    return rescans.length;
  }

  /** Whether the rescan's tick job is still to run or running (Redis unreachable: assumed so). */
  private async jobPending(jobId: string): Promise<boolean> {
    try {
      const state = await this.queues.queue('watchlist-tick').getJobState(jobId);
      return state !== 'completed' && state !== 'failed' && state !== 'unknown';
    } catch {
      return true;
    }
  }

  /** Whether the rescan's tick job was picked up (it splits the list into chunk jobs, then completes). */
  private async jobStarted(jobId: string): Promise<boolean> {
    try {
      const state = await this.queues.queue('watchlist-tick').getJobState(jobId);
      return state === 'active' || state === 'completed' || state === 'failed';
    } catch {
      return false; // Redis unreachable: the progress from PostgreSQL still answers
    }
  }

  private rescanOf(r: RescanRow): RescanView {
    const total = Number(r.total);
    return {
      id: r.id,
      watchlistId: r.watchlist_id,
      total,
      checked: Math.max(0, Math.min(total, total - Number(r.remaining))),
      status: 'queued',
      createdAt: time(r.created_at),
      finishedAt: timeOrNull(r.finished_at),
    };
  }
}
