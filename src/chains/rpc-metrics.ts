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
 * Node-provider metrics, created once per registry (every client of a process shares them). `provider`
 * is the configured name (`solana/mainnet#0`), never the URL, which may carry an API key; `method` is
 * one of the known RPC methods or `other`.
 */
export class RpcMetrics {
  private static readonly byRegistry = new WeakMap<Registry, RpcMetrics>();

  readonly calls: Counter<'provider' | 'method' | 'outcome'>;
  readonly duration: Histogram<'provider' | 'method'>;
  readonly circuitOpen: Gauge<'provider'>;

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
  }
}
