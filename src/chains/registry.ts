import { AppError } from '../platform/errors.js';

/** The RPC dialect a network speaks: it decides which client (Solana or Ethereum JSON-RPC) serves it. */
export type ChainFamily = 'solana' | 'evm';

/**
 * Chains and networks riskwatch knows by name, with their CAIP-2 ids. Node provider URLs for each are
 * configured per install (`chains.networks` in the configuration); the provider layer builds on this list.
 */
export interface NetworkDef {
  chain: string;
  network: string;
  caip2: string;
  family: ChainFamily;
  /** EVM chain id (the CAIP-2 reference of `eip155:<id>`); absent on Solana. */
  chainId?: number;
  aliases: readonly string[];
  /**
   * The built-in network this one copies (a local fork, the demo chain), by CAIP-2 id: the known-good
   * context of that network (known mints, pool owners) applies here too.
   */
  forkOf?: string;
}

/** Whether data kept for the networks `caip2s` (CAIP-2 ids) applies on `def`, directly or as a fork. */
export const appliesOn = (caip2s: readonly string[], def: Pick<NetworkDef, 'caip2' | 'forkOf'>): boolean =>
  caip2s.includes(def.caip2) || (def.forkOf !== undefined && caip2s.includes(def.forkOf));

const solana = (network: string, genesis: string, aliases: string[] = []): NetworkDef => ({
  chain: 'solana',
  network,
  caip2: `solana:${genesis}`,
  family: 'solana',
  aliases,
});

const evm = (chain: string, network: string, chainId: number): NetworkDef => ({
  chain,
  network,
  caip2: `eip155:${chainId}`,
  family: 'evm',
  chainId,
  aliases: [],
});

export const BUILT_IN_NETWORKS: readonly NetworkDef[] = [
  solana('mainnet', '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', ['mainnet-beta', 'solana-mainnet']),
  solana('devnet', 'EtWTRABZaYq6iMfeYKouRu166VU2xqa1'),
  solana('testnet', '4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z'),
  evm('ethereum', 'mainnet', 1),
  evm('ethereum', 'sepolia', 11155111),
  evm('base', 'mainnet', 8453),
  evm('arbitrum', 'mainnet', 42161),
  evm('optimism', 'mainnet', 10),
  evm('polygon', 'mainnet', 137),
  evm('bsc', 'mainnet', 56),
];

export const chainNames = (): string[] => [...new Set(BUILT_IN_NETWORKS.map((n) => n.chain))];

/** `solana/mainnet`: how networks are named in messages, metrics and health checks. */
export const networkLabel = (n: Pick<NetworkDef, 'chain' | 'network'>): string => `${n.chain}/${n.network}`;

/** CAIP-2 `namespace:reference` (https://chainagnostic.org/CAIPs/caip-2). */
export const CAIP2_PATTERN = /^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/;

/** The family a CAIP-2 id belongs to, or undefined for namespaces riskwatch has no client for. */
export function familyOfCaip2(caip2: string): ChainFamily | undefined {
  const namespace = caip2.split(':')[0];
  return namespace === 'solana' ? 'solana' : namespace === 'eip155' ? 'evm' : undefined;
}

export interface NetworkRegistryView {
  /** Every network riskwatch knows (built-in and custom). */
  networks: readonly NetworkDef[];
  /** The networks with at least one RPC URL: the only ones a risk call may use. */
  configured: readonly NetworkDef[];
}

const norm = (s: string) => s.trim().toLowerCase();

function findNetwork(
  networks: readonly NetworkDef[],
  chain?: string,
  network?: string,
): NetworkDef | undefined {
  const c = chain?.trim() ?? '';
  const n = network?.trim() ?? '';
  const byCaip2 = (id: string) => networks.find((d) => d.caip2 === id);
  const byChainId = (id: string) =>
    /^\d{1,12}$/.test(id) ? networks.find((d) => d.chainId === Number(id)) : undefined;

  // A CAIP-2 id or an EVM chain id in `chain`, with the network omitted or naming the same network.
  if (c.includes(':') || /^\d+$/.test(c)) {
    const def = c.includes(':') ? byCaip2(c) : byChainId(c);
    if (!def || (n && !matchesNetwork(def, n))) return undefined;
    return def;
  }
  if (!c && n) return n.includes(':') ? byCaip2(n) : undefined;
  const sameChain = networks.filter((d) => d.chain === norm(c));
  return sameChain.find((d) => matchesNetwork(d, n || 'mainnet'));
}

function matchesNetwork(def: NetworkDef, network: string): boolean {
  if (network.includes(':')) return def.caip2 === network;
  if (/^\d+$/.test(network)) return def.chainId !== undefined && def.chainId === Number(network);
  const n = norm(network);
  return def.network === n || def.aliases.includes(n);
}

function describe(list: readonly NetworkDef[]): string {
  return list.length ? list.map((d) => `${networkLabel(d)} (${d.caip2})`).join(', ') : 'none';
}

/**
 * The network that `chain` + `network` name: names, aliases (`mainnet-beta`), CAIP-2 ids
 * (`eip155:8453`, in either field, or in `chain` with the network omitted) and EVM chain ids
 * (`ethereum` + `1`, or `8453` alone). Names are case-insensitive; CAIP-2 ids are exact. A chain name with
 * the network omitted means its `mainnet`.
 *
 * Unknown, and known but without a configured RPC URL, are both `unsupported_chain`, whose detail lists
 * the configured networks (so a caller can correct the request).
 */
export function resolveNetwork(
  chain: string | undefined,
  network: string | undefined,
  registry: NetworkRegistryView = { networks: BUILT_IN_NETWORKS, configured: BUILT_IN_NETWORKS },
): NetworkDef {
  const def = findNetwork(registry.networks, chain, network);
  const asked = [chain, network].filter((s) => s !== undefined && s.trim() !== '').join('/') || '(none)';
  const configured = `Configured networks: ${describe(registry.configured)}.`;
  if (!def) {
    throw new AppError('unsupported_chain', `Unknown chain/network "${clip(asked)}". ${configured}`, {
      errors: [{ path: network?.trim() ? 'network' : 'chain', message: 'unknown chain or network' }],
    });
  }
  if (!registry.configured.includes(def)) {
    throw new AppError(
      'unsupported_chain',
      `${networkLabel(def)} is not configured on this installation (no RPC URL). ${configured}`,
      { errors: [{ path: 'network', message: 'network not configured' }] },
    );
  }
  return def;
}

/** User input echoed in a message, cut to a readable length. */
export const clip = (s: string, max = 80): string => (s.length > max ? `${s.slice(0, max)}…` : s);
