import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../../db/orm.js';
import { run, type Time } from '../../db/sql.js';

/** A rescan's row with `remaining`: of the entries on the list when it was asked for, those not yet done. */
export interface RescanRow {
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

/** The watchlist_rescans table; a rescan's progress is read from the entries' `deep_checked_at`. */
export class RescanRows {
  constructor(private readonly orm: Orm) {}

  /**
   * The list's last rescan, with the seconds since it was asked for and whether it stalled: no entry of the
   * list deep-scanned for `stalledS` since it was asked for or since the last one that was.
   */
  async last(
    em: EntityManager,
    accountId: string,
    watchlistId: string,
    stalledS: number,
  ): Promise<(RescanRow & { since_s: number; stalled: boolean }) | undefined> {
    const [row] = await em.execute<(RescanRow & { since_s: number; stalled: boolean })[]>(
      `select ${RESCAN_PROGRESS}, extract(epoch from now() - r.created_at)::float8 as since_s,
              greatest(r.created_at, (select max(e.deep_checked_at) from watchlist_entries e
                                      where e.watchlist_id = r.watchlist_id))
                < now() - make_interval(secs => ?) as stalled
         from watchlist_rescans r where r.watchlist_id = ? and r.account_id = ?
        order by r.created_at desc, r.id desc limit 1`,
      [stalledS, watchlistId, accountId],
    );
    return row;
  }

  /** A new rescan of the list, its total the entries on it now. */
  async insert(em: EntityManager, id: string, accountId: string, watchlistId: string): Promise<RescanRow> {
    const [row] = await em.execute<RescanRow[]>(
      `insert into watchlist_rescans (id, account_id, watchlist_id, total, created_at, finished_at)
       select ?::text, ?::text, ?::text, count(*)::int, now(), null::timestamptz
         from watchlist_entries where watchlist_id = ?
       returning id, watchlist_id, total, created_at, finished_at, total as remaining`,
      [id, accountId, watchlistId, watchlistId],
    );
    return row!;
  }

  async get(accountId: string, watchlistId: string, rescanId: string): Promise<RescanRow | undefined> {
    const [row] = await run<RescanRow[]>(
      this.orm,
      `select ${RESCAN_PROGRESS} from watchlist_rescans r
        where r.id = ? and r.watchlist_id = ? and r.account_id = ?`,
      [rescanId, watchlistId, accountId],
    );
    return row;
  }

  /** Records the rescan finished (once: a finish already recorded stays); its finish time. */
  async finish(rescanId: string, em?: EntityManager): Promise<Time | undefined> {
    const [row] = await run<{ finished_at: Time }[]>(
      em ?? this.orm,
      'update watchlist_rescans set finished_at = coalesce(finished_at, now()) where id = ? returning finished_at',
      [rescanId],
    );
    return row?.finished_at;
  }

  /**
   * Every list's last rescan while it is unfinished (not recorded finished, entries left): what a lost
   * Redis may have taken the jobs of. An older rescan of a list is never re-run: a new one was asked for
   * after it (a stalled one), and that one stands for it.
   */
  async unfinished(): Promise<{ id: string; watchlist_id: string }[]> {
    return run<{ id: string; watchlist_id: string }[]>(
      this.orm,
      `select id, watchlist_id from (
         select ${RESCAN_PROGRESS} from (
           select distinct on (watchlist_id) * from watchlist_rescans
            order by watchlist_id, created_at desc, id desc) r
          where r.finished_at is null) p
        where remaining > 0`,
    );
  }

  async delete(rescanId: string, em?: EntityManager): Promise<void> {
    await run(em ?? this.orm, 'delete from watchlist_rescans where id = ?', [rescanId], 'run');
  }
}
