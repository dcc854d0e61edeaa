import type { ChainsConfig } from '../chains/settings.js';
import type { JwtSettings } from '../http/settings.js';
import { ConfigError } from '../platform/config.js';
import type { DatabaseSettings, RedisSettings } from '../platform/settings.js';
import type { WebhooksSettings } from '../webhooks/settings.js';
import { checkAuth } from './auth.js';
import { checkPostgres } from './postgres.js';
import { checkProviders } from './providers.js';
import { checkQueues } from './queues.js';
import { checkRedis } from './redis.js';
import type { Finding } from './report.js';
import { Redactor } from './secrets.js';
import { describeError, withTimeout } from './timeout.js';
import { checkWebhooks } from './webhooks.js';

/** What the doctor reads of the configuration. */
export interface DoctorConfig {
  database: DatabaseSettings;
  redis: RedisSettings;
  auth: { agent_keys: readonly string[]; jwt: JwtSettings };
  chains: ChainsConfig;
  webhooks: WebhooksSettings;
}

export interface DoctorOptions {
  /** Loads and validates the configuration as the service does; throws ConfigError when it is bad. */
  config: () => Readonly<DoctorConfig>;
  env: NodeJS.ProcessEnv;
  /** Each step of each check: past it, the check fails with "no answer". */
  timeoutMs: number;
}

/**
 * Every check, in a fixed order: the configuration first (nothing else runs without it), then
 * PostgreSQL, Redis and its queues, the node providers, bearer-token verification and the webhook guard,
 * those groups at once. No check throws: a broken part is a finding. Details never carry a secret.
 */
export async function runDoctor({ config, env, timeoutMs }: DoctorOptions): Promise<Finding[]> {
  const redactor = new Redactor();
  redactor.addEnvironment(env);
  let cfg: Readonly<DoctorConfig>;
  try {
    cfg = config();
  } catch (err) {
    const lines = err instanceof ConfigError ? err.lines : [`config: ${describeError(err)}`];
    const findings: Finding[] = [
      { check: 'config', status: 'fail', detail: lines.join('; ') },
      { check: 'other checks', status: 'info', detail: 'not run: they need a configuration that loads' },
    ];
    return findings.map((f) => ({ ...f, detail: redactor.redact(f.detail) }));
  }
  for (const url of [cfg.database.url, cfg.redis.url, cfg.auth.jwt.jwks_url]) redactor.addUrl(url);
  for (const secret of [
    cfg.auth.jwt.secret,
    ...cfg.auth.agent_keys,
    cfg.webhooks.secrets_key,
    ...cfg.webhooks.secrets_previous_keys,
    ...Object.values(cfg.chains.networks).flatMap((networks) =>
      Object.values(networks).flatMap((n) => n.rpc_urls),
    ),
  ])
    redactor.add(secret);

  const group = (name: string, work: () => Promise<Finding[]> | Finding[]): Promise<Finding[]> =>
    Promise.resolve()
      .then(work)
      .catch((err: unknown): Finding[] => [
        { check: name, status: 'fail', detail: `the check itself failed: ${describeError(err)}` },
      ]);

  const results = await Promise.all([
    group('postgres', () => checkPostgres(cfg.database.url, timeoutMs)),
    group('redis', async () => {
      const { redis, findings } = await checkRedis(cfg.redis, timeoutMs);
      if (!redis)
        return [
          ...findings,
          { check: 'queues', status: 'info', detail: 'not checked: Redis did not answer' },
        ];
      try {
        return [...findings, ...(await checkQueues(redis, cfg.redis.key_prefix, timeoutMs))];
      } finally {
        await withTimeout(redis.quit(), timeoutMs).catch(() => redis.disconnect());
      }
    }),
    group('providers', () => checkProviders(cfg.chains, timeoutMs)),
    group('auth', () => checkAuth(cfg.auth.jwt, timeoutMs)),
    group('webhooks', () => checkWebhooks(cfg.webhooks)),
  ]);
  const configFinding: Finding = {
    check: 'config',
    status: 'ok',
    detail: `valid: config/riskwatch.yaml${env.RISKWATCH_CONFIG ? `, ${env.RISKWATCH_CONFIG}` : ''} and the environment`,
  };
  return [configFinding, ...results.flat()].map((f) => ({ ...f, detail: redactor.redact(f.detail) }));
}
