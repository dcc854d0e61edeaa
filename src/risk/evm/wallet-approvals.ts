import { size, type Address } from 'viem';
import type { EvmAccountState, EvmRpc } from '../../chains/evm.js';
import type { NetworkDef } from '../../chains/registry.js';
import { finding, type Finding } from '../findings.js';
import type { KnownWalletImplementations } from '../known/evm.js';
import { knownSpender } from '../known/spenders.js';
import { designatedDelegate } from './account.js';
import {
  EVM_BLOCK_TIME_S,
  lookbackBlocks,
  readWalletApprovals,
  type WalletApproval,
  type WalletApprovals,
} from './approvals.js';

/*
 * A wallet's outstanding approvals judged (docs/risk.md#evm-wallet-approvals): the approvals that
 * approvals.ts reads from logs and confirms, each spender of an unlimited or operator approval read in one
 * more batch (what it is: a contract, an EOA, never used, an EIP-7702 account), and `risky_approval` for
 * those a thief could use. Flagged spenders (sanctions, deny list) are each account's: the risk service
 * applies them on top (context.ts), from `spenders`.
 */

// The approvals as answered are the response schema's (src/risk/schemas.ts): the payload preflight's
// `approvals[]` shape plus where and to whom each was granted. They are kept in the analysis cache (JSON).
export type { ApprovalView, SpenderKind, WalletApprovalsView } from '../schemas.js';
import type { ApprovalView, SpenderKind, WalletApprovalsView } from '../schemas.js';

export interface JudgedApprovals {
  view: WalletApprovalsView;
  findings: Finding[];
  /** Every outstanding approval's spender (the lists decide which are flagged). */
  spenders: string[];
}

/** The first block of a `days` lookback ending at `head` on `network`. */
export function lookbackStart(network: NetworkDef, head: bigint, days: number): bigint {
  const blockTime =
    EVM_BLOCK_TIME_S[network.caip2] ?? (network.forkOf ? EVM_BLOCK_TIME_S[network.forkOf] : undefined) ?? 12;
  const start = head - lookbackBlocks(days, blockTime) + 1n;
  return start > 0n ? start : 0n;
}

/**
 * The outstanding approvals of `owner` granted in [fromBlock, head], judged. Round trips: the log waves
 * and the confirmation batch (approvals.ts), then one batch of spender reads when an unlimited or operator
 * approval goes to a spender that is not well known.
 */
export async function judgeWalletApprovals(
  rpc: EvmRpc,
  owner: Address,
  opts: {
    network: NetworkDef;
    head: bigint;
    fromBlock: bigint;
    signal?: AbortSignal;
    deadlineMs?: number;
    walletImplementations: KnownWalletImplementations;
    order?: 'newest' | 'oldest';
  },
): Promise<JudgedApprovals> {
  const read = await readWalletApprovals(rpc, owner, {
    head: opts.head,
    fromBlock: opts.fromBlock,
    ...(opts.order ? { order: opts.order } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.deadlineMs !== undefined ? { deadlineMs: opts.deadlineMs } : {}),
  });
  const wide = (a: WalletApproval) => a.unlimited || a.all;
  const toRead = [
    ...new Set(
      read.approvals.filter((a) => wide(a) && !knownSpender(opts.network, a.spender)).map((a) => a.spender),
    ),
  ];
  const states = await Promise.allSettled(
    toRead.map((s) => rpc.readAccount(s as Address, { signal: opts.signal, block: opts.head })),
  );
  const kinds = new Map<string, SpenderKind | null>();
  toRead.forEach((s, i) => {
    const r = states[i]!;
    kinds.set(s.toLowerCase(), r.status === 'fulfilled' ? spenderKind(r.value, opts) : null);
  });
  const gaps = read.gaps.map((g) => ({ from_block: g.fromBlock, to_block: g.toBlock, reason: g.reason }));
  const unread = toRead.filter((_, i) => states[i]!.status === 'rejected');
  if (unread.length)
    gaps.push({
      from_block: Number(opts.head),
      to_block: Number(opts.head),
      reason: `the spenders ${unread.slice(0, 3).join(', ')}${unread.length > 3 ? ', …' : ''} were not read`,
    });
  const approvals = read.approvals.map((a) => viewOf(a, opts.network, kinds));
  return {
    view: {
      approvals,
      from_block: read.fromBlock,
      to_block: read.toBlock,
      complete: read.complete && unread.length === 0,
      gaps,
    },
    findings: riskyFindings(owner, approvals, read, opts.head),
    spenders: [...new Set(read.approvals.map((a) => a.spender))],
  };
}

function spenderKind(
  state: EvmAccountState,
  opts: { network: NetworkDef; walletImplementations: KnownWalletImplementations },
): SpenderKind {
  const delegate = designatedDelegate(state.code);
  if (delegate)
    return opts.walletImplementations.lookup(delegate, opts.network.chainId)
      ? 'known_delegated_wallet'
      : 'delegated_wallet';
  if (size(state.code) > 0) return 'contract';
  return state.nonce > 0 || state.balance > 0n ? 'eoa' : 'unused';
}

const RISKY_KINDS: ReadonlySet<SpenderKind | null> = new Set(['eoa', 'unused', 'delegated_wallet']);

function viewOf(
  a: WalletApproval,
  network: NetworkDef,
  kinds: Map<string, SpenderKind | null>,
): ApprovalView {
  const known = knownSpender(network, a.spender);
  const kind = known ? 'known' : (kinds.get(a.spender.toLowerCase()) ?? null);
  return {
    owner: a.owner,
    asset: {
      type: a.asset.type,
      ...(a.asset.address !== undefined ? { address: a.asset.address } : {}),
      ...(a.asset.tokenId !== undefined ? { token_id: a.asset.tokenId.toString() } : {}),
      ...(a.asset.symbol !== undefined ? { symbol: a.asset.symbol } : {}),
      ...(a.asset.decimals !== undefined ? { decimals: a.asset.decimals } : {}),
    },
    spender: a.spender,
    amount: a.unlimited ? 'unlimited' : a.amount.toString(),
    covers_balance: a.coversBalance,
    all: a.all,
    expires_at: a.expiresAt && !Number.isNaN(a.expiresAt.getTime()) ? a.expiresAt.toISOString() : null,
    source: a.source,
    kind: a.kind,
    granted_at_block: a.grantedAtBlock,
    granted_tx: a.grantedTx,
    confirmed: a.confirmed,
    spender_kind: kind,
    spender_name: known?.name ?? null,
    // Confirmed by a read: any contract can emit an Approval event naming any wallet (spam), only the
    // token's own answer says the approval stands.
    risky: a.confirmed && (a.unlimited || a.all) && RISKY_KINDS.has(kind),
  };
}

/** One `risky_approval` (high) naming every risky approval, or none. */
function riskyFindings(
  owner: Address,
  approvals: ApprovalView[],
  read: WalletApprovals,
  head: bigint,
): Finding[] {
  const risky = approvals.filter((a) => a.risky);
  if (risky.length === 0) return [];
  const what: Record<string, string> = {
    eoa: 'an externally owned account',
    unused: 'an address nobody has used',
    delegated_wallet: 'an account delegated (EIP-7702) to code that is not a known wallet implementation',
  };
  return [
    finding(
      'risky_approval',
      `${owner} has ${risky.length} outstanding unlimited or operator approval${risky.length === 1 ? '' : 's'} to ` +
        'spenders that are not contracts a dapp would use: ' +
        risky
          .slice(0, 5)
          .map(
            (a) =>
              `${a.asset.address ?? 'an asset'} → ${a.spender} (${what[a.spender_kind!]}, block ${a.granted_at_block})`,
          )
          .join('; ') +
        `${risky.length > 5 ? '; …' : ''}. Whoever holds that key can move these tokens at any time: revoke them.`,
      {
        method: 'eth_getLogs,eth_call,eth_getCode',
        block: Number(head),
        value: { from_block: read.fromBlock, approvals: risky },
      },
    ),
  ];
}
