import { decodeFunctionResult, encodeFunctionData, hexToBigInt, type Address, type Hex } from 'viem';
import type { EvmRpc } from '../../chains/evm.js';
import { RpcError, type CallOptions } from '../../chains/jsonrpc.js';
import { READ_CALLS, type DecodedCall, type EvmLog } from './evm-abi.js';
import type { Asset, EvmSimulated, EvmSimulationOptions, EvmTransaction } from './types.js';

/*
 * What an EVM simulation reads beside the transaction (docs/risk.md#before-the-user-signs): `from`'s
 * native balance (through a balance reader put in place by a state override), and the balance, allowance,
 * decimals and symbol of the token the calldata calls — before and after, in the simulation's own blocks.
 * Then, for the tokens only the logs revealed, the second round trip (`resolveTokens`).
 */

/** Where the simulation puts its balance reader (state override; no real contract lives here). */
export const BALANCE_READER: Address = '0x7269736b77617463682D62616c616e6365720001';
/** `BALANCE(calldataload(0))`, returned as one word. */
export const BALANCE_READER_CODE: Hex = '0x6000353160005260206000f3';
const ZERO: Address = '0x0000000000000000000000000000000000000000';
/** ERC-165 interface id of ERC-1155. */
const ERC1155_INTERFACE = '0xd9b67a26';

export interface PlannedRead {
  asset: Address;
  kind: 'balance' | 'allowance' | 'operator' | 'decimals' | 'symbol' | 'erc1155';
  spender?: Address;
}

/** The values read in one block: `from`'s native balance, and each planned read by `readKey`. */
export interface Reads {
  native: bigint | null;
  values: Map<string, unknown>;
}

/** One call's outcome in a simulated block (the shape `eth_simulateV1` answers). */
export interface SimulatedCall {
  status: Hex;
  returnData: Hex;
  logs: EvmLog[];
  error?: { message?: string };
}

export const readKey = (r: PlannedRead) =>
  `${r.asset.toLowerCase()}:${r.kind}:${r.spender?.toLowerCase() ?? ''}`;

/** What to read before and after: `from`'s balance of the token called, and the allowance it grants. */
export function plannedReads(tx: EvmTransaction, decoded: DecodedCall | null): PlannedRead[] {
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

export function encodeRead(owner: Address, r: PlannedRead): Hex {
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
export function readCallsOf(from: Hex, plan: PlannedRead[]) {
  return [
    { from: ZERO, to: BALANCE_READER, data: `0x${from.slice(2).toLowerCase().padStart(64, '0')}` },
    ...plan.map((r) => ({ from: ZERO, to: r.asset, data: encodeRead(from, r) })),
  ];
}

export function parseReads(plan: PlannedRead[], calls: SimulatedCall[], withNative = true): Reads {
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
