import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { JOB_NAMES, JOBS, type JobPayload } from '../../src/jobs/queues.js';
import { AppError } from '../../src/platform/errors.js';
import { createBullConnection } from '../../src/platform/redis.js';
import { checkHandlers, isRetryable, jobProcessor, type JobHandler } from '../../workers/job-handler.js';
import { REDIS_URL } from '../support/env.js';
import { fileRedis } from '../support/redis.js';

const PAYLOAD = { scheduled_at: '2026-11-22T03:17:00.000Z' };
/** What a processor reads of a BullMQ job: its data (the rest is handed to the handler untouched). */
const jobWith = (data: unknown) => ({ id: '1', name: 'usage-prune', data }) as Job;

/** The error `promise` rejects with; fails the test when it resolves. */
async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection, but the promise resolved');
}

describe('isRetryable', () => {
  it.each(['provider_unavailable', 'dependency_unavailable', 'rate_limited', 'internal_error'] as const)(
    '%s is retried: the cause can pass',
    (code) => expect(isRetryable(new AppError(code, 'x'))).toBe(true),
  );

  it.each([
    'invalid_request',
    'invalid_address',
    'unsupported_chain',
    'unsupported_target_type',
    'not_found',
    'not_a_mint',
    'conflict',
    'limit_exceeded',
    'forbidden',
  ] as const)('%s is given up: every attempt would fail the same way', (code) =>
    expect(isRetryable(new AppError(code, 'x'))).toBe(false),
  );

  it('retries errors that are not domain errors (a bug, a dropped connection)', () => {
    expect(isRetryable(new Error('Connection is closed.'))).toBe(true);
    expect(isRetryable('a string')).toBe(true);
  });
});

describe('jobProcessor', () => {
  it('hands the handler the payload its contract validated and returns its result', async () => {
    const seen: JobPayload<'usage-prune'>[] = [];
    const run = jobProcessor('usage-prune', (payload) => {
      seen.push(payload);
      return Promise.resolve({ deleted: 3 });
    });
    expect(await run(jobWith(PAYLOAD))).toEqual({ deleted: 3 });
    expect(seen).toEqual([PAYLOAD]);
  });

  it('gives up on a payload the contract refuses, without running the handler', async () => {
    let ran = false;
    const run = jobProcessor('usage-prune', () => {
      ran = true;
      return Promise.resolve();
    });
    const err = await rejectionOf(run(jobWith({ scheduled_at: 'yesterday' })));
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect(err.message).toMatch(/^invalid usage-prune payload: scheduled_at: /);
    expect(ran).toBe(false);
  });

  it('turns a domain error that will not get better into an UnrecoverableError naming its code', async () => {
    const run = jobProcessor('usage-prune', () =>
      Promise.reject(new AppError('unsupported_chain', 'Unknown chain/network "tron/mainnet".')),
    );
    const err = await rejectionOf(run(jobWith(PAYLOAD)));
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect(err.message).toBe('unsupported_chain: Unknown chain/network "tron/mainnet".');
  });

  it('rethrows a passing failure as it is, for BullMQ to retry', async () => {
    const unavailable = new AppError(
      'provider_unavailable',
      'The solana/mainnet node provider is unavailable.',
    );
    const unknown = new TypeError('x is undefined');
    for (const thrown of [unavailable, unknown]) {
      const run = jobProcessor('usage-prune', () => Promise.reject(thrown));
      expect(await rejectionOf(run(jobWith(PAYLOAD)))).toBe(thrown);
    }
  });
});

describe('checkHandlers', () => {
  const handler = () => Promise.resolve();
  const all = Object.fromEntries(JOB_NAMES.map((name) => [name, handler]));

  it('accepts exactly one handler per job name', () => {
    expect(() => checkHandlers(all)).not.toThrow();
  });

  it('stops start-up on a missing or an unknown handler', () => {
    const withoutPrune = { ...all };
    delete withoutPrune['usage-prune'];
    expect(() => checkHandlers(withoutPrune)).toThrow(
      'job handlers out of step: missing [usage-prune], unknown []',
    );
    expect(() => checkHandlers({ ...all, 'watchlist-rescan': handler })).toThrow(
      'job handlers out of step: missing [], unknown [watchlist-rescan]',
    );
  });
});

describe('jobProcessor in a BullMQ worker', () => {
  const { prefix } = fileRedis();
  const connection = createBullConnection(REDIS_URL);
  const queue = new Queue('usage-prune', { connection, prefix: `${prefix}bull` });
  afterAll(async () => {
    await queue.close();
    connection.disconnect();
  });

  /** Runs one job to its end under `handler`, with the contract's attempts; returns its final state. */
  async function runToEnd(id: string, handler: JobHandler<'usage-prune'>) {
    const worker = new Worker('usage-prune', jobProcessor('usage-prune', handler), {
      connection,
      prefix: `${prefix}bull`,
    });
    try {
      await queue.add('usage-prune', PAYLOAD, {
        ...JOBS['usage-prune'].options,
        backoff: { type: 'fixed', delay: 10 },
        jobId: id,
      });
      for (;;) {
        const state = await queue.getJobState(id);
        if (state === 'failed' || state === 'completed')
          return { state, failedReason: (await queue.getJob(id))?.failedReason };
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await worker.close();
    }
  }

  it('fails a job at its first attempt when the error will not get better', async () => {
    let calls = 0;
    const result = await runToEnd('give-up', () => {
      calls++;
      return Promise.reject(new AppError('not_found', 'Account acc_1 was not found.'));
    });
    expect(result).toEqual({ state: 'failed', failedReason: 'not_found: Account acc_1 was not found.' });
    expect(calls).toBe(1);
  });

  it('retries a passing failure until the attempts run out', async () => {
    let calls = 0;
    const result = await runToEnd('retry', () => {
      calls++;
      return Promise.reject(new AppError('dependency_unavailable', 'PostgreSQL is unavailable.'));
    });
    expect(result).toEqual({ state: 'failed', failedReason: 'PostgreSQL is unavailable.' });
    expect(calls).toBe(JOBS['usage-prune'].options.attempts);
  });
});
