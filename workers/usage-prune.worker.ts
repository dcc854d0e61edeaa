import type { Job } from 'bullmq';
import type { JobPayload } from '../src/jobs/queues.js';
import type { Runtime } from '../src/runtime.js';

/** Deletes usage records older than the configured retention. */
export const usagePrune = (rt: Runtime) => async (_job: Job<JobPayload<'usage-prune'>>) => {
  const deleted = await rt.usage.prune(rt.config.usage.retention_days);
  return { deleted };
};
