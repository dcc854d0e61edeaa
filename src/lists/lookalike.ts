import { getAddress, type Address } from 'viem';

const EVM_HEX = /^0x[0-9a-f]{40}$/;

/** What a wallet shows of `0x1234…abcd`: the first 4 and last 4 hex digits after `0x` (of lower-case hex). */
const shownDigits = (lowerHex: string): string => lowerHex.slice(2, 6) + lowerHex.slice(-4);

/** The trusted addresses of one chain, as `findLookalike` reads them. */
export interface TrustedAddresses {
  /** The trusted EVM addresses (lower-case) whose first and last 4 hex digits are `digits`, in trust order. */
  withShownDigits(digits: string): readonly string[];
}

interface Indexed {
  /** Trust order: the position of the address's first `add`. */
  order: number;
  address: string;
}

/**
 * Trusted EVM addresses (an account's allow list) indexed for `findLookalike`: by chain (null: every chain),
 * then by the 8 hex digits a wallet shows. A look-up is a Map get or two plus the few addresses that share
 * those digits, never a pass over the whole list. Non-EVM addresses are left out.
 */
export class LookalikeIndex {
  private readonly byChain = new Map<string | null, Map<string, Indexed[]>>();
  private size = 0;

  /** Trusts `address` on `chains` (null: every chain). The order of the calls is the trust order. */
  add(address: string, chains: readonly (string | null)[]): void {
    // Stored (normalised) addresses skip the lower-casing: an index of 200,000 is built in one go.
    let lower = address;
    if (!EVM_HEX.test(lower)) {
      lower = address.trim().toLowerCase();
      if (!EVM_HEX.test(lower)) return;
    }
    const entry: Indexed = { order: this.size++, address: lower };
    const digits = shownDigits(lower);
    for (const chain of chains) {
      let byDigits = this.byChain.get(chain);
      if (!byDigits) this.byChain.set(chain, (byDigits = new Map<string, Indexed[]>()));
      const same = byDigits.get(digits);
      if (same) same.push(entry);
      else byDigits.set(digits, [entry]);
    }
  }

  /** What is trusted on `chain`: its own entries and the every-chain ones, in trust order. */
  on(chain: string): TrustedAddresses {
    const own = this.byChain.get(chain);
    const everyChain = this.byChain.get(null);
    return {
      withShownDigits: (digits) => {
        const found = [...(everyChain?.get(digits) ?? []), ...(own?.get(digits) ?? [])];
        // An address trusted both on this chain and on every chain (or listed twice) is one entry, in its
        // first place.
        found.sort((a, b) => a.order - b.order);
        return found.filter((e, i) => e !== found[i - 1]).map((e) => e.address);
      },
    };
  }
}

/**
 * Address poisoning (`lookalike_address`, docs/risk.md#evm-wallet-and-contract): wallets abbreviate `0x1234…abcd`, and attackers
 * generate addresses with the same first 4 and last 4 hex digits as a counterparty the victim trusts,
 * then seed the victim's history with them. Returns the trusted address `target` imitates — same first 4
 * and last 4 hex characters after `0x` (case-insensitive), a different address — in EIP-55 form, or null.
 *
 * Pure and deterministic: the first match in trust order wins. A target that is itself trusted never
 * looks like another trusted address (it is the real thing). `trusted` is an index (`LookalikeIndex.on`),
 * or a plain list read in full. Non-EVM entries (a Solana address in a shared allow list) are ignored, as
 * is a non-EVM target.
 */
export function findLookalike(target: string, trusted: TrustedAddresses | readonly string[]): Address | null {
  const t = target.trim().toLowerCase();
  if (!EVM_HEX.test(t)) return null;
  const digits = shownDigits(t);
  const candidates =
    'withShownDigits' in trusted
      ? trusted.withShownDigits(digits)
      : trusted
          .map((a) => a.trim().toLowerCase())
          .filter((a) => EVM_HEX.test(a) && shownDigits(a) === digits);
  if (candidates.includes(t)) return null;
  const match = candidates[0];
  return match ? getAddress(match) : null;
}
