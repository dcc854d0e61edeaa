import { join } from 'node:path';
import { z } from 'zod';
import { ACCOUNTS_ENV_VARS, accountsAuthSettings, rateLimitSettings } from './accounts/settings.js';
import { AUDIT_ENV_VARS, auditSettings } from './audit/settings.js';
import { CHAINS_ENV_VARS, chainsSettings } from './chains/settings.js';
import { PARTITIONS_ENV_VARS, partitionsSettings } from './db/settings.js';
import { HTTP_ENV_VARS, httpAuthSettings } from './http/settings.js';
import { IMPACT_ENV_VARS, impactSettings } from './impact/settings.js';
import { SCHEDULER_ENV_VARS, schedulerSettings } from './jobs/settings.js';
import { LISTS_ENV_VARS, listsSettings } from './lists/settings.js';
import { readConfig, type EnvVars } from './platform/config.js';
import { PROJECT_ROOT } from './platform/paths.js';
import {
  databaseSettings,
  logSettings,
  PLATFORM_ENV_VARS,
  redisSettings,
  serverSettings,
} from './platform/settings.js';
import { RISK_ENV_VARS, riskSettings } from './risk/settings.js';
import { SCREENINGS_ENV_VARS, screeningsSettings } from './screenings/settings.js';
import { USAGE_ENV_VARS, usageSettings } from './usage/settings.js';
import { WATCHLISTS_ENV_VARS, watchlistsSettings } from './watchlists/settings.js';
import { WEBHOOKS_ENV_VARS, webhooksSettings } from './webhooks/settings.js';

/**
 * The whole configuration, composed of the sections each part of riskwatch declares in its `settings.ts`
 * (the `auth` section is shared: agent keys and JWTs belong to the HTTP layer, API-key settings to accounts).
 */
const schema = z.object({
  server: serverSettings,
  database: databaseSettings,
  redis: redisSettings,
  log: logSettings,
  auth: z.object({ ...httpAuthSettings.shape, ...accountsAuthSettings.shape }),
  rate_limit: rateLimitSettings,
  lists: listsSettings,
  watchlists: watchlistsSettings,
  webhooks: webhooksSettings,
  usage: usageSettings,
  audit: auditSettings,
  partitions: partitionsSettings,
  screenings: screeningsSettings,
  scheduler: schedulerSettings,
  impact: impactSettings,
  risk: riskSettings,
  chains: chainsSettings,
});

export type Config = z.infer<typeof schema>;

/** Environment variable → setting path. config/README.md documents each one; a test keeps them in step. */
export const ENV_VARS: EnvVars = {
  ...PLATFORM_ENV_VARS,
  ...HTTP_ENV_VARS,
  ...ACCOUNTS_ENV_VARS,
  ...LISTS_ENV_VARS,
  ...WATCHLISTS_ENV_VARS,
  ...WEBHOOKS_ENV_VARS,
  ...USAGE_ENV_VARS,
  ...AUDIT_ENV_VARS,
  ...PARTITIONS_ENV_VARS,
  ...SCREENINGS_ENV_VARS,
  ...SCHEDULER_ENV_VARS,
  ...IMPACT_ENV_VARS,
  ...RISK_ENV_VARS,
  ...CHAINS_ENV_VARS,
};

export const DEFAULT_CONFIG_FILE = join(PROJECT_ROOT, 'config', 'riskwatch.yaml');

/**
 * The configuration of this process: config/riskwatch.yaml, the operator's file (RISKWATCH_CONFIG) over
 * it, the environment over both; validated and frozen. A bad value throws a ConfigError with one line per
 * problem, naming the environment variable that holds it.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  return readConfig({ schema, defaultsFile: DEFAULT_CONFIG_FILE, envVars: ENV_VARS }, env);
}
