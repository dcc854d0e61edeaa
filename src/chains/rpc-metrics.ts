import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * What happened to one JSON-RPC call on one attempt. A closed set, so the label stays bounded; `ok` and
 * `rpc_error` are answers from the node, everything else is a provider failure.
 */
export type CallOutcome =
  | 'ok'
  | 'rpc_error'
  | 'timeout'
  | 'network_error'
  | 'http_3xx'
  | 'http_429'
  | 'http_4xx'
  | 'http_5xx'
  | 'bad_response'
  | 'too_large';

/**
 * Which rate a call waited for: `provider`, the per-URL `rate_per_s` every JSON-RPC batch passes; `screening`,
 * the share of it bulk screenings pace their chunks by (`screenings.provider_share_pct`).
 */
export type RateGateKind = 'provider' | 'screening';

/**
 * Node-provider metrics, created once per registry (every client of a process shares them). `provider`
 * is the configured name (`solana/mainnet#0`), never the URL, which may carry an API key; `method` is
 * one of the known RPC methods or `other`.
 */
export class RpcMetrics {
  private static readonly byRegistry = new WeakMap<Registry, RpcMetrics>();

  readonly calls: Counter<'provider' | 'method' | 'outcome'>;
  readonly duration: Histogram<'provider' | 'method'>;
  readonly circuitOpen: Gauge<'provider'>;
  private readonly rateWaits: Counter<'network' | 'gate'>;
  private readonly rateWaitSeconds: Counter<'network' | 'gate'>;

  static for(registry: Registry): RpcMetrics {
    let metrics = RpcMetrics.byRegistry.get(registry);
    if (!metrics) {
      metrics = new RpcMetrics(registry);
      RpcMetrics.byRegistry.set(registry, metrics);
    }
    return metrics;
  }

  private constructor(registry: Registry) {
    this.calls = new Counter({
      name: 'riskwatch_rpc_calls_total',
      help: 'JSON-RPC calls sent to node providers, by provider, method and outcome (one per attempt).',
      labelNames: ['provider', 'method', 'outcome'],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'riskwatch_rpc_request_duration_seconds',
      help: 'Duration of the HTTP exchange that carried each JSON-RPC call, by provider and method.',
      labelNames: ['provider', 'method'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.circuitOpen = new Gauge({
      name: 'riskwatch_rpc_circuit_open',
      help: 'Whether the circuit of a node provider URL is open or half-open (1) or closed (0).',
      labelNames: ['provider'],
      registers: [registry],
    });
    this.rateWaits = new Counter({
      name: 'riskwatch_rpc_rate_waits_total',
      help: 'Admissions that had to wait for a node-provider rate limit, by network and gate (provider: the per-URL rate_per_s; screening: the bulk screenings share).',
      labelNames: ['network', 'gate'],
      registers: [registry],
    });
    this.rateWaitSeconds = new Counter({
      name: 'riskwatch_rpc_rate_wait_seconds_total',
      help: 'Seconds spent waiting for a node-provider rate limit, by network and gate.',
      labelNames: ['network', 'gate'],
      registers: [registry],
    });
  }

  /**
   * What a rate gate of `network` tells of its waits: the two children resolved here, once (and so shown
   * at 0 from the start), not per call.
   */
  rateWaitObserver(network: string, gate: RateGateKind): (seconds: number) => void {
    const waits = this.rateWaits.labels({ network, gate });
    const seconds = this.rateWaitSeconds.labels({ network, gate });
    waits.inc(0);
    seconds.inc(0);
    return (s) => {
      waits.inc();
      seconds.inc(s);
    };
  }
}
