import { getAddress, type Address } from 'viem';
import type { EvmRpc } from '../../chains/evm.js';
import { networkLabel } from '../../chains/registry.js';
import { AppError } from '../../platform/errors.js';
import { PERMIT2 } from '../known/spenders.js';
import { decodeTokenEvent, sameAddress } from '../payload/evm-abi.js';
import { mergeGaps, scanApprovalLogs, type ApprovalLog, type BlockGap } from './approval-logs.js';
import { confirmApprovals, type Grant, type WalletApproval } from './approval-reads.js';

/*
 * A wallet's outstanding approvals, what revoke.cash shows: every approval event naming the wallet as
 * owner over a block range (approval-logs.ts), the latest per (token, spender) kept, then ONE batch of
 * reads at the head confirming which still stand — logs alone cannot tell: transferFrom spends ERC-20
 * allowances without an event, an NFT transfer clears its single approval without one, Permit2 ones
 * expire. Round trips: the log waves (one when the range fits 16 windows), then the confirmation batch.
 */

export const DEFAULT_MAX_RANGE = 100_000n;
export const DEFAULT_MAX_LOG_CALLS = 400;

/**
 * Seconds per block of the built-in EVM networks, by CAIP-2 id: for turning a lookback in days into
 * blocks. Where the interval changed, the current (shortest) one: the lookback then covers at least the
 * days asked for (a few blocks too many cost at most one more window; too few would miss approvals).
 */
export const EVM_BLOCK_TIME_S: Readonly<Record<string, number>> = {
  'eip155:1': 12, // a slot since the Merge
  'eip155:11155111': 12,
  'eip155:8453': 2, // Base, OP Stack (Flashblocks are 200 ms pre-confirmations, not blocks)
  'eip155:10': 2, // OP Mainnet
  // Arbitrum One: 250 ms, the sequencer's nominal block time (fewer blocks when idle):
  // https://docs.arbitrum.io/build-decentralized-apps/arbitrum-vs-ethereum/block-numbers-and-time
  'eip155:42161': 0.25,
  // Polygon PoS: 2 s from genesis, 1.75 s since 2026 (PIP-86 recalibrates rewards for it; 1.5 s planned):
  // https://forum.polygon.technology/t/pip-86-recalibrate-checkpoint-reward-for-reduced-polygon-block-times/21864
  'eip155:137': 1.75,
  // BSC: 3 s → 1.5 s (Lorentz, BEP-520) → 0.75 s (Maxwell, BEP-524) → 0.45 s (Fermi, 2026-01-14):
  // https://github.com/bnb-chain/BEPs/blob/master/BEPs/BEP-619.md
  'eip155:56': 0.45,
};

/** The blocks of `days` days at `blockTimeS` seconds a block, rounded up. */
export function lookbackBlocks(days: number, blockTimeS: number): bigint {
  if (!(days >= 0) || !Number.isFinite(days) || !(blockTimeS > 0))
    throw new RangeError(`lookbackBlocks(${days}, ${blockTimeS}): days ≥ 0 and a block time > 0 expected`);
  return BigInt(Math.ceil((days * 86_400) / blockTimeS));
}

// What one confirmed approval is: approval-reads.ts makes them.
export type { WalletApproval } from './approval-reads.js';

export interface WalletApprovals {
  /** Outstanding only, newest grant first. */
  approvals: WalletApproval[];
  /** The window covered (asked for); `gaps` are the parts of it not read. */
  fromBlock: number;
  toBlock: number;
  /** False when a part of the window was not read or a confirmation read failed (both in `gaps`). */
  complete: boolean;
  /** Log ranges not read, and failed confirmation reads (at the head block). */
  gaps: BlockGap[];
  /** `reads`: the confirmation batch (eth_call and the head's header); `roundTrips`: sequential waves. */
  calls: { getLogs: number; reads: number; roundTrips: number };
}

export interface WalletApprovalsOptions {
  head: bigint;
  fromBlock: bigint;
  signal?: AbortSignal;
  /** Budget of the whole read; three quarters of it for the logs, the rest for the confirmation. */
  deadlineMs?: number;
  /** Largest block range of one eth_getLogs; default 100,000 (halved while the provider refuses). */
  maxRange?: bigint;
  /** eth_getLogs calls allowed, refused ones included; default: the windows the range needs plus 400. */
  maxLogCalls?: number;
  /** Which end of the range is read first (see approval-logs.ts); default `newest`. */
  order?: 'newest' | 'oldest';
}

const ZERO: Address = '0x0000000000000000000000000000000000000000';

/**
 * The outstanding approvals `owner` granted in [fromBlock, head] (see the file comment). Never throws for
 * a partial read — what was not read is in `gaps`, with `complete: false` — only AppError
 * ('provider_unavailable') when no log window could be read at all, or when the caller aborts.
 */
export async function readWalletApprovals(
  rpc: EvmRpc,
  owner: Address,
  opts: WalletApprovalsOptions,
): Promise<WalletApprovals> {
  const wallet = getAddress(owner.toLowerCase());
  const head = opts.head;
  const fromBlock = opts.fromBlock < 0n ? 0n : opts.fromBlock;
  if (fromBlock > head) throw new Error(`readWalletApprovals: fromBlock ${fromBlock} is past head ${head}`);
  const startedAt = Date.now();
  const deadlineAt = opts.deadlineMs === undefined ? undefined : startedAt + opts.deadlineMs;

  const latest = new Map<string, Grant>();
  const scan = await scanApprovalLogs(
    rpc,
    wallet,
    {
      fromBlock,
      toBlock: head,
      maxRange: opts.maxRange ?? DEFAULT_MAX_RANGE,
      // A long lookback on a fast chain (365 days of Arbitrum: 1,262 windows) must fit; the slack is for
      // the halvings of a provider that refuses large ranges.
      maxCalls:
        opts.maxLogCalls ??
        Number((head - fromBlock) / (opts.maxRange ?? DEFAULT_MAX_RANGE)) + 1 + DEFAULT_MAX_LOG_CALLS,
      ...(opts.order ? { order: opts.order } : {}),
      deadlineAt: opts.deadlineMs === undefined ? undefined : startedAt + opts.deadlineMs * 0.75,
      signal: opts.signal,
    },
    (logs) => logs.forEach((log) => keepLatest(latest, wallet, log)),
  );
  if (!scan.read)
    throw new AppError(
      'provider_unavailable',
      `The ${networkLabel(rpc.network)} node provider could not read the approval logs of ${wallet}: ` +
        `${scan.gaps[0]?.reason ?? 'no answer'}.`,
    );

  const candidates = [...latest.values()].filter((g) => standsByLog(g, head));
  const confirmed = await confirmApprovals(rpc, wallet, candidates, head, {
    signal: opts.signal,
    deadlineAt,
  });
  const gaps = mergeGaps([...scan.gaps, ...confirmed.gaps]);
  return {
    approvals: confirmed.approvals,
    fromBlock: Number(fromBlock),
    toBlock: Number(head),
    complete: gaps.length === 0,
    gaps,
    calls: {
      getLogs: scan.getLogs,
      reads: confirmed.reads,
      roundTrips: scan.waves + (confirmed.reads > 0 ? 1 : 0),
    },
  };
}

/** Keeps `log` when it is the latest approval event of its key (block number, then log index). */
function keepLatest(latest: Map<string, Grant>, owner: Address, log: ApprovalLog): void {
  const e = decodeTokenEvent(log);
  if (!e || !('owner' in e) || !sameAddress(e.owner, owner)) return;
  const at = { block: log.blockNumber, logIndex: log.logIndex, tx: log.transactionHash };
  let key: string;
  let grant: Grant;
  if (e.kind === 'approval' && e.standard === 'erc20') {
    key = `erc20|${e.token}|${e.spender}`;
    grant = { kind: 'erc20', token: e.token, spender: e.spender, amount: e.amount, ...at };
  } else if (e.kind === 'approval') {
    // One approved address per token: the latest event says who it is (the zero address: nobody).
    key = `erc721|${e.token}|${e.tokenId}`;
    grant = { kind: 'erc721', token: e.token, spender: e.spender, tokenId: e.tokenId, amount: 1n, ...at };
  } else if (e.kind === 'approval_for_all') {
    key = `operator|${e.token}|${e.operator}`;
    grant = {
      kind: 'erc721_operator',
      token: e.token,
      spender: e.operator,
      amount: e.approved ? 1n : 0n,
      ...at,
    };
  } else if (e.kind === 'permit2_approval' && sameAddress(e.permit2, PERMIT2)) {
    // The same events from any other contract are not Permit2's and grant nothing through it.
    key = `permit2|${e.token}|${e.spender}`;
    grant = {
      kind: 'permit2',
      token: e.token,
      spender: e.spender,
      amount: e.amount,
      expiration: e.expiration,
      ...at,
    };
  } else return;
  const seen = latest.get(key);
  if (!seen || seen.block < grant.block || (seen.block === grant.block && seen.logIndex < grant.logIndex))
    latest.set(key, grant);
}

/** Whether the latest event leaves something to confirm (a revocation, or Permit2's one-block expiry, does not). */
function standsByLog(g: Grant, head: bigint): boolean {
  if (g.kind === 'erc721') return !sameAddress(g.spender, ZERO);
  if (sameAddress(g.spender, ZERO) || g.amount === 0n) return false;
  // Permit2 stores expiration 0 as the granting block's timestamp: expired from the next block on.
  return !(g.kind === 'permit2' && g.expiration === 0 && BigInt(g.block) < head);
}
