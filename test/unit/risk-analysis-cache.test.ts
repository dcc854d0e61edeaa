import { describe, expect, it } from 'vitest';
import { BUILT_IN_NETWORKS } from '../../src/chains/registry.js';
import { AnalysisCache } from '../../src/risk/analysis-cache.js';
import { finding } from '../../src/risk/findings.js';
import type { ChainAnalysis } from '../../src/risk/types.js';
import { capturingLogger } from '../support/logs.js';
import { fileRedis } from '../support/redis.js';

const { redis, prefix } = fileRedis();
const SOLANA = BUILT_IN_NETWORKS.find((n) => n.chain === 'solana' && n.network === 'mainnet')!;
const TTL = { low: 60, medium: 30, high: 20, critical: 15 };

const analysis = (complete: boolean, high = false): ChainAnalysis => ({
  kind: 'wallet',
  findings: high
    ? [finding('interacted_with_flagged', 'seen', { method: 'getTransaction', slot: 1, value: [] })]
    : [],
  facts: { exists: true, kind: 'wallet' },
  complete,
  dataAsOf: { slot: 1 },
  listInputs: {},
});

let n = 0;
/** A cache of its own (no memory shared with other tests) and a target no other test reads. */
const fresh = () => ({
  cache: new AnalysisCache({
    redis,
    keyPrefix: prefix,
    ttlSeconds: TTL,
    logger: capturingLogger('warn').logger,
  }),
  target: `Target${++n}`,
});
const key = (target: string, subject = 'wallet') => `${prefix}${SOLANA.caip2}:${subject}:${target}`;

/** An analysis that finishes when the test says so, counting how often it was started. */
function gated(result: ChainAnalysis) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const calls = { count: 0 };
  const analyze = async () => {
    calls.count++;
    await gate;
    return result;
  };
  return { analyze, release, calls };
}

describe('AnalysisCache', () => {
  it('runs one analysis for identical concurrent requests, then serves it from the cache', async () => {
    const { cache, target } = fresh();
    const { analyze, release, calls } = gated(analysis(true));
    const both = Promise.all([
      cache.getOrAnalyze(SOLANA, 'wallet', target, 'full', analyze),
      cache.getOrAnalyze(SOLANA, 'wallet', target, 'full', analyze),
    ]);
    await expect.poll(() => calls.count).toBe(1);
    release();
    const [a, b] = await both;
    expect(calls.count).toBe(1);
    expect([a.cached, b.cached]).toEqual([false, false]);
    expect(a.analysis).toBe(b.analysis);

    const again = await cache.getOrAnalyze(SOLANA, 'wallet', target, 'full', analyze);
    expect(again).toEqual({ analysis: a.analysis, cached: true });
    expect(calls.count).toBe(1);
  });

  it('keeps a complete analysis in Redis for the TTL of its level, readable by another process', async () => {
    const { cache, target } = fresh();
    await cache.getOrAnalyze(SOLANA, 'wallet', target, 'full', () => Promise.resolve(analysis(true, true)));
    await expect.poll(() => redis.ttl(key(target))).toBeGreaterThan(0);
    expect(await redis.ttl(key(target))).toBeLessThanOrEqual(TTL.high);

    const other = fresh().cache;
    const read = await other.getOrAnalyze(SOLANA, 'wallet', target, 'full', () => {
      throw new Error('not called: Redis has it');
    });
    expect(read).toEqual({ analysis: analysis(true, true), cached: true });
  });

  it('never caches an incomplete analysis', async () => {
    const { cache, target } = fresh();
    let calls = 0;
    const analyze = () => {
      calls++;
      return Promise.resolve(analysis(false));
    };
    await cache.getOrAnalyze(SOLANA, 'wallet', target, 'preflight', analyze);
    const second = await cache.getOrAnalyze(SOLANA, 'wallet', target, 'preflight', analyze);
    expect(second.cached).toBe(false);
    expect(calls).toBe(2);
    expect(await redis.exists(key(target))).toBe(0);
  });

  it('keeps flights of different modes and subjects apart', async () => {
    const { cache, target } = fresh();
    const full = gated(analysis(true));
    const preflight = gated(analysis(true));
    const token = gated(analysis(true));
    const all = Promise.all([
      cache.getOrAnalyze(SOLANA, 'wallet', target, 'full', full.analyze),
      cache.getOrAnalyze(SOLANA, 'wallet', target, 'preflight', preflight.analyze),
      cache.getOrAnalyze(SOLANA, 'token', target, 'full', token.analyze),
    ]);
    await expect.poll(() => full.calls.count + preflight.calls.count + token.calls.count).toBe(3);
    for (const g of [full, preflight, token]) g.release();
    await all;
  });

  it('forgets a failed flight: the next request analyses again', async () => {
    const { cache, target } = fresh();
    const failing = () => Promise.reject(new Error('provider down'));
    await expect(cache.getOrAnalyze(SOLANA, 'wallet', target, 'full', failing)).rejects.toThrow(
      'provider down',
    );
    const ok = await cache.getOrAnalyze(SOLANA, 'wallet', target, 'full', () =>
      Promise.resolve(analysis(true)),
    );
    expect(ok.cached).toBe(false);
  });
});
