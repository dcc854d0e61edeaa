import type { RedisClient } from '../platform/redis.js';
import { JOB_NAMES, JobQueues, type JobName } from '../jobs/queues.js';
import type { Finding } from './report.js';
import { describeError, withTimeout } from './timeout.js';

/**
 * Failed jobs a queue may keep before it is a warning. Redis keeps a queue's last 1,000 failures of the
 * last day (JOB_RETENTION): a tenth of that is more than the odd provider hiccup that retries recover.
 */
export const FAILED_WARN = 100;

interface QueueState {
  name: JobName;
  counts: Record<'waiting' | 'prioritized' | 'active' | 'delayed' | 'failed', number>;
  /** Worker connections consuming the queue; undefined when Redis refuses CLIENT LIST. */
  workers?: number;
  workersError?: string;
}

/**
 * Each BullMQ queue's jobs (waiting, active, delayed, failed) and the workers consuming it. Workers are
 * counted by BullMQ (`getWorkersCount`: the named connections in CLIENT LIST), so they are the workers of
 * this install's key prefix, wherever they run.
 */
export async function checkQueues(
  redis: RedisClient,
  keyPrefix: string,
  timeoutMs: number,
): Promise<Finding[]> {
  const queues = new JobQueues(redis, keyPrefix, { readOnly: true });
  try {
    const states = await Promise.all(
      JOB_NAMES.map(async (name): Promise<QueueState | Finding> => {
        const queue = queues.queue(name);
        try {
          const counts = (await withTimeout(
            queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'),
            timeoutMs,
          )) as QueueState['counts'];
          const workers = await withTimeout(queue.getWorkersCount(), timeoutMs).then(
            (n) => ({ workers: n }),
            (err: unknown) => ({ workersError: describeError(err) }),
          );
          return { name, counts, ...workers };
        } catch (err) {
          return { check: `queue:${name}`, status: 'fail', detail: `cannot read: ${describeError(err)}` };
        }
      }),
    );
    const findings = states.map((s) => ('check' in s ? s : queueFinding(s)));
    return [...findings, workersFinding(states.filter((s): s is QueueState => !('check' in s)))];
  } finally {
    await withTimeout(queues.close(), timeoutMs).catch(() => undefined);
  }
}

function queueFinding({ name, counts }: QueueState): Finding {
  const detail =
    `waiting ${counts.waiting + counts.prioritized} · active ${counts.active} · ` +
    `delayed ${counts.delayed} · failed ${counts.failed}`;
  if (counts.failed >= FAILED_WARN)
    return {
      check: `queue:${name}`,
      status: 'warn',
      detail: `${detail}: ${FAILED_WARN}+ failed jobs kept (the worker's log says why: "job failed")`,
    };
  return { check: `queue:${name}`, status: 'ok', detail };
}

function workersFinding(states: readonly QueueState[]): Finding {
  const check = 'workers';
  const unknown = states.find((s) => s.workers === undefined);
  if (unknown || states.length === 0)
    return {
      check,
      status: 'info',
      detail: `not counted: ${unknown?.workersError ?? 'no queue answered'} (a Redis without CLIENT LIST or CLIENT SETNAME)`,
    };
  const without = states.filter((s) => s.workers === 0).map((s) => s.name);
  const counts = states.map((s) => s.workers ?? 0);
  if (without.length === states.length)
    return {
      check,
      status: 'warn',
      detail:
        'no worker is connected to any queue: is the worker role running (with this REDIS_URL and REDIS_KEY_PREFIX)?',
    };
  if (without.length > 0)
    return {
      check,
      status: 'warn',
      detail: `no worker consumes ${without.join(', ')}: their jobs wait until one does`,
    };
  const min = Math.min(...counts);
  const max = Math.max(...counts);
  return {
    check,
    status: 'ok',
    detail: `every queue has workers (${min === max ? min : `${min}–${max}`} per queue)`,
  };
}
