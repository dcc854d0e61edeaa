import { getAddress, type Address } from 'viem';

const EVM_HEX = /^0x[0-9a-f]{40}$/;

/**
 * Address poisoning (RISK.md `lookalike_address`): wallets abbreviate `0x1234…abcd`, and attackers
 * generate addresses with the same first 4 and last 4 hex digits as a counterparty the victim trusts,
 * then seed the victim's history with them. Returns the trusted address `target` imitates — same first 4
 * and last 4 hex characters after `0x` (case-insensitive), a different address — in EIP-55 form, or null.
 *
 * Pure and deterministic: the first match in `trusted` order wins. A target that is itself trusted never
 * looks like another trusted address (it is the real thing). Non-EVM entries (a Solana address in a
 * shared allow list) are ignored, as is a non-EVM target.
 */
export function findLookalike(target: string, trusted: readonly string[]): Address | null {
  const t = target.trim().toLowerCase();
  if (!EVM_HEX.test(t)) return null;
  const candidates = trusted.map((a) => a.trim().toLowerCase()).filter((a) => EVM_HEX.test(a));
  if (candidates.includes(t)) return null;
  const head = t.slice(2, 6);
  const tail = t.slice(-4);
  const match = candidates.find((a) => a.slice(2, 6) === head && a.slice(-4) === tail);
  return match ? getAddress(match) : null;
}
