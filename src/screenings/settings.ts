import { z } from 'zod';
import { int, type EnvVars } from '../platform/config.js';

/**
 * Bulk screenings: how long their results are kept, and how many chunks of 100 targets one worker process
 * screens at once (a `state`/`full` screening is also bound by its network's provider rate limit).
 */
export const screeningsSettings = z.object({
  retention_days: int(1, 3650),
  chunk_concurrency: int(1, 64),
});

export type ScreeningsSettings = z.infer<typeof screeningsSettings>;

export const SCREENINGS_ENV_VARS: EnvVars = {
  RISKWATCH_SCREENINGS_RETENTION_DAYS: 'screenings.retention_days',
  RISKWATCH_SCREENINGS_CHUNK_CONCURRENCY: 'screenings.chunk_concurrency',
};
