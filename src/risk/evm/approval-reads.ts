import {
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  hexToBigInt,
  numberToHex,
  parseAbi,
  type Abi,
  type Address,
  type ContractFunctionArgs,
  type ContractFunctionName,
  type ContractFunctionReturnType,
  type EncodeFunctionDataParameters,
  type Hex,
} from 'viem';
import type { EvmRpc } from '../../chains/evm.js';
import { RpcError } from '../../chains/jsonrpc.js';
import { PERMIT2 } from '../known/spenders.js';
import { READ_CALLS, sameAddress } from '../payload/evm-abi.js';
import type { Approval, Asset } from '../payload/types.js';
import type { BlockGap } from './approval-logs.js';

export interface WalletApproval extends Approval {
  grantedAtBlock: number;
  grantedTx: Hex | null;
  /** `erc721`: one token (`asset.tokenId`) of a collection, ERC-721 `approve(to, tokenId)`. */
  kind: 'erc20' | 'erc721' | 'erc721_operator' | 'erc1155_operator' | 'permit2';
  /** Read at the head; false when only the log vouches for it (the read failed or the contract did not answer). */
  confirmed: boolean;
}

/*
 * The confirmation of readWalletApprovals: what the head says of each approval the logs left standing.
 * The logs alone cannot tell — transferFrom spends ERC-20 allowances without an event, an NFT's transfer
 * clears its single approval without one, Permit2 allowances expire — so ONE batch of reads at the head
 * decides, and brings the owner's balance (coversBalance) and the tokens' symbol and decimals.
 */

const ZERO: Address = '0x0000000000000000000000000000000000000000';
const UNLIMITED_256 = 2n ** 255n;
/** uint96 tokens (UNI, COMP) store `approve(type(uint256).max)` as 2^96 − 1: unlimited for an ERC-20. */
const UNLIMITED_96 = 2n ** 96n - 1n;
const UNLIMITED_160 = 2n ** 159n;
const MAX_UINT256 = 2n ** 256n - 1n;
/** ERC-165 id of ERC-1155: ApprovalForAll is the same event in ERC-721 and ERC-1155. */
const ERC1155_INTERFACE = '0xd9b67a26';
const NFT_READS = parseAbi([
  'function getApproved(uint256 tokenId) view returns (address)',
  'function ownerOf(uint256 tokenId) view returns (address)',
]);
const PERMIT2_READS = parseAbi([
  'function allowance(address owner, address token, address spender) view returns (uint160 amount, uint48 expiration, uint48 nonce)',
]);

/** The latest approval event of one key, as the log says it. */
export interface Grant {
  kind: WalletApproval['kind'];
  token: Address;
  spender: Address;
  tokenId?: bigint;
  /** The amount; 1/0 for an operator approval given/withdrawn. */
  amount: bigint;
  expiration?: number;
  block: number;
  logIndex: number;
  tx: Hex | null;
}

/** A read's outcome: its value, nothing (the contract reverted or answered garbage), or a provider failure. */
interface Read<T> {
  value?: T;
  failed?: string;
}

type Reader = <T>(to: Address, data: Hex, decode: (data: Hex) => T) => Promise<Read<T>>;

/** What the head says of a grant: still standing (with the values read), gone, or unknown (log only). */
type State =
  | { stands: true; amount: bigint; spender?: Address; expiration?: number }
  | { stands: false }
  | { stands: null; failed?: string };

/** What an approval's token adds: metadata, the owner's balance, whether a collection is ERC-1155. */
interface TokenReads {
  symbol: Promise<Read<string>>;
  decimals?: Promise<Read<number>>;
  balance?: Promise<Read<bigint>>;
  erc1155?: Promise<Read<boolean>>;
}

/** One typed view call through `read` (viem's codecs). */
function view<const abi extends Abi, name extends ContractFunctionName<abi, 'view'>>(
  read: Reader,
  to: Address,
  abi: abi,
  functionName: name,
  args: ContractFunctionArgs<abi, 'view', name>,
): Promise<Read<ContractFunctionReturnType<abi, 'view', name>>> {
  const data = encodeFunctionData({ abi, functionName, args } as unknown as EncodeFunctionDataParameters);
  // viem types the result per function; the generic signature above carries it to the caller.
  const untyped: { abi: Abi; functionName: string } = { abi, functionName };
  const decode = (answer: Hex) =>
    decodeFunctionResult({ ...untyped, data: answer }) as ContractFunctionReturnType<abi, 'view', name>;
  return read(to, data, decode);
}

/** ONE batch at `head`: each candidate's current state, its token's balance and metadata, the head's time. */
export async function confirmApprovals(
  rpc: EvmRpc,
  owner: Address,
  candidates: Grant[],
  head: bigint,
  opts: { signal?: AbortSignal; deadlineAt?: number },
): Promise<{ approvals: WalletApproval[]; gaps: BlockGap[]; reads: number }> {
  if (candidates.length === 0) return { approvals: [], gaps: [], reads: 0 };
  const call = {
    signal: opts.signal,
    deadlineMs: opts.deadlineAt === undefined ? undefined : Math.max(1, opts.deadlineAt - Date.now()),
  };
  let reads = 0;
  const read: Reader = (to, data, decode) => {
    reads += 1;
    return rpc.call({ to, data }, head, call).then(
      (answer) => {
        try {
          return { value: decode(answer) };
        } catch {
          return {}; // no code there, or an answer of another shape: the contract's own, not the provider's
        }
      },
      (err: unknown) => (isRevert(err) ? {} : { failed: describe(err) }),
    );
  };

  // Every call is issued in this tick: one batch (the client splits it by batch_max).
  const kinds = new Map<Address, Set<Grant['kind']>>();
  for (const g of candidates) kinds.set(g.token, (kinds.get(g.token) ?? new Set()).add(g.kind));
  const tokens = new Map([...kinds].map(([token, k]) => [token, tokenReads(read, owner, token, k)]));
  const states = candidates.map((g) => stateOf(read, owner, g));
  reads += 1;
  const headTime = rpc.rpc
    .call<{ timestamp?: Hex } | null>('eth_getBlockByNumber', [numberToHex(head), false], call)
    .then((block) => Number(hexToBigInt(block!.timestamp!)))
    // Permit2 compares its expirations with the block's time; the clock is close enough without it.
    .catch(() => Math.floor(Date.now() / 1000));

  const now = await headTime;
  const failures: { what: string; reason: string }[] = [];
  const approvals: { approval: WalletApproval; logIndex: number }[] = [];
  for (const [i, g] of candidates.entries()) {
    const t = tokens.get(g.token)!;
    const [state, symbol, decimals, balance, erc1155] = await Promise.all([
      states[i]!,
      t.symbol,
      t.decimals,
      t.balance,
      t.erc1155,
    ]);
    if (state.stands === null && state.failed)
      failures.push({ what: describeRead(g, owner), reason: state.failed });
    if (balance?.failed) failures.push({ what: `balanceOf(${owner}) of ${g.token}`, reason: balance.failed });
    if (erc1155?.failed)
      failures.push({
        what: `supportsInterface(${ERC1155_INTERFACE}) of ${g.token}`,
        reason: erc1155.failed,
      });
    const kind = g.kind === 'erc721_operator' && erc1155?.value === true ? 'erc1155_operator' : g.kind;
    const asset: Asset = {
      type:
        kind === 'erc1155_operator' ? 'erc1155' : kind === 'erc20' || kind === 'permit2' ? 'erc20' : 'erc721',
      address: g.token,
      ...(g.tokenId !== undefined ? { tokenId: g.tokenId } : {}),
      ...(symbol.value !== undefined && symbol.value.length <= 64 ? { symbol: symbol.value } : {}),
      ...(decimals?.value !== undefined ? { decimals: decimals.value } : {}),
    };
    const approval = settle({ ...g, kind }, owner, asset, state, now, balance?.value);
    if (approval) approvals.push({ approval, logIndex: g.logIndex });
  }
  approvals.sort((x, y) => y.approval.grantedAtBlock - x.approval.grantedAtBlock || y.logIndex - x.logIndex);
  return { approvals: approvals.map((x) => x.approval), gaps: failureGaps(failures, head), reads };
}

/** The reads a token needs for all its approvals: balance and decimals if fungible, the standard of a collection. */
function tokenReads(read: Reader, owner: Address, token: Address, kinds: Set<Grant['kind']>): TokenReads {
  const fungible = kinds.has('erc20') || kinds.has('permit2');
  // A single-token approval already says ERC-721 (ERC-1155 has none).
  const collection = kinds.has('erc721_operator') && !kinds.has('erc721');
  return {
    symbol: view(read, token, READ_CALLS, 'symbol', []),
    ...(fungible
      ? {
          decimals: view(read, token, READ_CALLS, 'decimals', []),
          balance: view(read, token, READ_CALLS, 'balanceOf', [owner]),
        }
      : {}),
    ...(collection
      ? { erc1155: view(read, token, READ_CALLS, 'supportsInterface', [ERC1155_INTERFACE]) }
      : {}),
  };
}

/** The read that decides whether `g` still stands at the head. */
async function stateOf(read: Reader, owner: Address, g: Grant): Promise<State> {
  const unknown = (failed?: string): State => ({ stands: null, ...(failed ? { failed } : {}) });
  switch (g.kind) {
    case 'erc20': {
      const r = await view(read, g.token, READ_CALLS, 'allowance', [owner, g.spender]);
      return r.value === undefined
        ? unknown(r.failed)
        : r.value > 0n
          ? { stands: true, amount: r.value }
          : { stands: false };
    }
    case 'permit2': {
      const r = await view(read, PERMIT2, PERMIT2_READS, 'allowance', [owner, g.token, g.spender]);
      if (r.value === undefined) return unknown(r.failed);
      const [amount, expiration] = r.value;
      return amount > 0n ? { stands: true, amount, expiration } : { stands: false };
    }
    case 'erc721': {
      const [holder, approved] = await Promise.all([
        view(read, g.token, NFT_READS, 'ownerOf', [g.tokenId!]),
        view(read, g.token, NFT_READS, 'getApproved', [g.tokenId!]),
      ]);
      // The token left the wallet (or no longer exists: ownerOf reverts): its approval went with it.
      if (
        (holder.value !== undefined && !sameAddress(holder.value, owner)) ||
        (holder.value === undefined && !holder.failed)
      )
        return { stands: false };
      if (approved.value !== undefined && sameAddress(approved.value, ZERO)) return { stands: false };
      if (holder.value === undefined || approved.value === undefined)
        return unknown(holder.failed ?? approved.failed);
      return { stands: true, amount: 1n, spender: getAddress(approved.value) };
    }
    default: {
      const r = await view(read, g.token, READ_CALLS, 'isApprovedForAll', [owner, g.spender]);
      return r.value === undefined
        ? unknown(r.failed)
        : r.value
          ? { stands: true, amount: MAX_UINT256 }
          : { stands: false };
    }
  }
}

/** The approval `g` leaves at the head, or null when it no longer stands (zero, withdrawn, expired). */
function settle(
  g: Grant,
  owner: Address,
  asset: Asset,
  state: State,
  now: number,
  balance: bigint | undefined,
): WalletApproval | null {
  if (state.stands === false) return null;
  const confirmed = state.stands === true;
  const operator = g.kind === 'erc721_operator' || g.kind === 'erc1155_operator';
  const amount = confirmed ? state.amount : operator ? MAX_UINT256 : g.amount;
  const expiration = confirmed ? state.expiration : g.expiration;
  // Permit2 lets an allowance be used up to and including its expiration second.
  if (g.kind === 'permit2' && expiration !== undefined && expiration < now) return null;
  const unlimited =
    operator ||
    amount >= (g.kind === 'permit2' ? UNLIMITED_160 : g.kind === 'erc20' ? UNLIMITED_96 : UNLIMITED_256);
  const fungible = g.kind === 'erc20' || g.kind === 'permit2';
  return {
    owner,
    asset,
    spender: (confirmed && state.spender) || g.spender,
    amount: g.kind === 'erc721' ? 1n : amount,
    unlimited,
    // Nothing held is nothing covered: an exact approval of a token not held yet stays exact.
    coversBalance: !fungible
      ? true
      : balance !== undefined
        ? unlimited || (balance > 0n && amount >= balance)
        : unlimited || null,
    all: operator,
    expiresAt: g.kind === 'permit2' && expiration !== undefined ? dateOfExpiration(expiration) : null,
    source: 'transaction',
    grantedAtBlock: g.block,
    grantedTx: g.tx,
    kind: g.kind,
    confirmed,
  };
}

/** Permit2's expiration as a date; null past what a Date holds (type(uint48).max: "never", as wallets sign it). */
const dateOfExpiration = (seconds: number): Date | null =>
  seconds * 1000 <= 8.64e15 ? new Date(seconds * 1000) : null;

function describeRead(g: Grant, owner: Address): string {
  switch (g.kind) {
    case 'erc20':
      return `allowance(${owner}, ${g.spender}) of ${g.token}`;
    case 'permit2':
      return `Permit2 allowance(${owner}, ${g.token}, ${g.spender})`;
    case 'erc721':
      return `ownerOf/getApproved(${g.tokenId}) of ${g.token}`;
    default:
      return `isApprovedForAll(${owner}, ${g.spender}) of ${g.token}`;
  }
}

/** One gap (at the head) per distinct failure, naming the first reads it hit. */
function failureGaps(failures: { what: string; reason: string }[], head: bigint): BlockGap[] {
  const byReason = new Map<string, Set<string>>();
  for (const f of failures) byReason.set(f.reason, (byReason.get(f.reason) ?? new Set()).add(f.what));
  return [...byReason].map(([reason, reads]) => {
    const whats = [...reads];
    const more = whats.length > 3 ? ` and ${whats.length - 3} more` : '';
    return {
      fromBlock: Number(head),
      toBlock: Number(head),
      reason: `confirmation read${whats.length > 1 ? 's' : ''} ${whats.slice(0, 3).join('; ')}${more} failed: ${reason}`,
    };
  });
}

/** A call the contract reverted (EIP-1474 code 3, or geth's -32000 "execution reverted"): its answer. */
export const isRevert = (err: unknown) =>
  err instanceof RpcError && (err.code === 3 || /revert/i.test(err.rpcMessage));

const describe = (err: unknown) =>
  err instanceof RpcError
    ? `${err.rpcMessage} (code ${err.code})`
    : err instanceof Error
      ? err.message
      : String(err);
