import {
  concatHex,
  decodeFunctionResult,
  encodeFunctionData,
  numberToHex,
  parseAbi,
  type Address,
  type Hex,
} from 'viem';
import type { EvmRpc } from '../../../chains/evm.js';
import { RpcError, type CallOptions } from '../../../chains/jsonrpc.js';
import type { KnownRouter } from '../../known/evm-tokens.js';
import { TRADE_PROBE_CODE } from './probe-code.js';

/*
 * The honeypot and tax check of an ERC-20 (docs/risk.md#erc-20-tokens): a buy, a transfer to a second
 * fresh address and a sell back, simulated on the customer's node through the network's V2-style router
 * and its WETH pair. The steps run in the trade probe (TradeProbe.sol), whose code a state override puts
 * at two fresh addresses; a fresh caller with a balance override pays for the buy.
 *
 * One `eth_simulateV1` call: block 1 reads the pool and buys, block 2 — one hour later
 * (`blockOverrides.time`), to catch traps that close after launch or after a buy — transfers and sells.
 * A node without `eth_simulateV1` gets one `eth_call` of the probe's `run` (the three steps at once, no
 * time shift). The taxes are measured against the pool's own quote (`getAmountsOut`) for the same step,
 * so a token without fees measures exactly 0.
 */

export const PROBE_ABI = parseAbi([
  'function pool(address router, address token) view returns (address pair, uint256 wethReserve, uint256 tokenReserve)',
  'function buy(address router, address token) payable returns (uint256 quoted, uint256 received)',
  'function send(address token, address to) returns (uint256 sent, uint256 arrived)',
  'function sell(address router, address token) returns (uint256 amount, uint256 quoted, uint256 received)',
  'function run(address router, address token, address second) payable returns (uint256 stage, uint256[7] amounts, bytes reason)',
]);

/** Fresh addresses ("riskwatch-probe" ‖ n): nobody holds their keys, no token has seen them. */
const PROBE_PREFIX = '0x7269736b77617463682d70726f6265';
export const PROBE_BUYER: Address = `${PROBE_PREFIX}0000000001`;
export const PROBE_SECOND: Address = `${PROBE_PREFIX}0000000002`;
const PROBE_CALLER: Address = `${PROBE_PREFIX}0000000003`;

/** The probe's code at both fresh addresses, and ether for the caller: the same for both methods. */
const PROBE_OVERRIDES = {
  [PROBE_BUYER]: { code: TRADE_PROBE_CODE },
  [PROBE_SECOND]: { code: TRADE_PROBE_CODE },
  [PROBE_CALLER]: { balance: numberToHex(10n ** 20n) },
};

/** What the simulated buy spends: 0.01 of the native coin (small against any real pool). */
export const BUY_WEI = 10n ** 16n;
/** How much later the transfer and the sell run. */
export const LATER_S = 3600;

export type TradeStatus =
  'measured' | 'no_router' | 'no_pool' | 'buy_reverted' | 'transfer_reverted' | 'sell_reverted' | 'failed';

export interface TradeCheck {
  status: TradeStatus;
  method: 'eth_simulateV1' | 'eth_call' | null;
  router: KnownRouter | null;
  pool: { pair: Address; wethReserve: bigint; tokenReserve: bigint } | null;
  buy: { paid: bigint; quoted: bigint; received: bigint } | null;
  transfer: { sent: bigint; arrived: bigint } | null;
  sell: { amount: bigint; quoted: bigint; received: bigint } | null;
  /** Fractions (0.05 = 5%), null when that step was not measured. */
  taxes: { buy: number | null; sell: number | null; transfer: number | null };
  /** Why a step reverted or the simulation did not run. */
  reason: string | null;
  /** True when the sells ran one hour after the buy (eth_simulateV1). */
  delayed: boolean;
}

/** The probe's calls, ABI-encoded. */
const probe = {
  pool: (router: Address, token: Address) =>
    encodeFunctionData({ abi: PROBE_ABI, functionName: 'pool', args: [router, token] }),
  buy: (router: Address, token: Address) =>
    encodeFunctionData({ abi: PROBE_ABI, functionName: 'buy', args: [router, token] }),
  send: (token: Address, to: Address) =>
    encodeFunctionData({ abi: PROBE_ABI, functionName: 'send', args: [token, to] }),
  sell: (router: Address, token: Address) =>
    encodeFunctionData({ abi: PROBE_ABI, functionName: 'sell', args: [router, token] }),
  run: (router: Address, token: Address, second: Address) =>
    encodeFunctionData({ abi: PROBE_ABI, functionName: 'run', args: [router, token, second] }),
};

interface SimulatedCall {
  status: Hex;
  returnData: Hex;
  error?: { message?: string; data?: Hex };
}

/**
 * The trade check of `token` at `head` (see the top of this module). Issues its call at once (callers
 * start it in the same tick as their other reads, so it joins their batch). Never throws.
 */
export async function checkTrade(
  rpc: EvmRpc,
  token: Address,
  router: KnownRouter | undefined,
  head: { number: bigint; timestamp: bigint },
  options: CallOptions,
): Promise<TradeCheck> {
  if (!router) return empty('no_router', null, null, 'no V2-style router is configured for this network');
  const params = [
    {
      blockStateCalls: [
        {
          stateOverrides: PROBE_OVERRIDES,
          calls: [
            { from: PROBE_CALLER, to: PROBE_BUYER, data: probe.pool(router.address, token) },
            {
              from: PROBE_CALLER,
              to: PROBE_BUYER,
              data: probe.buy(router.address, token),
              value: numberToHex(BUY_WEI),
            },
          ],
        },
        {
          blockOverrides: { time: numberToHex(head.timestamp + BigInt(LATER_S)) },
          calls: [
            { from: PROBE_CALLER, to: PROBE_BUYER, data: probe.send(token, PROBE_SECOND) },
            { from: PROBE_CALLER, to: PROBE_SECOND, data: probe.sell(router.address, token) },
          ],
        },
      ],
      validation: false,
    },
    numberToHex(head.number),
  ];
  let blocks: unknown;
  try {
    blocks = await rpc.rpc.call('eth_simulateV1', params, options);
  } catch (err) {
    // A node that answered with an error (no such method) gets the one-call probe; a provider that
    // failed (down, past the deadline) gets no second call.
    if (err instanceof RpcError) return runInOneCall(rpc, token, router, head.number, options);
    return empty('failed', 'eth_simulateV1', router, errorText(err));
  }
  const calls = simulatedCalls(blocks);
  if (!calls) return empty('failed', 'eth_simulateV1', router, 'eth_simulateV1 answered an unexpected shape');
  return judgedSteps(router, 'eth_simulateV1', calls, true);
}

/** The four calls of the two simulated blocks, or null for any other shape. */
function simulatedCalls(blocks: unknown): SimulatedCall[] | null {
  if (!Array.isArray(blocks) || blocks.length !== 2) return null;
  const calls = blocks.flatMap((b) => ((b as { calls?: unknown })?.calls ?? []) as SimulatedCall[]);
  return calls.length === 4 && calls.every((c) => typeof c?.status === 'string') ? calls : null;
}

/** The steps read; an answer that does not decode (a node's garbled return data) is a failed check. */
function judgedSteps(
  router: KnownRouter,
  method: 'eth_simulateV1' | 'eth_call',
  steps: SimulatedCall[],
  delayed: boolean,
): TradeCheck {
  try {
    return fromSteps(router, method, steps, delayed);
  } catch (err) {
    return empty(
      'failed',
      method,
      router,
      `${method} answered return data that does not decode: ${errorText(err)}`,
    );
  }
}

function fromSteps(
  router: KnownRouter,
  method: 'eth_simulateV1' | 'eth_call',
  [pool, buy, send, sell]: SimulatedCall[],
  delayed: boolean,
): TradeCheck {
  if (pool!.status !== '0x1')
    return empty(
      'failed',
      method,
      router,
      `the router ${router.address} did not answer WETH()/factory(): ${callError(pool!)}`,
    );
  const [pair, wethReserve, tokenReserve] = decodeFunctionResult({
    abi: PROBE_ABI,
    functionName: 'pool',
    data: pool!.returnData,
  });
  const result = {
    ...empty('measured', method, router, null),
    delayed,
    pool: { pair, wethReserve, tokenReserve },
  };
  if (BigInt(pair) === 0n || wethReserve === 0n || tokenReserve === 0n)
    return { ...result, status: 'no_pool', reason: noPoolReason(pair) };
  if (buy!.status !== '0x1') return { ...result, status: 'buy_reverted', reason: callError(buy!) };
  const [quoted, received] = decodeFunctionResult({
    abi: PROBE_ABI,
    functionName: 'buy',
    data: buy!.returnData,
  });
  const bought = { ...result, buy: { paid: BUY_WEI, quoted, received } };
  if (send!.status !== '0x1')
    return withTaxes({ ...bought, status: 'transfer_reverted', reason: callError(send!) });
  const [sent, arrived] = decodeFunctionResult({
    abi: PROBE_ABI,
    functionName: 'send',
    data: send!.returnData,
  });
  const sentOn = { ...bought, transfer: { sent, arrived } };
  if (sell!.status !== '0x1')
    return withTaxes({ ...sentOn, status: 'sell_reverted', reason: callError(sell!) });
  const [amount, sellQuoted, sellReceived] = decodeFunctionResult({
    abi: PROBE_ABI,
    functionName: 'sell',
    data: sell!.returnData,
  });
  return withTaxes({ ...sentOn, sell: { amount, quoted: sellQuoted, received: sellReceived } });
}

/** The probe's `run` in one `eth_call` with the same state overrides (a node without eth_simulateV1). */
async function runInOneCall(
  rpc: EvmRpc,
  token: Address,
  router: KnownRouter,
  block: bigint,
  options: CallOptions,
): Promise<TradeCheck> {
  const tx = { from: PROBE_CALLER, to: PROBE_BUYER, value: numberToHex(BUY_WEI) };
  const at = numberToHex(block);
  let poolData: Hex;
  let runData: Hex;
  try {
    [poolData, runData] = await Promise.all([
      rpc.rpc.call<Hex>(
        'eth_call',
        [{ ...tx, value: '0x0', data: probe.pool(router.address, token) }, at, PROBE_OVERRIDES],
        options,
      ),
      rpc.rpc.call<Hex>(
        'eth_call',
        [{ ...tx, data: probe.run(router.address, token, PROBE_SECOND) }, at, PROBE_OVERRIDES],
        options,
      ),
    ]);
  } catch (err) {
    return empty(
      'failed',
      'eth_call',
      router,
      `neither eth_simulateV1 nor eth_call with state overrides ran: ${errorText(err)}`,
    );
  }
  const ok = (data: Hex): SimulatedCall => ({ status: '0x1', returnData: data });
  const failed = (reason: Hex): SimulatedCall => ({
    status: '0x0',
    returnData: reason,
    error: { data: reason },
  });
  try {
    const [stage, amounts, reason] = decodeFunctionResult({
      abi: PROBE_ABI,
      functionName: 'run',
      data: runData,
    });
    const word = (...xs: bigint[]) => concatHex(xs.map((x) => numberToHex(x, { size: 32 })));
    const steps = [
      ok(poolData),
      stage === 1n ? failed(reason) : ok(word(amounts[0], amounts[1])),
      stage === 2n ? failed(reason) : ok(word(amounts[2], amounts[3])),
      stage === 3n ? failed(reason) : ok(word(amounts[4], amounts[5], amounts[6])),
    ];
    return judgedSteps(router, 'eth_call', steps, false);
  } catch (err) {
    return empty('failed', 'eth_call', router, `the trade probe answered something else: ${errorText(err)}`);
  }
}

/** The three taxes from what was measured; a step received ≥ its quote is 0. */
function withTaxes(check: TradeCheck): TradeCheck {
  const tax = (quoted: bigint, got: bigint): number =>
    quoted === 0n || got >= quoted ? 0 : Number(((quoted - got) * 1_000_000n) / quoted) / 1_000_000;
  return {
    ...check,
    taxes: {
      buy: check.buy ? tax(check.buy.quoted, check.buy.received) : null,
      transfer: check.transfer ? tax(check.transfer.sent, check.transfer.arrived) : null,
      sell: check.sell ? tax(check.sell.quoted, check.sell.received) : null,
    },
  };
}

function empty(
  status: TradeStatus,
  method: TradeCheck['method'],
  router: KnownRouter | null,
  reason: string | null,
): TradeCheck {
  return {
    status,
    method,
    router,
    pool: null,
    buy: null,
    transfer: null,
    sell: null,
    taxes: { buy: null, sell: null, transfer: null },
    reason,
    delayed: false,
  };
}

const noPoolReason = (pair: Address) =>
  BigInt(pair) === 0n
    ? 'the router’s factory has no WETH pair for this token'
    : `the WETH pair ${pair} holds no liquidity`;

function callError(call: SimulatedCall): string {
  const text = call.error?.message ?? 'execution reverted';
  const data = call.error?.data ?? call.returnData;
  return data && data !== '0x' ? `${text} (${decodeRevert(data)})` : text;
}

/** `Error(string)` revert data as its text; anything else as (clipped) hex. */
function decodeRevert(data: Hex): string {
  if (data.startsWith('0x08c379a0')) {
    try {
      const [text] = decodeFunctionResult({
        abi: parseAbi(['function f() returns (string)']),
        functionName: 'f',
        data: `0x${data.slice(10)}`,
      });
      return JSON.stringify(text);
    } catch {
      // fall through to hex
    }
  }
  return data.slice(0, 138);
}

const errorText = (err: unknown) =>
  err instanceof RpcError ? err.rpcMessage : err instanceof Error ? err.message : String(err);
