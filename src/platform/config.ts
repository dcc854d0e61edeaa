import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { BUILT_IN_NETWORKS, CAIP2_PATTERN, familyOfCaip2 } from '../chains/registry.js';
import { configuredWalletImplementationSchema } from '../risk/known/evm.js';
import { FAIL_MODES } from '../risk/policy.js';
import { PROJECT_ROOT } from './paths.js';

const csv = z.preprocess(
  (v) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : v,
  z.array(z.string().min(1)),
);
/** A list given as JSON text in the environment, or as a YAML list in the file. */
const jsonList = z.preprocess((v, ctx) => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    ctx.addIssue({ code: 'custom', message: 'expected a JSON array' });
    return z.NEVER;
  }
}, z.array(z.unknown()));
const bool = z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean());
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const cron = z.string().regex(/^\S+( \S+){4,5}$/, 'expected a cron expression of 5 or 6 fields');

/** A node provider URL. Its path or query often carries an API key: messages never quote the value. */
const rpcUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s):// URL' });
/** An http(s) URL to localhost, 127.0.0.0/8 or [::1]: traffic that never leaves the machine. */
export function isLoopbackUrl(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const { protocol, hostname } = new URL(url);
  if (protocol !== 'http:' && protocol !== 'https:') return false;
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}
const name = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'expected lower-case letters, digits and dashes');

/** One network's providers; every tuning key falls back to `chains.defaults`. */
const networkSettings = z.strictObject({
  rpc_urls: csv.pipe(z.array(rpcUrl)),
  rate_per_s: int(0, 100000).optional(),
  concurrency: int(1, 1024).optional(),
  timeout_ms: int(50, 120000).optional(),
  batch_max: int(1, 1000).optional(),
  caip2: z.string().regex(CAIP2_PATTERN, 'expected a CAIP-2 id such as eip155:1').optional(),
  aliases: csv.pipe(z.array(name)).optional(),
});

const chainsSchema = z.object({
  defaults: z.object({
    deadline_ms: int(100, 120000),
    timeout_ms: int(50, 120000),
    retries: int(0, 10),
    backoff_base_ms: int(1, 60000),
    backoff_max_ms: int(1, 300000),
    rate_per_s: int(0, 100000),
    concurrency: int(1, 1024),
    batch_max: int(1, 1000),
    circuit_failures: int(1, 1000),
    circuit_cooldown_min_ms: int(50, 3600000),
    circuit_cooldown_ms: int(100, 3600000),
    max_response_mib: int(1, 1024),
    max_buffered_mib: int(1, 16384),
    retry_after_max_ms: int(0, 3600000),
  }),
  networks: z.record(name, z.record(name, networkSettings)),
});

export type NetworkSettings = z.infer<typeof networkSettings>;
export type ChainsConfig = z.infer<typeof chainsSchema>;

/** Environment variable holding the RPC URLs of a network: `RISKWATCH_RPC_SOLANA_MAINNET`. */
export const rpcEnvName = (chain: string, network: string): string =>
  `RISKWATCH_RPC_${chain}_${network}`.toUpperCase().replaceAll('-', '_');

const jwtAlgorithm = z.enum([
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
]);

const schema = z
  .object({
    server: z.object({
      host: z.string().min(1),
      port: int(0, 65535),
      metrics_port: int(0, 65535),
      body_limit_kb: int(1, 10240),
      trust_proxy: bool,
      shutdown_timeout_ms: int(100, 120000),
    }),
    database: z.object({
      url: z.string().regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL'),
      pool_max: int(1, 200),
    }),
    redis: z.object({
      url: z.string().regex(/^rediss?:\/\//, 'expected a redis:// URL'),
      key_prefix: z.string(),
    }),
    log: z.object({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) }),
    auth: z.object({
      agent_keys: csv.refine(
        (keys) => keys.every((k) => k.length >= 16),
        'each agent key needs 16+ characters',
      ),
      api_key_cache_ms: int(0, 5000),
      unknown_key_cache_ms: int(0, 60000),
      max_api_keys_per_account: int(1, 100_000),
      jwt: z.object({
        algorithms: csv.pipe(
          z
            .array(jwtAlgorithm)
            .min(1)
            .refine(
              (algs) => algs.every((a) => a.startsWith('HS')) || !algs.some((a) => a.startsWith('HS')),
              'mixing HS* with asymmetric algorithms invites key confusion; pick one family',
            ),
        ),
        issuer: z.string(),
        audience: z.string(),
        secret: z.string(),
        public_key: z.string(),
        jwks_url: z
          .string()
          .refine(
            (url) => url === '' || (/^https:\/\//.test(url) && URL.canParse(url)) || isLoopbackUrl(url),
            'expected empty or an https:// URL (plain http:// only on loopback)',
          ),
        jwks_refresh_s: int(10, 86400),
        jwks_min_refresh_s: int(1, 3600),
        clock_tolerance_s: int(0, 300),
        max_age_s: int(0, 31_536_000),
        account_claim: z.string().min(1),
        roles_claim: z.string().min(1),
        key_admin_role: z.string().min(1),
      }),
    }),
    rate_limit: z.object({ default_per_min: int(1, 1_000_000) }),
    lists: z.object({ max_entries_per_account: int(1, 10_000_000) }),
    usage: z.object({ retention_days: int(1, 3650) }),
    scheduler: z.object({ impact_refresh_cron: cron, usage_prune_cron: cron }),
    impact: z.object({ reload_ms: int(250, 600000) }),
    risk: z.object({
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
        policy_name: name,
      }),
      known_wallet_implementations: jsonList.pipe(z.array(configuredWalletImplementationSchema)),
    }),
    chains: chainsSchema,
  })
  .superRefine((c, ctx) => {
    checkNetworks(c.chains, ctx);
    if (c.chains.defaults.max_buffered_mib < c.chains.defaults.max_response_mib)
      ctx.addIssue({
        code: 'custom',
        path: ['chains', 'defaults', 'max_buffered_mib'],
        message: 'must be at least chains.defaults.max_response_mib',
      });
    if (c.chains.defaults.backoff_max_ms < c.chains.defaults.backoff_base_ms)
      ctx.addIssue({
        code: 'custom',
        path: ['chains', 'defaults', 'backoff_max_ms'],
        message: 'must be at least chains.defaults.backoff_base_ms',
      });
    const jwt = c.auth.jwt;
    const hs = jwt.algorithms.some((a) => a.startsWith('HS'));
    const asym = jwt.algorithms.some((a) => !a.startsWith('HS'));
    if (hs && jwt.secret && jwt.secret.length < 32)
      ctx.addIssue({
        code: 'custom',
        path: ['auth', 'jwt', 'secret'],
        message: 'an HS secret needs 32+ characters',
      });
    if (asym && jwt.public_key && jwt.jwks_url)
      ctx.addIssue({
        code: 'custom',
        path: ['auth', 'jwt', 'public_key'],
        message: 'set either public_key or jwks_url, not both',
      });
  });

export type Config = z.infer<typeof schema>;

/**
 * Built-in networks keep their CAIP-2 id; any other network must bring one in a namespace riskwatch
 * has a client for (`solana:` or `eip155:`). Names, aliases and CAIP-2 ids must not collide.
 */
function checkNetworks(chains: ChainsConfig, ctx: z.RefinementCtx): void {
  const seenCaip2 = new Map(BUILT_IN_NETWORKS.map((n) => [n.caip2, `${n.chain}.${n.network}`]));
  const namesOf = new Map<string, Set<string>>();
  for (const n of BUILT_IN_NETWORKS) {
    const names = namesOf.get(n.chain) ?? new Set<string>();
    for (const s of [n.network, ...n.aliases]) names.add(s);
    namesOf.set(n.chain, names);
  }
  for (const [chain, networks] of Object.entries(chains.networks)) {
    for (const [network, settings] of Object.entries(networks)) {
      const path = ['chains', 'networks', chain, network];
      const builtIn = BUILT_IN_NETWORKS.find((n) => n.chain === chain && n.network === network);
      const issue = (key: string, message: string) =>
        ctx.addIssue({ code: 'custom', path: [...path, key], message });
      if (builtIn) {
        if (settings.caip2 !== undefined && settings.caip2 !== builtIn.caip2)
          issue('caip2', `${chain}/${network} is built in as ${builtIn.caip2}; leave caip2 out`);
      } else if (settings.caip2 === undefined) {
        issue('caip2', `${chain}/${network} is not built in: give its CAIP-2 id (solana:… or eip155:…)`);
      } else if (!familyOfCaip2(settings.caip2)) {
        issue('caip2', 'only the solana: and eip155: namespaces have a client');
      } else if (seenCaip2.has(settings.caip2)) {
        issue('caip2', `${settings.caip2} is already ${seenCaip2.get(settings.caip2)}`);
      } else {
        seenCaip2.set(settings.caip2, `${chain}.${network}`);
      }
      const names = namesOf.get(chain) ?? new Set<string>();
      if (!builtIn) {
        if (names.has(network)) issue('aliases', `${network} is already an alias on ${chain}`);
        names.add(network);
      }
      for (const alias of settings.aliases ?? []) {
        if (names.has(alias)) issue('aliases', `${alias} already names a ${chain} network`);
        names.add(alias);
      }
      namesOf.set(chain, names);
    }
  }
}

/** Environment variable → setting path. config/README.md documents each one; a test keeps them in step. */
export const ENV_VARS: Readonly<Record<string, string>> = {
  RISKWATCH_HOST: 'server.host',
  PORT: 'server.port',
  METRICS_PORT: 'server.metrics_port',
  RISKWATCH_BODY_LIMIT_KB: 'server.body_limit_kb',
  RISKWATCH_TRUST_PROXY: 'server.trust_proxy',
  RISKWATCH_SHUTDOWN_TIMEOUT_MS: 'server.shutdown_timeout_ms',
  DATABASE_URL: 'database.url',
  DATABASE_POOL_MAX: 'database.pool_max',
  REDIS_URL: 'redis.url',
  REDIS_KEY_PREFIX: 'redis.key_prefix',
  LOG_LEVEL: 'log.level',
  AGENT_KEYS: 'auth.agent_keys',
  RISKWATCH_API_KEY_CACHE_MS: 'auth.api_key_cache_ms',
  RISKWATCH_UNKNOWN_KEY_CACHE_MS: 'auth.unknown_key_cache_ms',
  RISKWATCH_MAX_API_KEYS_PER_ACCOUNT: 'auth.max_api_keys_per_account',
  JWT_ALGORITHMS: 'auth.jwt.algorithms',
  JWT_ISSUER: 'auth.jwt.issuer',
  JWT_AUDIENCE: 'auth.jwt.audience',
  JWT_SECRET: 'auth.jwt.secret',
  JWT_PUBLIC_KEY: 'auth.jwt.public_key',
  JWT_JWKS_URL: 'auth.jwt.jwks_url',
  JWT_JWKS_REFRESH_S: 'auth.jwt.jwks_refresh_s',
  JWT_JWKS_MIN_REFRESH_S: 'auth.jwt.jwks_min_refresh_s',
  JWT_MAX_AGE_S: 'auth.jwt.max_age_s',
  JWT_CLOCK_TOLERANCE_S: 'auth.jwt.clock_tolerance_s',
  JWT_ACCOUNT_CLAIM: 'auth.jwt.account_claim',
  JWT_ROLES_CLAIM: 'auth.jwt.roles_claim',
  JWT_KEY_ADMIN_ROLE: 'auth.jwt.key_admin_role',
  RISKWATCH_RATE_LIMIT_DEFAULT_PER_MIN: 'rate_limit.default_per_min',
  RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT: 'lists.max_entries_per_account',
  RISKWATCH_USAGE_RETENTION_DAYS: 'usage.retention_days',
  RISKWATCH_IMPACT_REFRESH_CRON: 'scheduler.impact_refresh_cron',
  RISKWATCH_USAGE_PRUNE_CRON: 'scheduler.usage_prune_cron',
  RISKWATCH_IMPACT_RELOAD_MS: 'impact.reload_ms',
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
  RISKWATCH_RPC_DEADLINE_MS: 'chains.defaults.deadline_ms',
  RISKWATCH_RPC_TIMEOUT_MS: 'chains.defaults.timeout_ms',
  RISKWATCH_RPC_RETRIES: 'chains.defaults.retries',
  RISKWATCH_RPC_BACKOFF_BASE_MS: 'chains.defaults.backoff_base_ms',
  RISKWATCH_RPC_BACKOFF_MAX_MS: 'chains.defaults.backoff_max_ms',
  RISKWATCH_RPC_RATE_PER_S: 'chains.defaults.rate_per_s',
  RISKWATCH_RPC_CONCURRENCY: 'chains.defaults.concurrency',
  RISKWATCH_RPC_BATCH_MAX: 'chains.defaults.batch_max',
  RISKWATCH_RPC_CIRCUIT_FAILURES: 'chains.defaults.circuit_failures',
  RISKWATCH_RPC_CIRCUIT_COOLDOWN_MIN_MS: 'chains.defaults.circuit_cooldown_min_ms',
  RISKWATCH_RPC_CIRCUIT_COOLDOWN_MS: 'chains.defaults.circuit_cooldown_ms',
  RISKWATCH_RPC_MAX_RESPONSE_MIB: 'chains.defaults.max_response_mib',
  RISKWATCH_RPC_MAX_BUFFERED_MIB: 'chains.defaults.max_buffered_mib',
  RISKWATCH_RPC_RETRY_AFTER_MAX_MS: 'chains.defaults.retry_after_max_ms',
  ...Object.fromEntries(
    BUILT_IN_NETWORKS.map((n) => [
      rpcEnvName(n.chain, n.network),
      `chains.networks.${n.chain}.${n.network}.rpc_urls`,
    ]),
  ),
};

export const DEFAULT_CONFIG_FILE = join(PROJECT_ROOT, 'config', 'riskwatch.yaml');

export class ConfigError extends Error {
  constructor(readonly lines: string[]) {
    super(lines.join('\n'));
    this.name = 'ConfigError';
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1)!] = value;
}

/** The variable of the setting at `path` or containing it (`auth.jwt.algorithms.0` → JWT_ALGORITHMS). */
function envNameFor(path: string): string | undefined {
  return Object.entries(ENV_VARS).find(([, p]) => path === p || path.startsWith(`${p}.`))?.[0];
}

function readYaml(file: string): Record<string, unknown> {
  try {
    return (parseYaml(readFileSync(file, 'utf8')) ?? {}) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError([`config: cannot read ${file}: ${(err as Error).message}`]);
  }
}

/** `over` merged into `base` key by key (objects merge, anything else replaces). */
function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [key, value] of Object.entries(over)) {
    // A YAML `__proto__:` key would set the merged object's prototype: no setting has such a name.
    if (key === '__proto__') continue;
    const current = out[key];
    const bothObjects = [current, value].every(
      (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
    );
    out[key] = bothObjects
      ? merge(current as Record<string, unknown>, value as Record<string, unknown>)
      : value;
  }
  return out;
}

/**
 * Reads the default YAML file, merges the operator's file (RISKWATCH_CONFIG) over it, applies environment
 * overrides, validates, and freezes. A bad value yields one line per problem naming the environment
 * variable (or the file path) that holds it.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  const defaults = readYaml(DEFAULT_CONFIG_FILE);
  const raw = env.RISKWATCH_CONFIG ? merge(defaults, readYaml(env.RISKWATCH_CONFIG)) : defaults;
  for (const [name, path] of Object.entries(ENV_VARS)) {
    const value = env[name];
    if (value !== undefined && value !== '') setPath(raw, path, value);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const path = issue.path.join('.');
        const envName = envNameFor(path);
        return `config: ${envName ?? path}${envName ? ` (${path})` : ''}: ${issue.message}`;
      }),
    );
  }
  return deepFreeze(parsed.data);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
