import { finding, type Finding, type Severity } from '../../findings.js';
import { EXCLUDED_OWNER_KINDS, type OwnerLabel } from '../../known/solana.js';
import type { HolderView, HoldersView } from './types.js';

/*
 * Holder concentration (`holder_concentration`, docs/risk.md#solana-token), pure: from the largest token accounts and what is
 * known of their owners to the `holders` view and the finding. Accounts are grouped by owner; known pools,
 * lockers and burn addresses are left out of the shares; shares are fractions of the whole supply.
 */

/** One of the largest token accounts of a mint, with what the reads learnt of its owner. */
export interface LargestAccount {
  tokenAccount: string;
  amount: bigint;
  /** The token account's owner; null when the account could not be read or decoded (it stands alone). */
  owner: string | null;
  /** The program owning the owner's own account; null when unknown or no account. */
  ownerProgram: string | null;
  /** A known owner (by address, or by the program owning its account). */
  label: OwnerLabel | null;
}

export interface HolderConcentrationInput {
  /** The mint's total supply (raw units). */
  supply: bigint;
  /** The largest token accounts, as getTokenLargestAccounts ranks them. */
  accounts: readonly LargestAccount[];
  /** The context slot of getTokenLargestAccounts: the finding's evidence. */
  slot: number;
}

export interface HolderConcentration {
  view: HoldersView;
  /** `holder_concentration` when the top 10 hold over 50% (medium), over 80% or one owner over 40% (high). */
  finding: Finding | undefined;
}

/** How many owners `top10_share` adds up. */
export const TOP_OWNERS = 10;
const SHARE_SCALE = 1_000_000n;
/** Grouping key prefix of a token account whose owner is unknown (it stands alone). */
const UNREAD = 'unread:';

export function holderConcentration({
  supply,
  accounts,
  slot,
}: HolderConcentrationInput): HolderConcentration {
  const share = (amount: bigint): number =>
    supply === 0n ? 0 : Number((amount * SHARE_SCALE) / supply) / Number(SHARE_SCALE);
  const largest: HolderView[] = accounts.map((a) => ({
    owner: a.owner,
    token_account: a.tokenAccount,
    amount_raw: a.amount.toString(),
    share: share(a.amount),
    label: a.label?.label ?? null,
    label_kind: a.label?.kind ?? null,
    excluded: isExcluded(a),
    owner_program: a.owner ? a.ownerProgram : null,
  }));

  // Accounts grouped by owner (an unreadable account stands alone), excluded owners left out.
  const byOwner = new Map<string, { amount: bigint; accounts: number }>();
  let excluded = 0n;
  for (const a of accounts) {
    if (isExcluded(a)) {
      excluded += a.amount;
      continue;
    }
    const key = a.owner ?? `${UNREAD}${a.tokenAccount}`;
    const entry = byOwner.get(key) ?? { amount: 0n, accounts: 0 };
    entry.amount += a.amount;
    entry.accounts += 1;
    byOwner.set(key, entry);
  }
  const ranked = [...byOwner.entries()].sort(([ka, a], [kb, b]) =>
    a.amount === b.amount ? (ka < kb ? -1 : 1) : a.amount > b.amount ? -1 : 1,
  );
  const top10 = ranked.slice(0, TOP_OWNERS).reduce((sum, [, o]) => sum + o.amount, 0n);
  const [leaderKey, leader] = ranked[0] ?? [];
  const view: HoldersView = {
    top10_share: supply === 0n ? null : share(top10),
    top_owner:
      leaderKey !== undefined && leader
        ? {
            owner: leaderKey.startsWith(UNREAD) ? null : leaderKey,
            share: share(leader.amount),
            accounts: leader.accounts,
          }
        : null,
    excluded_share: supply === 0n ? null : share(excluded),
    largest,
  };
  if (supply === 0n || ranked.length === 0) return { view, finding: undefined };

  const over = (amount: bigint, pct: bigint) => amount * 100n > supply * pct;
  const leaderAmount = leader?.amount ?? 0n;
  const severity: Severity | undefined =
    over(top10, 80n) || over(leaderAmount, 40n) ? 'high' : over(top10, 50n) ? 'medium' : undefined;
  if (!severity) return { view, finding: undefined };

  const pct = (x: number | null | undefined) => `${((x ?? 0) * 100).toFixed(1)}%`;
  const parts = [
    `The ${Math.min(TOP_OWNERS, ranked.length)} largest holders hold ${pct(view.top10_share)} of the supply`,
  ];
  if (over(leaderAmount, 40n) && view.top_owner)
    parts.push(
      `one owner, ${view.top_owner.owner ?? 'unknown'}, holds ${pct(view.top_owner.share)}${view.top_owner.accounts > 1 ? ` across ${view.top_owner.accounts} token accounts` : ''}`,
    );
  const excludedNote =
    excluded > 0n ? ` (known pools, lockers and burn addresses, ${pct(view.excluded_share)}, left out)` : '';
  const concentration = finding(
    'holder_concentration',
    `${parts.join('; ')}${excludedNote}; from the ${accounts.length} largest token accounts.`,
    {
      method: 'getTokenLargestAccounts',
      slot,
      value: {
        supply_raw: supply.toString(),
        top10_share: view.top10_share,
        top_owner: view.top_owner,
        excluded_share: view.excluded_share,
        accounts_considered: accounts.length,
        owners_read_with: 'getMultipleAccounts',
      },
    },
    { severity },
  );
  return { view, finding: concentration };
}

/** Pools, lockers and burn addresses hold tokens that are no holder's: left out of the shares. */
const isExcluded = (a: LargestAccount): boolean => (a.label ? EXCLUDED_OWNER_KINDS.has(a.label.kind) : false);
