import type { Job } from 'bullmq';
import type { JobPayload } from '../src/jobs/queues.js';
import type { Runtime } from '../src/runtime.js';

/** Folds the hourly activity counters into the snapshot the public impact endpoint serves. */
export const impactRefresh = (rt: Runtime) => async (_job: Job<JobPayload<'impact-refresh'>>) => {
  const body = await rt.impact.refresh();
  return { generated_at: body.generated_at };
};
