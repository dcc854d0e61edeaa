import { z } from 'zod';
import { int, jsonList, slug, type EnvVars } from '../platform/config.js';
import { configuredWalletImplementationSchema } from './known/evm.js';
import { configuredKnownTokenSchema, configuredRouterSchema } from './known/evm-tokens.js';
import { FAIL_MODES } from './policy.js';

/** The `risk` section: deadlines and caching of analyses, preflight policy, extra wallet implementations. */
export const riskSettings = z.object({
  deadline_ms: int(200, 120000),
  recent_transactions: int(0, 100),
  cache_ttl_s: z.object({
    low: int(0, 86400),
    medium: int(0, 86400),
    high: int(0, 86400),
    critical: int(0, 86400),
  }),
  preflight: z.object({
    deadline_ms: int(100, 30000),
    fail_mode: z.enum(FAIL_MODES),
    policy_name: slug,
  }),
  known_wallet_implementations: jsonList.pipe(z.array(configuredWalletImplementationSchema)),
  evm: z.object({
    routers: jsonList.pipe(z.array(configuredRouterSchema)),
    known_tokens: jsonList.pipe(z.array(configuredKnownTokenSchema)),
    approvals_lookback_days: int(1, 3650),
  }),
});

export type RiskSettings = z.infer<typeof riskSettings>;

export const RISK_ENV_VARS: EnvVars = {
  RISKWATCH_RISK_DEADLINE_MS: 'risk.deadline_ms',
  RISKWATCH_RISK_RECENT_TRANSACTIONS: 'risk.recent_transactions',
  RISKWATCH_RISK_CACHE_TTL_LOW_S: 'risk.cache_ttl_s.low',
  RISKWATCH_RISK_CACHE_TTL_MEDIUM_S: 'risk.cache_ttl_s.medium',
  RISKWATCH_RISK_CACHE_TTL_HIGH_S: 'risk.cache_ttl_s.high',
  RISKWATCH_RISK_CACHE_TTL_CRITICAL_S: 'risk.cache_ttl_s.critical',
  RISKWATCH_PREFLIGHT_DEADLINE_MS: 'risk.preflight.deadline_ms',
  RISKWATCH_PREFLIGHT_FAIL_MODE: 'risk.preflight.fail_mode',
  RISKWATCH_PREFLIGHT_POLICY_NAME: 'risk.preflight.policy_name',
  RISKWATCH_KNOWN_WALLET_IMPLEMENTATIONS: 'risk.known_wallet_implementations',
  RISKWATCH_EVM_ROUTERS: 'risk.evm.routers',
  RISKWATCH_EVM_KNOWN_TOKENS: 'risk.evm.known_tokens',
  RISKWATCH_EVM_APPROVALS_LOOKBACK_DAYS: 'risk.evm.approvals_lookback_days',
};
