import { z } from 'zod';
import { int, type EnvVars } from '../platform/config.js';

/**
 * Audit records older than `retention_days` are deleted by the audit-prune job, the only DELETE the
 * append-only trigger lets through (and never of a record younger than 30 days).
 */
export const auditSettings = z.object({ retention_days: int(30, 36_500) });

export const AUDIT_ENV_VARS: EnvVars = {
  RISKWATCH_AUDIT_RETENTION_DAYS: 'audit.retention_days',
};
