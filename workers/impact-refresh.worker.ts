import type { Runtime } from '../src/runtime.js';
import type { JobHandler } from './job-handler.js';

/** Folds the hourly activity counters into the snapshot the public impact endpoint serves. */
export const impactRefresh =
  (rt: Runtime): JobHandler<'impact-refresh'> =>
  async () => {
    const body = await rt.impact.refresh();
    return { generated_at: body.generated_at };
  };
