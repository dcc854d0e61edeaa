import { isAddress as isSolanaAddress, type Address as SolanaAddress } from '@solana/kit';
import { getAddress, isAddress as isEvmAddress, type Address as EvmAddress } from 'viem';
import { AppError } from '../platform/errors.js';
import { BUILT_IN_NETWORKS, clip, type NetworkDef } from './registry.js';

export type { EvmAddress, SolanaAddress };

const invalid = (path: string, detail: string, message: string) =>
  new AppError('invalid_address', detail, { errors: [{ path, message }] });

/**
 * Addresses already found valid: @solana/kit's check decodes base58 with BigInt arithmetic, which costs
 * more than the rest of a cached preflight. Bounded; emptied when full.
 */
const validSolana = new Set<string>();
const VALID_SOLANA_MAX = 10_000;

function isValidSolana(value: string): value is SolanaAddress {
  if (validSolana.has(value)) return true;
  if (!isSolanaAddress(value)) return false;
  if (validSolana.size >= VALID_SOLANA_MAX) validSolana.clear();
  validSolana.add(value);
  return true;
}

/** A Solana address: base58 that decodes to exactly 32 bytes. */
export function parseSolanaAddress(input: string, path = 'target'): SolanaAddress {
  const value = input.trim();
  if (!isValidSolana(value)) {
    throw invalid(
      path,
      `"${clip(value)}" is not a Solana address (base58 encoding 32 bytes).`,
      'expected a base58 Solana address of 32 bytes',
    );
  }
  return value;
}

const EVM_HEX = /^0x[0-9a-fA-F]{40}$/;

/**
 * An EVM address: `0x` + 40 hex digits. All-lower-case and all-upper-case are accepted as unchecksummed;
 * mixed case must pass EIP-55, since a wrong checksum is how a typo shows. Returned in EIP-55 form.
 */
export function parseEvmAddress(input: string, path = 'target'): EvmAddress {
  const value = input.trim();
  if (!EVM_HEX.test(value)) {
    throw invalid(
      path,
      `"${clip(value)}" is not an EVM address (0x followed by 40 hexadecimal digits).`,
      'expected 0x followed by 40 hex digits',
    );
  }
  const digits = value.slice(2);
  const unchecksummed = digits === digits.toLowerCase() || digits === digits.toUpperCase();
  if (!unchecksummed && !isEvmAddress(value, { strict: true })) {
    throw invalid(
      path,
      `"${value}" fails its EIP-55 checksum: a character's case is wrong, which usually means a typo.`,
      'EIP-55 checksum mismatch',
    );
  }
  return getAddress(value.toLowerCase());
}

/** The address parsed by the rules of the network's family (Solana base58 or EVM hex). */
export function parseAddress(network: Pick<NetworkDef, 'family'>, input: string, path = 'target'): string {
  return network.family === 'solana' ? parseSolanaAddress(input, path) : parseEvmAddress(input, path);
}

/**
 * The network an address implies when the caller names none (preflight): `0x…` → ethereum/mainnet,
 * base58 → solana/mainnet. Anything else is `invalid_address`.
 */
export function inferChainFromAddress(
  input: string,
  path = 'target',
): { network: NetworkDef; address: string } {
  const value = input.trim();
  const network = (chain: string) =>
    BUILT_IN_NETWORKS.find((n) => n.chain === chain && n.network === 'mainnet')!;
  if (/^0x/i.test(value)) return { network: network('ethereum'), address: parseEvmAddress(value, path) };
  if (isValidSolana(value)) return { network: network('solana'), address: value };
  throw invalid(
    path,
    `"${clip(value)}" is neither a Solana address (base58, 32 bytes) nor an EVM address (0x + 40 hex digits).`,
    'expected a Solana or EVM address',
  );
}
