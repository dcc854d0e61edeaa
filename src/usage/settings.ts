import { z } from 'zod';
import { int, type EnvVars } from '../platform/config.js';

/** Usage records older than `retention_days` are deleted by the usage-prune job. */
export const usageSettings = z.object({ retention_days: int(1, 3650) });

export const USAGE_ENV_VARS: EnvVars = {
  RISKWATCH_USAGE_RETENTION_DAYS: 'usage.retention_days',
};
