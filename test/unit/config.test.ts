import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_CONFIG_FILE, ENV_VARS, loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/platform/config.js';
import { PROJECT_ROOT } from '../../src/platform/paths.js';

/** The ConfigError `fn` throws; fails the test when nothing (or something else) is thrown. */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, but nothing was thrown');
}

function leafPaths(node: unknown, prefix = ''): string[] {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return [prefix];
  return Object.entries(node).flatMap(([k, v]) => leafPaths(v, prefix ? `${prefix}.${k}` : k));
}

function expectDeeplyFrozen(value: unknown, path = 'config'): void {
  if (value === null || typeof value !== 'object') return;
  expect(Object.isFrozen(value), `${path} is frozen`).toBe(true);
  for (const [k, v] of Object.entries(value)) expectDeeplyFrozen(v, `${path}.${k}`);
}

describe('loadConfig', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'rw-config-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('parses the default file into typed defaults', () => {
    const config = loadConfig({});
    expect(config.server).toEqual({
      host: '0.0.0.0',
      port: 8080,
      api_processes: 1,
      metrics_port: 9464,
      body_limit_kb: 64,
      trust_proxy: false,
      shutdown_timeout_ms: 10000,
    });
    expect(config.database).toEqual({ url: 'postgres://postgres@127.0.0.1:5432/riskwatch', pool_max: 10 });
    expect(config.redis).toEqual({ url: 'redis://127.0.0.1:6379', cluster_nodes: [], key_prefix: 'rw:' });
    expect(config.log.level).toBe('info');
    expect(config.auth.agent_keys).toEqual([]);
    expect(config.auth.api_key_cache_ms).toBe(2000);
    expect(config.auth.jwt).toMatchObject({
      algorithms: ['RS256'],
      clock_tolerance_s: 30,
      account_claim: 'org_id',
      roles_claim: 'roles',
      key_admin_role: 'riskwatch:key-admin',
      jwks_url: '',
    });
    expect(config.rate_limit.default_per_min).toBe(600);
    expect(config.usage.retention_days).toBe(90);
    expect(config.audit.retention_days).toBe(400);
    expect(config.screenings).toEqual({ retention_days: 30, chunk_concurrency: 8, provider_share_pct: 50 });
    expect(config.scheduler).toEqual({
      impact_refresh_cron: '*/15 * * * * *',
      usage_prune_cron: '17 3 * * *',
      watchlists_cron: '* * * * *',
      webhooks_sweep_cron: '*/5 * * * * *',
      events_prune_cron: '23 3 * * *',
      audit_prune_cron: '29 3 * * *',
      screenings_prune_cron: '41 3 * * *',
      partitions_maintain_cron: '7 0 * * *',
    });
    expect(config.partitions).toEqual({ days_ahead: 7 });
    expect(config.webhooks).toMatchObject({
      retry_schedule_s: [5, 300, 1800, 7200, 18000, 36000, 36000, 36000],
      timeout_ms: 15_000,
      disable_after_failing_s: 432_000,
      secret_overlap_s: 86_400,
      allow_cidrs: [],
      allow_http: false,
    });
    expect(config.watchlists).toEqual({
      default_schedule: '*/5 * * * *',
      default_deep_schedule: '0 3 * * *',
      max_entries_per_account: 1_000_000,
      max_per_account: 1000,
      rescan_min_interval_s: 300,
      scan_concurrency: 8,
      deep_concurrency: 4,
    });
    expect(config.impact.reload_ms).toBe(5000);
  });

  it('applies environment overrides, coercing types and splitting comma lists', () => {
    const config = loadConfig({
      PORT: '9000',
      METRICS_PORT: '9100',
      RISKWATCH_TRUST_PROXY: 'true',
      DATABASE_URL: 'postgresql://rw:secret@db.internal:5433/rw',
      AGENT_KEYS: ' agent-key-aaaaaaaaaaaa , agent-key-bbbbbbbbbbbb,',
      JWT_ALGORITHMS: 'ES256,RS256',
      JWT_JWKS_URL: 'https://idp.example/.well-known/jwks.json',
      LOG_LEVEL: 'debug',
    });
    expect(config.server.port).toBe(9000);
    expect(config.server.metrics_port).toBe(9100);
    expect(config.server.trust_proxy).toBe(true);
    expect(config.database.url).toBe('postgresql://rw:secret@db.internal:5433/rw');
    expect(config.auth.agent_keys).toEqual(['agent-key-aaaaaaaaaaaa', 'agent-key-bbbbbbbbbbbb']);
    expect(config.auth.jwt.algorithms).toEqual(['ES256', 'RS256']);
    expect(config.auth.jwt.jwks_url).toBe('https://idp.example/.well-known/jwks.json');
    expect(config.log.level).toBe('debug');
    // Untouched settings keep the file's values.
    expect(config.server.host).toBe('0.0.0.0');
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '', LOG_LEVEL: '' }).server.port).toBe(8080);
  });

  it('reads the file named by RISKWATCH_CONFIG, environment still winning', () => {
    const defaults = parseYaml(readFileSync(DEFAULT_CONFIG_FILE, 'utf8')) as {
      server: Record<string, unknown>;
      log: Record<string, unknown>;
    };
    defaults.server.port = 7000;
    defaults.log.level = 'error';
    const file = join(tmp, 'custom.yaml');
    writeFileSync(file, JSON.stringify(defaults));
    const config = loadConfig({ RISKWATCH_CONFIG: file, LOG_LEVEL: 'warn' });
    expect(config.server.port).toBe(7000);
    expect(config.log.level).toBe('warn');
  });

  it('reports an unreadable file in one line', () => {
    const err = configError(() => loadConfig({ RISKWATCH_CONFIG: join(tmp, 'missing.yaml') }));
    expect(err.lines).toHaveLength(1);
    expect(err.lines[0]).toMatch(/^config: cannot read .*missing\.yaml/);
  });

  it('merges a partial RISKWATCH_CONFIG file over the defaults', () => {
    const file = join(tmp, 'partial.yaml');
    writeFileSync(file, 'server:\n  port: 7100\nauth:\n  jwt:\n    issuer: https://idp.example\n');
    const config = loadConfig({ RISKWATCH_CONFIG: file });
    expect(config.server.port).toBe(7100);
    expect(config.server.metrics_port).toBe(9464);
    expect(config.auth.jwt.issuer).toBe('https://idp.example');
    expect(config.auth.jwt.account_claim).toBe('org_id');
  });

  it('names the file setting of a bad value from a file', () => {
    const file = join(tmp, 'bad.yaml');
    writeFileSync(file, 'server:\n  port: not-a-port\n');
    const err = configError(() => loadConfig({ RISKWATCH_CONFIG: file }));
    expect(err.lines).toHaveLength(1);
    expect(err.lines[0]).toMatch(/^config: PORT \(server\.port\): /);
  });

  it('rejects bad values with exactly one line per bad value, naming each variable', () => {
    const err = configError(() =>
      loadConfig({
        PORT: 'abc',
        LOG_LEVEL: 'loud',
        DATABASE_URL: 'mysql://x',
        RISKWATCH_API_KEY_CACHE_MS: '6000',
        JWT_ALGORITHMS: 'HS256,RS256',
      }),
    );
    expect(err.lines).toHaveLength(5);
    for (const name of [
      'PORT',
      'LOG_LEVEL',
      'DATABASE_URL',
      'RISKWATCH_API_KEY_CACHE_MS',
      'JWT_ALGORITHMS',
    ]) {
      const lines = err.lines.filter((l) => l.startsWith(`config: ${name} (`));
      expect(lines, `one line for ${name} in:\n${err.message}`).toHaveLength(1);
    }
    for (const line of err.lines) expect(line).not.toContain('\n');
    expect(err.lines.find((l) => l.includes('JWT_ALGORITHMS'))).toMatch(/mixing HS\* with asymmetric/);
    expect(err.message).toBe(err.lines.join('\n'));
  });

  it.each([
    ['PORT', '70000'],
    ['METRICS_PORT', '-1'],
    ['RISKWATCH_TRUST_PROXY', 'yes'],
    ['REDIS_URL', 'http://cache:6379'],
    ['AGENT_KEYS', 'short'],
    ['JWT_ALGORITHMS', 'none'],
    ['JWT_JWKS_URL', 'ftp://idp.example/jwks'],
    ['JWT_CLOCK_TOLERANCE_S', '301'],
    ['RISKWATCH_IMPACT_REFRESH_CRON', 'every minute'],
    ['RISKWATCH_RATE_LIMIT_DEFAULT_PER_MIN', '0'],
  ])('%s=%s is refused in one line naming the variable', (name, value) => {
    const err = configError(() => loadConfig({ [name]: value }));
    expect(err.lines).toEqual([expect.stringMatching(new RegExp(`^config: ${name} \\(${ENV_VARS[name]}`))]);
  });

  it('refuses a short HS secret and a public key together with a JWKS URL', () => {
    expect(configError(() => loadConfig({ JWT_ALGORITHMS: 'HS256', JWT_SECRET: 'too-short' })).lines).toEqual(
      [expect.stringMatching(/^config: JWT_SECRET \(auth\.jwt\.secret\): .*32\+ characters/)],
    );
    expect(
      configError(() =>
        loadConfig({
          JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----',
          JWT_JWKS_URL: 'https://idp.example/jwks',
        }),
      ).lines,
    ).toEqual([expect.stringMatching(/^config: JWT_PUBLIC_KEY \(auth\.jwt\.public_key\): /)]);
  });

  it('refuses an event retention shorter than the webhook retry window, naming the variable', () => {
    // The default schedule at its longest (20 % jitter, or the 1 h Retry-After cap) is about 1.96 days.
    expect(configError(() => loadConfig({ RISKWATCH_EVENT_RETENTION_DAYS: '1' })).lines).toEqual([
      expect.stringMatching(
        /^config: RISKWATCH_EVENT_RETENTION_DAYS \(webhooks\.event_retention_days\): 1 days is shorter than the webhook retry window \(2\.0 days/,
      ),
    ]);
    expect(loadConfig({ RISKWATCH_EVENT_RETENTION_DAYS: '2' }).webhooks.event_retention_days).toBe(2);
    // A shorter schedule makes a short retention valid; a longer one refuses the default 30 days.
    expect(
      loadConfig({ RISKWATCH_EVENT_RETENTION_DAYS: '1', RISKWATCH_WEBHOOK_RETRY_SCHEDULE_S: '5,60,600' })
        .webhooks.event_retention_days,
    ).toBe(1);
    expect(
      configError(() =>
        loadConfig({ RISKWATCH_WEBHOOK_RETRY_SCHEDULE_S: '604800,604800,604800,604800,604800' }),
      ).lines,
    ).toEqual([
      expect.stringMatching(
        /^config: RISKWATCH_EVENT_RETENTION_DAYS .*shorter than the webhook retry window \(42\.0 days/,
      ),
    ]);
  });

  it('takes Redis Cluster seed nodes, and refuses a node without a port or a URL naming a database', () => {
    const config = loadConfig({
      REDIS_CLUSTER_NODES: ' redis-0.internal:6379, [fd00::1]:7000 ',
      REDIS_URL: 'rediss://user:pw@ignored:6379/0',
    });
    expect(config.redis.cluster_nodes).toEqual(['redis-0.internal:6379', '[fd00::1]:7000']);
    const err = configError(() =>
      loadConfig({ REDIS_CLUSTER_NODES: 'redis-0.internal', REDIS_URL: 'redis://cluster.internal:6379' }),
    );
    expect(err.lines).toEqual([
      expect.stringMatching(/^config: REDIS_CLUSTER_NODES \(redis\.cluster_nodes\.0\): expected host:port/),
    ]);
    const db = configError(() =>
      loadConfig({
        REDIS_CLUSTER_NODES: 'redis-0.internal:6379',
        REDIS_URL: 'redis://cluster.internal:6379/2',
      }),
    );
    expect(db.lines).toEqual([
      expect.stringMatching(/^config: REDIS_URL \(redis\.url\): a Redis Cluster has only database 0/),
    ]);
  });

  it('returns a deeply frozen object', () => {
    const config = loadConfig({ AGENT_KEYS: 'agent-key-aaaaaaaaaaaa' });
    expectDeeplyFrozen(config);
    expect(() => {
      config.server.port = 1;
    }).toThrow(TypeError);
    expect(() => config.auth.agent_keys.push('x')).toThrow(TypeError);
  });
});

describe('risk settings', () => {
  const IMPL = '0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B';

  it('defaults: 10 s analyses, 1.5 s preflights failing to warn, TTLs by level, no extra wallet implementations', () => {
    expect(loadConfig({}).risk).toEqual({
      deadline_ms: 10000,
      recent_transactions: 20,
      cache_ttl_s: { low: 60, medium: 45, high: 30, critical: 15 },
      preflight: { deadline_ms: 1500, fail_mode: 'warn', policy_name: 'default' },
      known_wallet_implementations: [],
      evm: { routers: [], known_tokens: [], approvals_lookback_days: 365 },
    });
  });

  it('takes EVM routers and known tokens (JSON) from the environment, and refuses a malformed one by name', () => {
    const router = '0x7a250d5630B4cF539739dF2C5dAcb4c659F2488D';
    const config = loadConfig({
      RISKWATCH_EVM_ROUTERS: JSON.stringify([{ network: 'eip155:1', address: router }]),
      RISKWATCH_EVM_APPROVALS_LOOKBACK_DAYS: '30',
    });
    expect(config.risk.evm).toEqual({
      routers: [{ network: 'eip155:1', address: router, name: 'configured router', source: 'configuration' }],
      known_tokens: [],
      approvals_lookback_days: 30,
    });
    expect(() =>
      loadConfig({ RISKWATCH_EVM_KNOWN_TOKENS: JSON.stringify([{ network: 'solana:x', address: router }]) }),
    ).toThrow(/RISKWATCH_EVM_KNOWN_TOKENS \(risk\.evm\.known_tokens\.0\.network\)/);
  });

  it('takes the preflight fail mode and extra EIP-7702 wallet implementations (JSON) from the environment', () => {
    const config = loadConfig({
      RISKWATCH_PREFLIGHT_FAIL_MODE: 'block',
      RISKWATCH_KNOWN_WALLET_IMPLEMENTATIONS: JSON.stringify([
        { address: IMPL, name: 'Our wallet', chainIds: [1] },
      ]),
    });
    expect(config.risk.preflight.fail_mode).toBe('block');
    expect(config.risk.known_wallet_implementations).toEqual([
      { address: IMPL, name: 'Our wallet', chainIds: [1] },
    ]);
  });

  it('refuses a fail mode, a JSON list or an implementation entry it does not know, naming the variable', () => {
    const lines = configError(() =>
      loadConfig({
        RISKWATCH_PREFLIGHT_FAIL_MODE: 'ignore',
        RISKWATCH_KNOWN_WALLET_IMPLEMENTATIONS: '[{"address":"0x12","name":"x"}]',
      }),
    ).lines;
    expect(lines).toEqual([
      expect.stringMatching(/^config: RISKWATCH_PREFLIGHT_FAIL_MODE \(risk\.preflight\.fail_mode\): /),
      expect.stringMatching(
        /^config: RISKWATCH_KNOWN_WALLET_IMPLEMENTATIONS \(risk\.known_wallet_implementations\.0\.address\): expected an EVM address/,
      ),
    ]);
    expect(
      configError(() => loadConfig({ RISKWATCH_KNOWN_WALLET_IMPLEMENTATIONS: 'not json' })).lines,
    ).toEqual([expect.stringMatching(/RISKWATCH_KNOWN_WALLET_IMPLEMENTATIONS .*expected a JSON array/)]);
  });
});

describe('config/README.md', () => {
  const readme = () => readFileSync(join(PROJECT_ROOT, 'config', 'README.md'), 'utf8');
  /** Setting path → its table row, for rows whose first cell is a `code` setting path. */
  const rows = () =>
    new Map(
      readme()
        .split('\n')
        .map((line) => [/^\|\s*`([^`]+)`\s*\|/.exec(line)?.[1], line] as const)
        .filter((entry): entry is readonly [string, string] => entry[0] !== undefined),
    );

  it('documents every environment variable in the settings table, beside its setting path', () => {
    const table = rows();
    for (const [name, path] of Object.entries(ENV_VARS)) {
      const row = table.get(path);
      expect(row, `a table row for ${path}`).toBeDefined();
      expect(row!.split('|')[2]?.trim(), `${path} names ${name}`).toBe(`\`${name}\``);
    }
  });

  it('documents every setting of the default file, and nothing that does not exist', () => {
    const paths = leafPaths(parseYaml(readFileSync(DEFAULT_CONFIG_FILE, 'utf8')));
    expect(new Set(rows().keys())).toEqual(new Set(paths));
    expect(paths.sort()).toEqual(Object.values(ENV_VARS).sort());
  });

  it('explains RISKWATCH_CONFIG and the exit code on a bad configuration', () => {
    expect(readme()).toContain('RISKWATCH_CONFIG');
    expect(readme()).toMatch(/exits with code \*\*78\*\*/);
  });
});
