import type { RedisClient } from '../platform/redis.js';
import type { NetworkDef } from '../chains/registry.js';
import type { Logger } from '../platform/logger.js';
import type { Mode, Subject } from './chain-analysis.js';
import type { CacheCounts } from './metrics.js';
import { score, type RiskLevel } from './scoring.js';
import type { ChainAnalysis } from './types.js';

/** How long this process reuses an analysis read from (or written to) Redis, and how many it keeps. */
const LOCAL_TTL_MS = 1000;
const LOCAL_MAX = 5000;

export interface AnalysisCacheDeps {
  redis: RedisClient;
  /** Prefix of every key: names the engine and registry versions, so a new one never serves an old verdict. */
  keyPrefix: string;
  /** Seconds a complete analysis is kept, by its level (0: not cached). */
  ttlSeconds: Readonly<Record<RiskLevel, number>>;
  logger: Logger;
  /** Told of each lookup's result (`riskwatch_risk_cache_requests_total`); `fresh` calls are no lookup. */
  counts?: CacheCounts;
}

export interface CachedAnalysis {
  analysis: ChainAnalysis;
  /** Served from the cache (this process's memory or Redis) rather than computed for this call. */
  cached: boolean;
}

/**
 * Chain analyses (list-free, the same for every account) in Redis per (network, subject, target) with a
 * TTL by level, a second or less of them in this process's memory (a hot target costs no Redis read or
 * parse), and one computation shared by identical concurrent requests (single flight).
 */
export class AnalysisCache {
  private readonly flights = new Map<string, Promise<ChainAnalysis>>();
  private readonly local = new Map<string, { analysis: ChainAnalysis; until: number }>();

  constructor(private readonly deps: AnalysisCacheDeps) {}

  /**
   * The analysis of `target` as `subject`: from the cache, else `analyze()` — called once for every
   * identical request of the same `mode` in flight in this process — then cached when complete.
   */
  async getOrAnalyze(
    network: NetworkDef,
    subject: Subject,
    target: string,
    mode: Mode,
    analyze: () => Promise<ChainAnalysis>,
    fresh = false,
  ): Promise<CachedAnalysis> {
    const key = `${this.deps.keyPrefix}${network.caip2}:${subject}:${target}`;
    // `fresh` (a watchlist entry whose state just changed): analyse anew, and cache that for the others.
    if (!fresh) {
      const near = this.local.get(key);
      if (near && near.until > Date.now()) {
        this.deps.counts?.hit();
        return { analysis: near.analysis, cached: true };
      }
      const hit = await this.read(key);
      if (hit) {
        this.keepLocal(key, hit, LOCAL_TTL_MS);
        this.deps.counts?.hit();
        return { analysis: hit, cached: true };
      }
      this.deps.counts?.miss();
    }

    const flightKey = `${key}|${mode}`;
    let flight = this.flights.get(flightKey);
    if (!flight) {
      flight = analyze();
      this.flights.set(flightKey, flight);
      const done = () => this.flights.delete(flightKey);
      flight.then((analysis) => {
        done();
        this.write(key, analysis);
      }, done);
    }
    return { analysis: await flight, cached: false };
  }

  private async read(key: string): Promise<ChainAnalysis | undefined> {
    try {
      const raw = await this.deps.redis.get(key);
      return raw ? (JSON.parse(raw) as ChainAnalysis) : undefined;
    } catch (err) {
      this.deps.logger.warn({ err: { message: (err as Error).message } }, 'risk cache read failed');
      return undefined;
    }
  }

  private keepLocal(key: string, analysis: ChainAnalysis, ms: number): void {
    if (this.local.size >= LOCAL_MAX) this.local.clear();
    this.local.set(key, { analysis, until: Date.now() + ms });
  }

  /** Complete analyses only, for the TTL of their level (an unfinished check is not a verdict to keep). */
  private write(key: string, analysis: ChainAnalysis): void {
    if (!analysis.complete) return;
    const ttl = this.deps.ttlSeconds[score(analysis.findings).risk_level];
    if (ttl <= 0) return;
    this.keepLocal(key, analysis, Math.min(LOCAL_TTL_MS, ttl * 1000));
    this.deps.redis
      .set(key, JSON.stringify(analysis), 'EX', ttl)
      .catch((err: Error) =>
        this.deps.logger.warn({ err: { message: err.message } }, 'risk cache write failed'),
      );
  }
}
