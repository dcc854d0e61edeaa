import { getAddress, type Address } from 'viem';
import { appliesOn, type NetworkDef } from '../../chains/registry.js';

/**
 * Well-known EVM spenders and operators (docs/risk.md#known-good-context): the contracts that a wallet's
 * ordinary day asks it to approve — Permit2, routers, marketplace conduits, aggregators. An unlimited
 * approval (or an operator approval) to one of them is how these products work, so a shield preflight
 * reports it as `info` rather than `unlimited_approval` high — but only where the address holds code on
 * the network asked about: a known address with no code there is not that contract.
 *
 * Versioned data: every entry names its source and the networks (CAIP-2) that source states. A network
 * configured as a fork of one of those (`fork_of`, the demo chain) inherits them.
 */

export interface KnownSpender {
  readonly address: Address;
  readonly name: string;
  readonly source: string;
  /** CAIP-2 ids of the networks the source lists this deployment on. */
  readonly networks: readonly string[];
}

const MAIN_EVM = ['eip155:1', 'eip155:10', 'eip155:56', 'eip155:137', 'eip155:8453', 'eip155:42161'];

const entry = (address: string, name: string, source: string, networks: readonly string[]): KnownSpender => ({
  address: getAddress(address.toLowerCase()),
  name,
  source,
  networks,
});

export const KNOWN_SPENDERS_VERSION = '2026-11-26';

export const KNOWN_SPENDERS: readonly KnownSpender[] = [
  entry(
    '0x000000000022D473030F116dDEE9F6B43aC78BA3',
    'Uniswap Permit2',
    'https://docs.uniswap.org/contracts/v4/deployments (Permit2, same address on every chain)',
    MAIN_EVM,
  ),
  entry(
    '0x66a9893cC07D91D95644AEDD05D03f95e1dBA8Af',
    'Uniswap Universal Router (v4)',
    'https://docs.uniswap.org/contracts/v4/deployments (Ethereum)',
    ['eip155:1'],
  ),
  entry(
    '0x3fC91A3afd70395Cd496C647d5a6CC9D4B2b7FAD',
    'Uniswap Universal Router (v1.2)',
    'https://github.com/Uniswap/universal-router/tree/main/deploy-addresses',
    MAIN_EVM,
  ),
  entry(
    '0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45',
    'Uniswap SwapRouter02 (v3)',
    'https://docs.uniswap.org/contracts/v3/reference/deployments/ethereum-deployments',
    ['eip155:1', 'eip155:10', 'eip155:137', 'eip155:42161'],
  ),
  entry(
    '0x7a250d5630B4cF539739dF2C5dAcb4c659F2488D',
    'Uniswap V2 Router02',
    'https://docs.uniswap.org/contracts/v2/reference/smart-contracts/v2-deployments',
    ['eip155:1'],
  ),
  entry(
    '0x1E0049783F008A0085193E00003D00cd54003c71',
    "OpenSea's Seaport conduit",
    'https://github.com/ProjectOpenSea/seaport (README, deployments: OpenSea conduit)',
    MAIN_EVM,
  ),
  entry(
    '0x0000000000000068F116a894984e2DB1123eB395',
    'Seaport 1.6',
    'https://github.com/ProjectOpenSea/seaport (README, deployments)',
    MAIN_EVM,
  ),
  entry(
    '0x111111125421cA6dc452d289314280a0f8842A65',
    '1inch Aggregation Router v6',
    'https://portal.1inch.dev/documentation/contracts/aggregation-protocol/aggregation-introduction',
    MAIN_EVM,
  ),
  entry(
    '0xDef1C0ded9bec7F1a1670819833240f027b25EfF',
    '0x Exchange Proxy',
    'https://0x.org/docs/developer-resources/contract-addresses',
    ['eip155:1', 'eip155:10', 'eip155:56', 'eip155:137', 'eip155:8453', 'eip155:42161'],
  ),
  entry(
    '0xC92E8bdf79f0507f65a392b0ab4667716BFE0110',
    'CoW Protocol GPv2VaultRelayer',
    'https://docs.cow.fi/cow-protocol/reference/contracts/core#deployments',
    ['eip155:1', 'eip155:8453', 'eip155:42161'],
  ),
];

/** Permit2's address (every chain): typed data whose `verifyingContract` it is are Permit2 signatures. */
export const PERMIT2: Address = KNOWN_SPENDERS[0]!.address;

/** The known spender at `address` on `network` (or a fork of one of its networks), if any. */
export function knownSpender(network: NetworkDef, address: string): KnownSpender | undefined {
  const lower = address.toLowerCase();
  return KNOWN_SPENDERS.find((s) => s.address.toLowerCase() === lower && appliesOn(s.networks, network));
}
