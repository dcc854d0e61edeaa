import { createHash } from 'node:crypto';
import { getAddress, type Address } from 'viem';
import { z } from 'zod';
import { parseEvmAddress } from '../../chains/addresses.js';

/**
 * Known EIP-7702 wallet implementations: delegates that a wallet vendor ships and that were audited. An
 * EOA delegated to one of them is a smart-account upgrade, not a drainer kit, so `eip7702_delegated` is
 * `info` instead of `high` (docs/risk.md#known-good-context).
 *
 * The built-in list is versioned data, every entry with the source it was taken from, and it only holds
 * entries that source states. Operators extend (or override) it by configuration through
 * `mergeKnownWalletImplementations`; the analyzer only ever sees the merged result.
 */

export interface KnownWalletImplementation {
  /** EIP-55. */
  readonly address: Address;
  /** Who ships it and what it is, as shown in a finding's detail. */
  readonly name: string;
  /** Where the entry comes from: a URL for built-in entries, `configuration` (or the operator's note) else. */
  readonly source: string;
  /**
   * EVM chain ids the entry holds on; absent = every EVM chain. A delegate address only means the same
   * code on another chain when it was deployed there with the same init code, so built-in entries name
   * the chains their source is about.
   */
  readonly chainIds?: readonly number[];
}

export interface KnownWalletImplementationData {
  /** Changes whenever an entry is added, changed or removed (date-based). */
  readonly version: string;
  readonly entries: readonly KnownWalletImplementation[];
}

const ETHEREUM_ORG_7702 = 'https://ethereum.org/en/roadmap/pectra/7702/#known-implementations';

const builtIn = (address: string, name: string, repo: string): KnownWalletImplementation => ({
  address: getAddress(address.toLowerCase()),
  name,
  source: `${ETHEREUM_ORG_7702} (audited implementations table; code: ${repo})`,
  // The ethereum.org table lists Ethereum addresses; other chains are added by configuration once an
  // operator has checked the deployment there.
  chainIds: [1],
});

/**
 * The built-in registry. Source of every entry: ethereum.org, "Pectra 7702 guidelines", section "Known
 * implementations" (audited EIP-7702 delegation contracts), read 2026-11-22.
 */
export const BUILT_IN_WALLET_IMPLEMENTATIONS: KnownWalletImplementationData = {
  version: '2026-11-22',
  entries: [
    builtIn(
      '0x000000009B1D0aF20D8C6d0A44e162d11F9b8f00',
      'Uniswap Calibur',
      'https://github.com/Uniswap/calibur',
    ),
    builtIn(
      '0x69007702764179f14F51cdce752f4f775d74E139',
      'Alchemy Modular Account',
      'https://github.com/alchemyplatform/modular-account',
    ),
    builtIn(
      '0x5A7FC11397E9a8AD41BF10bf13F22B0a63f96f6d',
      'Ambire AmbireAccount7702',
      'https://github.com/AmbireTech/ambire-common',
    ),
    builtIn(
      '0x63c0c19a282a1b52b07dd5a65b58948a07dae32b',
      'MetaMask Delegation Framework (EIP7702StatelessDeleGator)',
      'https://github.com/MetaMask/delegation-framework',
    ),
    builtIn(
      '0x4Cd241E8d1510e30b2076397afc7508Ae59C66c9',
      'Simple7702Account (Ethereum Foundation account-abstraction team)',
      'https://github.com/eth-infinitism/account-abstraction',
    ),
    builtIn(
      '0x17c11FDdADac2b341F2455aFe988fec4c3ba26e3',
      'Luganodes Pectra batch contract',
      'https://github.com/Luganodes/Pectra-Batch-Contract',
    ),
  ],
};

/** One configured entry (configuration file / environment); `source` defaults to `configuration`. */
export const configuredWalletImplementationSchema = z
  .object({
    // The API's own rule: 0x + 40 hex; mixed case must pass its EIP-55 checksum (a typo shows there).
    address: z.string().refine((a) => {
      try {
        parseEvmAddress(a);
        return true;
      } catch {
        return false;
      }
    }, 'expected an EVM address (0x + 40 hex digits; mixed case must pass EIP-55)'),
    name: z.string().trim().min(1).max(200),
    source: z.string().trim().min(1).max(500).optional(),
    chainIds: z.array(z.number().int().positive()).min(1).optional(),
  })
  .strict();
export type ConfiguredWalletImplementation = z.input<typeof configuredWalletImplementationSchema>;

/** The merged registry the analyzer consults. */
export interface KnownWalletImplementations {
  /** The built-in version, plus a digest of the configured entries when there are any. */
  readonly version: string;
  readonly entries: readonly KnownWalletImplementation[];
  /** The entry for `address` that holds on `chainId` (unscoped entries hold everywhere), if any. */
  lookup(address: string, chainId: number | undefined): KnownWalletImplementation | undefined;
}

/**
 * The built-in data (or any base) with configured entries on top. A configured entry replaces a base
 * entry for the same address (so an operator can widen its chains or rename it); configured entries are
 * validated here and a bad one throws, naming its index. Pass an empty base to use configuration only.
 */
export function mergeKnownWalletImplementations(
  base: KnownWalletImplementationData = BUILT_IN_WALLET_IMPLEMENTATIONS,
  configured: readonly ConfiguredWalletImplementation[] = [],
): KnownWalletImplementations {
  const byAddress = new Map<string, KnownWalletImplementation>();
  for (const entry of base.entries) byAddress.set(entry.address.toLowerCase(), entry);
  const normalised = configured.map((raw, i): KnownWalletImplementation => {
    const parsed = configuredWalletImplementationSchema.safeParse(raw);
    if (!parsed.success) {
      const why = parsed.error.issues.map((x) => `${x.path.join('.') || '(entry)'}: ${x.message}`).join('; ');
      throw new Error(`known EIP-7702 wallet implementation #${i} is invalid: ${why}`);
    }
    const { address, name, source, chainIds } = parsed.data;
    return {
      address: parseEvmAddress(address),
      name,
      source: source ?? 'configuration',
      ...(chainIds ? { chainIds: [...new Set(chainIds)].sort((a, b) => a - b) } : {}),
    };
  });
  for (const entry of normalised) byAddress.set(entry.address.toLowerCase(), entry);

  const digest = normalised.length
    ? `+config.${createHash('sha256').update(JSON.stringify(normalised)).digest('hex').slice(0, 12)}`
    : '';
  const entries = [...byAddress.values()];
  return {
    version: `${base.version}${digest}`,
    entries,
    lookup(address, chainId) {
      const entry = byAddress.get(address.toLowerCase());
      if (!entry) return undefined;
      if (!entry.chainIds) return entry;
      return chainId !== undefined && entry.chainIds.includes(chainId) ? entry : undefined;
    },
  };
}
