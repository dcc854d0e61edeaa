import { createHash } from 'node:crypto';
import { z } from 'zod';
import { parseEvmAddress } from '../../chains/addresses.js';
import { appliesOn, type NetworkDef } from '../../chains/registry.js';
import { normalizeTokenText } from './solana.js';

/*
 * What the ERC-20 scanner knows before it reads anything (docs/risk.md#erc-20-tokens): the V2-style router
 * each network's trade simulation goes through, and the well-known tokens whose issuer controls are
 * expected. Versioned data, every entry with its source; operators add or replace entries by configuration
 * (`risk.evm.routers`, `risk.evm.known_tokens`), and the version of the merged data is part of the analysis
 * cache key, so a changed entry never serves an old verdict.
 */

/** A Uniswap V2-style router (`WETH()`, `factory()`, `getAmountsOut`, the fee-on-transfer swaps). */
export interface KnownRouter {
  /** CAIP-2 id of the network; a network configured as a fork of it inherits the entry. */
  readonly network: string;
  readonly address: `0x${string}`;
  readonly name: string;
  readonly source: string;
}

/** Token capabilities an issuer is expected to hold (shown as suppressed findings on that token). */
export const EXPECTED_CAPABILITIES = [
  'mint',
  'freeze',
  'pause',
  'burn_from_any',
  'fee_setter',
  'upgradeable',
] as const;
export type ExpectedCapability = (typeof EXPECTED_CAPABILITIES)[number];

export interface KnownEvmToken {
  readonly network: string;
  readonly address: `0x${string}`;
  readonly symbol: string;
  readonly name: string;
  readonly issuer: string;
  readonly category: string;
  readonly expected: readonly ExpectedCapability[];
  /** When given, an `owner()` or EIP-1967 admin that differs is `authority_changed`. */
  readonly owner?: `0x${string}`;
  readonly proxyAdmin?: `0x${string}`;
  readonly source: string;
}

const UNISWAP_V2 = 'https://docs.uniswap.org/contracts/v2/reference/smart-contracts/v2-deployments';
const router = (network: string, address: string, name = 'Uniswap V2 Router02'): KnownRouter => ({
  network,
  address: parseEvmAddress(address),
  name,
  source: UNISWAP_V2,
});

/** Uniswap V2 wherever Uniswap deployed it, as its documentation lists them (read 2026-11-27). */
export const BUILT_IN_ROUTERS: readonly KnownRouter[] = [
  router('eip155:1', '0x7a250d5630B4cF539739dF2C5dAcb4c659F2488D'),
  router('eip155:11155111', '0xeE567Fe1712Faf6149d80dA1E6934E354124CfE3'),
  router('eip155:8453', '0x4752ba5dbc23f44d87826276bf6fd6b1c372ad24'),
  router('eip155:42161', '0x4752ba5dbc23f44d87826276bf6fd6b1c372ad24'),
  router('eip155:10', '0x4A7b5Da61326A6379179b40d00F57E5bbDC962c2'),
  router('eip155:137', '0xedf6066a2b290C185783862C7F4776A2C8077AD1'),
  // On BNB Chain most liquidity sits on PancakeSwap v2, a Uniswap V2 fork with the same router interface.
  {
    network: 'eip155:56',
    address: parseEvmAddress('0x10ED43C718714eb63d5aA57B78B54704E256024E'),
    name: 'PancakeSwap v2 Router',
    source: 'https://developer.pancakeswap.finance/contracts/v2/addresses',
  },
];

const CIRCLE = 'https://developers.circle.com/stablecoins/usdc-contract-addresses';
const usdc = (network: string, address: string): KnownEvmToken => ({
  network,
  address: parseEvmAddress(address),
  symbol: 'USDC',
  name: 'USD Coin',
  issuer: 'Circle',
  category: 'stablecoin',
  // FiatToken: minters, a blacklister, a pauser, behind an upgradeable proxy.
  expected: ['mint', 'freeze', 'pause', 'upgradeable'],
  source: CIRCLE,
});
const weth = (network: string, address: string, source: string): KnownEvmToken => ({
  network,
  address: parseEvmAddress(address),
  symbol: 'WETH',
  name: 'Wrapped Ether',
  issuer: 'none (wrapping contract)',
  category: 'wrapped native',
  expected: [],
  source,
});

export const BUILT_IN_KNOWN_TOKENS: readonly KnownEvmToken[] = [
  usdc('eip155:1', '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48'),
  usdc('eip155:8453', '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'),
  usdc('eip155:42161', '0xaf88d065e77c8cC2239327C5EDb3A432268e5831'),
  usdc('eip155:10', '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85'),
  usdc('eip155:137', '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359'),
  {
    network: 'eip155:1',
    address: parseEvmAddress('0xdAC17F958D2ee523a2206206994597C13D831ec7'),
    symbol: 'USDT',
    name: 'Tether USD',
    issuer: 'Tether',
    category: 'stablecoin',
    // TetherToken: issue/redeem, addBlackList + destroyBlackFunds, pause, setParams (a fee, today 0).
    expected: ['mint', 'freeze', 'pause', 'burn_from_any', 'fee_setter'],
    source: 'https://tether.to/en/supported-protocols',
  },
  {
    network: 'eip155:56',
    address: parseEvmAddress('0x55d398326f99059fF775485246999027B3197955'),
    symbol: 'USDT',
    name: 'Binance-Peg BSC-USD',
    issuer: 'Binance',
    category: 'stablecoin',
    expected: ['mint'],
    source: 'https://www.binance.com/en/collateral-btokens',
  },
  {
    network: 'eip155:1',
    address: parseEvmAddress('0x6B175474E89094C44Da98b954EedeAC495271d0F'),
    symbol: 'DAI',
    name: 'Dai Stablecoin',
    issuer: 'Sky (MakerDAO)',
    category: 'stablecoin',
    // Dai: `mint` by its wards (the protocol's join adapter).
    expected: ['mint', 'burn_from_any'],
    source: 'https://chainlog.sky.money/api/mainnet/active.json (MCD_DAI)',
  },
  weth('eip155:1', '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2', UNISWAP_V2),
  weth(
    'eip155:8453',
    '0x4200000000000000000000000000000000000006',
    'https://docs.base.org/base-chain/network-information/base-contracts',
  ),
  weth('eip155:10', '0x4200000000000000000000000000000000000006', 'https://docs.optimism.io/chain/addresses'),
  weth(
    'eip155:42161',
    '0x82aF49447D8a07e3bd95BD0d56f35241523fBab1',
    'https://docs.arbitrum.io/for-devs/useful-addresses',
  ),
];

export const BUILT_IN_EVM_TOKENS_VERSION = '2026-11-27';

const evmAddress = z.string().refine((a) => {
  try {
    parseEvmAddress(a);
    return true;
  } catch {
    return false;
  }
}, 'expected an EVM address (0x + 40 hex digits; mixed case must pass EIP-55)');
const caip2 = z.string().regex(/^eip155:[0-9]{1,32}$/, 'expected the CAIP-2 id of an EVM network (eip155:…)');

/** `risk.evm.routers` entries: replace the built-in router of their network. */
export const configuredRouterSchema = z
  .object({
    network: caip2,
    address: evmAddress,
    name: z.string().trim().min(1).max(200).default('configured router'),
    source: z.string().trim().min(1).max(500).default('configuration'),
  })
  .strict();

/** `risk.evm.known_tokens` entries: add a token, or replace the built-in entry for the same address and network. */
export const configuredKnownTokenSchema = z
  .object({
    network: caip2,
    address: evmAddress,
    symbol: z.string().trim().min(1).max(32),
    name: z.string().trim().min(1).max(200),
    issuer: z.string().trim().min(1).max(200),
    category: z.string().trim().min(1).max(100).default('token'),
    expected: z.array(z.enum(EXPECTED_CAPABILITIES)).default([]),
    owner: evmAddress.optional(),
    proxy_admin: evmAddress.optional(),
    source: z.string().trim().min(1).max(500).default('configuration'),
  })
  .strict();

/** The merged routers and known tokens the ERC-20 scanner consults. */
export interface EvmTokenRegistry {
  readonly version: string;
  routerFor(network: NetworkDef): KnownRouter | undefined;
  /** The entry for `address` on `network` (or the network it forks). */
  lookup(network: NetworkDef, address: string): KnownEvmToken | undefined;
  /**
   * Known tokens on `network` whose symbol or name a token's own symbol or name equals (compared as the
   * Solana registry compares: trimmed, case-insensitively, after Unicode NFKC): a different address is a
   * copycat.
   */
  imitated(network: NetworkDef, own: { symbol: string | null; name: string | null }): KnownEvmToken[];
}

/** Built-in data with configured entries on top (validated; a bad entry throws, naming its list and index). */
export function mergeEvmTokenRegistry(
  configuredRouters: readonly unknown[] = [],
  configuredTokens: readonly unknown[] = [],
): EvmTokenRegistry {
  const routers = new Map(BUILT_IN_ROUTERS.map((r) => [r.network, r]));
  configuredRouters.forEach((raw, i) => {
    const r = parseEntry(configuredRouterSchema, raw, `risk.evm.routers #${i}`);
    routers.set(r.network, { ...r, address: parseEvmAddress(r.address) });
  });
  const tokens = new Map(BUILT_IN_KNOWN_TOKENS.map((t) => [`${t.network}|${t.address.toLowerCase()}`, t]));
  configuredTokens.forEach((raw, i) => {
    const t = parseEntry(configuredKnownTokenSchema, raw, `risk.evm.known_tokens #${i}`);
    const { proxy_admin: proxyAdmin, owner, ...rest } = t;
    tokens.set(`${t.network}|${t.address.toLowerCase()}`, {
      ...rest,
      address: parseEvmAddress(t.address),
      ...(owner ? { owner: parseEvmAddress(owner) } : {}),
      ...(proxyAdmin ? { proxyAdmin: parseEvmAddress(proxyAdmin) } : {}),
    });
  });
  const extra = configuredRouters.length + configuredTokens.length;
  const digest = extra
    ? `+config.${createHash('sha256')
        .update(JSON.stringify([[...routers.values()], [...tokens.values()]]))
        .digest('hex')
        .slice(0, 12)}`
    : '';
  const networksOf = (network: NetworkDef) => [network.caip2, ...(network.forkOf ? [network.forkOf] : [])];
  return {
    version: `${BUILT_IN_EVM_TOKENS_VERSION}${digest}`,
    routerFor: (network) =>
      routers.get(network.caip2) ?? (network.forkOf ? routers.get(network.forkOf) : undefined),
    lookup: (network, address) => {
      for (const n of networksOf(network)) {
        const t = tokens.get(`${n}|${address.toLowerCase()}`);
        if (t) return t;
      }
      return undefined;
    },
    imitated: (network, own) => {
      const wanted = new Set(
        [own.symbol, own.name]
          .filter((x): x is string => !!x)
          .map(normalizeTokenText)
          .filter(Boolean),
      );
      return [...tokens.values()].filter(
        (t) =>
          appliesOn([t.network], network) &&
          (wanted.has(normalizeTokenText(t.symbol)) || wanted.has(normalizeTokenText(t.name))),
      );
    },
  };
}

function parseEntry<T extends z.ZodType>(schema: T, raw: unknown, where: string): z.output<T> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const why = parsed.error.issues.map((x) => `${x.path.join('.') || '(entry)'}: ${x.message}`).join('; ');
  throw new Error(`${where} is invalid: ${why}`);
}
