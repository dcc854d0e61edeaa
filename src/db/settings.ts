import { z } from 'zod';
import { int, type EnvVars } from '../platform/config.js';

/**
 * Day partitions (src/db/partitions.ts): the `partitions-maintain` job makes the partitions of today and
 * of the next `days_ahead` days, so inserts keep landing in their day's partition (not the default one)
 * for that long while the scheduler or the workers are down.
 */
export const partitionsSettings = z.object({ days_ahead: int(1, 90) });

export type PartitionsSettings = z.infer<typeof partitionsSettings>;

export const PARTITIONS_ENV_VARS: EnvVars = {
  RISKWATCH_PARTITIONS_DAYS_AHEAD: 'partitions.days_ahead',
};
