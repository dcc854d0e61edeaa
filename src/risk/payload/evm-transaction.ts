import { hexToBigInt, numberToHex, type Address, type Hex } from 'viem';
import { recoverAuthorizationAddress } from 'viem/utils';
import type { EvmRpc } from '../../chains/evm.js';
import { RpcError, type CallOptions } from '../../chains/jsonrpc.js';
import { PERMIT2 } from '../known/spenders.js';
import { decodeTokenCall, sameAddress as same, type DecodedCall, type EvmLog } from './evm-abi.js';
import { calldataApprovals, counterpartiesOf, effects } from './evm-effects.js';
import {
  BALANCE_READER,
  BALANCE_READER_CODE,
  parseReads,
  plannedReads,
  readCallsOf,
  encodeRead,
  type PlannedRead,
  type SimulatedCall,
} from './evm-reads.js';
import type { AuthorityChange, EvmSimulated, EvmSimulationOptions, EvmTransaction } from './types.js';

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

const ZERO: Address = '0x0000000000000000000000000000000000000000';

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

function revertReason(message: string | undefined, data: Hex | undefined): string {
  const text = (message ?? 'execution reverted').slice(0, 300);
  return data && data !== '0x' ? `${text} (return data ${data.slice(0, 138)})` : text;
}
