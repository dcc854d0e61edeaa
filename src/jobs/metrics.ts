import { Gauge, type Registry } from 'prom-client';
import { JOB_NAMES, type JobName, type JobQueues } from './queues.js';

/** The job states `riskwatch_jobs` reports, as BullMQ's getJobCounts names them. */
export const JOB_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** How long one read serves scrapes (two Prometheus replicas scraping every 15 s share it). */
const COUNTS_TTL_MS = 5_000;
/** A scrape never waits longer on Redis than this: the other metrics of the process are served anyway. */
const COUNTS_TIMEOUT_MS = 2_000;

type Counts = Record<JobName, Record<JobState, number>>;

/** Every queue's counts by state: one getJobCounts per queue (one Lua call each), all at once. */
async function readCounts(queues: JobQueues): Promise<Counts> {
  const rows = await Promise.all(
    JOB_NAMES.map(async (name) => [name, await queues.queue(name).getJobCounts(...JOB_STATES)] as const),
  );
  return Object.fromEntries(
    rows.map(([name, counts]) => [
      name,
      Object.fromEntries(JOB_STATES.map((state) => [state, counts[state] ?? 0])),
    ]),
  ) as Counts;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from Redis within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * `riskwatch_jobs{queue,state}`: jobs per BullMQ queue (src/jobs/queues.ts) and state, read from Redis at
 * scrape time (cached 5 s). Every process would read the same numbers, so one role exports it: the
 * scheduler (workers/scheduler.ts). The API runs as many processes as there are cores and replicas, and the
 * workers scale with the queues themselves (KEDA can take them to zero, just when the backlog matters);
 * the scheduler is one small process whatever the load (more replicas only add availability: take `max()`).
 * Every queue × state is there from the start; while Redis does not answer, the series are dropped (a gap,
 * not the last numbers read) and the rest of the process's metrics are still served.
 */
export function exportJobCounts(registry: Registry, queues: JobQueues): void {
  let cached: { at: number; value: Promise<Counts> } | undefined;
  const read = (): Promise<Counts> => {
    if (!cached || Date.now() - cached.at > COUNTS_TTL_MS)
      cached = { at: Date.now(), value: withTimeout(readCounts(queues), COUNTS_TIMEOUT_MS) };
    return cached.value;
  };
  const gauge = new Gauge({
    name: 'riskwatch_jobs',
    help: 'BullMQ jobs per queue and state (waiting, active, delayed, failed; failed: those Redis keeps, see JOB_RETENTION), read at scrape time by the scheduler.',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      let counts: Counts;
      try {
        counts = await read();
      } catch {
        this.reset();
        return;
      }
      for (const queue of JOB_NAMES)
        for (const state of JOB_STATES) this.set({ queue, state }, counts[queue][state]);
    },
  });
  for (const queue of JOB_NAMES) for (const state of JOB_STATES) gauge.set({ queue, state }, 0);
}
