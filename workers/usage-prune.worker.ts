import type { Runtime } from '../src/runtime.js';
import type { JobHandler } from './job-handler.js';

/** Deletes usage records older than the configured retention (from a UTC day boundary), and their rollups. */
export const usagePrune =
  (rt: Runtime): JobHandler<'usage-prune'> =>
  async () => {
    const deleted = await rt.usage.prune(rt.config.usage.retention_days);
    return { deleted };
  };
