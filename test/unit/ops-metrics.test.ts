import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { JsonRpcClient } from '../../src/chains/jsonrpc.js';
import { RedisRateGate, TokenBucket } from '../../src/chains/limits.js';
import { BUILT_IN_NETWORKS } from '../../src/chains/registry.js';
import { RpcMetrics } from '../../src/chains/rpc-metrics.js';
import { SOLANA_METHODS } from '../../src/chains/solana.js';
import { exportJobCounts, JOB_STATES } from '../../src/jobs/metrics.js';
import { JOB_NAMES, JobQueues } from '../../src/jobs/queues.js';
import { AnalysisCache } from '../../src/risk/analysis-cache.js';
import { analysisCacheCounts, VERDICT_ENDPOINTS, VerdictMetrics } from '../../src/risk/metrics.js';
import { DECISIONS, INTENTS } from '../../src/risk/policy.js';
import { RISK_LEVELS } from '../../src/risk/scoring.js';
import type { ChainAnalysis } from '../../src/risk/types.js';
import { REDIS_URL } from '../support/env.js';
import { JsonRpcStub } from '../support/jsonrpc-stub.js';
import { capturingLogger } from '../support/logs.js';
import { parseSamples, promtoolCheck, UPSTREAM_LINT } from '../support/prometheus.js';
import { fileRedis } from '../support/redis.js';

/*
 * The metrics the Grafana dashboard added (docs/metrics.md): every label combination there at 0 from the
 * start, each counted where it happens, and the job counts read from Redis at scrape time.
 */

const { redis, prefix } = fileRedis();
const SOLANA = BUILT_IN_NETWORKS.find((n) => n.chain === 'solana' && n.network === 'mainnet')!;

const samples = async (registry: Registry, name: string) =>
  parseSamples(await registry.metrics()).filter((s) => s.name === name);
const value = async (registry: Registry, name: string, labels: Record<string, string>) =>
  (await samples(registry, name)).find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    ?.value;

describe('riskwatch_verdicts_total and riskwatch_preflight_decisions_total', () => {
  it('start with every endpoint × level and decision × intent × complete at 0, and count the right one', async () => {
    const registry = new Registry();
    const metrics = VerdictMetrics.for(registry);
    expect(VerdictMetrics.for(registry)).toBe(metrics);
    const verdicts = await samples(registry, 'riskwatch_verdicts_total');
    expect(verdicts).toHaveLength(VERDICT_ENDPOINTS.length * RISK_LEVELS.length);
    expect(verdicts.every((s) => s.value === 0)).toBe(true);
    const decisions = await samples(registry, 'riskwatch_preflight_decisions_total');
    expect(decisions).toHaveLength(DECISIONS.length * INTENTS.length * 2);
    expect(decisions.every((s) => s.value === 0)).toBe(true);

    metrics.answered('risk-v2', { kind: 'target', riskLevel: 'high', complete: true });
    metrics.answered('preflight', {
      kind: 'preflight',
      riskLevel: 'low',
      complete: false,
      decision: 'warn',
      intent: 'transfer',
    });
    metrics.answered('preflight', {
      kind: 'preflight',
      riskLevel: 'critical',
      complete: true,
      decision: 'block',
      intent: 'approve',
    });
    expect(await value(registry, 'riskwatch_verdicts_total', { endpoint: 'risk-v2', level: 'high' })).toBe(1);
    expect(await value(registry, 'riskwatch_verdicts_total', { endpoint: 'preflight', level: 'low' })).toBe(
      1,
    );
    expect(
      await value(registry, 'riskwatch_verdicts_total', { endpoint: 'preflight', level: 'critical' }),
    ).toBe(1);
    const decided = (await samples(registry, 'riskwatch_preflight_decisions_total')).filter((s) => s.value);
    expect(decided.map((s) => s.labels).sort((a, b) => a.decision!.localeCompare(b.decision!))).toEqual([
      { decision: 'block', intent: 'approve', complete: 'true' },
      { decision: 'warn', intent: 'transfer', complete: 'false' },
    ]);
    const { code, lines } = await promtoolCheck(await registry.metrics());
    expect(lines).toEqual([]);
    expect(code).toBe(0);
  });
});

describe('riskwatch_risk_cache_requests_total', () => {
  const analysis: ChainAnalysis = {
    kind: 'wallet',
    findings: [],
    facts: {},
    complete: true,
    dataAsOf: { slot: 1 },
    listInputs: {},
  };

  it('counts a computed analysis as a miss, a cached one as a hit, a forced fresh one not at all', async () => {
    const registry = new Registry();
    const cache = new AnalysisCache({
      redis,
      keyPrefix: `${prefix}cache:`,
      ttlSeconds: { low: 60, medium: 60, high: 60, critical: 60 },
      logger: capturingLogger('warn').logger,
      counts: analysisCacheCounts(registry),
    });
    const count = (result: string) => value(registry, 'riskwatch_risk_cache_requests_total', { result });
    expect([await count('hit'), await count('miss')]).toEqual([0, 0]);
    const analyze = () => Promise.resolve(analysis);
    expect((await cache.getOrAnalyze(SOLANA, 'wallet', 'T1', 'full', analyze)).cached).toBe(false);
    expect((await cache.getOrAnalyze(SOLANA, 'wallet', 'T1', 'full', analyze)).cached).toBe(true);
    await cache.getOrAnalyze(SOLANA, 'wallet', 'T1', 'full', analyze, true);
    expect([await count('hit'), await count('miss')]).toEqual([1, 1]);
    // Another cache of the same registry (the `all` role) counts into the same series.
    expect(analysisCacheCounts(registry)).toBe(analysisCacheCounts(registry));
  });
});

describe('riskwatch_rpc_rate_waits_total and riskwatch_rpc_rate_wait_seconds_total', () => {
  const stubs: JsonRpcStub[] = [];
  afterEach(async () => {
    await Promise.all(stubs.splice(0).map((s) => s.close()));
  });

  it('a token bucket reports the admissions that waited, with the time they waited', async () => {
    const waits: number[] = [];
    const bucket = new TokenBucket(5, (s) => waits.push(s));
    for (let i = 0; i < 5; i++) expect(await bucket.take(1, Date.now() + 5000)).toBe(true);
    expect(waits).toEqual([]);
    expect(await bucket.take(1, Date.now() + 5000)).toBe(true);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(0.1);
    expect(waits[0]).toBeLessThan(1);
    // Refused at once (the deadline comes before the tokens): no wait.
    expect(await bucket.take(5, Date.now() + 10)).toBe(false);
    expect(waits).toHaveLength(1);
  });

  it('the Redis window reports one wait per admission, all its sleeps added up', async () => {
    const waits: number[] = [];
    const gate = new RedisRateGate(redis, `${prefix}rate`, 'url', 3, (s) => waits.push(s));
    await Promise.all(Array.from({ length: 3 }, () => gate.take(1, Date.now() + 5000)));
    expect(waits).toEqual([]);
    expect(await gate.take(3, Date.now() + 5000)).toBe(true);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(0);
    expect(waits[0]).toBeLessThanOrEqual(1.2);
  });

  it('a client counts its waits by network (gate="provider"), there at 0 from its start', async () => {
    const s = await JsonRpcStub.start({ getBalance: () => ({ context: { slot: 1 }, value: 1 }) });
    stubs.push(s);
    const registry = new Registry();
    const client = new JsonRpcClient({
      network: 'solana/mainnet',
      urls: [s.url(), s.url('/second')],
      knownMethods: SOLANA_METHODS,
      deadlineMs: 5000,
      timeoutMs: 2000,
      retries: 0,
      backoffBaseMs: 10,
      backoffMaxMs: 20,
      ratePerS: 4,
      concurrency: 8,
      batchMax: 1,
      circuitFailures: 10,
      circuitCooldownMinMs: 1000,
      circuitCooldownMs: 1000,
      maxResponseBytes: 1 << 20,
      retryAfterMaxMs: 1000,
      metrics: registry,
    });
    const labels = { network: 'solana/mainnet', gate: 'provider' };
    expect(await value(registry, 'riskwatch_rpc_rate_waits_total', labels)).toBe(0);
    expect(await value(registry, 'riskwatch_rpc_rate_wait_seconds_total', labels)).toBe(0);
    await Promise.all(Array.from({ length: 6 }, (_, i) => client.call('getBalance', [`k${i}`])));
    client.close();
    // 6 calls at 4 per second: the last two waited.
    expect(await value(registry, 'riskwatch_rpc_rate_waits_total', labels)).toBe(2);
    expect(await value(registry, 'riskwatch_rpc_rate_wait_seconds_total', labels)).toBeGreaterThan(0.2);
    // One observer per (network, gate), shared by the network's URLs and by every client of the registry.
    expect(await samples(registry, 'riskwatch_rpc_rate_waits_total')).toHaveLength(1);
    const other = RpcMetrics.for(registry).rateWaitObserver('solana/mainnet', 'screening');
    other(0.5);
    expect(await value(registry, 'riskwatch_rpc_rate_wait_seconds_total', { gate: 'screening' })).toBe(0.5);
  });
});

describe('riskwatch_jobs', () => {
  const bull = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queues = new JobQueues(bull, `${prefix}jobs:`);
  afterAll(async () => {
    await queues.close();
    const keys = await redis.keys(`${prefix}jobs:*`);
    if (keys.length) await redis.del(...keys);
    bull.disconnect();
  });

  it('reads every queue × state from Redis at scrape time', async () => {
    const registry = new Registry();
    exportJobCounts(registry, queues);
    let jobs = await samples(registry, 'riskwatch_jobs');
    expect(jobs).toHaveLength(JOB_NAMES.length * JOB_STATES.length);
    expect(jobs.every((s) => s.value === 0)).toBe(true);

    await queues.enqueue('usage-prune', { scheduled_at: new Date().toISOString() }, 'usage-prune-1');
    await queues.enqueue('usage-prune', { scheduled_at: new Date().toISOString() }, 'usage-prune-2');
    await queues
      .queue('events-prune')
      .add('events-prune', { scheduled_at: new Date().toISOString() }, { delay: 60_000, jobId: 'later' });
    // A registry of its own: the first one keeps what it read for 5 s.
    const fresh = new Registry();
    exportJobCounts(fresh, queues);
    jobs = await samples(fresh, 'riskwatch_jobs');
    const at = (queue: string, state: string) =>
      jobs.find((s) => s.labels.queue === queue && s.labels.state === state)?.value;
    expect(at('usage-prune', 'waiting')).toBe(2);
    expect(at('events-prune', 'delayed')).toBe(1);
    expect(at('watchlist-chunk', 'waiting')).toBe(0);
    expect(jobs.filter((s) => s.value > 0)).toHaveLength(2);
    const { lines } = await promtoolCheck(await fresh.metrics());
    expect(lines.filter((l) => !UPSTREAM_LINT.has(l))).toEqual([]);
  });

  it('drops the series, and still serves the other metrics, while Redis does not answer', async () => {
    // A queue client whose Redis never answers (a port nothing listens on; commands wait for it).
    const dead = new Redis('redis://127.0.0.1:1', {
      maxRetriesPerRequest: null,
      retryStrategy: () => 200,
      lazyConnect: true,
    });
    dead.on('error', () => undefined);
    const unreachable = new JobQueues(dead, `${prefix}dead:`);
    for (const name of JOB_NAMES) unreachable.queue(name).on('error', () => undefined);
    const registry = new Registry();
    exportJobCounts(registry, unreachable);
    const started = Date.now();
    const text = await registry.metrics();
    expect(Date.now() - started).toBeLessThan(4000);
    expect(parseSamples(text).filter((s) => s.name === 'riskwatch_jobs')).toEqual([]);
    expect(text).toContain('# TYPE riskwatch_jobs gauge');
    await Promise.race([unreachable.close(), new Promise((r) => setTimeout(r, 500))]);
    dead.disconnect();
  });
});
