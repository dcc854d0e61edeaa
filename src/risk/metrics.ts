import { Counter, type Registry } from 'prom-client';
import { DECISIONS, INTENTS, type Decision, type Intent } from './policy.js';
import { RISK_LEVELS, type RiskLevel } from './scoring.js';

/** The routes that answer a risk level, as the `endpoint` label names them. */
export const VERDICT_ENDPOINTS = ['risk-v2', 'scan-token', 'preflight'] as const;
export type VerdictEndpoint = (typeof VERDICT_ENDPOINTS)[number];

interface Child {
  inc(): void;
}

/** `make(key)` for every one of `keys`, as a record. */
function each<K extends string, V>(keys: readonly K[], make: (key: K) => V): Record<K, V> {
  return Object.fromEntries(keys.map((key) => [key, make(key)])) as Record<K, V>;
}

/**
 * What the risk routes answered (the API process's registry, src/api.ts):
 * `riskwatch_verdicts_total{endpoint,level}` per verdict served, and for shield preflight
 * `riskwatch_preflight_decisions_total{decision,intent,complete}` (`complete="false"`: a check did not
 * finish, so the decision is at least the fail mode). Every label is a closed set, every combination there
 * from the start at 0, each child resolved here once: counting is two property reads and an increment.
 */
export class VerdictMetrics {
  private static readonly byRegistry = new WeakMap<Registry, VerdictMetrics>();

  private readonly verdicts: Record<VerdictEndpoint, Record<RiskLevel, Child>>;
  private readonly decisions: Record<Decision, Record<Intent, Record<'true' | 'false', Child>>>;

  static for(registry: Registry): VerdictMetrics {
    let metrics = VerdictMetrics.byRegistry.get(registry);
    if (!metrics) {
      metrics = new VerdictMetrics(registry);
      VerdictMetrics.byRegistry.set(registry, metrics);
    }
    return metrics;
  }

  private constructor(registry: Registry) {
    const verdicts = new Counter({
      name: 'riskwatch_verdicts_total',
      help: 'Verdicts answered by the risk routes, by endpoint (risk-v2, scan-token, preflight) and risk level.',
      labelNames: ['endpoint', 'level'],
      registers: [registry],
    });
    const decisions = new Counter({
      name: 'riskwatch_preflight_decisions_total',
      help: 'Shield preflight decisions, by decision, intent and whether every check finished (complete="false": at least the fail mode).',
      labelNames: ['decision', 'intent', 'complete'],
      registers: [registry],
    });
    const zeroed = (child: { inc(n?: number): void }): Child => {
      child.inc(0);
      return child;
    };
    this.verdicts = each(VERDICT_ENDPOINTS, (endpoint) =>
      each(RISK_LEVELS, (level) => zeroed(verdicts.labels({ endpoint, level }))),
    );
    this.decisions = each(DECISIONS, (decision) =>
      each(INTENTS, (intent) =>
        each(['true', 'false'], (complete) => zeroed(decisions.labels({ decision, intent, complete }))),
      ),
    );
  }

  /** One verdict served by `endpoint` (and for a preflight, its decision). */
  answered(
    endpoint: VerdictEndpoint,
    verdict: { riskLevel: RiskLevel; complete: boolean } & (
      { kind: 'preflight'; decision: Decision; intent: Intent } | { kind: 'target' | 'token' }
    ),
  ): void {
    this.verdicts[endpoint][verdict.riskLevel].inc();
    if (verdict.kind === 'preflight')
      this.decisions[verdict.decision][verdict.intent][verdict.complete ? 'true' : 'false'].inc();
  }
}

/** What the analysis cache tells of its lookups. */
export interface CacheCounts {
  hit(): void;
  miss(): void;
}

const cacheCountsByRegistry = new WeakMap<Registry, CacheCounts>();

/**
 * `riskwatch_risk_cache_requests_total{result="hit|miss"}`: chain-analysis cache lookups in every process
 * that runs the engine (API: risk-v2, scan/token, preflight; workers: watchlist scans, screenings). A hit
 * came from this process's memory or from Redis; a miss was computed (or joined a computation in flight).
 * Forced fresh analyses (a watchlist entry whose state changed) are no lookup and not counted.
 */
export function analysisCacheCounts(registry: Registry): CacheCounts {
  let counts = cacheCountsByRegistry.get(registry);
  if (!counts) {
    const requests = new Counter({
      name: 'riskwatch_risk_cache_requests_total',
      help: 'Risk engine chain-analysis cache lookups, by result (hit: memory or Redis; miss: analysed).',
      labelNames: ['result'],
      registers: [registry],
    });
    const hit = requests.labels({ result: 'hit' });
    const miss = requests.labels({ result: 'miss' });
    hit.inc(0);
    miss.inc(0);
    counts = { hit: () => hit.inc(), miss: () => miss.inc() };
    cacheCountsByRegistry.set(registry, counts);
  }
  return counts;
}
