import {
  decodeAbiParameters,
  encodeFunctionData,
  formatUnits,
  getAddress,
  hexToString,
  parseAbi,
  size,
  sliceHex,
  type Address,
  type Hex,
} from 'viem';
import { parseEvmAddress } from '../../../chains/addresses.js';
import type { EvmAccountState, EvmRpc } from '../../../chains/evm.js';
import type { CallOptions } from '../../../chains/jsonrpc.js';
import { networkLabel } from '../../../chains/registry.js';
import { finding, suppress, type Finding } from '../../findings.js';
import type { EvmTokenRegistry } from '../../known/evm-tokens.js';
import type { KnownWalletImplementations } from '../../known/evm.js';
import type { EvmTokenView, KnownTokenContext } from '../../schemas.js';
import type { AnalyzeOptions, ChainAnalysis } from '../../types.js';
import {
  EIP1967_SLOTS,
  addressInWord,
  classifyEvmAccount,
  designatedDelegate,
  providerFailure,
} from '../account.js';
import { capabilitiesOf, mergeCapabilities, minimalProxyTarget } from './capabilities.js';
import {
  codeFindings,
  incompleteAt,
  knownContext,
  knownFindings,
  tradeFindings,
  tradeView,
} from './findings.js';
import { checkTrade } from './trade.js';
import { isRevert } from '../approval-reads.js';

/*
 * An EVM contract as a token (docs/risk.md#erc-20-tokens): the account analysis (account.ts) plus, when
 * the contract answers as an ERC-20, what its bytecode lets its owner do, who that owner is, what the
 * registry of well-known tokens expects, and — for a token scan — whether it can be bought, moved and
 * sold and at what tax (trade.ts).
 *
 * Round trips, sequential: (1) the block header; (2) one batch at that block: code, balance, nonce, the
 * EIP-1967 slots, the ERC-20 reads, `owner()`/`getOwner()` and the trade simulation; (3) one batch: the
 * implementation's code and the owner's account. A beacon proxy adds one (the beacon's implementation()
 * first, then its code).
 */

export interface EvmTokenAnalyzeOptions extends AnalyzeOptions {
  knownWalletImplementations: KnownWalletImplementations;
  registry: EvmTokenRegistry;
  /** Run the buy/transfer/sell simulation (scan/token and risk-v2 `token`; not a preflight's deadline). */
  trade: boolean;
  /** Read at this block (a payload's simulated block) instead of reading the head first. */
  block?: bigint;
  /** The target's account as already read at `block` (a preflight that found a contract): not read again. */
  state?: EvmAccountState;
}

export interface EvmTokenAnalysis extends ChainAnalysis {
  status: 'erc20';
  kind: 'contract';
  tokenProgram: 'erc20';
  token: EvmTokenView;
  holders: null;
  known: KnownTokenContext | null;
}

const READS = parseAbi([
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function decimals() view returns (uint8)',
  'function totalSupply() view returns (uint256)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function owner() view returns (address)',
  'function getOwner() view returns (address)',
  'function implementation() view returns (address)',
]);
const ONE: Address = '0x0000000000000000000000000000000000000001';
/** name, symbol, decimals, totalSupply, allowance, owner, getOwner: in this order. */
const TOKEN_READS: readonly Hex[] = [
  encodeFunctionData({ abi: READS, functionName: 'name' }),
  encodeFunctionData({ abi: READS, functionName: 'symbol' }),
  encodeFunctionData({ abi: READS, functionName: 'decimals' }),
  encodeFunctionData({ abi: READS, functionName: 'totalSupply' }),
  encodeFunctionData({ abi: READS, functionName: 'allowance', args: [ONE, ONE] }),
  encodeFunctionData({ abi: READS, functionName: 'owner' }),
  encodeFunctionData({ abi: READS, functionName: 'getOwner' }),
];
/** keccak256("org.zeppelinos.proxy.implementation"): the slot of pre-EIP-1967 proxies (USDC's FiatTokenProxy). */
const ZEPPELINOS_IMPLEMENTATION_SLOT: Hex =
  '0x7050c9e0f4ca769c69bd3a8ef740bc37934f8e2c036e5a723fd8ee048ed3f8c3';
const TOTAL_SUPPLY = '18160ddd';
const ALLOWANCE = 'dd62ed3e';
/** owner(), getOwner(). */
const OWNER_SELECTORS = ['8da5cb5b', '893d20e8'];
const DEAD = new Set([
  '0x0000000000000000000000000000000000000000',
  '0x000000000000000000000000000000000000dead',
]);

/**
 * The analysis of `address` (see the top of this module): a plain account analysis when it is not a
 * contract or not an ERC-20, an `EvmTokenAnalysis` when it is. The first two round trips are one batch
 * each, so a provider failure there throws `provider_unavailable`; the later reads and the simulation
 * only make the analysis incomplete.
 */
export async function analyzeEvmContract(
  rpc: EvmRpc,
  address: string,
  opts: EvmTokenAnalyzeOptions,
): Promise<ChainAnalysis | EvmTokenAnalysis> {
  const target = parseEvmAddress(address);
  const label = networkLabel(opts.network);
  const call: CallOptions = { signal: opts.signal };
  const router = opts.trade ? opts.registry.routerFor(opts.network) : undefined;

  let head: { number: bigint; timestamp: bigint };
  try {
    head =
      opts.trade || opts.block === undefined
        ? await rpc.blockHeader(opts.block ?? 'latest', call)
        : { number: opts.block, timestamp: 0n };
  } catch (err) {
    throw providerFailure(err, label);
  }
  // One batch: everything below is issued in this tick.
  const statePromise =
    opts.state && opts.state.block === head.number
      ? Promise.resolve(opts.state)
      : rpc.readAccount(target, {
          ...call,
          block: head.number,
          storageSlots: [EIP1967_SLOTS.implementation, EIP1967_SLOTS.admin, EIP1967_SLOTS.beacon],
        });
  const zeppelinosPromise = rpc.getStorageAt(target, ZEPPELINOS_IMPLEMENTATION_SLOT, head.number, call);
  // Settled at once, so a rejection is never unhandled whatever is awaited first.
  const readsSettled = Promise.allSettled([
    ...TOKEN_READS.map((data) => rpc.call({ to: target, data }, head.number, call)),
    zeppelinosPromise,
  ]);
  const tradePromise = opts.trade ? checkTrade(rpc, target, router, head, call) : Promise.resolve(null);
  let state: EvmAccountState;
  try {
    state = await statePromise;
  } catch (err) {
    tradePromise.catch(() => undefined);
    throw providerFailure(err, label);
  }
  const [settled, trade] = await Promise.all([readsSettled, tradePromise]);
  const reads = settled.slice(0, TOKEN_READS.length);
  const zeppelinos = settled[TOKEN_READS.length]!;
  const account = classifyEvmAccount(target, state, opts);
  // An answer of at least a word; null for a revert or less (the contract's answer: no such function).
  // A provider that failed a read is not the contract's answer: for the ERC-20 test it is a provider
  // failure, for the rest an incomplete check.
  const word = (i: number): Hex | null => {
    const r = reads[i]!;
    return r.status === 'fulfilled' && size(r.value) >= 32 ? r.value : null;
  };
  const failed = (i: number) => {
    const r = reads[i]!;
    return r.status === 'rejected' && !isRevert(r.reason) ? (r.reason as unknown) : undefined;
  };
  if (account.kind === 'contract' && (failed(3) !== undefined || failed(4) !== undefined))
    throw providerFailure(failed(3) ?? failed(4), label);
  const [nameW, symbolW, decimalsW, supplyW, allowanceW, ownerW, getOwnerW] = [
    word(0),
    word(1),
    word(2),
    word(3),
    word(4),
    word(5),
    word(6),
  ];
  if (account.kind !== 'contract' || !supplyW || !allowanceW) return account;

  const block = Number(state.block);
  const code = state.code;
  const proxy = account.facts.proxy as {
    implementation: Address | null;
    beacon: Address | null;
    admin: Address | null;
  } | null;
  const incomplete: Finding[] = [];
  for (const [i, what] of [
    [0, 'name()'],
    [1, 'symbol()'],
    [2, 'decimals()'],
    [5, 'owner()'],
    [6, 'getOwner()'],
  ] as const)
    if (failed(i) !== undefined)
      incomplete.push(incompleteAt('eth_call', block, `${what} was not read`, failed(i)));
  const legacyImpl =
    zeppelinos.status === 'fulfilled' && size(zeppelinos.value) === 32
      ? addressInWord(zeppelinos.value)
      : null;

  // Round trip 3 (and 4 for a beacon): the implementation's code and the owner's account.
  const directImpl = proxy?.implementation ?? legacyImpl ?? minimalProxyTarget(code);
  const answered = addressAnswer(ownerW) ?? addressAnswer(getOwnerW);
  const ownerLive = answered !== null && !DEAD.has(answered.toLowerCase());
  const [implCode, ownerState] = await Promise.allSettled([
    implementationCode(rpc, directImpl ?? null, proxy?.beacon ?? null, head.number, call),
    ownerLive ? rpc.readAccount(answered, { ...call, block: head.number }) : Promise.resolve(null),
  ]);
  let implementation: Address | null = directImpl;
  let capabilities = capabilitiesOf(code);
  if (implCode.status === 'fulfilled' && implCode.value) {
    implementation = implCode.value.address;
    capabilities = mergeCapabilities(capabilities, capabilitiesOf(implCode.value.code));
  } else if (implCode.status === 'rejected') {
    incomplete.push(
      incompleteAt(
        'eth_getCode',
        block,
        `the code behind the proxy (${directImpl ?? proxy?.beacon}) was not read`,
        implCode.reason,
      ),
    );
  }
  const covered = capabilities.selectors.includes(TOTAL_SUPPLY) && capabilities.selectors.includes(ALLOWANCE);
  // Code read in full (a recognised proxy's implementation included) that answers totalSupply and
  // allowance without having them is a fallback answering anything: not a token. With DELEGATECALL and
  // no implementation found, it is a proxy of a kind not recognised: the check did not run.
  const unknownProxy = capabilities.delegatecall && implementation === null;
  if (!covered && !capabilities.skipped && !unknownProxy && implCode.status !== 'rejected') return account;
  if (capabilities.skipped)
    incomplete.push(
      incompleteAt('eth_getCode', block, 'the capabilities were not read', capabilities.skipped),
    );
  else if (!covered && implCode.status !== 'rejected')
    incomplete.push(
      incompleteAt(
        'eth_getCode',
        block,
        'the code that answers as this ERC-20 was not found (a proxy of a kind not recognised: not EIP-1967, ' +
          'beacon, zeppelinos or EIP-1167), so its capabilities were not read',
        'no totalSupply()/allowance() selector in the code read',
      ),
    );
  // An owner() answer counts only from code that has the function: a fallback may answer 32 zero bytes.
  const owner =
    answered && (!covered || capabilities.selectors.some((x) => OWNER_SELECTORS.includes(x)))
      ? answered
      : null;
  const ownerKind = ownerKindOf(owner, ownerState);
  if (ownerState.status === 'rejected')
    incomplete.push(incompleteAt('eth_getCode', block, `the owner ${owner} was not read`, ownerState.reason));

  // Numbers from their first word (an answer longer than one word is not read past it).
  const decimals = decimalsW ? Number(BigInt(sliceHex(decimalsW, 0, 32)) & 0xffn) : null;
  const supplyRaw = BigInt(sliceHex(supplyW, 0, 32));
  const symbol = decodeText(symbolW);
  const name = decodeText(nameW);
  const known = opts.registry.lookup(opts.network, target) ?? null;

  // A well-known token expected to sit behind an upgradeable proxy (USDC): its upgradeability is its issuer's.
  const findings: Finding[] = [
    ...account.findings.map((f) =>
      f.code === 'upgradeable_proxy' && known?.expected.includes('upgradeable')
        ? suppress(f, `expected of ${known.issuer}'s ${known.symbol} (${known.source})`)
        : f,
    ),
    ...incomplete,
  ];
  const { findings: codeFound, views } = codeFindings({
    target,
    block,
    code,
    implementation,
    capabilities,
    owner,
    ownerKind,
    known,
    proxy: proxy !== null || minimalProxyTarget(code) !== null,
  });
  findings.push(...codeFound);
  if (supplyRaw === 0n)
    findings.push(
      finding('zero_supply', `${target} has a total supply of 0 at block ${block}.`, {
        method: 'eth_call',
        block,
        value: { totalSupply: '0' },
      }),
    );
  findings.push(...knownFindings(opts, target, block, symbol, name, known, owner, proxy?.admin ?? null));
  if (trade) findings.push(...tradeFindings(target, block, trade, decimals));

  const token: EvmTokenView = {
    standard: 'erc20',
    name,
    symbol,
    decimals,
    supply: decimals === null ? null : formatUnits(supplyRaw, decimals),
    supply_raw: supplyRaw.toString(),
    owner,
    owner_kind: ownerKind,
    implementation,
    capabilities: views,
    buy_tax: trade?.taxes.buy ?? null,
    sell_tax: trade?.taxes.sell ?? null,
    transfer_tax: trade?.taxes.transfer ?? null,
    trade: trade ? tradeView(trade) : null,
  };
  return {
    ...account,
    status: 'erc20',
    kind: 'contract',
    tokenProgram: 'erc20',
    findings,
    facts: { ...account.facts, token_standard: 'erc20', owner, owner_kind: ownerKind, implementation },
    complete:
      account.complete && incomplete.length === 0 && findings.every((f) => f.code !== 'check_incomplete'),
    listInputs: { ...account.listInputs, ...(owner && ownerLive ? { owner } : {}) },
    token,
    holders: null,
    known: known ? knownContext(known, opts.registry.version, findings) : null,
  };
}

/** The code behind a proxy: an EIP-1967 / EIP-1167 implementation directly, a beacon's through implementation(). */
async function implementationCode(
  rpc: EvmRpc,
  implementation: Address | null,
  beacon: Address | null,
  block: bigint,
  call: CallOptions,
): Promise<{ address: Address; code: Hex } | null> {
  let address = implementation;
  if (!address && beacon) {
    const answer = await rpc.call(
      { to: beacon, data: encodeFunctionData({ abi: READS, functionName: 'implementation' }) },
      block,
      call,
    );
    address = size(answer) >= 32 ? addressAnswer(answer) : null;
  }
  if (!address) return null;
  return { address, code: await rpc.getCode(address, block, call) };
}

function ownerKindOf(
  owner: Address | null,
  state: PromiseSettledResult<EvmAccountState | null>,
): EvmTokenView['owner_kind'] {
  if (owner === null) return null;
  if (DEAD.has(owner.toLowerCase())) return 'renounced';
  if (state.status !== 'fulfilled' || !state.value) return null;
  const { code, nonce, balance } = state.value;
  if (designatedDelegate(code)) return 'delegated_wallet';
  if (size(code) > 0) return 'contract';
  return nonce > 0 || balance > 0n ? 'eoa' : 'unused';
}

/**
 * An `address` answer: its first word with the upper 12 bytes clear (the zero address included: a
 * renounced owner), else null (not an owner function: a fallback that answered something else).
 */
function addressAnswer(data: Hex | null): Address | null {
  if (!data) return null;
  const first = sliceHex(data, 0, 32);
  if (BigInt(first) >> 160n !== 0n) return null;
  return getAddress(`0x${first.slice(26)}`);
}

/** A string answer (ABI `string`), or a `bytes32` one (MKR, SAI), or null. */
function decodeText(data: Hex | null): string | null {
  if (!data) return null;
  try {
    const [text] = decodeAbiParameters([{ type: 'string' }], data);
    return clean(text);
  } catch {
    if (size(data) !== 32) return null;
    return clean(hexToString(data, { size: 32 }));
  }
}
const clean = (text: string) => text.replace(/\0/g, '').trim().slice(0, 200) || null;
