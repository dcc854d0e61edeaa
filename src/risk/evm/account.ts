import {
  formatEther,
  getAddress,
  keccak256,
  numberToHex,
  size,
  sliceHex,
  type Address,
  type Hex,
} from 'viem';
import { parseEvmAddress } from '../../chains/addresses.js';
import type { EvmAccountState, EvmRpc } from '../../chains/evm.js';
import { RpcError, type CallOptions } from '../../chains/jsonrpc.js';
import { networkLabel } from '../../chains/registry.js';
import { AppError } from '../../platform/errors.js';
import { finding, type Finding } from '../findings.js';
import type { KnownWalletImplementations } from '../known/evm.js';
import type { AnalyzeOptions, ChainAnalysis, TargetKind } from '../types.js';

/** EIP-1967 storage slots: `bytes32(uint256(keccak256('eip1967.proxy.<name>')) - 1)`. */
export const EIP1967_SLOTS = {
  implementation: '0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc',
  admin: '0xb53127684a568b3173ae13b9f8a6016e243e63b6e8ee1178d6a717850b5d6103',
  beacon: '0xa3f0ad74e5423aebfd80d3ef4346578335a9a72aeaee59ff6cb3582b35133d50',
} as const satisfies Record<string, Hex>;
type SlotName = keyof typeof EIP1967_SLOTS;
const SLOT_NAMES = ['implementation', 'admin', 'beacon'] as const satisfies readonly SlotName[];
/** The storage slots `classifyEvmAccount` reads a proxy from: read them with the account. */
export const PROXY_SLOTS: readonly Hex[] = SLOT_NAMES.map((name) => EIP1967_SLOTS[name]);

/** EIP-7702 delegation designator: `0xef0100` ‖ 20-byte delegate (23 bytes). */
const DESIGNATOR_PREFIX = '0xef0100';
const DESIGNATOR_HEX_LENGTH = 2 + 2 * 23;

export interface EvmAccountAnalyzeOptions extends AnalyzeOptions {
  /** The merged registry (`mergeKnownWalletImplementations`): delegates that make `eip7702_delegated` info. */
  knownWalletImplementations: KnownWalletImplementations;
  /** Budget of the whole analysis (both round trips); default the network's provider deadline per call. */
  deadlineMs?: number;
  /** Read at this block (one round trip) instead of the head read first. */
  block?: bigint;
  /** Handed the raw state read (a preflight that finds a contract goes on from it without reading it again). */
  onState?: (state: EvmAccountState) => void;
}

export interface EvmProxyFacts {
  implementation: Address | null;
  admin: Address | null;
  beacon: Address | null;
}

/**
 * What an EVM address is, from chain state alone (docs/risk.md#evm-wallet-and-contract), in two sequential
 * round trips: `eth_blockNumber`, then ONE batch pinned to that block — `eth_getCode`, `eth_getBalance`,
 * `eth_getTransactionCount` and `eth_getStorageAt` of the three EIP-1967 slots.
 *
 * - no code, nonce 0, balance 0 → `missing` + `fresh_address` (low; the preflight `transfer` bump is the
 *   risk service's).
 * - no code otherwise → `wallet`, no finding.
 * - code `0xef0100` ‖ delegate → `delegated_wallet` + `eip7702_delegated`: `info` when the delegate is a
 *   known wallet implementation on this chain, else `high`. The delegate goes to `listInputs.delegate`
 *   (the risk service raises it to critical when it is sanctioned or deny-listed).
 * - other code → `contract` + `is_contract` (info; the service turns a `wallet` target_type into a
 *   mismatch), and `upgradeable_proxy` (medium) when the EIP-1967 implementation or beacon slot is set.
 *   A delegated wallet's own storage may hold these slots too (7702 proxies such as Coinbase's keep the
 *   implementation there): they are reported in `facts.proxy`, but the finding is the delegation's.
 *
 * Every value comes from one block, every finding carries method + block + raw value, all addresses are
 * EIP-55. The reads are one batch, so there is no partial answer: a provider failure (error status,
 * garbled answer, JSON-RPC error, deadline, caller abort) throws `AppError('provider_unavailable')`.
 */
export async function analyzeEvmAccount(
  rpc: EvmRpc,
  address: string,
  opts: EvmAccountAnalyzeOptions,
): Promise<ChainAnalysis> {
  const target = parseEvmAddress(address);
  const label = networkLabel(opts.network);
  if (opts.network.family !== 'evm') throw new Error(`analyzeEvmAccount called for ${label}`);

  const deadlineAt = opts.deadlineMs === undefined ? undefined : Date.now() + opts.deadlineMs;
  const callOptions = (): CallOptions => {
    if (deadlineAt === undefined) return { signal: opts.signal };
    const left = deadlineAt - Date.now();
    if (left <= 0)
      throw new AppError(
        'provider_unavailable',
        `The ${label} node provider did not answer within the ${opts.deadlineMs} ms deadline.`,
      );
    return { signal: opts.signal, deadlineMs: left };
  };

  let state: EvmAccountState;
  try {
    const block = opts.block ?? (await rpc.blockNumber(callOptions()));
    state = await rpc.readAccount(target, {
      ...callOptions(),
      block,
      storageSlots: PROXY_SLOTS,
    });
  } catch (err) {
    throw providerFailure(err, label);
  }
  opts.onState?.(state);
  return classifyEvmAccount(target, state, opts);
}

/** A JSON-RPC error answer to one of these plain reads means the provider cannot serve that state. */
export function providerFailure(err: unknown, label: string): unknown {
  if (err instanceof RpcError) {
    return new AppError(
      'provider_unavailable',
      `The ${label} node provider answered ${err.method} with an error: ${err.rpcMessage} (code ${err.code}).`,
    );
  }
  return err;
}

export function classifyEvmAccount(
  target: Address,
  state: EvmAccountState,
  opts: Pick<EvmAccountAnalyzeOptions, 'network' | 'knownWalletImplementations'>,
): ChainAnalysis {
  const block = Number(state.block);
  const code = state.code.toLowerCase() as Hex;
  const codeSize = size(code);
  const hasCode = codeSize > 0;
  const delegate = designatedDelegate(code);
  const exists = state.nonce > 0 || state.balance > 0n || hasCode;
  const kind: TargetKind = !hasCode
    ? exists
      ? 'wallet'
      : 'missing'
    : delegate
      ? 'delegated_wallet'
      : 'contract';

  const words = Object.fromEntries(
    SLOT_NAMES.map((name) => [name, state.storage[EIP1967_SLOTS[name]] ?? zeroWord()]),
  ) as Record<SlotName, Hex>;
  const slotAddress = Object.fromEntries(
    SLOT_NAMES.map((name) => [name, addressInWord(words[name])]),
  ) as Record<SlotName, Address | null>;
  const proxy: EvmProxyFacts | null =
    hasCode && SLOT_NAMES.some((name) => slotAddress[name] !== null)
      ? { implementation: slotAddress.implementation, admin: slotAddress.admin, beacon: slotAddress.beacon }
      : null;

  const findings: Finding[] = [];
  const codeHash = keccak256(code);
  const codeEvidence = { method: 'eth_getCode', block, value: code };

  if (kind === 'missing') {
    findings.push(
      finding(
        'fresh_address',
        `${target} has never been used at block ${block}: nonce 0, no ether, no code. Make sure it is the ` +
          `address you meant (not a typo, nor one copied from a poisoned transaction history).`,
        {
          method: 'eth_getTransactionCount,eth_getBalance,eth_getCode',
          block,
          value: { nonce: numberToHex(state.nonce), balance: numberToHex(state.balance), code },
        },
      ),
    );
  }

  if (kind === 'delegated_wallet' && delegate) {
    const known = opts.knownWalletImplementations.lookup(delegate, opts.network.chainId);
    findings.push(
      known
        ? finding(
            'eip7702_delegated',
            `${target} is an EOA whose code is delegated (EIP-7702) to ${delegate}, a known wallet ` +
              `implementation: ${known.name} (source: ${known.source}; registry ` +
              `${opts.knownWalletImplementations.version}).`,
            codeEvidence,
            { severity: 'info' },
          )
        : finding(
            'eip7702_delegated',
            `${target} is an EOA whose code is delegated (EIP-7702) to ${delegate}, which is not a known ` +
              `wallet implementation: every call to this account runs that contract's code, which can move ` +
              `everything the account holds.`,
            codeEvidence,
          ),
    );
  }

  if (kind === 'contract') {
    findings.push(
      finding(
        'is_contract',
        `${target} holds ${codeSize} bytes of contract code at block ${block} (keccak256 ${codeHash}).`,
        { method: 'eth_getCode', block, value: { code_size: codeSize, code_hash: codeHash } },
      ),
    );
    if (slotAddress.implementation || slotAddress.beacon) {
      const logic = [
        slotAddress.implementation && `implementation ${slotAddress.implementation}`,
        slotAddress.beacon && `beacon ${slotAddress.beacon}`,
      ]
        .filter(Boolean)
        .join(', ');
      const admin = slotAddress.admin
        ? `its admin ${slotAddress.admin}`
        : 'whoever the proxy lets upgrade it';
      findings.push(
        finding(
          'upgradeable_proxy',
          `${target} is an EIP-1967 proxy (${logic}): the code that runs can be replaced by ${admin}, ` +
            `so what it does today says little about what it will do tomorrow.`,
          {
            method: 'eth_getStorageAt',
            block,
            value: Object.fromEntries(
              SLOT_NAMES.map((name) => [name, { slot: EIP1967_SLOTS[name], value: words[name] }]),
            ),
          },
        ),
      );
    }
  }

  return {
    kind,
    findings,
    facts: {
      exists,
      kind,
      nonce: state.nonce,
      balance: formatEther(state.balance),
      balance_raw: state.balance.toString(),
      code_size: codeSize,
      code_hash: codeHash,
      delegate,
      proxy,
    },
    complete: true,
    dataAsOf: { block },
    listInputs: delegate ? { delegate } : {},
  };
}

/** The delegate of an EIP-7702 designator (EIP-55), or null for any other code. */
export function designatedDelegate(code: Hex): Address | null {
  const lower = code.toLowerCase();
  if (lower.length !== DESIGNATOR_HEX_LENGTH || !lower.startsWith(DESIGNATOR_PREFIX)) return null;
  return getAddress(`0x${lower.slice(DESIGNATOR_PREFIX.length)}`);
}

/** The address in the low 20 bytes of a storage word (how Solidity reads an `address` slot), or null for 0. */
export function addressInWord(word: Hex): Address | null {
  if (BigInt(word) === 0n) return null;
  const padded: Hex = `0x${word.slice(2).padStart(64, '0')}`;
  const address = sliceHex(padded, 12);
  return BigInt(address) === 0n ? null : getAddress(address);
}

const zeroWord = (): Hex => `0x${'0'.repeat(64)}`;
