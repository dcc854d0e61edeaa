import { inferChainFromAddress, parseAddress } from '../chains/addresses.js';
import { clip, networkLabel, resolveNetwork, type NetworkDef } from '../chains/registry.js';
import { AppError } from '../platform/errors.js';
import { TARGET_TYPES, type TargetType } from '../risk/types.js';
import type { EntryErrorCode, NewEntry, RemoveTarget } from './schemas.js';

/*
 * Where an entry of a bulk call points: its network and normalised address, resolved as preflight resolves
 * a target, or the per-entry error that says why it cannot be (the call goes on with the others).
 */

/** The networks an entry may name: ChainProviders fits (`resolve` accepts configured networks only). */
export interface NetworkResolver {
  /** Every network riskwatch knows, configured or not (entries of an unconfigured one are still shown). */
  readonly networks: readonly NetworkDef[];
  /** The configured network `chain` + `network` name, or `AppError('unsupported_chain')`. */
  resolve(chain: string | undefined, network: string | undefined): NetworkDef;
}

/** The target types each chain family has (risk-v2's rule). */
const TYPES_OF: Record<NetworkDef['family'], readonly TargetType[]> = {
  evm: ['wallet', 'contract'],
  solana: ['wallet', 'program', 'token'],
};

/** A valid entry of a bulk add, resolved to its network and normalised address. */
export interface Candidate {
  index: number;
  network: NetworkDef;
  target: string;
  label: string | null;
  targetType: TargetType | null;
}

const PER_ENTRY_CODES = new Set<string>(['invalid_address', 'unsupported_chain', 'unsupported_target_type']);

/** A per-entry error from what resolving the entry threw; anything else is not the entry's fault. */
export function entryError(index: number, target: string, err: unknown): EntryError {
  if (err instanceof AppError && PER_ENTRY_CODES.has(err.code))
    return { index, target, status: 'error', code: err.code as EntryErrorCode, message: err.message };
  throw err;
}

/** An entry's error, as add and remove report it. */
export interface EntryError {
  index: number;
  target: string;
  status: 'error';
  code: EntryErrorCode;
  message: string;
}

/** Resolves the targets of bulk adds and removes against the networks riskwatch knows. */
export class EntryTargets {
  constructor(private readonly chains: NetworkResolver) {}

  /**
   * An entry's network and address, as preflight resolves a target: neither chain nor network → the
   * address format decides (base58 → solana/mainnet, 0x… → ethereum/mainnet); otherwise the network named
   * (a network name alone belongs to the chain the address format implies). Only configured networks.
   */
  entry(input: NewEntry, index: number): Candidate {
    const { network, target } = this.resolve(input, (chain, net) => this.chains.resolve(chain, net));
    let targetType: TargetType | null = null;
    const wanted = input.target_type?.trim();
    if (wanted) {
      const types = TYPES_OF[network.family];
      if (!(TARGET_TYPES as readonly string[]).includes(wanted) || !types.includes(wanted as TargetType))
        throw new AppError(
          'unsupported_target_type',
          `target_type "${clip(wanted, 40)}" does not exist on ${networkLabel(network)}: use ` +
            `${types.map((t) => `\`${t}\``).join(', ')}, or leave it out.`,
        );
      targetType = wanted as TargetType;
    }
    return { index, network, target, label: input.label?.trim() || null, targetType };
  }

  /** The CAIP-2 ids of every known network of the address's family (Solana or EVM). */
  caip2sOf(target: string): string[] {
    const family = target.startsWith('0x') ? 'evm' : 'solana';
    return [...new Set(this.chains.networks.filter((n) => n.family === family).map((n) => n.caip2))];
  }

  /** A target to remove: on the network named (known, configured or not), or on every network (null). */
  removal(input: RemoveTarget): { network: NetworkDef | null; target: string } {
    if (!input.chain?.trim() && !input.network?.trim())
      return { network: null, target: inferChainFromAddress(input.target).address };
    const known = { networks: this.chains.networks, configured: this.chains.networks };
    return this.resolve(input, (chain, net) => resolveNetwork(chain, net, known));
  }

  private resolve(
    input: { target: string; chain?: string | null | undefined; network?: string | null | undefined },
    resolve: (chain: string | undefined, network: string | undefined) => NetworkDef,
  ): { network: NetworkDef; target: string } {
    const chain = input.chain?.trim() || undefined;
    const net = input.network?.trim() || undefined;
    if (chain === undefined && net === undefined) {
      const inferred = inferChainFromAddress(input.target);
      return { network: resolve(inferred.network.chain, inferred.network.network), target: inferred.address };
    }
    const chainName =
      chain ?? (net!.includes(':') ? undefined : inferChainFromAddress(input.target).network.chain);
    const network = resolve(chainName, net);
    return { network, target: parseAddress(network, input.target) };
  }
}
