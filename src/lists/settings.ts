import { z } from 'zod';
import type { ChainsConfig } from '../chains/settings.js';
import { int, type EnvVars } from '../platform/config.js';
import type { DatabaseSettings, LogSettings, RedisSettings } from '../platform/settings.js';

/** Deny and allow lists together, per account. */
export const listsSettings = z.object({ max_entries_per_account: int(1, 10_000_000) });

export type ListsSettings = z.infer<typeof listsSettings>;

/** What the lists commands read of the configuration. */
export interface ListsCommandsConfig {
  database: DatabaseSettings;
  redis: RedisSettings;
  log: LogSettings;
  chains: ChainsConfig;
  lists: ListsSettings;
}

export const LISTS_ENV_VARS: EnvVars = {
  RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT: 'lists.max_entries_per_account',
};
