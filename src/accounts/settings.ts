import { z } from 'zod';
import { int, type EnvVars } from '../platform/config.js';
import type { JwtSettings } from '../http/settings.js';
import type { DatabaseSettings } from '../platform/settings.js';

/** The accounts part of the `auth` section: how API keys are looked up and how many an account may hold. */
export const accountsAuthSettings = z.object({
  api_key_cache_ms: int(0, 5000),
  unknown_key_cache_ms: int(0, 60000),
  max_api_keys_per_account: int(1, 100_000),
});

/** The requests per minute of a key whose entitlement sets none. */
export const rateLimitSettings = z.object({ default_per_min: int(1, 1_000_000) });

export type AccountsAuthSettings = z.infer<typeof accountsAuthSettings>;
export type RateLimitSettings = z.infer<typeof rateLimitSettings>;

/** What the accounts commands read of the configuration. */
export interface AccountsCommandsConfig {
  database: DatabaseSettings;
  rate_limit: RateLimitSettings;
  /** `bootstrap` prints calls with the agent key and can sign a demo token with the JWT secret. */
  auth: AccountsAuthSettings & { agent_keys: string[]; jwt: JwtSettings };
}

export const ACCOUNTS_ENV_VARS: EnvVars = {
  RISKWATCH_API_KEY_CACHE_MS: 'auth.api_key_cache_ms',
  RISKWATCH_UNKNOWN_KEY_CACHE_MS: 'auth.unknown_key_cache_ms',
  RISKWATCH_MAX_API_KEYS_PER_ACCOUNT: 'auth.max_api_keys_per_account',
  RISKWATCH_RATE_LIMIT_DEFAULT_PER_MIN: 'rate_limit.default_per_min',
};
