import type { Runtime } from '../src/runtime.js';
import type { JobHandler } from './job-handler.js';

/** Deletes audit records older than `audit.retention_days` (the trigger admits no other DELETE). */
export const auditPrune =
  (rt: Runtime): JobHandler<'audit-prune'> =>
  async () => ({ deleted: await rt.audit.prune(rt.config.audit.retention_days) });
