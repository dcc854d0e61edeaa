import { UnrecoverableError, type Job } from 'bullmq';
import { JOB_NAMES, JOBS, type JobName, type JobPayload } from '../src/jobs/queues.js';
import { AppError, type ErrorCode } from '../src/platform/errors.js';

/** A job's work: given the payload its contract validated, call one service. */
export type JobHandler<N extends JobName> = (
  payload: JobPayload<N>,
  job: Job,
  /** The worker's lock token of the job (to move it to delayed). */
  token?: string,
) => Promise<unknown>;
export type JobHandlers = { [N in JobName]: JobHandler<N> };

/**
 * What a job does after failing with each domain error: try again (the job's attempts and backoff) when the
 * cause can pass — a node provider or a dependency down, a rate limit — or give up at once, because every
 * attempt would fail the same way. Listing every code makes a new one need a decision here.
 */
const ON_ERROR: Readonly<Record<ErrorCode, 'retry' | 'give_up'>> = {
  invalid_request: 'give_up',
  invalid_address: 'give_up',
  invalid_webhook_url: 'give_up',
  unsupported_chain: 'give_up',
  unsupported_target_type: 'give_up',
  unsupported_intent: 'give_up',
  unauthorized: 'give_up',
  entitlement_required: 'give_up',
  browser_request_forbidden: 'give_up',
  forbidden: 'give_up',
  not_found: 'give_up',
  method_not_allowed: 'give_up',
  payload_too_large: 'give_up',
  unsupported_media_type: 'give_up',
  conflict: 'give_up',
  limit_exceeded: 'give_up',
  too_many_entries: 'give_up',
  not_a_mint: 'give_up',
  no_target: 'give_up',
  secrets_key_missing: 'give_up', // the key is read at start: no retry in this process can find it
  rate_limited: 'retry',
  provider_unavailable: 'retry',
  dependency_unavailable: 'retry',
  internal_error: 'retry',
};

/**
 * Whether a job failing with `err` is tried again. Errors that are not domain errors (a bug, a dropped
 * connection) are.
 */
export function isRetryable(err: unknown): boolean {
  return !(err instanceof AppError) || ON_ERROR[err.code] === 'retry';
}

/**
 * The BullMQ processor of job `name`, the one way a handler is run: the payload is validated against the
 * job's contract, and a failure that will not get better — a payload the contract refuses, a domain error
 * such as not_found or unsupported_chain — becomes an UnrecoverableError (the job fails at once, its
 * remaining attempts unused). Any other error is rethrown as it is, so BullMQ retries with the backoff.
 */
export function jobProcessor<N extends JobName>(name: N, handler: JobHandler<N>) {
  return async (job: Job, token?: string): Promise<unknown> => {
    const parsed = JOBS[name].payload.safeParse(job.data);
    if (!parsed.success) {
      const why = parsed.error.issues.map((i) => `${i.path.join('.') || '(payload)'}: ${i.message}`);
      throw new UnrecoverableError(`invalid ${name} payload: ${why.join('; ')}`);
    }
    try {
      return await handler(parsed.data as JobPayload<N>, job, token);
    } catch (err) {
      if (isRetryable(err)) throw err;
      const { code, message } = err as AppError;
      throw new UnrecoverableError(`${code}: ${message}`);
    }
  };
}

/** Exactly one handler per job name: throws, stopping start-up, when the table and the contract disagree. */
export function checkHandlers(table: Readonly<Record<string, unknown>>): void {
  const missing = JOB_NAMES.filter(
    (name) => !Object.hasOwn(table, name) || typeof table[name] !== 'function',
  );
  const unknown = Object.keys(table).filter((name) => !(JOB_NAMES as string[]).includes(name));
  if (missing.length || unknown.length)
    throw new Error(
      `job handlers out of step: missing [${missing.join(', ')}], unknown [${unknown.join(', ')}]`,
    );
}
