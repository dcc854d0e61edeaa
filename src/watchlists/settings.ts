import { z } from 'zod';
import { int, type EnvVars } from '../platform/config.js';
import { scheduleSchema } from './schedule.js';

/** Watchlists: the defaults of a new list, the ceiling per account, and how hard a worker scans. */
export const watchlistsSettings = z.object({
  /** The tick of a list created without `schedule`. */
  default_schedule: scheduleSchema,
  /** The deep scan of a list created without `deep_schedule`. */
  default_deep_schedule: scheduleSchema,
  /** Entries on all the account's watchlists together. */
  max_entries_per_account: int(1, 100_000_000),
  /** Watchlists of one account (each is scheduled: the ceiling bounds the scheduler's work per account). */
  max_per_account: int(1, 1_000_000),
  /** Seconds after a rescan of a list before another may be asked for (`429 rate_limited` sooner). */
  rescan_min_interval_s: int(0, 604_800),
  /** Chunk jobs (up to 100 entries each) one worker process runs at once. */
  scan_concurrency: int(1, 256),
  /** Full risk analyses one chunk job runs at once (entries whose state changed, deep scans). */
  deep_concurrency: int(1, 64),
});

export type WatchlistsSettings = z.infer<typeof watchlistsSettings>;

export const WATCHLISTS_ENV_VARS: EnvVars = {
  RISKWATCH_WATCHLIST_DEFAULT_SCHEDULE: 'watchlists.default_schedule',
  RISKWATCH_WATCHLIST_DEFAULT_DEEP_SCHEDULE: 'watchlists.default_deep_schedule',
  RISKWATCH_MAX_WATCHLIST_ENTRIES_PER_ACCOUNT: 'watchlists.max_entries_per_account',
  RISKWATCH_MAX_WATCHLISTS_PER_ACCOUNT: 'watchlists.max_per_account',
  RISKWATCH_WATCHLIST_RESCAN_MIN_INTERVAL_S: 'watchlists.rescan_min_interval_s',
  RISKWATCH_WATCHLIST_SCAN_CONCURRENCY: 'watchlists.scan_concurrency',
  RISKWATCH_WATCHLIST_DEEP_CONCURRENCY: 'watchlists.deep_concurrency',
};
