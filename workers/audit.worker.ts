import type { Runtime } from '../src/runtime.js';
import type { JobHandler } from './job-handler.js';

/**
 * Removes audit records older than `audit.retention_days`: day partitions dropped whole, older records of
 * the historical and default partitions deleted (the one DELETE the trigger admits).
 */
export const auditPrune =
  (rt: Runtime): JobHandler<'audit-prune'> =>
  () =>
    rt.audit.prune(rt.config.audit.retention_days);
