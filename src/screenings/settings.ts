import { z } from 'zod';
import { int, type EnvVars } from '../platform/config.js';

/**
 * Bulk screenings: how long their results are kept, how many chunks one worker process screens at once,
 * and the share of each network's provider rate (`chains.*.rate_per_s`) screenings may use, every worker
 * together: the rest stays for preflights, risk-v2 calls and watchlist ticks.
 */
export const screeningsSettings = z.object({
  retention_days: int(1, 3650),
  chunk_concurrency: int(1, 64),
  provider_share_pct: int(1, 100),
});

export type ScreeningsSettings = z.infer<typeof screeningsSettings>;

export const SCREENINGS_ENV_VARS: EnvVars = {
  RISKWATCH_SCREENINGS_RETENTION_DAYS: 'screenings.retention_days',
  RISKWATCH_SCREENINGS_CHUNK_CONCURRENCY: 'screenings.chunk_concurrency',
  RISKWATCH_SCREENINGS_PROVIDER_SHARE_PCT: 'screenings.provider_share_pct',
};
