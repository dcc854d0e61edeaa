import type { RedisClient } from '../platform/redis.js';
import type { Registry } from 'prom-client';
import { isLoopbackUrl } from '../platform/config.js';
import { AppError } from '../platform/errors.js';
import { ByteBudget } from '../platform/http-client.js';
import type { Logger } from '../platform/logger.js';
import { EVM_METHODS, EvmRpc } from './evm.js';
import { JsonRpcClient, type ProviderTuning } from './jsonrpc.js';
import type { CircuitState } from './limits.js';
import {
  BUILT_IN_NETWORKS,
  familyOfCaip2,
  networkLabel,
  resolveNetwork,
  type NetworkDef,
  type NetworkRegistryView,
} from './registry.js';
import type { ChainsConfig } from './settings.js';
import { SOLANA_METHODS, SolanaRpc } from './solana.js';

export interface ConfiguredNetwork {
  def: NetworkDef;
  /** Empty: known but not configured. */
  urls: readonly string[];
  tuning: ProviderTuning;
}

export interface ChainProvidersDeps {
  /** Shares each URL's rate limit among every replica using this Redis (and key prefix). */
  redis?: RedisClient;
  redisKeyPrefix?: string;
  /** prom-client registry for the `riskwatch_rpc_*` metrics. */
  metrics?: Registry;
  logger?: Logger;
  /** Bytes of provider answers the process holds at once while reading them (every network together). */
  responseBudget?: ByteBudget;
}

/** One provider URL's health: a cheap head read (getSlot / eth_blockNumber) and how long it took. */
export interface ProviderHealth {
  /** `solana/mainnet` */
  network: string;
  /** `solana/mainnet#0` (never the URL) */
  provider: string;
  status: 'pass' | 'fail';
  latency_ms: number;
  /** Slot (Solana) or block number (EVM) the provider reported. */
  head?: number;
  circuit: CircuitState;
  error?: string;
}

/** Every network the configuration knows (built-in ones, extended by config aliases, plus custom ones). */
export function networksFromConfig(chains: ChainsConfig): ConfiguredNetwork[] {
  const d = chains.defaults;
  const out: ConfiguredNetwork[] = [];
  const entries = Object.entries(chains.networks).flatMap(([chain, networks]) =>
    Object.entries(networks).map(([network, settings]) => ({ chain, network, settings })),
  );
  const settingsOf = (chain: string, network: string) =>
    entries.find((e) => e.chain === chain && e.network === network)?.settings;
  const custom = entries.filter(
    (e) => !BUILT_IN_NETWORKS.some((n) => n.chain === e.chain && n.network === e.network),
  );
  const defs: NetworkDef[] = [
    ...BUILT_IN_NETWORKS.map((n) => ({
      ...n,
      aliases: [...n.aliases, ...(settingsOf(n.chain, n.network)?.aliases ?? [])],
    })),
    ...custom.map(({ chain, network, settings }): NetworkDef => {
      const caip2 = settings.caip2!;
      const family = familyOfCaip2(caip2)!;
      const reference = caip2.split(':')[1]!;
      return {
        chain,
        network,
        caip2,
        family,
        ...(family === 'evm' && /^\d+$/.test(reference) ? { chainId: Number(reference) } : {}),
        aliases: settings.aliases ?? [],
        ...(settings.fork_of ? { forkOf: settings.fork_of } : {}),
      };
    }),
  ];
  for (const def of defs) {
    const s = settingsOf(def.chain, def.network);
    out.push({
      def,
      urls: s?.rpc_urls ?? [],
      tuning: {
        deadlineMs: d.deadline_ms,
        timeoutMs: s?.timeout_ms ?? d.timeout_ms,
        retries: d.retries,
        backoffBaseMs: d.backoff_base_ms,
        backoffMaxMs: d.backoff_max_ms,
        ratePerS: s?.rate_per_s ?? d.rate_per_s,
        concurrency: s?.concurrency ?? d.concurrency,
        batchMax: s?.batch_max ?? d.batch_max,
        circuitFailures: d.circuit_failures,
        circuitCooldownMinMs: d.circuit_cooldown_min_ms,
        circuitCooldownMs: d.circuit_cooldown_ms,
        maxResponseBytes: d.max_response_mib * 1024 * 1024,
        retryAfterMaxMs: d.retry_after_max_ms,
      },
    });
  }
  return out;
}

/**
 * The node providers of every configured network, built once per process: one JSON-RPC client per
 * network (its URLs in failover order), typed as SolanaRpc or EvmRpc. The risk engine resolves the
 * request's chain/network here, then reads through the network's client.
 */
/** Distinct (chain, network) names `resolve` remembers. */
const RESOLVED_MAX = 256;

export class ChainProviders {
  private readonly clients = new Map<NetworkDef, JsonRpcClient>();
  private readonly rates = new Map<NetworkDef, number>();
  private readonly view: NetworkRegistryView;
  private readonly resolved = new Map<string, NetworkDef>();

  static fromConfig(chains: ChainsConfig, deps: ChainProvidersDeps = {}): ChainProviders {
    const responseBudget = new ByteBudget(chains.defaults.max_buffered_mib * 1024 * 1024);
    return new ChainProviders(networksFromConfig(chains), { responseBudget, ...deps });
  }

  constructor(networks: readonly ConfiguredNetwork[], deps: ChainProvidersDeps = {}) {
    for (const n of networks) {
      if (n.urls.length === 0) continue;
      this.rates.set(n.def, n.tuning.ratePerS);
      n.urls.forEach((url, index) => {
        // Allowed (an in-VPC node often has no TLS), but said once: the provider is named, never the URL.
        if (url.startsWith('http:') && !isLoopbackUrl(url))
          deps.logger?.warn(
            { provider: `${networkLabel(n.def)}#${index}` },
            'node provider URL uses plain http:// outside loopback: its answers can be read and altered in transit',
          );
      });
      this.clients.set(
        n.def,
        new JsonRpcClient({
          ...n.tuning,
          network: networkLabel(n.def),
          urls: n.urls,
          knownMethods: n.def.family === 'solana' ? SOLANA_METHODS : EVM_METHODS,
          metrics: deps.metrics,
          logger: deps.logger,
          redis: deps.redis,
          redisKeyPrefix: deps.redisKeyPrefix,
          responseBudget: deps.responseBudget,
        }),
      );
    }
    this.view = { networks: networks.map((n) => n.def), configured: [...this.clients.keys()] };
  }

  /** Closes every client's idle connections (at shutdown, after the work that used them). */
  close(): void {
    for (const client of this.clients.values()) client.close();
  }

  /** Every network riskwatch knows, configured or not. */
  get networks(): readonly NetworkDef[] {
    return this.view.networks;
  }

  /**
   * The configured network named by `chain` + `network` (names, aliases, CAIP-2 ids, EVM chain ids).
   * Unknown or unconfigured → `AppError('unsupported_chain')` listing the configured networks.
   */
  resolve(chain: string | undefined, network: string | undefined): NetworkDef {
    // Remembered by the names as given (a bulk screening resolves the same few pairs 100,000 times);
    // bounded, since the names come from callers. Refusals are not remembered: they throw each time.
    const key = `${chain ?? ''}\u0000${network ?? ''}`;
    let def = this.resolved.get(key);
    if (!def) {
      def = resolveNetwork(chain, network, this.view);
      if (this.resolved.size >= RESOLVED_MAX) this.resolved.clear();
      this.resolved.set(key, def);
    }
    return def;
  }

  /** Calls per second each provider URL of `network` takes (`rate_per_s`); 0: unlimited or unconfigured. */
  ratePerS(network: NetworkDef): number {
    return this.rates.get(network) ?? 0;
  }

  solana(network: NetworkDef): SolanaRpc {
    return new SolanaRpc(this.client(network, 'solana'), network);
  }

  evm(network: NetworkDef): EvmRpc {
    return new EvmRpc(this.client(network, 'evm'), network);
  }

  /** The raw JSON-RPC client of a configured network (for methods the typed clients lack). */
  client(network: NetworkDef, family?: NetworkDef['family']): JsonRpcClient {
    const client = this.clients.get(network);
    if (!client || (family && network.family !== family)) {
      const wanted = family === 'solana' ? 'a Solana' : family === 'evm' ? 'an EVM' : 'a configured';
      throw new AppError(
        'unsupported_chain',
        `${networkLabel(network)} is not ${wanted} network with a configured RPC URL.`,
      );
    }
    return client;
  }

  /** Probes every provider URL of every configured network at once (for the deep health check). */
  async health(timeoutMs = 2000): Promise<ProviderHealth[]> {
    const probes = [...this.clients].flatMap(([def, client]) => {
      const circuits = new Map(client.status().map((s) => [s.provider, s.circuit]));
      const method = def.family === 'solana' ? 'getSlot' : 'eth_blockNumber';
      return client.providers.map(async (provider): Promise<ProviderHealth> => {
        const probe = await client.probe<unknown>(provider, method, [], timeoutMs);
        const base = {
          network: networkLabel(def),
          provider,
          latency_ms: probe.latencyMs,
          circuit: circuits.get(provider) ?? 'closed',
        };
        if (!probe.ok) return { ...base, status: 'fail', error: probe.error };
        const head = parseHead(probe.result);
        return head === undefined
          ? { ...base, status: 'fail', error: `${method} answered something other than a block height` }
          : { ...base, status: 'pass', head };
      });
    });
    return Promise.all(probes);
  }
}

function parseHead(result: unknown): number | undefined {
  if (typeof result === 'number' && Number.isSafeInteger(result) && result >= 0) return result;
  if (typeof result === 'string' && /^0x[0-9a-fA-F]{1,13}$/.test(result)) return Number.parseInt(result, 16);
  return undefined;
}
