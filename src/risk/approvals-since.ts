import { parseAddress } from '../chains/addresses.js';
import type { ChainProviders } from '../chains/providers.js';
import type { ListsCache } from '../lists/cache.js';
import { judgeWalletApprovals, type ApprovalView } from './evm/wallet-approvals.js';
import type { Severity } from './findings.js';
import type { KnownWalletImplementations } from './known/evm.js';

/** Blocks the cursor stays behind the head. */
export const REORG_MARGIN = 12n;

export interface ApprovalsSinceDeps {
  providers: ChainProviders;
  lists: ListsCache;
  walletImplementations: KnownWalletImplementations;
}

/** New outstanding approvals, each with the severity of its `approval_granted` alert, and the next cursor. */
export interface ApprovalsSince {
  toBlock: bigint;
  complete: boolean;
  approvals: (ApprovalView & { severity: Severity; flagged: boolean })[];
}

/**
 * The outstanding approvals of an EVM wallet granted after `afterBlock` (the watchlist scanner's
 * per-entry cursor), judged with `accountId`'s lists: each with the severity of the `approval_granted`
 * alert it makes — critical to a sanctioned or deny-listed spender, high when risky (unlimited or operator
 * to an EOA, an unused address or an unknown EIP-7702 account), medium for another unlimited or operator
 * approval, low otherwise (a limited one, or to a well-known spender). Without a cursor (a first scan)
 * only the head is read: history is not alerted on. `toBlock` is the next cursor: the head, or just
 * before the first part of the window the provider did not answer (read again next time).
 */
export async function approvalsSince(
  deps: ApprovalsSinceDeps,
  accountId: string,
  ref: { address: string; chain?: string | undefined; network?: string | undefined; field?: string },
  afterBlock: bigint | null,
): Promise<ApprovalsSince> {
  const network = deps.providers.resolve(ref.chain, ref.network);
  const rpc = deps.providers.evm(network);
  const owner = parseAddress(network, ref.address, ref.field) as `0x${string}`;
  const head = await rpc.blockNumber();
  if (afterBlock === null || afterBlock >= head) return { toBlock: head, complete: true, approvals: [] };
  const [judged, lists] = await Promise.all([
    judgeWalletApprovals(rpc, owner, {
      network,
      head,
      fromBlock: afterBlock + 1n,
      walletImplementations: deps.walletImplementations,
      // Oldest first: what is left unread is the newest part, so the cursor always moves.
      order: 'oldest',
    }),
    deps.lists.view(accountId),
  ]);
  // The cursor stays REORG_MARGIN blocks behind the head (a reorg, or a backend behind the one that
  // answered the head, may have shown those blocks empty): they are read again next time, and the alerts'
  // fingerprints keep a grant from alerting twice. Before a part left unread, it stops there.
  const gapStart = Math.min(Number(head), ...judged.view.gaps.map((g) => g.from_block));
  const settled = head - REORG_MARGIN > afterBlock ? head - REORG_MARGIN : afterBlock;
  const toBlock = BigInt(Math.min(Number(settled), Math.max(Number(afterBlock), gapStart - 1)));
  return {
    toBlock,
    complete: judged.view.complete,
    approvals: judged.view.approvals.map((a) => {
      const f = lists.flagged(network.chain, a.spender);
      const flagged = Boolean(f.sanctioned || f.denied);
      const wide = a.amount === 'unlimited' || a.all;
      // An approval only its log vouches for (the token did not confirm it) may be spam: low.
      const severity: Severity = flagged
        ? 'critical'
        : a.risky
          ? 'high'
          : wide && a.confirmed && a.spender_kind !== 'known'
            ? 'medium'
            : 'low';
      return { ...a, severity, flagged };
    }),
  };
}
