import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../db/orm.js';
import { EntryRows } from './repository/entries.js';
import { HistoryRows } from './repository/history.js';
import { ListRows } from './repository/lists.js';
import { RescanRows } from './repository/rescans.js';
import { ScanRepository } from './repository/scans.js';

/*
 * Watchlists' five tables (watchlists, watchlist_entries, watchlist_snapshots, watchlist_alerts,
 * watchlist_rescans) behind one repository: every statement of the feature is in repository/, a file per
 * table group, and the services (lists.ts, entries.ts, history.ts, rescans.ts, scan.ts) hold the rules.
 */
export class WatchlistRepository {
  readonly lists: ListRows;
  readonly entries: EntryRows;
  readonly history: HistoryRows;
  readonly rescans: RescanRows;
  /** The scans' reads and writes (the workers' side). */
  readonly scans: ScanRepository;

  constructor(private readonly orm: Orm) {
    this.lists = new ListRows(orm);
    this.entries = new EntryRows(orm);
    this.history = new HistoryRows(orm);
    this.rescans = new RescanRows(orm);
    this.scans = new ScanRepository(orm);
  }

  /** Runs `fn` in a transaction of its own. */
  transactional<T>(fn: (em: EntityManager) => Promise<T>): Promise<T> {
    return this.orm.em.fork().transactional(fn);
  }
}
