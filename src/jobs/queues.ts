import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
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

/** Completed/failed jobs are kept for a day so a deterministic id enqueued twice is recognised and skipped. */
const RETENTION = { removeOnComplete: { age: 86_400, count: 1000 }, removeOnFail: { age: 7 * 86_400 } };

export class JobQueues {
  private readonly queues = new Map<JobName, Queue>();

  constructor(
    connection: Redis,
    readonly prefix: string,
  ) {
    for (const name of JOB_NAMES)
      this.queues.set(name, new Queue(name, { connection, prefix: `${prefix}bull` }));
  }

  queue(name: JobName): Queue {
    return this.queues.get(name)!;
  }

  /** Enqueues with a deterministic id: the same id enqueued by several replicas runs once. */
  async enqueue<N extends JobName>(name: N, payload: JobPayload<N>, jobId: string): Promise<void> {
    const data = JOBS[name].payload.parse(payload);
    await this.queue(name).add(name, data, { ...JOBS[name].options, ...RETENTION, jobId });
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
