import type { Runtime } from '../src/runtime.js';
import type { JobHandler } from './job-handler.js';

/**
 * Removes usage records older than the configured retention (from a UTC day boundary), and their rollups:
 * day partitions dropped whole, rows of the historical and default partitions deleted.
 */
export const usagePrune =
  (rt: Runtime): JobHandler<'usage-prune'> =>
  () =>
    rt.usage.prune(rt.config.usage.retention_days);
