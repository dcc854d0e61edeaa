import { Queue, type JobsOptions } from 'bullmq';
import type { RedisClient } from '../platform/redis.js';
import { z } from 'zod';
import type { SchedulerSettings } from './settings.js';

/**
 * A job the scheduler enqueues on every tick of the cron expression in setting `scheduler.<cron>`; its
 * payload is the tick's time.
 */
const scheduled = (cron: keyof SchedulerSettings, options: JobsOptions) => ({
  payload: z.object({ scheduled_at: z.iso.datetime() }),
  options,
  cron,
});

/** How deep a watchlist scan goes (docs/api.md, "Watchlists"). */
export const SCAN_MODES = ['tick', 'deep', 'rescan'] as const;
export type ScanMode = (typeof SCAN_MODES)[number];

/** Ids of watchlist scans, jobs and the scan's snapshot rows: no ':' (see scheduledJobId). */
const scanId = z.string().regex(/^[A-Za-z0-9_-]{1,80}$/);

/**
 * The contract between producers (scheduler, API) and the worker: each job's queue, payload schema,
 * default options, deterministic id and, for periodic jobs, the setting holding its schedule. Every name
 * here has exactly one handler in workers/ (checked at start-up).
 */
export const JOBS = {
  'impact-refresh': scheduled('impact_refresh_cron', {
    attempts: 3,
    backoff: { type: 'exponential', delay: 1000 },
  }),
  'usage-prune': scheduled('usage_prune_cron', {
    attempts: 3,
    backoff: { type: 'exponential', delay: 5000 },
  }),
  /** Every minute: the watchlists whose schedule (or deep schedule) is due get a `watchlist-tick`. */
  'watchlists-due': scheduled('watchlists_cron', {
    attempts: 3,
    backoff: { type: 'exponential', delay: 1000 },
  }),
  /** One scan of one watchlist: splits its entries into `watchlist-chunk` jobs (id `<scan_id>-<n>`). */
  'watchlist-tick': {
    payload: z.object({ watchlist_id: z.string().max(40), scan_id: scanId, mode: z.enum(SCAN_MODES) }),
    options: { attempts: 5, backoff: { type: 'exponential', delay: 2000 } },
  },
  /** Up to 100 entries of one network: read their state in one batch, store changes, raise alerts. */
  'watchlist-chunk': {
    payload: z.object({
      watchlist_id: z.string().max(40),
      scan_id: scanId,
      mode: z.enum(SCAN_MODES),
      entry_ids: z.array(z.string().max(40)).min(1).max(100),
    }),
    options: { attempts: 8, backoff: { type: 'exponential', delay: 2000 } },
  },
  /** Every few seconds: the endpoints with deliveries due get a `webhook-drain` (retries included). */
  'webhooks-sweep': scheduled('webhooks_sweep_cron', { attempts: 1 }),
  /** One endpoint's due deliveries, attempted in order of their events' sequence. */
  'webhook-drain': {
    payload: z.object({ endpoint_id: z.string().max(40) }),
    options: { attempts: 3, backoff: { type: 'exponential', delay: 1000 } },
  },
  /** Daily: events, deliveries and attempts older than `webhooks.event_retention_days`. */
  'events-prune': scheduled('events_prune_cron', {
    attempts: 3,
    backoff: { type: 'exponential', delay: 5000 },
  }),
  /** Daily: audit records older than `audit.retention_days` (the append-only trigger's one exception). */
  'audit-prune': scheduled('audit_prune_cron', {
    attempts: 3,
    backoff: { type: 'exponential', delay: 5000 },
  }),
  /**
   * Daily, and at every scheduler start: the day partitions of today and the next
   * `partitions.days_ahead` days, and rows waiting in a default partition moved to their day's.
   */
  'partitions-maintain': scheduled('partitions_maintain_cron', {
    attempts: 5,
    backoff: { type: 'exponential', delay: 10_000 },
  }),
  /** Daily: screenings (and their results) older than `screenings.retention_days`. */
  'screenings-prune': scheduled('screenings_prune_cron', {
    attempts: 3,
    backoff: { type: 'exponential', delay: 5000 },
  }),
  /**
   * An account's next screening: starts every queued `lists` screening, and the oldest queued `state` /
   * `full` one unless one is running (one at a time per account), by enqueuing its chunks. Deduplicated
   * per account; enqueued on submission and when a screening completes.
   */
  'screening-start': {
    payload: z.object({
      account_id: z.string().max(40),
      /** The screening whose submission enqueued it (enqueued in that transaction: retried until it commits). */
      screening_id: z.string().max(40).optional(),
    }),
    options: { attempts: 5, backoff: { type: 'exponential', delay: 1000 } },
  },
  /** Targets `[from_seq, to_seq)` of one screening (at most 1,000): screened and written in one transaction. */
  'screening-chunk': {
    payload: z.object({
      screening_id: z.string().max(40),
      from_seq: z.int().min(0),
      to_seq: z.int().min(1),
    }),
    options: { attempts: 8, backoff: { type: 'exponential', delay: 2000 } },
  },
} as const;

export type JobName = keyof typeof JOBS;
export type JobPayload<N extends JobName> = z.infer<(typeof JOBS)[N]['payload']>;
export const JOB_NAMES = Object.keys(JOBS) as JobName[];

/** The jobs the scheduler enqueues, each on the cron expression its contract names. */
export type ScheduledJobName = {
  [N in JobName]: (typeof JOBS)[N] extends { cron: keyof SchedulerSettings } ? N : never;
}[JobName];
export const SCHEDULED_JOB_NAMES = JOB_NAMES.filter((name): name is ScheduledJobName => 'cron' in JOBS[name]);

/**
 * The id of the job a tick enqueues: every scheduler replica computes the same one for the same tick, so
 * BullMQ runs it once. Whole seconds, and no ':' (BullMQ refuses it in custom ids: its key separator).
 */
export const scheduledJobId = (name: ScheduledJobName, tick: Date): string =>
  `${name}-${Math.floor(tick.getTime() / 1000)}`;

/**
 * What Redis keeps of finished jobs, per queue: the last 1,000 completed and the last 1,000 failed, none
 * older than a day, so the records stay bounded whatever the failure rate (a failure storm evicts the
 * oldest failures; BullMQ trims the set each time a job finishes). A failure's reason outlives its record
 * in the worker's log (`job failed`).
 *
 * A job kept is what makes a deterministic id enqueued twice a no-op: a scheduler replica's copy of a
 * tick, a `watchlists-due` or `watchlist-tick` retried re-enqueueing the jobs it had enqueued. Those
 * repeats come within a minute or so of the first, well inside a day; only if more than 1,000 jobs of the
 * queue finish meanwhile is the first one gone, and then the repeat runs again, which the jobs bear (a
 * chunk run twice finds nothing changed, and the unique indexes keep its snapshots and alerts single).
 * A rescan whose tick job is gone reads as `queued` until its first entry is checked. `enqueueOnce` does
 * not depend on retention: BullMQ's deduplication key lasts while the job is pending, kept or not after.
 */
export const JOB_RETENTION = {
  removeOnComplete: { age: 86_400, count: 1000 },
  removeOnFail: { age: 86_400, count: 1000 },
} as const satisfies Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'>;

/**
 * Where job `name`'s BullMQ queue lives: its keys are `<prefix>:<name>:…` (`rw:bull:watchlist-chunk:wait`).
 *
 * On a Redis Cluster the queue's name is a hash tag (`rw:bull:{watchlist-chunk}:wait`): BullMQ's scripts
 * touch several keys of one queue at once, which a cluster runs only when they share a slot, and one tag
 * per queue (not one for all) spreads the queues over the masters. Only there: a single Redis keeps the
 * keys it always had, so upgrading leaves no queued job behind under old names; a cluster is always a new,
 * empty Redis (the old keys could not run there anyway), which the workers' Redis-loss watch refills from
 * PostgreSQL (src/jobs/redis-loss.ts). The producers, the workers and `riskwatch doctor` all take the
 * layout from here, from the kind of connection they hold, so they cannot disagree.
 */
export function queueAt(
  connection: RedisClient,
  keyPrefix: string,
  name: JobName,
): { name: string; prefix: string } {
  return { name: connection.isCluster ? `{${name}}` : name, prefix: `${keyPrefix}bull` };
}

export class JobQueues {
  private readonly queues = new Map<JobName, Queue>();

  /** `readOnly`: opening the queues writes nothing (BullMQ's `meta` hash is left as it is): `riskwatch doctor`. */
  constructor(
    connection: RedisClient,
    readonly prefix: string,
    { readOnly = false }: { readOnly?: boolean } = {},
  ) {
    for (const name of JOB_NAMES) {
      const at = queueAt(connection, prefix, name);
      this.queues.set(name, new Queue(at.name, { connection, prefix: at.prefix, skipMetasUpdate: readOnly }));
    }
  }

  queue(name: JobName): Queue {
    return this.queues.get(name)!;
  }

  /** Enqueues with a deterministic id: the same id enqueued by several replicas runs once. */
  async enqueue<N extends JobName>(name: N, payload: JobPayload<N>, jobId: string): Promise<void> {
    const data = JOBS[name].payload.parse(payload);
    await this.queue(name).add(name, data, { ...JOBS[name].options, ...JOB_RETENTION, jobId });
  }

  /** Enqueues many jobs of one name in one round trip; each keeps its deterministic id. */
  async enqueueMany<N extends JobName>(name: N, jobs: readonly { payload: JobPayload<N>; jobId: string }[]) {
    if (jobs.length === 0) return;
    await this.queue(name).addBulk(
      jobs.map(({ payload, jobId }) => ({
        name,
        data: JOBS[name].payload.parse(payload),
        opts: { ...JOBS[name].options, ...JOB_RETENTION, jobId },
      })),
    );
  }

  /**
   * Enqueues unless a job with the same `dedupId` is still waiting: one pending drain per endpoint, however
   * many events arrive meanwhile (the drain re-reads what is due when it runs).
   */
  async enqueueOnce<N extends JobName>(name: N, payload: JobPayload<N>, dedupId: string): Promise<void> {
    const data = JOBS[name].payload.parse(payload);
    await this.queue(name).add(name, data, {
      ...JOBS[name].options,
      ...JOB_RETENTION,
      deduplication: { id: dedupId },
    });
  }

  /** Waiting jobs per queue and the age of the oldest, for the health check. */
  async waiting(): Promise<{ name: JobName; waiting: number; oldestWaitS: number }[]> {
    return Promise.all(
      JOB_NAMES.map(async (name) => {
        const queue = this.queue(name);
        const waiting = await queue.getWaitingCount();
        const [oldest] = waiting > 0 ? await queue.getJobs(['wait'], 0, 0, true) : [];
        const oldestWaitS = oldest ? Math.max(0, Math.round((Date.now() - oldest.timestamp) / 1000)) : 0;
        return { name, waiting, oldestWaitS };
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
  }
}
