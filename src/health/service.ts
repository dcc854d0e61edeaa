import type { RedisClient } from '../platform/redis.js';
import type { ChainProviders } from '../chains/providers.js';
import { pendingMigrations } from '../db/migrate.js';
import { aliveWorkers } from '../jobs/heartbeat.js';
import type { JobQueues } from '../jobs/queues.js';
import type { Orm } from '../db/orm.js';
import { UsageDrain } from '../usage/drain.js';
import type { HealthStatus } from './schemas.js';

/** One check's result. */
export interface CheckResult {
  status: HealthStatus;
  /** Which component of several (a queue, a provider). */
  componentId?: string;
  observedValue?: number;
  observedUnit?: string;
  oldestWaitS?: number;
  /** A provider's chain head (slot or block). */
  head?: number;
  /** What went wrong. */
  output?: string;
}

/** The whole install's health: the worst of its checks, by check name. */
export interface HealthReport {
  status: HealthStatus;
  version: string;
  releaseId: string;
  uptimeS: number;
  checks: Record<string, CheckResult[]>;
}

/** A queue whose oldest job has waited this long is a warning: work is not being picked up. */
const QUEUE_STALE_S = 120;
const CHECK_TIMEOUT_MS = 2000;

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await Promise.race([
    fn(),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS).unref(),
    ),
  ]);
  return { ms: Math.round(performance.now() - started), value };
}

/**
 * Readiness (can this process serve?) and deep health (is the whole install healthy?). Migrations are
 * re-checked until current, then remembered: they cannot become pending while this version runs.
 */
export class HealthService {
  private migrationsCurrent = false;
  private readonly startedAt = Date.now();

  constructor(
    private readonly deps: {
      orm: Orm;
      redis: RedisClient;
      queues: JobQueues;
      providers: ChainProviders;
      usageStreamKey: string;
      version: string;
      releaseId: string;
    },
  ) {}

  private async pending(): Promise<number> {
    if (this.migrationsCurrent) return 0;
    const n = await pendingMigrations(this.deps.orm);
    this.migrationsCurrent = n === 0;
    return n;
  }

  async ready(): Promise<boolean> {
    try {
      await timed(() => this.deps.orm.em.getConnection().execute('select 1'));
      await timed(() => this.deps.redis.ping());
      return (await timed(() => this.pending())).value === 0;
    } catch {
      return false;
    }
  }

  async deep(): Promise<HealthReport> {
    const { orm, redis, queues, usageStreamKey } = this.deps;
    const checks: Record<string, CheckResult[]> = {};
    const fail = (err: unknown): CheckResult => ({ status: 'fail', output: (err as Error).message });

    checks['postgres:responseTime'] = [
      await timed(() => orm.em.getConnection().execute('select 1')).then(
        ({ ms }) => ({ status: 'pass' as HealthStatus, observedValue: ms, observedUnit: 'ms' }),
        fail,
      ),
    ];
    checks['redis:responseTime'] = [
      await timed(() => redis.ping()).then(
        ({ ms }) => ({ status: 'pass' as HealthStatus, observedValue: ms, observedUnit: 'ms' }),
        fail,
      ),
    ];
    checks['migrations:pending'] = [
      await timed(() => this.pending()).then(
        ({ value }) => ({ status: (value === 0 ? 'pass' : 'fail') as HealthStatus, observedValue: value }),
        fail,
      ),
    ];
    checks['queues:waiting'] = await timed(async () => {
      const jobs = await queues.waiting();
      const usage = await UsageDrain.backlog(redis, usageStreamKey);
      return [...jobs, { name: 'usage-drain', ...usage }];
    }).then(
      ({ value }) =>
        value.map((q): CheckResult => ({
          status: q.oldestWaitS > QUEUE_STALE_S ? 'warn' : 'pass',
          componentId: q.name,
          observedValue: q.waiting,
          oldestWaitS: q.oldestWaitS,
        })),
      (err) => [fail(err)],
    );
    checks['workers:alive'] = [
      await timed(() => aliveWorkers(redis, queues.prefix)).then(
        ({ value }) => ({ status: (value > 0 ? 'pass' : 'warn') as HealthStatus, observedValue: value }),
        fail,
      ),
    ];

    checks['watchlists:unscheduled'] = [
      await timed(() => unscheduledWatchlists(orm)).then(
        ({ value }): CheckResult => ({
          status: value.count > 0 ? 'warn' : 'pass',
          observedValue: value.count,
          ...(value.count > 0
            ? {
                output:
                  `${value.count} watchlist(s) with a schedule stored before schedules had to run within a ` +
                  'year, and no run within a year: that scan (tick or deep scan, named) never runs until ' +
                  `the schedule is changed: ${value.names.join(', ')}` +
                  (value.count > value.names.length ? ', …' : ''),
              }
            : {}),
        }),
        fail,
      ),
    ];

    // A provider that does not answer degrades the install (risk calls on that network fail with 503
    // provider_unavailable) but does not take it down: the check is `warn`, never `fail`.
    for (const p of await this.deps.providers.health(CHECK_TIMEOUT_MS)) {
      const check: CheckResult = {
        status: p.status === 'pass' ? 'pass' : 'warn',
        componentId: p.provider,
        observedValue: p.latency_ms,
        observedUnit: 'ms',
        ...(p.head !== undefined ? { head: p.head } : {}),
        ...(p.error ? { output: p.error } : {}),
      };
      (checks[`provider:${p.network}`] ??= []).push(check);
    }

    const all = Object.values(checks).flat();
    const status: HealthStatus = all.some((c) => c.status === 'fail')
      ? 'fail'
      : all.some((c) => c.status === 'warn')
        ? 'warn'
        : 'pass';
    return {
      status,
      version: this.deps.version,
      releaseId: this.deps.releaseId,
      uptimeS: Math.round((Date.now() - this.startedAt) / 1000),
      checks,
    };
  }
}

/** Names shown of the watchlists with no due time. */
const UNSCHEDULED_SHOWN = 20;

/**
 * Watchlists with a null due time: a cron stored before the one-year rule (or past its last run within a
 * year) that the scheduler never picks. Named with their account, for the operator to follow up.
 */
async function unscheduledWatchlists(orm: Orm): Promise<{ count: number; names: string[] }> {
  const rows = await orm.em
    .getConnection()
    .execute<{ id: string; account_id: string; which: string; count: string }[]>(
      `select id, account_id,
            concat_ws('+', case when next_tick_at is null then 'schedule' end,
                      case when next_deep_at is null then 'deep_schedule' end) as which,
            count(*) over () as count
       from watchlists where next_tick_at is null or next_deep_at is null
      order by id limit ${UNSCHEDULED_SHOWN}`,
    );
  return {
    count: Number(rows[0]?.count ?? 0),
    names: rows.map((r) => `${r.id} (account ${r.account_id}: ${r.which})`),
  };
}
