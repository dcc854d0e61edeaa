import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What the watchlist overview gauges read: entries on every list, and the oldest check. */
export interface WatchOverview {
  entries: number;
  /** Seconds since the least recently checked entry was checked (or added, if never). 0 without entries. */
  oldestCheckAgeS: number;
}

/** How long a worker reuses the overview between scrapes: the query counts every entry. */
const OVERVIEW_TTL_MS = 15_000;

/**
 * Watchlist metrics of a worker process. The gauges are read at scrape time (cached 15 s) from PostgreSQL,
 * so every worker reports the same numbers: take `max()` across instances.
 */
export class WatchMetrics {
  readonly scans: Counter<'mode' | 'outcome'>;
  readonly alerts: Counter<'type' | 'severity'>;
  readonly snapshots: Counter;
  readonly chunkDuration: Histogram<'mode'>;
  readonly tickDuration: Histogram<'mode'>;

  constructor(registry: Registry, overview: () => Promise<WatchOverview>) {
    let cached: { at: number; value: WatchOverview } | undefined;
    const read = async (): Promise<WatchOverview> => {
      if (!cached || Date.now() - cached.at > OVERVIEW_TTL_MS)
        cached = { at: Date.now(), value: await overview() };
      return cached.value;
    };
    new Gauge({
      name: 'riskwatch_watchlist_entries',
      help: 'Entries on all watchlists.',
      registers: [registry],
      async collect() {
        this.set((await read()).entries);
      },
    });
    new Gauge({
      name: 'riskwatch_watchlist_oldest_check_age_seconds',
      help: 'Seconds since the most overdue watchlist entry was last checked (or added, if never checked).',
      registers: [registry],
      async collect() {
        this.set((await read()).oldestCheckAgeS);
      },
    });
    this.scans = new Counter({
      name: 'riskwatch_watchlist_scans_total',
      help: 'Watchlist entries scanned, by scan mode (tick, deep, rescan) and outcome (ok, incomplete, or an error code).',
      labelNames: ['mode', 'outcome'],
      registers: [registry],
    });
    this.alerts = new Counter({
      name: 'riskwatch_watchlist_alerts_total',
      help: 'Watchlist alerts raised, by type and severity.',
      labelNames: ['type', 'severity'],
      registers: [registry],
    });
    this.snapshots = new Counter({
      name: 'riskwatch_watchlist_snapshots_total',
      help: 'Watchlist snapshots written (one per entry whose state changed).',
      registers: [registry],
    });
    this.chunkDuration = new Histogram({
      name: 'riskwatch_watchlist_chunk_duration_seconds',
      help: 'Duration of one chunk job (up to 100 entries: read, compare, store).',
      labelNames: ['mode'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    });
    this.tickDuration = new Histogram({
      name: 'riskwatch_watchlist_tick_duration_seconds',
      help: 'Duration of a whole watchlist scan, from its tick job to its last chunk.',
      labelNames: ['mode'],
      buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers: [registry],
    });
  }
}
