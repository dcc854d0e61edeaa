import {
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  hexToBigInt,
  numberToHex,
  type Address,
  type Hex,
} from 'viem';
import { recoverAuthorizationAddress } from 'viem/utils';
import type { EvmRpc } from '../../chains/evm.js';
import { RpcError, type CallOptions } from '../../chains/jsonrpc.js';
import { PERMIT2 } from '../known/spenders.js';
import {
  decodeTokenCall,
  decodeTokenEvent,
  READ_CALLS,
  type DecodedCall,
  type EvmLog,
  type TokenEvent,
} from './evm-abi.js';
import type {
  Approval,
  Asset,
  AssetChange,
  AuthorityChange,
  EvmTransaction,
  PayloadCounterparty,
  Simulation,
} from './types.js';

/*
 * An EVM transaction, before it is signed: simulated on the customer's node, its effects on `from` read
 * off the result (docs/risk.md#simulation).
 *
 * One round trip: `eth_blockNumber` and `eth_simulateV1` in one batch. The simulation runs three blocks:
 * reads of `from`'s native balance and of the balances/allowances of the assets the calldata names, then
 * the transaction (`validation: false`, fee fields dropped: gas is not an asset change), then the same
 * reads again. `traceTransfers` adds native transfers to the logs, and the token events of the logs give
 * what the reads could not know (tokens only the execution touched). A node without `eth_simulateV1`
 * gets `debug_traceCall` (callTracer with logs) instead, and a node with neither leaves calldata decoding
 * alone (`status: "unavailable"`): the approvals the calldata asks for, nothing promised about the rest.
 */

/** Where the simulation puts its balance reader (state override; no real contract lives here). */
const BALANCE_READER: Address = '0x7269736b77617463682D62616c616e6365720001';
/** `BALANCE(calldataload(0))`, returned as one word. */
const BALANCE_READER_CODE: Hex = '0x6000353160005260206000f3';
const ZERO: Address = '0x0000000000000000000000000000000000000000';
/** ERC-165 interface id of ERC-1155. */
const ERC1155_INTERFACE = '0xd9b67a26';
const UNLIMITED_256 = 2n ** 255n;
const UNLIMITED_160 = 2n ** 159n;
/** Most asset changes answered (from's first): a swap through many pools moves many balances. */
const MAX_ASSET_CHANGES = 100;

export interface EvmSimulationOptions {
  signal?: AbortSignal;
  deadlineMs: number;
}

/** The simulation of a transaction, with what its second round trip (token metadata) still has to fill. */
export interface EvmSimulated {
  simulation: Simulation;
  /** The block the simulation ran on top of (`eth_blockNumber` of its batch); null when unknown. */
  block: bigint | null;
  counterparties: PayloadCounterparty[];
  /** ERC-20 tokens only the logs revealed: their symbol, decimals and `from`'s balance are read next. */
  unresolvedTokens: Address[];
  /** Why the simulation did not run (for the `check_incomplete` finding), when it did not. */
  failure?: unknown;
}

interface PlannedRead {
  asset: Address;
  kind: 'balance' | 'allowance' | 'operator' | 'decimals' | 'symbol' | 'erc1155';
  spender?: Address;
}

interface Reads {
  native: bigint | null;
  values: Map<string, unknown>;
}

const readKey = (r: PlannedRead) => `${r.asset.toLowerCase()}:${r.kind}:${r.spender?.toLowerCase() ?? ''}`;
const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The simulation of `tx` (see the top of this module). Never throws for a node that cannot simulate. */
export async function simulateEvmTransaction(
  rpc: EvmRpc,
  tx: EvmTransaction,
  options: EvmSimulationOptions,
): Promise<EvmSimulated> {
  const call: CallOptions = { signal: options.signal, deadlineMs: options.deadlineMs };
  const decoded = tx.to ? decodeTokenCall(tx.data, same(tx.to, PERMIT2)) : null;
  const authorities = await authorityChanges(tx);
  const plan = plannedReads(tx, decoded);
  const txCall = {
    from: tx.from,
    ...(tx.to ? { to: tx.to } : {}),
    data: tx.data,
    value: numberToHex(tx.value),
    ...(tx.gas !== undefined ? { gas: numberToHex(tx.gas) } : {}),
  };
  const codeOverrides = Object.fromEntries(
    authorities.map((a) => [
      a.account,
      { code: a.to && !same(a.to, ZERO) ? `0xef0100${a.to.slice(2).toLowerCase()}` : '0x' },
    ]),
  );
  const readCalls = readCallsOf(tx.from, plan);
  const params = [
    {
      blockStateCalls: [
        { stateOverrides: { [BALANCE_READER]: { code: BALANCE_READER_CODE } }, calls: readCalls },
        { ...(authorities.length ? { stateOverrides: codeOverrides } : {}), calls: [txCall] },
        { calls: readCalls },
      ],
      traceTransfers: true,
      validation: false,
    },
    'latest',
  ];
  const [head, simulated] = await Promise.allSettled([
    rpc.blockNumber(call),
    rpc.rpc.call<SimulatedBlock[]>('eth_simulateV1', params, call),
  ]);
  const block = head.status === 'fulfilled' ? head.value : null;
  if (simulated.status === 'fulfilled' && validSimulation(simulated.value)) {
    const [before, executed, after] = simulated.value;
    const result = executed!.calls[0]!;
    const reads = { before: parseReads(plan, before!.calls), after: parseReads(plan, after!.calls) };
    const reverted = result.status !== '0x1';
    return effects(tx, decoded, plan, {
      method: 'eth_simulateV1',
      block,
      reverted,
      error: reverted ? revertReason(result.error?.message, result.returnData) : undefined,
      logs: reverted ? [] : result.logs,
      reads,
      authorities,
    });
  }
  const why: unknown =
    simulated.status === 'rejected'
      ? simulated.reason
      : new Error('eth_simulateV1 answered an unexpected shape');
  // A provider that failed (down, past the deadline) gets no second call; a node that answered with an
  // error (no such method, or one it cannot simulate: a contract creation on anvil, a gas limit too low)
  // gets debug_traceCall.
  if (!(why instanceof RpcError) && !(why instanceof Error && why.message.includes('unexpected shape')))
    return unavailable(tx, decoded, authorities, block, 'eth_simulateV1', why);
  return traceInstead(rpc, tx, decoded, plan, authorities, block, call);
}

interface SimulatedCall {
  status: Hex;
  returnData: Hex;
  logs: EvmLog[];
  error?: { message?: string };
}
interface SimulatedBlock {
  calls: SimulatedCall[];
}

function validSimulation(value: unknown): value is SimulatedBlock[] {
  return (
    Array.isArray(value) &&
    value.length === 3 &&
    value.every((b) => b && typeof b === 'object' && Array.isArray((b as SimulatedBlock).calls)) &&
    (value[1] as SimulatedBlock).calls.length === 1 &&
    typeof (value[1] as SimulatedBlock).calls[0]?.status === 'string'
  );
}

/** `debug_traceCall` with the call tracer and its logs: the fallback of a node without `eth_simulateV1`. */
async function traceInstead(
  rpc: EvmRpc,
  tx: EvmTransaction,
  decoded: DecodedCall | null,
  plan: PlannedRead[],
  authorities: AuthorityChange[],
  block: bigint | null,
  call: CallOptions,
): Promise<EvmSimulated> {
  const at = block === null ? 'latest' : numberToHex(block);
  const txObject = {
    from: tx.from,
    ...(tx.to ? { to: tx.to } : {}),
    data: tx.data,
    value: numberToHex(tx.value),
    ...(tx.gas !== undefined ? { gas: numberToHex(tx.gas) } : {}),
  };
  const failedRead: SimulatedCall = { status: '0x0', returnData: '0x', logs: [] };
  const readsBefore = plan.map((r) =>
    rpc.call({ to: r.asset, data: encodeRead(tx.from, r) }, block ?? 'latest', call).then(
      (data): SimulatedCall => ({ status: '0x1', returnData: data, logs: [] }),
      () => failedRead,
    ),
  );
  const [trace, native, ...reads] = await Promise.allSettled([
    rpc.rpc.call<CallFrame>(
      'debug_traceCall',
      [txObject, at, { tracer: 'callTracer', tracerConfig: { withLog: true } }],
      call,
    ),
    rpc.getBalance(tx.from, block ?? 'latest', call),
    ...readsBefore,
  ]);
  if (trace.status === 'rejected' || !trace.value || typeof trace.value !== 'object') {
    const why: unknown =
      trace.status === 'rejected' ? trace.reason : new Error('debug_traceCall answered an unexpected shape');
    return unavailable(tx, decoded, authorities, block, 'debug_traceCall', why);
  }
  const frame = trace.value;
  const before = parseReads(
    plan,
    reads.map((r) => (r.status === 'fulfilled' ? r.value : failedRead)),
    false,
  );
  before.native = native.status === 'fulfilled' ? native.value : null;
  const logs: EvmLog[] = [];
  collectFrame(frame, logs);
  const reverted = Boolean(frame.error);
  return effects(tx, decoded, plan, {
    method: 'debug_traceCall',
    block,
    reverted,
    error: reverted ? revertReason(frame.revertReason ?? frame.error, frame.output) : undefined,
    logs: reverted ? [] : logs,
    reads: { before, after: null },
    authorities,
  });
}

interface CallFrame {
  type?: string;
  from?: Hex;
  to?: Hex;
  value?: Hex;
  error?: string;
  revertReason?: string;
  output?: Hex;
  calls?: CallFrame[];
  logs?: EvmLog[];
}

/** The logs and value moves of the frames that did not fail (a failed frame's effects are undone). */
function collectFrame(root: CallFrame, out: EvmLog[]): void {
  const stack: CallFrame[] = [root];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if (frame.error) continue;
    const value = frame.value ? hexToBigInt(frame.value) : 0n;
    if (value > 0n && frame.from && frame.to && frame.type !== 'DELEGATECALL')
      out.push(nativeLog(frame.from, frame.to, value));
    for (const log of frame.logs ?? []) out.push(log);
    for (const child of [...(frame.calls ?? [])].reverse()) stack.push(child);
  }
}

/** A native move in the form `traceTransfers` logs it (so both methods share one parser). */
const nativeLog = (from: Hex, to: Hex, value: bigint): EvmLog => ({
  address: '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee',
  topics: [
    '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef',
    `0x${from.slice(2).toLowerCase().padStart(64, '0')}`,
    `0x${to.slice(2).toLowerCase().padStart(64, '0')}`,
  ],
  data: numberToHex(value, { size: 32 }),
});

/** Neither simulation ran: the approvals the calldata asks for, `status: "unavailable"`. */
function unavailable(
  tx: EvmTransaction,
  decoded: DecodedCall | null,
  authorities: AuthorityChange[],
  block: bigint | null,
  method: string,
  failure: unknown,
): EvmSimulated {
  const approvals = decoded && tx.to ? calldataApprovals(tx, decoded) : [];
  return {
    simulation: {
      status: 'unavailable',
      method: 'decode',
      ...(block !== null ? { block: Number(block) } : {}),
      error: `${method}: ${failure instanceof RpcError ? failure.rpcMessage : failure instanceof Error ? failure.message : 'no answer'}`,
      assetChanges: [],
      approvals,
      authorityChanges: authorities,
    },
    block,
    counterparties: counterpartiesOf(tx, approvals, [], authorities, block, 'decode', decoded),
    unresolvedTokens: [],
    failure,
  };
}

/** The approvals a token-standard call asks for, from the calldata alone. */
function calldataApprovals(tx: EvmTransaction, call: DecodedCall): Approval[] {
  const base = { owner: tx.from, coversBalance: null, expiresAt: null, source: 'transaction' as const };
  const token = tx.to!;
  switch (call.fn) {
    case 'approve':
    case 'increaseAllowance':
      if (call.amount === 0n) return [];
      return [
        {
          ...base,
          asset: { type: 'erc20', address: token },
          spender: call.spender,
          amount: call.amount,
          unlimited: call.amount >= UNLIMITED_256,
          all: false,
        },
      ];
    case 'setApprovalForAll':
      if (!call.approved) return [];
      return [
        {
          ...base,
          asset: { type: 'erc721', address: token },
          spender: call.operator,
          amount: 2n ** 256n - 1n,
          unlimited: true,
          coversBalance: true,
          all: true,
        },
      ];
    case 'permit2_approve':
      if (call.amount === 0n) return [];
      return [
        {
          ...base,
          asset: { type: 'erc20', address: call.token },
          spender: call.spender,
          amount: call.amount,
          unlimited: call.amount >= UNLIMITED_160,
          all: false,
          expiresAt: new Date(call.expiration * 1000),
        },
      ];
    default:
      return [];
  }
}

/** EIP-7702 authorizations of a type-4 transaction: whose code each one delegates, and to what. */
async function authorityChanges(tx: EvmTransaction): Promise<AuthorityChange[]> {
  const out: AuthorityChange[] = [];
  for (const a of tx.authorizationList) {
    let signer: Address;
    try {
      signer = await recoverAuthorizationAddress({
        authorization: {
          address: a.address,
          chainId: a.chainId,
          nonce: a.nonce,
          r: a.r,
          s: a.s,
          yParity: a.yParity,
        },
      });
    } catch {
      continue; // an authorization that does not recover is skipped by the chain too
    }
    out.push({
      account: signer,
      authorityType: 'code_delegation',
      from: null,
      to: same(a.address, ZERO) ? null : a.address,
    });
  }
  return out;
}

/** What to read before and after: `from`'s balance of the token called, and the allowance it grants. */
function plannedReads(tx: EvmTransaction, decoded: DecodedCall | null): PlannedRead[] {
  if (!decoded || !tx.to) return [];
  const token = decoded.fn === 'permit2_approve' ? decoded.token : tx.to;
  const reads: PlannedRead[] = [
    { asset: token, kind: 'balance' },
    { asset: token, kind: 'decimals' },
    { asset: token, kind: 'symbol' },
  ];
  if (decoded.fn === 'approve' || decoded.fn === 'increaseAllowance')
    reads.push({ asset: token, kind: 'allowance', spender: decoded.spender });
  if (decoded.fn === 'setApprovalForAll')
    reads.push(
      { asset: token, kind: 'operator', spender: decoded.operator },
      { asset: token, kind: 'erc1155' },
    );
  return reads;
}

function encodeRead(owner: Address, r: PlannedRead): Hex {
  switch (r.kind) {
    case 'balance':
      return encodeFunctionData({ abi: READ_CALLS, functionName: 'balanceOf', args: [owner] });
    case 'allowance':
      return encodeFunctionData({
        abi: READ_CALLS,
        functionName: 'allowance',
        args: [owner, r.spender!],
      });
    case 'operator':
      return encodeFunctionData({
        abi: READ_CALLS,
        functionName: 'isApprovedForAll',
        args: [owner, r.spender!],
      });
    case 'decimals':
      return encodeFunctionData({ abi: READ_CALLS, functionName: 'decimals' });
    case 'symbol':
      return encodeFunctionData({ abi: READ_CALLS, functionName: 'symbol' });
    case 'erc1155':
      return encodeFunctionData({
        abi: READ_CALLS,
        functionName: 'supportsInterface',
        args: [ERC1155_INTERFACE],
      });
  }
}

/** The read calls of one simulated block: `from`'s native balance first, then the planned reads. */
function readCallsOf(from: Hex, plan: PlannedRead[]) {
  return [
    { from: ZERO, to: BALANCE_READER, data: `0x${from.slice(2).toLowerCase().padStart(64, '0')}` },
    ...plan.map((r) => ({ from: ZERO, to: r.asset, data: encodeRead(from, r) })),
  ];
}

function parseReads(plan: PlannedRead[], calls: SimulatedCall[], withNative = true): Reads {
  const offset = withNative ? 1 : 0;
  const native =
    withNative && calls[0]?.status === '0x1' && calls[0].returnData.length === 66
      ? hexToBigInt(calls[0].returnData)
      : null;
  const values = new Map<string, unknown>();
  plan.forEach((r, i) => {
    const c = calls[i + offset];
    if (!c || c.status !== '0x1' || c.returnData === '0x') return;
    try {
      const fn = {
        balance: 'balanceOf',
        allowance: 'allowance',
        operator: 'isApprovedForAll',
        decimals: 'decimals',
        symbol: 'symbol',
        erc1155: 'supportsInterface',
      } as const;
      values.set(
        readKey(r),
        decodeFunctionResult({ abi: READ_CALLS, functionName: fn[r.kind], data: c.returnData }),
      );
    } catch {
      // a token whose answer does not decode (a bytes32 symbol, a non-standard return) leaves it unknown
    }
  });
  return { native, values };
}

function revertReason(message: string | undefined, data: Hex | undefined): string {
  const text = (message ?? 'execution reverted').slice(0, 300);
  return data && data !== '0x' ? `${text} (return data ${data.slice(0, 138)})` : text;
}

interface Executed {
  method: 'eth_simulateV1' | 'debug_traceCall';
  block: bigint | null;
  reverted: boolean;
  error: string | undefined;
  logs: EvmLog[];
  reads: { before: Reads; after: Reads | null };
  authorities: AuthorityChange[];
}

/** The effects of an executed simulation: asset changes, approvals and counterparties of `from`. */
function effects(
  tx: EvmTransaction,
  decoded: DecodedCall | null,
  plan: PlannedRead[],
  run: Executed,
): EvmSimulated {
  const events = run.logs.map(decodeTokenEvent).filter((e): e is TokenEvent => e !== null);
  const { before, after } = run.reads;
  const standards = new Map<string, Asset['type']>();
  // ApprovalForAll is the same event in ERC-721 and ERC-1155: it does not tell the standard.
  for (const e of events)
    if ('token' in e && e.kind !== 'permit2_approval' && e.kind !== 'approval_for_all')
      standards.set(e.token.toLowerCase(), assetTypeOf(e));
  const calledToken = plan[0]?.asset;
  if (calledToken && !standards.has(calledToken.toLowerCase()))
    standards.set(
      calledToken.toLowerCase(),
      before.values.get(readKey({ asset: calledToken, kind: 'erc1155' })) === true
        ? 'erc1155'
        : before.values.has(readKey({ asset: calledToken, kind: 'decimals' }))
          ? 'erc20'
          : decoded?.fn === 'setApprovalForAll' || decoded?.fn === 'safeTransferFrom'
            ? 'erc721'
            : 'erc20',
    );
  const assetOf = (token: Address, tokenId?: bigint): Asset => {
    const type = standards.get(token.toLowerCase()) ?? 'erc20';
    const symbol = before.values.get(readKey({ asset: token, kind: 'symbol' }));
    const decimals = before.values.get(readKey({ asset: token, kind: 'decimals' }));
    return {
      type,
      address: token,
      ...(tokenId !== undefined ? { tokenId } : {}),
      ...(typeof symbol === 'string' && symbol.length <= 64 ? { symbol } : {}),
      ...(typeof decimals === 'number' && type === 'erc20' ? { decimals } : {}),
    };
  };

  // Net changes per owner and asset, from the logs.
  const net = new Map<string, AssetChange>();
  const add = (owner: Address, asset: Asset, amount: bigint) => {
    if (amount === 0n || same(owner, ZERO)) return;
    const key = `${owner.toLowerCase()}|${asset.type}|${asset.address?.toLowerCase() ?? ''}|${asset.tokenId ?? ''}`;
    const entry = net.get(key) ?? { owner: getAddress(owner), asset, amount: 0n };
    entry.amount += amount;
    net.set(key, entry);
  };
  const native: Asset = { type: 'native' };
  for (const e of events) {
    if (e.kind === 'native') {
      add(e.from, native, -e.amount);
      add(e.to, native, e.amount);
    } else if (e.kind === 'transfer') {
      const asset = assetOf(e.token, e.standard === 'erc721' ? e.tokenId : undefined);
      add(e.from, asset, -e.amount);
      add(e.to, asset, e.amount);
    } else if (e.kind === 'transfer1155') {
      e.ids.forEach((id, i) => {
        const asset: Asset = { type: 'erc1155', address: e.token, tokenId: id };
        add(e.from, asset, -e.amounts[i]!);
        add(e.to, asset, e.amounts[i]!);
      });
    } else if (e.kind === 'weth') {
      add(e.owner, assetOf(e.token), e.amount);
    }
  }
  // `from`'s own balances as read before and after win over the logs (internal moves the trace missed).
  const fromKey = tx.from.toLowerCase();
  if (after && before.native !== null && after.native !== null) {
    net.delete(`${fromKey}|native||`);
    add(tx.from, native, after.native - before.native);
  }
  if (after && calledToken && standards.get(calledToken.toLowerCase()) === 'erc20') {
    const b = before.values.get(readKey({ asset: calledToken, kind: 'balance' }));
    const a = after.values.get(readKey({ asset: calledToken, kind: 'balance' }));
    if (typeof b === 'bigint' && typeof a === 'bigint') {
      net.delete(`${fromKey}|erc20|${calledToken.toLowerCase()}|`);
      add(tx.from, assetOf(calledToken), a - b);
    }
  }
  const changes = [...net.values()].filter((c) => c.amount !== 0n);
  changes.sort((x, y) => Number(same(y.owner, tx.from)) - Number(same(x.owner, tx.from)));

  const approvals = approvalsOf(tx, events, assetOf, before, after, plan, decoded);
  const unresolved = new Set<string>();
  for (const c of changes)
    if (c.asset.type === 'erc20' && c.asset.address && c.asset.decimals === undefined)
      unresolved.add(getAddress(c.asset.address));
  for (const a of approvals)
    if (
      a.asset.type === 'erc20' &&
      a.asset.address &&
      (a.asset.decimals === undefined || a.coversBalance === null)
    )
      unresolved.add(getAddress(a.asset.address));

  return {
    simulation: {
      status: run.reverted ? 'reverted' : 'success',
      method: run.method,
      ...(run.block !== null ? { block: Number(run.block) } : {}),
      ...(run.error ? { error: run.error } : {}),
      assetChanges: changes.slice(0, MAX_ASSET_CHANGES),
      approvals,
      authorityChanges: run.authorities,
    },
    block: run.block,
    // A reverted transaction grants nothing, but the spender it names is still judged (lists, EOA).
    counterparties: counterpartiesOf(
      tx,
      run.reverted && decoded && tx.to ? calldataApprovals(tx, decoded) : approvals,
      changes,
      run.authorities,
      run.block,
      run.method,
      decoded,
    ),
    unresolvedTokens: [...unresolved] as Address[],
  };
}

function assetTypeOf(e: TokenEvent): Asset['type'] {
  if (e.kind === 'transfer1155') return 'erc1155';
  if (e.kind === 'transfer' || e.kind === 'approval') return e.standard;
  if (e.kind === 'approval_for_all') return 'erc721';
  return 'erc20';
}

/** `from`'s approvals after the transaction: the last event per (asset, spender), reads winning. */
function approvalsOf(
  tx: EvmTransaction,
  events: TokenEvent[],
  assetOf: (token: Address, tokenId?: bigint) => Asset,
  before: Reads,
  after: Reads | null,
  plan: PlannedRead[],
  decoded: DecodedCall | null,
): Approval[] {
  const byKey = new Map<string, Approval>();
  const base = {
    owner: getAddress(tx.from),
    coversBalance: null,
    expiresAt: null,
    source: 'transaction' as const,
  };
  for (const e of events) {
    if (e.kind === 'approval' && same(e.owner, tx.from)) {
      const key = `${e.token.toLowerCase()}|${e.spender.toLowerCase()}|${e.tokenId ?? ''}`;
      if (e.standard === 'erc721')
        byKey.set(key, {
          ...base,
          asset: assetOf(e.token, e.tokenId),
          spender: e.spender,
          amount: 1n,
          unlimited: false,
          coversBalance: true,
          all: false,
        });
      else
        byKey.set(key, {
          ...base,
          asset: assetOf(e.token),
          spender: e.spender,
          amount: e.amount,
          unlimited: e.amount >= UNLIMITED_256,
          all: false,
        });
    } else if (e.kind === 'approval_for_all' && same(e.owner, tx.from)) {
      const key = `${e.token.toLowerCase()}|${e.operator.toLowerCase()}|all`;
      const asset = assetOf(e.token);
      // ERC-20 has no ApprovalForAll: a collection whose standard nothing else showed is an ERC-721.
      if (asset.type === 'erc20') {
        asset.type = 'erc721';
        delete asset.decimals;
      }
      byKey.set(key, {
        ...base,
        asset,
        spender: e.operator,
        amount: e.approved ? 2n ** 256n - 1n : 0n,
        unlimited: e.approved,
        coversBalance: e.approved,
        all: true,
      });
    } else if (e.kind === 'permit2_approval' && same(e.owner, tx.from)) {
      const key = `permit2|${e.token.toLowerCase()}|${e.spender.toLowerCase()}`;
      byKey.set(key, {
        ...base,
        asset: assetOf(e.token),
        spender: e.spender,
        amount: e.amount,
        unlimited: e.amount >= UNLIMITED_160,
        all: false,
        expiresAt: new Date(e.expiration * 1000),
      });
    }
  }
  // The allowance read after the transaction is the truth for the one the calldata asked for.
  if (after && decoded && (decoded.fn === 'approve' || decoded.fn === 'increaseAllowance')) {
    const token = plan[0]!.asset;
    const read = after.values.get(readKey({ asset: token, kind: 'allowance', spender: decoded.spender }));
    const key = `${token.toLowerCase()}|${decoded.spender.toLowerCase()}|`;
    if (typeof read === 'bigint') {
      if (read === 0n) byKey.delete(key);
      else
        byKey.set(key, {
          ...base,
          asset: assetOf(token),
          spender: decoded.spender,
          amount: read,
          unlimited: read >= UNLIMITED_256,
          all: false,
        });
    }
  }
  if (after && decoded?.fn === 'setApprovalForAll') {
    const token = plan[0]!.asset;
    const read = after.values.get(readKey({ asset: token, kind: 'operator', spender: decoded.operator }));
    const key = `${token.toLowerCase()}|${decoded.operator.toLowerCase()}|all`;
    if (read === true && !byKey.has(key))
      byKey.set(key, {
        ...base,
        asset: assetOf(token),
        spender: decoded.operator,
        amount: 2n ** 256n - 1n,
        unlimited: true,
        coversBalance: true,
        all: true,
      });
  }
  const approvals = [...byKey.values()].filter((a) => a.amount > 0n);
  for (const a of approvals) {
    if (a.all || a.asset.type !== 'erc20' || !a.asset.address) continue;
    const balance = before.values.get(readKey({ asset: a.asset.address as Address, kind: 'balance' }));
    // Nothing held is nothing covered: an exact approve of a token not held yet is still exact.
    if (typeof balance === 'bigint') a.coversBalance = a.unlimited || (balance > 0n && a.amount >= balance);
    else if (a.unlimited) a.coversBalance = true;
  }
  return approvals;
}

/** Who the transaction gives something to: spenders and operators, recipients of `from`'s assets, new code. */
function counterpartiesOf(
  tx: EvmTransaction,
  approvals: Approval[],
  changes: AssetChange[],
  authorities: AuthorityChange[],
  block: bigint | null,
  method: string,
  decoded: DecodedCall | null,
): PayloadCounterparty[] {
  const out = new Map<string, PayloadCounterparty>();
  const at = block !== null ? { block: Number(block) } : {};
  const put = (address: string, role: PayloadCounterparty['role'], value: unknown) => {
    if (same(address, tx.from) || same(address, ZERO)) return;
    const key = address.toLowerCase();
    if (!out.has(key))
      out.set(key, { address: getAddress(address), role, evidence: { method, ...at, value } });
  };
  for (const a of approvals)
    put(a.spender, a.all ? 'operator' : 'spender', {
      asset: a.asset.address ?? null,
      amount: a.unlimited ? 'unlimited' : a.amount.toString(),
    });
  for (const c of authorities)
    if (same(c.account, tx.from) && c.to) put(c.to, 'authority', { account: c.account, delegate: c.to });
  // Recipients: the owners whose balance grows in an asset `from` loses.
  const lost = new Set(
    changes.filter((c) => same(c.owner, tx.from) && c.amount < 0n).map((c) => assetId(c.asset)),
  );
  for (const c of changes)
    if (c.amount > 0n && lost.has(assetId(c.asset)))
      put(c.owner, 'recipient', { asset: c.asset.address ?? 'native', amount: c.amount.toString() });
  // The recipient the calldata names, even when the simulation reverted or did not run.
  if (decoded && 'to' in decoded && (!('from' in decoded) || same(decoded.from, tx.from)))
    put(decoded.to, 'recipient', { calldata: decoded.fn, token: tx.to });
  return [...out.values()];
}

const assetId = (a: Asset) => `${a.type}|${a.address?.toLowerCase() ?? ''}|${a.tokenId ?? ''}`;

/**
 * The second round trip: symbol, decimals and `from`'s balance (at the simulated block, before the
 * transaction) of the ERC-20 tokens only the logs revealed, filled into the simulation in place. Rejects
 * (after filling what it could) when the provider failed a balance an approval needs.
 */
export async function resolveTokens(
  rpc: EvmRpc,
  from: Hex,
  simulated: EvmSimulated,
  options: EvmSimulationOptions,
): Promise<void> {
  const tokens = simulated.unresolvedTokens;
  if (tokens.length === 0) return;
  const call: CallOptions = { signal: options.signal, deadlineMs: options.deadlineMs };
  const block = simulated.block ?? 'latest';
  const kinds = ['decimals', 'symbol', 'balance'] as const;
  // A token that does not answer a read (it reverts) is a fact; a provider that did not answer is not.
  let providerFailure: unknown;
  const answers = await Promise.all(
    tokens.flatMap((asset) =>
      kinds.map((kind) =>
        rpc.call({ to: asset, data: encodeRead(from, { asset, kind }) }, block, call).then(
          (data): SimulatedCall => ({ status: '0x1', returnData: data, logs: [] }),
          (err: unknown): SimulatedCall => {
            if (kind === 'balance' && !(err instanceof RpcError)) providerFailure ??= err;
            return { status: '0x0', returnData: '0x', logs: [] };
          },
        ),
      ),
    ),
  );
  const plan = tokens.flatMap((asset) => kinds.map((kind) => ({ asset, kind })));
  const reads = parseReads(plan, answers, false);
  const fill = (asset: Asset) => {
    if (asset.type !== 'erc20' || !asset.address) return;
    const symbol = reads.values.get(readKey({ asset: asset.address as Address, kind: 'symbol' }));
    const decimals = reads.values.get(readKey({ asset: asset.address as Address, kind: 'decimals' }));
    if (asset.symbol === undefined && typeof symbol === 'string' && symbol.length <= 64)
      asset.symbol = symbol;
    if (asset.decimals === undefined && typeof decimals === 'number') asset.decimals = decimals;
  };
  for (const c of simulated.simulation.assetChanges) fill(c.asset);
  for (const a of simulated.simulation.approvals) {
    fill(a.asset);
    if (a.coversBalance !== null || !a.asset.address) continue;
    const balance = reads.values.get(readKey({ asset: a.asset.address as Address, kind: 'balance' }));
    if (typeof balance === 'bigint') a.coversBalance = a.unlimited || (balance > 0n && a.amount >= balance);
  }
  // Whether an approval covers the balance decides its severity: unknown because of the provider is
  // an unfinished check (the caller reports it), not a smaller risk.
  if (providerFailure !== undefined && simulated.simulation.approvals.some((a) => a.coversBalance === null))
    throw providerFailure instanceof Error ? providerFailure : new Error('the token balance was not read');
}
