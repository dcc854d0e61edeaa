import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_NAMES, JobQueues } from '../../src/jobs/queues.js';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { expectJson, expectProblem, openAccounts, type Customer } from '../support/auth-helpers.js';
import { REDIS_URL } from '../support/env.js';
import { parseSamples } from '../support/prometheus.js';
import { eventually, freePort, prepareEnv, startService, type RunningService } from '../support/service.js';
import type { SolanaFacade } from '../support/solana/facade.js';
import { buildSolanaWorld, type SolanaWorld } from '../support/solana/fixtures.js';
import { transferSol } from '../support/solana/token.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

/*
 * The Grafana dashboard (helm/riskwatch/dashboards/riskwatch.json) against the real thing: the built service
 * as three processes (api, worker, scheduler) over a LiteSVM facade, PostgreSQL and Redis, traffic enough for
 * every panel (preflights and token scans, a 401, a 403, a 429, a provider failing, a watchlist alert, webhook
 * deliveries), scraped every second by a real Prometheus server (/usr/bin/prometheus). Every query of every
 * panel, its variables substituted as Grafana would, must parse, name only metrics the service exports, and
 * return data.
 */

const PROMETHEUS = process.env.PROMETHEUS ?? 'prometheus';
/** What Grafana makes of $__rate_interval at a 1 s scrape interval: at least four scrapes. */
const RATE_INTERVAL = '15s';
/** A schedule that does not fire during the test: the test enqueues the watchlist ticks itself. */
const NEVER = '0 0 1 1 *';

interface Target {
  expr: string;
  refId: string;
}
interface Panel {
  type: string;
  title: string;
  targets?: Target[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; allValue?: string; definition?: string }[] };
}
interface QueryAnswer {
  status: string;
  error?: string;
  data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
}

const dashboard = JSON.parse(
  readFileSync(join(PROJECT_ROOT, 'helm', 'riskwatch', 'dashboards', 'riskwatch.json'), 'utf8'),
) as Dashboard;

/** The query as Grafana sends it: the dashboard's variables replaced (the job variable at "All"). */
function substitute(expr: string): string {
  const job = dashboard.templating.list.find((v) => v.name === 'job');
  return expr
    .replaceAll('$__rate_interval', RATE_INTERVAL)
    .replaceAll('${job}', job?.allValue ?? '.+')
    .replaceAll('$job', job?.allValue ?? '.+');
}

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or']);
KEYWORDS.add('unless').add('bool').add('offset').add('inf').add('nan');

/** The metric names a PromQL expression reads: identifiers outside strings, matchers, ranges and label lists. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  return [...bare.matchAll(/\b[a-zA-Z_][a-zA-Z0-9_]*\b(?!\s*\()/g)]
    .map((m) => m[0])
    .filter((word) => !KEYWORDS.has(word.toLowerCase()));
}

let world: SolanaWorld;
let facade: SolanaFacade;
let env: Record<string, string>;
let dropDatabase: () => Promise<void>;
let closeAccounts: () => Promise<void>;
let db: pg.Client;
let bull: Redis;
let queues: JobQueues;
let api: RunningService;
let worker: RunningService;
let scheduler: RunningService;
let receiver: Receiver;
let prometheus: ChildProcess | undefined;
let prometheusUrl = '';
let prometheusLog = '';
let tmp = '';

const call = (customer: Customer | undefined, method: string, path: string, body?: unknown) =>
  fetch(`${api.baseUrl}${path}`, {
    method,
    headers: {
      ...(customer ? { 'x-api-key': customer.key.key } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

async function query(expr: string): Promise<QueryAnswer> {
  const url = `${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expr)}`;
  return (await (await fetch(url)).json()) as QueryAnswer;
}

/** The single value of an instant query (0 when it has no result). */
async function scalar(expr: string): Promise<number> {
  const answer = await query(expr);
  expect(answer.status, `${expr}: ${answer.error}`).toBe('success');
  return Number(answer.data?.result[0]?.value[1] ?? 0);
}

async function startPrometheus(targets: { role: string; url: string }[]): Promise<void> {
  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  const config = join(tmp, 'prometheus.yml');
  writeFileSync(
    config,
    stringify({
      global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
      scrape_configs: [
        {
          job_name: 'riskwatch',
          metrics_path: '/metrics',
          static_configs: targets.map(({ role, url }) => ({
            targets: [new URL(url).host],
            labels: { role },
          })),
        },
      ],
    }),
  );
  const child = spawn(
    PROMETHEUS,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(tmp, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  prometheus = child;
  child.stdout?.on('data', (d: Buffer) => (prometheusLog += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (prometheusLog += d.toString()));
  const spawned = await new Promise<Error | undefined>((resolve) => {
    child.once('error', resolve);
    child.once('spawn', () => resolve(undefined));
  });
  if (spawned) throw new Error(`${PROMETHEUS} is needed (Debian package "prometheus"): ${spawned.message}`);
  const ready = await eventually(
    async () => {
      if (child.exitCode !== null) return false;
      const res = await fetch(`${prometheusUrl}/-/ready`).catch(() => undefined);
      await res?.arrayBuffer();
      return res?.status === 200;
    },
    20_000,
    100,
  );
  if (!ready) throw new Error(`prometheus did not get ready:\n${prometheusLog}`);
}

beforeAll(async () => {
  world = await buildSolanaWorld();
  facade = await world.startFacade();
  const receiverPort = await freePort();
  ({ env, dropDatabase } = await prepareEnv({
    RISKWATCH_RPC_SOLANA_MAINNET: facade.url,
    // Low enough that a burst of preflights waits for the provider rate.
    RISKWATCH_RPC_RATE_PER_S: '5',
    RISKWATCH_RPC_RETRIES: '2',
    RISKWATCH_WEBHOOK_ALLOW_HTTP: 'true',
    RISKWATCH_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
  }));
  const accounts = await openAccounts(env);
  closeAccounts = accounts.close;
  const acme = await accounts.customer('dash-acme');
  const limited = await accounts.customer('dash-limited', { rateLimitPerMin: 1 });
  const unentitled = await accounts.customer('dash-none', { entitlement: 'none' });
  db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  bull = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  queues = new JobQueues(bull, env.REDIS_KEY_PREFIX!);
  [api, worker, scheduler] = await Promise.all([
    startService(env, 'api'),
    startService(env, 'worker'),
    startService(env, 'scheduler'),
  ]);
  tmp = mkdtempSync(join(tmpdir(), 'riskwatch-grafana-'));
  await startPrometheus([
    { role: 'api', url: api.metricsUrl },
    { role: 'worker', url: worker.metricsUrl },
    { role: 'scheduler', url: scheduler.metricsUrl },
  ]);

  // ---- the developer API: preflights (a burst, so some wait for the provider rate) and token scans
  const f = world.fixtures;
  const preflights: [string, string][] = [
    [f.wallets.plainWallet.address, 'transfer'],
    [f.wallets.newWallet.address, 'transfer'],
    [f.wallets.oldWallet.address, 'sign'],
    [f.wallets.counterpartyWallet.address, 'interact'],
    [f.wallets.delegatedWallet.address, 'approve'],
    [f.mints.liveAuthorities.address, 'interact'],
    [f.mints.permanentDelegate.address, 'approve'],
    [f.program.address, 'interact'],
    [f.missing.address, 'transfer'],
  ];
  const answers = await Promise.all(
    preflights.map(([target, intent]) => call(acme, 'POST', '/api/v1/shield/preflight', { target, intent })),
  );
  for (const res of answers) await expectJson(res, 200);
  await expectJson(
    await call(acme, 'POST', '/api/v1/shield/preflight', { target: preflights[0]![0], intent: 'sign' }),
    200,
  );
  // A provider failing for a moment (retried on): riskwatch_rpc_calls_total{outcome="http_5xx"}. The first
  // mint again: its (complete) analysis comes from the cache.
  facade.faults.next(1, { kind: 'http500' });
  for (const mint of [f.mints.cleanToken, f.mints.transferFeeHigh, f.mints.cleanToken])
    await expectJson(await call(acme, 'POST', '/api/v1/scan/token', { mint: mint.address }), 200);

  // ---- refusals: no key (401), no entitlement (403), over the rate limit (429)
  await expectProblem(await call(undefined, 'GET', '/api/v1/usage'), 401, 'unauthorized');
  await expectProblem(
    await call(unentitled, 'POST', '/api/v1/shield/preflight', { target: preflights[0]![0], intent: 'sign' }),
    403,
    'entitlement_required',
  );
  await expectJson(await call(limited, 'GET', '/api/v1/usage'), 200);
  await expectProblem(await call(limited, 'GET', '/api/v1/usage'), 429, 'rate_limited');

  // ---- webhooks: an endpoint for the account's alerts, and its test event
  const endpoint = await expectJson<{ id: string; secret: string }>(
    await call(acme, 'POST', '/api/v1/webhooks/endpoints', {
      url: `http://127.0.0.1:${receiverPort}/hooks`,
      events: ['watchlist.alert'],
    }),
    201,
  );
  receiver = await startReceiver(endpoint.secret, receiverPort);
  await expectJson(await call(acme, 'POST', `/api/v1/webhooks/endpoints/${endpoint.id}/test`), 202);

  // ---- a watchlist: a baseline tick, a balance moved, a tick that alerts (and so a delivery)
  const list = await expectJson<{ id: string }>(
    await call(acme, 'POST', '/api/v1/watchlists', {
      name: 'dashboard',
      schedule: NEVER,
      deep_schedule: NEVER,
      thresholds: { balance_change_pct: 1 },
    }),
    201,
  );
  const watched = f.wallets.plainWallet.address;
  await expectJson(
    await call(acme, 'POST', `/api/v1/watchlists/${list.id}/entries`, { entries: [{ target: watched }] }),
    200,
  );
  const tick = async (n: number) => {
    const since = new Date();
    const scanId = `dash-${n}`;
    await queues.enqueue('watchlist-tick', { watchlist_id: list.id, scan_id: scanId, mode: 'tick' }, scanId);
    const checked = await eventually(
      async () => {
        const { rows } = await db.query<{ pending: string }>(
          `select count(*) as pending from watchlist_entries
            where watchlist_id = $1 and (last_checked_at is null or last_checked_at < $2)`,
          [list.id, since],
        );
        return Number(rows[0]!.pending) === 0;
      },
      30_000,
      100,
    );
    expect(checked, `tick ${n} did not check the entry`).toBe(true);
  };
  await tick(1);
  await transferSol(world.chain, { from: world.chain.payer, to: watched, amount: 50_000_000_000n });
  await tick(2);
  const delivered = await eventually(
    () => Promise.resolve(new Set(receiver.received.map((r) => r.type)).size >= 2),
    30_000,
    100,
  );
  expect(delivered, JSON.stringify(receiver.received.map((r) => r.type))).toBe(true);
  expect(receiver.received.map((r) => r.type).sort()).toEqual(['watchlist.alert', 'webhook.test']);

  // Prometheus has scraped all of it, and a few more times (rates need two samples in their window).
  const scraped = await eventually(
    async () =>
      (await scalar('sum(riskwatch_webhook_attempts_total{outcome="succeeded"})')) >= 2 &&
      (await scalar('min(count_over_time(up{job="riskwatch"}[5s]))')) >= 4 &&
      (await scalar('min(up{job="riskwatch"})')) === 1,
    20_000,
    250,
  );
  expect(scraped, prometheusLog).toBe(true);
  await new Promise((r) => setTimeout(r, 3000));
}, 240_000);

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const gone = new Promise((r) => prometheus!.once('exit', r));
    prometheus.kill('SIGTERM');
    await gone;
  }
  await Promise.all([api?.stop(), worker?.stop(), scheduler?.stop()]);
  await receiver?.close();
  await queues?.close();
  bull?.disconnect();
  await db?.end();
  await closeAccounts?.();
  await dropDatabase?.();
  await facade?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the Grafana dashboard against Prometheus scraping the service', () => {
  const panels = dashboard.panels.filter((p) => p.type !== 'row');

  it('recorded the traffic: verdicts, decisions, cache hits and misses, waits, failures, alerts, 429s', async () => {
    expect(await scalar('sum(riskwatch_verdicts_total{endpoint="preflight"})')).toBe(10);
    expect(await scalar('sum(riskwatch_verdicts_total{endpoint="scan-token"})')).toBe(3);
    expect(await scalar('sum(riskwatch_preflight_decisions_total)')).toBe(10);
    expect(await scalar('sum(riskwatch_risk_cache_requests_total{result="hit"})')).toBeGreaterThan(0);
    expect(await scalar('sum(riskwatch_risk_cache_requests_total{result="miss"})')).toBeGreaterThan(0);
    expect(
      await scalar('sum(riskwatch_rpc_rate_waits_total{network="solana/mainnet",gate="provider"})'),
    ).toBeGreaterThan(0);
    expect(await scalar('sum(riskwatch_rpc_rate_wait_seconds_total{gate="provider"})')).toBeGreaterThan(0);
    expect(await scalar('sum(riskwatch_rpc_calls_total{outcome="http_5xx"})')).toBeGreaterThan(0);
    expect(await scalar('sum(riskwatch_watchlist_alerts_total{type="balance_changed"})')).toBe(1);
    expect(await scalar('sum(http_requests_total{status="429"})')).toBe(1);
    expect(await scalar('sum(http_requests_total{status="403"})')).toBe(1);
  });

  it('has the job counts from the scheduler alone, every queue × state', async () => {
    const answer = await query('count by (role) (riskwatch_jobs)');
    expect(answer.data?.result.map((r) => r.metric.role)).toEqual(['scheduler']);
    expect(Number(answer.data?.result[0]?.value[1])).toBe(JOB_NAMES.length * 4);
  });

  it('lists the scrape job in the job variable (label_values(riskwatch_build_info, job))', async () => {
    const res = await fetch(`${prometheusUrl}/api/v1/label/job/values?match[]=riskwatch_build_info`);
    expect(((await res.json()) as { data: string[] }).data).toEqual(['riskwatch']);
  });

  it('names only metrics the service exports, in every query of every panel', async () => {
    const exported = new Set<string>();
    for (const svc of [api, worker, scheduler])
      for (const s of parseSamples(await (await fetch(svc.metricsUrl)).text())) exported.add(s.name);
    const missing: string[] = [];
    for (const panel of panels)
      for (const target of panel.targets ?? []) {
        const names = metricNames(target.expr);
        expect(names.length, `${panel.title}: ${target.expr}`).toBeGreaterThan(0);
        for (const name of names) if (!exported.has(name)) missing.push(`${panel.title}: ${name}`);
      }
    expect(missing).toEqual([]);
  });

  it('answers every query of every panel with data', async () => {
    const failures: string[] = [];
    let evaluated = 0;
    for (const panel of panels)
      for (const target of panel.targets ?? []) {
        const expr = substitute(target.expr);
        expect(expr, panel.title).not.toMatch(/\$(?:__|\{|job\b|datasource)/);
        // A panel that shows 0 until its first event (`… or on() vector(0)`) must have the event's own
        // series too: the traffic above made every one of them.
        for (const variant of new Set([expr, expr.replace(/ or on\(\) vector\(0\)$/, '')])) {
          const answer = await query(variant);
          evaluated++;
          if (answer.status !== 'success') failures.push(`${panel.title} (${target.refId}): ${answer.error}`);
          else if (!answer.data?.result.length)
            failures.push(`${panel.title} (${target.refId}): no data: ${variant}`);
        }
      }
    expect(failures).toEqual([]);
    expect(evaluated).toBeGreaterThanOrEqual(48);
  });
});
