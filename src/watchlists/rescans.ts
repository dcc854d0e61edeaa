import { clip } from '../chains/registry.js';
import type { Orm } from '../db/orm.js';
import type { JobQueues } from '../jobs/queues.js';
import { AppError, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { requireWatchlist } from './lists.js';

/*
 * Rescans (docs/api.md, "Watchlists"): a full re-analysis of every entry of a list, asked for through the
 * API and done by the workers (a `watchlist-tick` job in `rescan` mode whose id is the rescan's). Progress
 * is read from the entries' `deep_checked_at`, so it needs no bookkeeping of its own. Every query names the
 * caller's account: another account's list or rescan is not found.
 */

type Time = Date | string;
const time = (t: Time): Date => new Date(t);
const timeOrNull = (t: Time | null): Date | null => (t === null ? null : new Date(t));

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

interface RescanRow {
  id: string;
  watchlist_id: string;
  total: number;
  created_at: Time;
  finished_at: Time | null;
  remaining: number;
}

/**
 * A rescan's columns and `remaining`: of the entries on the list when it was asked for, those not
 * deep-scanned since (0 once it is recorded finished).
 */
const RESCAN_PROGRESS = `r.id, r.watchlist_id, r.total, r.created_at, r.finished_at,
  case when r.finished_at is not null then 0 else (
    select count(*)::int from watchlist_entries e
     where e.watchlist_id = r.watchlist_id and e.created_at <= r.created_at
       and (e.deep_checked_at is null or e.deep_checked_at < r.created_at)) end as remaining`;
/**
 * A rescan that made no progress for this long (no entry of the list deep-scanned since it was asked for
 * or since the last one that was) and whose tick job is no longer waiting or running no longer counts as
 * running: its chunks failed for good (a provider down past their retries). Another may be asked for.
 */
const RESCAN_STALLED_S = 3600;

export class RescansService {
  constructor(
    private readonly orm: Orm,
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
   * is decided, so two concurrent calls cannot both start one.
   */
  async requestRescan(accountId: string, watchlistId: string): Promise<RescanView> {
    const id = newId('rsc');
    const started = await this.orm.em.fork().transactional(async (em) => {
      await requireWatchlist(em, accountId, watchlistId, 'for update');
      const [last] = await em.execute<(RescanRow & { since_s: number; stalled: boolean })[]>(
        `select ${RESCAN_PROGRESS}, extract(epoch from now() - r.created_at)::float8 as since_s,
                greatest(r.created_at, (select max(e.deep_checked_at) from watchlist_entries e
                                        where e.watchlist_id = r.watchlist_id))
                  < now() - make_interval(secs => ?) as stalled
           from watchlist_rescans r where r.watchlist_id = ? and r.account_id = ?
          order by r.created_at desc, r.id desc limit 1`,
        [RESCAN_STALLED_S, watchlistId, accountId],
      );
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
        if (!last.finished_at && last.remaining === 0)
          await em.execute('update watchlist_rescans set finished_at = now() where id = ?', [last.id], 'run');
      }
      const [inserted] = await em.execute<RescanRow[]>(
        `insert into watchlist_rescans (id, account_id, watchlist_id, total, created_at, finished_at)
         select ?::text, ?::text, ?::text, count(*)::int, now(), null::timestamptz
           from watchlist_entries where watchlist_id = ?
         returning id, watchlist_id, total, created_at, finished_at, total as remaining`,
        [id, accountId, watchlistId, watchlistId],
      );
      return { created: inserted! };
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
      await this.run('delete from watchlist_rescans where id = ?', [id]).catch(() => undefined);
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
    const [row] = await this.run<RescanRow[]>(
      `select ${RESCAN_PROGRESS} from watchlist_rescans r
        where r.id = ? and r.watchlist_id = ? and r.account_id = ?`,
      [rescanId, watchlistId, accountId],
    );
    if (!row) throw notFound(`Rescan "${clip(rescanId)}" of watchlist "${clip(watchlistId)}"`);
    const view = this.rescanOf(row);
    if (view.finishedAt) return { ...view, status: 'completed', checked: view.total };
    if (row.remaining === 0) {
      const [done] = await this.run<{ finished_at: Time }[]>(
        `update watchlist_rescans set finished_at = coalesce(finished_at, now()) where id = ? returning finished_at`,
        [rescanId],
      );
      return {
        ...view,
        status: 'completed',
        checked: view.total,
        finishedAt: done ? time(done.finished_at) : new Date(),
      };
    }
    return { ...view, status: view.checked > 0 || (await this.jobStarted(rescanId)) ? 'running' : 'queued' };
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

  private run<T>(sql: string, params: unknown[]): Promise<T> {
    return this.orm.em.getConnection().execute(sql, params) as Promise<T>;
  }
}
