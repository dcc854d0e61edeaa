import { jsonText, type JsonText } from '../http/route.js';
import type { Logger } from '../platform/logger.js';
import type { Orm } from '../db/orm.js';
import { presentImpact, type ImpactCounts } from './present.js';
import type { ImpactBody } from './schemas.js';

/** Counter names features add to (`impact_counters.metric`). */
export const IMPACT_METRICS = [
  'assessments',
  'token_scans',
  'preflights',
  'preflights_blocked',
  'preflights_warned',
  'high_risk_findings',
  'alerts_delivered',
] as const;
export type ImpactMetric = (typeof IMPACT_METRICS)[number];

const HOUR_MS = 3_600_000;

/**
 * The public impact numbers. `refresh()` (a worker job) folds the hourly counters into one snapshot row;
 * API processes serve an in-memory copy of that row, re-read every few seconds and serialised once, so the
 * endpoint costs no query and no serialisation per request.
 */
export class ImpactService {
  private current: JsonText<ImpactBody> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Counts not yet written, by metric, then by hour (epoch ms of the hour's start). */
  private pending = new Map<ImpactMetric, Map<number, number>>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly orm: Orm,
    private readonly chains: () => string[],
    private readonly logger: Logger,
    /** Addresses on watchlists now (a level, not a counter: removing entries lowers it). */
    private readonly watchedTargets: () => Promise<number> = () => Promise.resolve(0),
  ) {}

  /**
   * Counts `n` of `metric` in the current hour. Kept in memory and written by `flushCounts` (every few
   * seconds and at shutdown), never on the request path; a failed write keeps the counts for the next one.
   */
  count(metric: ImpactMetric, n = 1, now = Date.now()): void {
    if (n <= 0) return;
    const hour = now - (now % HOUR_MS);
    let byHour = this.pending.get(metric);
    if (!byHour) this.pending.set(metric, (byHour = new Map<number, number>()));
    byHour.set(hour, (byHour.get(hour) ?? 0) + n);
  }

  /** Adds the pending counts to impact_counters in one statement. */
  async flushCounts(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const rows = [...batch].flatMap(([metric, byHour]) =>
      [...byHour].map(([hour, count]) => ({ metric, hour: new Date(hour).toISOString(), count })),
    );
    try {
      await this.orm.em.getConnection().execute(
        `insert into impact_counters (metric, hour, count)
           select r.metric, r.hour, r.count
             from jsonb_to_recordset(?::jsonb) as r(metric text, hour timestamptz, count bigint)
         on conflict (metric, hour) do update set count = impact_counters.count + excluded.count`,
        [JSON.stringify(rows)],
        'run',
      );
    } catch (err) {
      for (const [metric, byHour] of batch)
        for (const [hour, count] of byHour) this.count(metric, count, hour);
      throw err;
    }
  }

  /** Writes pending counts every `everyMs` (the roles that count: api, worker). */
  startFlushing(everyMs: number): void {
    if (this.flushTimer) return; // the `all` role starts it twice (api and worker)
    this.flushTimer = setInterval(() => {
      this.flushCounts().catch((err: Error) =>
        this.logger.warn({ err: { message: err.message } }, 'impact counters not written yet; will retry'),
      );
    }, everyMs);
    this.flushTimer.unref();
  }

  /** Stops the timer and writes what is pending (graceful shutdown). */
  async stopFlushing(): Promise<void> {
    clearInterval(this.flushTimer);
    this.flushTimer = undefined;
    await this.flushCounts();
  }

  /**
   * Stores the counts up to `now` as the snapshot and returns it. The row holds the document as the
   * endpoint serves it, so every API process (whatever its version) serves the row as it is.
   */
  async refresh(now = new Date()): Promise<ImpactBody> {
    const body = presentImpact(await this.countsAt(now));
    await this.orm.em.getConnection().execute(
      `insert into impact_snapshots (id, body, generated_at) values (1, ?, ?)
       on conflict (id) do update set body = excluded.body, generated_at = excluded.generated_at`,
      [JSON.stringify(body), now],
    );
    return body;
  }

  private async countsAt(now: Date): Promise<ImpactCounts> {
    const rows = await this.orm.em
      .getConnection()
      .execute<{ metric: string; total: string; last_24h: string }[]>(
        `select metric, sum(count) as total,
              coalesce(sum(count) filter (where hour > ?::timestamptz - interval '24 hours'), 0) as last_24h
         from impact_counters group by metric`,
        [now],
      );
    const value = (metric: ImpactMetric, field: 'total' | 'last_24h' = 'total') =>
      Number(rows.find((r) => r.metric === metric)?.[field] ?? 0);
    return {
      generatedAt: now,
      assessments: { total: value('assessments'), last24h: value('assessments', 'last_24h') },
      tokenScans: { total: value('token_scans'), last24h: value('token_scans', 'last_24h') },
      preflights: {
        total: value('preflights'),
        blocked: value('preflights_blocked'),
        warned: value('preflights_warned'),
      },
      highRiskFindings: { total: value('high_risk_findings') },
      watchlists: {
        targetsMonitored: await this.watchedTargets(),
        alertsDelivered: value('alerts_delivered'),
      },
      chains: this.chains(),
    };
  }

  /** Re-reads the snapshot row now and then every `reloadMs`; builds one if none exists yet. */
  async startReloading(reloadMs: number): Promise<void> {
    await this.reload().catch((err: Error) =>
      this.logger.warn({ err: { message: err.message } }, 'impact load failed'),
    );
    this.timer = setInterval(() => {
      this.reload().catch((err: Error) =>
        this.logger.warn({ err: { message: err.message } }, 'impact reload failed'),
      );
    }, reloadMs);
    this.timer.unref();
  }

  stopReloading(): void {
    clearInterval(this.timer);
  }

  private async reload(): Promise<void> {
    const rows = await this.orm.em
      .getConnection()
      .execute<{ body: ImpactBody }[]>('select body from impact_snapshots where id = 1');
    const body = rows[0]?.body ?? (await this.refresh());
    // Serialized once per reload, not per request: the endpoint is hit by anyone, often.
    this.current = jsonText(body);
  }

  /** The latest snapshot, or undefined when none could be loaded yet (database unreachable since start). */
  snapshot(): JsonText<ImpactBody> | undefined {
    return this.current;
  }
}
