import { z } from 'zod';
import { int, type EnvVars } from '../platform/config.js';

/** How often an API process re-reads the aggregate the public impact endpoint serves. */
export const impactSettings = z.object({ reload_ms: int(250, 600000) });

export const IMPACT_ENV_VARS: EnvVars = {
  RISKWATCH_IMPACT_RELOAD_MS: 'impact.reload_ms',
};
