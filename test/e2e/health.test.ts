import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HealthBody } from '../../src/health/schemas.js';
import type { ImpactBody } from '../../src/impact/schemas.js';
import { createCustomer, type TestKey } from '../support/customers.js';
import { createTestDatabase, REDIS_URL, testRedisPrefix } from '../support/env.js';
import {
  eventually,
  freePort,
  killHard,
  prepareEnv,
  startService,
  type RunningService,
} from '../support/service.js';
import { startAnvil } from '../support/evm/anvil.js';

const AGENT_KEY = 'agent-key-current-0123456789';
const AGENT_KEY_OLD = 'agent-key-previous-9876543210';
const CHECK_NAMES = [
  'postgres:responseTime',
  'redis:responseTime',
  'migrations:pending',
  'queues:waiting',
  'workers:alive',
];
const PROBLEM_FIELDS = ['type', 'title', 'status', 'code', 'detail', 'request_id', 'retryable'];

async function get(svc: RunningService, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${svc.baseUrl}${path}`, { headers });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: <T = Record<string, unknown>>() => JSON.parse(text) as T,
  };
}

const agentHealth = (svc: RunningService, key = AGENT_KEY) =>
  get(svc, '/api/agent/health', { 'x-service-agent-key': key });

/** A problem document that says what failed and nothing about how the service is built. */
function expectBareProblem(r: Awaited<ReturnType<typeof get>>, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = r.json<Record<string, unknown>>();
  expect(body.code).toBe(code);
  expect(body.request_id).toBe(r.headers.get('x-request-id'));
  for (const key of Object.keys(body)) expect(PROBLEM_FIELDS).toContain(key);
  expect(r.text).not.toMatch(
    /stack|postgres|redis|mikro|migration|ECONNREFUSED|127\.0\.0\.1|rw_test_|select |\.js:\d+/i,
  );
  return body;
}

describe('health, readiness, dependency failures and public impact', () => {
  let env: Record<string, string>;
  let dropDatabase: () => Promise<void>;
  let svc: RunningService;
  let key: TestKey;
  let db: pg.Client;
  const extra: RunningService[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    ({ env, dropDatabase } = await prepareEnv({
      AGENT_KEYS: `${AGENT_KEY},${AGENT_KEY_OLD}`,
      RISKWATCH_IMPACT_REFRESH_CRON: '*/1 * * * * *',
      RISKWATCH_IMPACT_RELOAD_MS: '500',
    }));
    key = (await createCustomer(env, 'healthy', ['k'])).keys.k!;
    db = new pg.Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    svc = await startService(env, 'all');
  }, 180_000);

  afterAll(async () => {
    for (const s of extra) await killHard(s);
    await svc?.stop();
    await db?.end();
    for (const cleanup of cleanups) await cleanup();
    await dropDatabase?.();
  });

  it('/healthz answers 200 with no dependency details', async () => {
    const r = await get(svc, '/healthz');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.headers.get('x-request-id')).toMatch(/^req_/);
    expect(r.json()).toEqual({ status: 'pass' });
  });

  it('/readyz answers 200 when PostgreSQL and Redis are up and migrations are applied', async () => {
    const r = await get(svc, '/readyz');
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ status: 'pass' });
  });

  it('/api/agent/health needs a configured agent key, any of them', async () => {
    expectBareProblem(await get(svc, '/api/agent/health'), 401, 'unauthorized');
    expectBareProblem(await agentHealth(svc, 'agent-key-wrong-000000000000'), 401, 'unauthorized');
    expectBareProblem(await agentHealth(svc, `${AGENT_KEY}x`), 401, 'unauthorized');
    expect((await agentHealth(svc, AGENT_KEY_OLD)).status).toBe(200);
  });

  it('/api/agent/health reports every dependency as application/health+json (role all: workers alive)', async () => {
    const r = await agentHealth(svc);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/health\+json/);
    const body = r.json<HealthBody>();
    expect(body.status).toBe('pass');
    expect(body.version).toBe('0.1.0');
    expect(typeof body.release_id).toBe('string');
    expect(Number.isInteger(body.uptime_s)).toBe(true);
    expect(Object.keys(body.checks)).toEqual(expect.arrayContaining(CHECK_NAMES));

    for (const name of ['postgres:responseTime', 'redis:responseTime']) {
      const [check] = body.checks[name]!;
      expect(check).toMatchObject({ status: 'pass', observed_unit: 'ms' });
      expect(check!.observed_value).toBeGreaterThanOrEqual(0);
    }
    expect(body.checks['migrations:pending']).toEqual([{ status: 'pass', observed_value: 0 }]);
    const queues = body.checks['queues:waiting']!;
    expect(queues.map((q) => q.component_id).sort()).toEqual(
      [
        'impact-refresh',
        'usage-drain',
        'usage-prune',
        'watchlist-chunk',
        'watchlist-tick',
        'watchlists-due',
        'webhook-drain',
        'webhooks-sweep',
        'events-prune',
        'audit-prune',
        'screenings-prune',
        'partitions-maintain',
        'screening-start',
        'screening-chunk',
      ].sort(),
    );
    for (const q of queues) {
      expect(['pass', 'warn']).toContain(q.status);
      expect(q.observed_value).toBeGreaterThanOrEqual(0);
      expect(q.oldest_wait_s).toBeGreaterThanOrEqual(0);
    }
    const [workers] = body.checks['workers:alive']!;
    expect(workers!.status).toBe('pass');
    expect(workers!.observed_value).toBeGreaterThan(0);
  });

  it('/api/agent/health warns (still 200) when no worker is alive', async () => {
    // Same database, a Redis prefix of its own: no worker heartbeats there.
    const api = await startService({ ...env, REDIS_KEY_PREFIX: testRedisPrefix() }, 'api');
    extra.push(api);
    const r = await agentHealth(api);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/health\+json/);
    const body = r.json<HealthBody>();
    expect(body.status).toBe('warn');
    expect(body.checks['workers:alive']).toEqual([{ status: 'warn', observed_value: 0 }]);
    expect(body.checks['migrations:pending']![0]!.status).toBe('pass');
    expect(await api.stop()).toBe(0);
  }, 60_000);

  it('/api/agent/health probes each configured node provider (a dead one is warn, never fail)', async () => {
    const anvil = await startAnvil();
    cleanups.push(() => anvil.stop());
    const deadUrl = `http://127.0.0.1:${await freePort()}`;
    const api = await startService(
      { ...env, RISKWATCH_RPC_ETHEREUM_MAINNET: anvil.url, RISKWATCH_RPC_BASE_MAINNET: deadUrl },
      'all',
    );
    extra.push(api);
    const body = (await agentHealth(api)).json<HealthBody>();
    const eth = body.checks['provider:ethereum/mainnet']!;
    expect(eth).toHaveLength(1);
    expect(eth[0]).toMatchObject({
      status: 'pass',
      component_id: 'ethereum/mainnet#0',
      observed_unit: 'ms',
      head: 0,
    });
    const base = body.checks['provider:base/mainnet']!;
    expect(base[0]).toMatchObject({ status: 'warn', component_id: 'base/mainnet#0' });
    expect(body.status).toBe('warn');
    // Provider URLs may carry API keys: never in the health document.
    expect(JSON.stringify(body)).not.toContain(anvil.url);
    expect(JSON.stringify(body)).not.toContain(deadUrl);
    expect(body.checks['provider:solana/mainnet']).toBeUndefined();
    expect(await api.stop()).toBe(0);
  }, 60_000);

  it('a database without migrations: alive, not ready (503, no internals), deep health fails', async () => {
    const bare = await createTestDatabase();
    cleanups.push(bare.drop);
    const api = await startService(
      {
        DATABASE_URL: bare.url,
        REDIS_URL,
        REDIS_KEY_PREFIX: testRedisPrefix(),
        LOG_LEVEL: 'warn',
        AGENT_KEYS: AGENT_KEY,
      },
      'api',
      '/healthz',
    );
    extra.push(api);

    expect((await get(api, '/healthz')).status).toBe(200);
    const ready = expectBareProblem(await get(api, '/readyz'), 503, 'dependency_unavailable');
    expect(ready.retryable).toBe(true);

    const deep = await agentHealth(api);
    expect(deep.status).toBe(503);
    expect(deep.headers.get('content-type')).toMatch(/^application\/health\+json/);
    const body = deep.json<HealthBody>();
    expect(body.status).toBe('fail');
    const [pending] = body.checks['migrations:pending']!;
    expect(pending!.status).toBe('fail');
    expect(pending!.observed_value).toBeGreaterThanOrEqual(1);
    expect(body.checks['postgres:responseTime']![0]!.status).toBe('pass');

    // Nothing to serve the impact numbers from yet: a clean 503, not a 500.
    expectBareProblem(await get(api, '/api/public/impact'), 503, 'dependency_unavailable');
    expect(await api.stop()).toBe(0);
  }, 60_000);

  it('Redis unreachable: developer API answers 503 dependency_unavailable, public impact still works', async () => {
    const api = await startService(
      { ...env, REDIS_URL: `redis://127.0.0.1:${await freePort()}`, REDIS_KEY_PREFIX: testRedisPrefix() },
      'api',
      '/healthz',
    );
    extra.push(api);

    expect((await get(api, '/healthz')).status).toBe(200);
    expectBareProblem(await get(api, '/readyz'), 503, 'dependency_unavailable');

    for (let i = 0; i < 3; i++) {
      const r = await get(api, '/api/v1/usage', { 'X-API-Key': key.key });
      const body = expectBareProblem(r, 503, 'dependency_unavailable');
      expect(body.retryable).toBe(true);
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
    }
    // Credentials are still judged first: a bad key is 401, not 503.
    expectBareProblem(
      await get(api, '/api/v1/usage', { 'X-API-Key': 'rwk_notarealkey' }),
      401,
      'unauthorized',
    );

    const impact = await get(api, '/api/public/impact');
    expect(impact.status).toBe(200);
    expect(impact.headers.get('cache-control')).toBe('public, max-age=60');
    expect(impact.json<ImpactBody>().chains).toEqual(expect.arrayContaining(['solana', 'ethereum']));

    const deep = await agentHealth(api);
    expect(deep.status).toBe(503);
    const body = deep.json<HealthBody>();
    expect(body.status).toBe('fail');
    expect(body.checks['redis:responseTime']![0]!.status).toBe('fail');
    expect(body.checks['postgres:responseTime']![0]!.status).toBe('pass');

    expect(await api.stop(), api.output()).toBe(0);
  }, 60_000);

  it('/api/public/impact: public cache, zero on a fresh install, then the refreshed counters', async () => {
    const first = await get(svc, '/api/public/impact');
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('public, max-age=60');
    expect(first.headers.get('content-type')).toMatch(/^application\/json/);
    const zero = first.json<ImpactBody>();
    expect(zero.generated_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(zero.chains).toEqual(expect.arrayContaining(['solana', 'ethereum']));
    expect({ ...zero, generated_at: undefined, chains: undefined }).toEqual({
      generated_at: undefined,
      chains: undefined,
      assessments: { total: 0, last_24h: 0 },
      token_scans: { total: 0, last_24h: 0 },
      preflights: { total: 0, blocked: 0, warned: 0 },
      high_risk_findings: { total: 0 },
      watchlists: { targets_monitored: 0, alerts_delivered: 0 },
    });

    const rows: [string, string, number][] = [
      ['assessments', "date_trunc('hour', now())", 5],
      ['assessments', "date_trunc('hour', now()) - interval '48 hours'", 3],
      ['token_scans', "date_trunc('hour', now()) - interval '1 hour'", 2],
      ['preflights', "date_trunc('hour', now())", 4],
      ['preflights_blocked', "date_trunc('hour', now())", 1],
      ['preflights_warned', "date_trunc('hour', now())", 2],
      ['high_risk_findings', "date_trunc('hour', now())", 7],
      ['alerts_delivered', "date_trunc('hour', now())", 6],
    ];
    for (const [metric, hour, count] of rows)
      await db.query(`insert into impact_counters (metric, hour, count) values ($1, ${hour}, $2)`, [
        metric,
        count,
      ]);
    // Targets monitored: the entries on watchlists now.
    await db.query(
      `insert into watchlists (id, account_id, name, schedule, deep_schedule, thresholds, created_at, updated_at)
       values ('wl_impact', 'acc_impact', 'impact', '0 0 1 1 *', '0 0 1 1 *', '{}', now(), now())`,
    );
    await db.query(
      `insert into watchlist_entries (id, account_id, watchlist_id, chain, network, target, created_at)
       select 'wle_impact_' || i, 'acc_impact', 'wl_impact', 'ethereum', 'eip155:1', '0x' || lpad(i::text, 40, '0'), now()
         from generate_series(1, 9) as i`,
    );

    const started = Date.now();
    const refreshed = await eventually(async () => {
      const body = (await get(svc, '/api/public/impact')).json<ImpactBody>();
      return body.assessments.total === 8 ? body : undefined;
    }, 15_000);
    console.log(`[health] impact counters served ${Date.now() - started} ms after the insert`);
    expect(refreshed).toBeDefined();
    expect(refreshed).toMatchObject({
      assessments: { total: 8, last_24h: 5 },
      token_scans: { total: 2, last_24h: 2 },
      preflights: { total: 4, blocked: 1, warned: 2 },
      high_risk_findings: { total: 7 },
      watchlists: { targets_monitored: 9, alerts_delivered: 6 },
    });
    expect(Date.parse(refreshed!.generated_at)).toBeGreaterThan(Date.parse(zero.generated_at));
  }, 30_000);
});
