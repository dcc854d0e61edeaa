import { UnrecoverableError, Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { JOB_RETENTION, JOBS, JobQueues, type JobPayload } from '../../src/jobs/queues.js';
import { createBullConnection } from '../../src/platform/redis.js';
import { REDIS_URL } from '../support/env.js';
import { fileRedis } from '../support/redis.js';

/*
 * What Redis keeps of finished jobs (JOB_RETENTION in src/jobs/queues.ts), on a real Redis through real
 * BullMQ queues and workers: however many jobs fail, a queue's failed set holds at most the cap.
 */

const chunk = (scanId: string): JobPayload<'watchlist-chunk'> => ({
  watchlist_id: 'wl_retention',
  scan_id: scanId,
  mode: 'tick',
  entry_ids: ['wle_1'],
});

describe('job retention', () => {
  const { redis, prefix } = fileRedis();
  const connection = createBullConnection(REDIS_URL);
  const queues = new JobQueues(connection, prefix);
  afterAll(async () => {
    await queues.close();
    connection.disconnect();
  });

  it('bounds every job, whichever way it is enqueued, by count and by age, completed or failed', async () => {
    const { removeOnComplete, removeOnFail } = JOB_RETENTION;
    for (const keep of [removeOnComplete, removeOnFail]) {
      expect(keep.count).toBeGreaterThan(0);
      expect(keep.age).toBeGreaterThan(0);
      expect(keep.age).toBeLessThanOrEqual(86_400);
    }
    await queues.enqueue('watchlist-tick', { watchlist_id: 'wl_1', scan_id: 'one', mode: 'tick' }, 'one');
    await queues.enqueueMany('watchlist-chunk', [{ payload: chunk('many'), jobId: 'many-0' }]);
    await queues.enqueueOnce('webhook-drain', { endpoint_id: 'whe_1' }, 'whe_1');
    const [once] = await queues.queue('webhook-drain').getJobs(['wait']);
    const stored = [
      await queues.queue('watchlist-tick').getJob('one'),
      await queues.queue('watchlist-chunk').getJob('many-0'),
      once,
    ];
    for (const job of stored) {
      // Read back from Redis: what BullMQ applies when the job finishes.
      expect(job?.opts).toMatchObject({ removeOnComplete, removeOnFail });
    }
    for (const name of ['watchlist-tick', 'watchlist-chunk', 'webhook-drain'] as const)
      await queues.queue(name).obliterate({ force: true });
  });

  it('keeps at most the cap of failed jobs in a queue, whatever the number that fail', async () => {
    const cap = JOB_RETENTION.removeOnFail.count;
    const total = cap + 300;
    const queue = queues.queue('watchlist-chunk');
    let failed = 0;
    const worker = new Worker(
      'watchlist-chunk',
      () => Promise.reject(new UnrecoverableError('the chain is gone')), // fails at its first attempt
      { connection, prefix: `${prefix}bull`, concurrency: 50 },
    );
    worker.on('failed', () => failed++);
    try {
      // The product's own enqueue path and options: deterministic ids, the contract's 8 attempts.
      const jobs = Array.from({ length: total }, (_, i) => ({
        payload: chunk('storm'),
        jobId: `storm-${i}`,
      }));
      for (let i = 0; i < total; i += 500)
        await queues.enqueueMany('watchlist-chunk', jobs.slice(i, i + 500));
      const deadline = Date.now() + 15_000;
      while (failed < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(failed).toBe(total);
    } finally {
      await worker.close();
    }

    const failedSet = `${prefix}bull:watchlist-chunk:failed`;
    expect(await redis.zcard(failedSet)).toBe(cap);
    expect(await queue.getFailedCount()).toBe(cap);
    // The records themselves go with their ids: one job hash per failed job kept, no more.
    const jobKeys = await redis.keys(`${prefix}bull:watchlist-chunk:storm-*`);
    expect(jobKeys.length).toBe(cap);
    // A kept failure is the product's job: its reason, its contract's attempts, the retention applied.
    const [kept] = await queue.getFailed(0, 0);
    expect(kept).toMatchObject({
      failedReason: 'the chain is gone',
      opts: { attempts: JOBS['watchlist-chunk'].options.attempts, removeOnFail: JOB_RETENTION.removeOnFail },
    });
  }, 30_000);
});
