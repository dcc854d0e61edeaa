import { getAddress } from 'viem';

const EVM_HEX = /^0x[0-9a-fA-F]{40}$/;

/**
 * The chain-agnostic stored form of an address, used for sanctions rows and list entries alike so a lookup
 * needs no chain: EVM hex is lower-cased (its case is only an EIP-55 checksum); Solana base58 and every
 * other chain's format are kept as given, since their case is significant.
 */
export function normaliseAddress(input: string): string {
  const value = input.trim();
  return EVM_HEX.test(value) ? value.toLowerCase() : value;
}

/** What responses show: EIP-55 for EVM addresses, the stored form otherwise. */
export function displayAddress(stored: string): string {
  return EVM_HEX.test(stored) ? getAddress(stored) : stored;
}
