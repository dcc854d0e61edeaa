import { AccountState, getTokenDecoder as getSplTokenDecoder } from '@solana-program/token';
import { getTokenDecoder as getToken2022Decoder } from '@solana-program/token-2022';
import { isSome } from '@solana/kit';
import type { SolanaAccount, SolanaRpc } from '../../chains/solana.js';
import { finding, type Finding } from '../findings.js';
import { incompleteFinding } from '../incomplete.js';
import type { AnalyzeOptions, ChainAnalysis, Counterparty } from '../types.js';
import { classifySolanaAccount, TOKEN_2022_PROGRAM, TOKEN_PROGRAM, type TokenProgramName } from './kind.js';
import { counterpartiesOf, readTransactions } from './wallet-counterparties.js';

export interface SolanaWalletOptions extends AnalyzeOptions {
  /** The clock of the account-age threshold (the only clock in a verdict). Default: now. */
  now?: Date;
  /** How many of the most recent transactions are read for counterparties (default 20; 0 = none). */
  recentTxLimit?: number;
  /** The `limit` of the one getSignaturesForAddress page read (1–1000, default 1000). */
  signaturesPageLimit?: number;
}

/** `new_account` below this age of the oldest transaction seen. */
export const NEW_ACCOUNT_DAYS = 7;
export const DEFAULT_RECENT_TX_LIMIT = 20;
export const DEFAULT_SIGNATURES_PAGE_LIMIT = 1000;

/**
 * History reads (getSignaturesForAddress, getTransaction) go in their own HTTP request, in parallel with
 * the state reads: providers serve them from slower archive storage and they fail on their own, which must
 * not take the token checks down with them (a batch fails as a whole).
 */
export const HISTORY_BATCH_GROUP = 'solana-history';

const DAY_MS = 86_400_000;
const LAMPORTS_PER_SOL = 1_000_000_000n;

/** One token account of the wallet, decoded by its program's codec. */
export interface WalletTokenAccount {
  token_account: string;
  program: TokenProgramName;
  mint: string;
  amount: string;
  delegate: string | null;
  delegated_amount: string;
  frozen: boolean;
}

/**
 * Chain facts and findings of a Solana wallet (docs/risk.md#solana-wallet + `account_not_found`), list-free:
 * the account keys of its recent transactions go to `listInputs.counterparties` for the risk service to
 * match against each caller's lists (`interacted_with_flagged`).
 *
 * Two sequential round trips: (1) the account, the token accounts under both token programs (one batch)
 * and, in parallel, the first page of signatures; (2) the most recent N transactions (one batch).
 */
export async function analyzeSolanaWallet(
  rpc: SolanaRpc,
  address: string,
  opts: SolanaWalletOptions,
): Promise<ChainAnalysis> {
  const now = opts.now ?? new Date();
  const recentTxLimit = opts.recentTxLimit ?? DEFAULT_RECENT_TX_LIMIT;
  const pageLimit = opts.signaturesPageLimit ?? DEFAULT_SIGNATURES_PAGE_LIMIT;
  const state = { signal: opts.signal };
  const history = { signal: opts.signal, batchGroup: HISTORY_BATCH_GROUP };

  const signatures = rpc.getSignaturesForAddress(address, { ...history, limit: pageLimit });
  const recent = signatures.then((page) =>
    readTransactions(rpc, page.slice(0, Math.max(0, recentTxLimit)), history),
  );
  const [accountRead, splRead, t22Read, signaturesRead, recentRead] = await Promise.allSettled([
    rpc.getMultipleAccounts([address], state),
    rpc.getTokenAccountsByOwner(address, TOKEN_PROGRAM, state),
    rpc.getTokenAccountsByOwner(address, TOKEN_2022_PROGRAM, state),
    signatures,
    recent,
  ]);

  const tokenReads = [
    { program: 'token' as const, programId: TOKEN_PROGRAM, read: splRead },
    { program: 'token-2022' as const, programId: TOKEN_2022_PROGRAM, read: t22Read },
  ];
  const page = signaturesRead.status === 'fulfilled' ? signaturesRead.value : null;
  const contextSlots = [accountRead, splRead, t22Read].flatMap((r) =>
    r.status === 'fulfilled' ? [r.value.slot] : [],
  );
  // The state reads share one batch; the account's context slot is the reference, any other the fallback.
  const slot =
    accountRead.status === 'fulfilled'
      ? accountRead.value.slot
      : contextSlots.length > 0
        ? Math.max(...contextSlots)
        : page?.[0]?.slot;

  const findings: Finding[] = [];
  const facts: Record<string, unknown> = {};
  const incomplete = (method: string, check: string, reason: unknown, value: Record<string, unknown> = {}) =>
    findings.push(incompleteFinding(method, check, reason, slot, value));

  // The account: existence, kind, balance.
  if (accountRead.status === 'fulfilled') {
    const account = accountRead.value.accounts[0] ?? null;
    Object.assign(facts, accountFacts(account));
    if (!account && (page === null || page.length === 0)) {
      findings.push(
        finding(
          'account_not_found',
          page === null
            ? `No account exists at ${address} (its transaction history could not be read).`
            : `No account exists at ${address} and it appears in no transaction: it has never been used.`,
          {
            method: 'getMultipleAccounts',
            slot: accountRead.value.slot,
            value: { address, account: null, signatures_seen: page?.length ?? null },
          },
        ),
      );
    }
  } else {
    Object.assign(facts, accountFacts(undefined));
    incomplete('getMultipleAccounts', 'the account (existence, kind, balance)', accountRead.reason);
  }

  // Token accounts under both token programs: delegates and frozen accounts.
  const tokenAccounts: WalletTokenAccount[] = [];
  const undecodable: string[] = [];
  const tokenSlots: number[] = [];
  for (const { program, programId, read } of tokenReads) {
    if (read.status === 'rejected') {
      incomplete('getTokenAccountsByOwner', `the ${program} accounts (delegates, frozen)`, read.reason, {
        program_id: programId,
      });
      continue;
    }
    tokenSlots.push(read.value.slot);
    for (const { pubkey, account } of read.value.accounts) {
      const decoded = decodeTokenAccount(pubkey, program, account);
      if (decoded) tokenAccounts.push(decoded);
      else undecodable.push(pubkey);
    }
  }
  const tokensKnown = tokenReads.every((t) => t.read.status === 'fulfilled');
  const tokenSlot = tokenSlots.length > 0 ? Math.min(...tokenSlots) : slot;
  const delegated = tokenAccounts.filter((t) => t.delegate !== null);
  const frozen = tokenAccounts.filter((t) => t.frozen);
  facts.token_accounts = tokensKnown ? tokenAccounts.length : null;
  facts.delegated_token_accounts = delegated;
  facts.frozen_token_accounts = frozen;
  if (undecodable.length > 0) facts.undecodable_token_accounts = undecodable;

  // A delegate with an allowance can move that many tokens without the owner (a zero allowance moves none).
  const live = delegated.filter((t) => BigInt(t.delegated_amount) > 0n);
  if (live.length > 0) {
    const list = live
      .map((t) => `${t.token_account} (mint ${t.mint}): ${t.delegate} may move ${t.delegated_amount}`)
      .join('; ');
    findings.push(
      finding(
        'token_delegate_set',
        `${plural(live.length, 'token account has', 'token accounts have')} a delegate that can move tokens without the owner's signature (raw amounts): ${list}.`,
        { method: 'getTokenAccountsByOwner', slot: tokenSlot, value: live },
      ),
    );
  }
  if (frozen.length > 0) {
    findings.push(
      finding(
        'frozen_token_accounts',
        `${plural(frozen.length, 'token account is', 'token accounts are')} frozen by the mint's freeze authority: ${frozen.map((t) => `${t.token_account} (mint ${t.mint})`).join('; ')}.`,
        { method: 'getTokenAccountsByOwner', slot: tokenSlot, value: frozen },
      ),
    );
  }

  // History: activity, age (new_account).
  facts.history_page_limit = pageLimit;
  if (page) {
    const full = page.length >= pageLimit;
    const oldest = page.at(-1);
    const newest = page[0];
    facts.activity_count = page.length;
    facts.activity_count_capped = full;
    facts.last_seen_at = newest ? rfc3339(newest.blockTime) : null;
    facts.oldest_seen_at = oldest ? rfc3339(oldest.blockTime) : null;
    // A full page may stop short of the first transaction: then the first is older than the page reaches.
    facts.first_seen_at = full ? null : (facts.oldest_seen_at ?? null);
    if (full) {
      facts.first_seen_note = `the first page of ${pageLimit} signatures is full: the first transaction is older than the oldest on the page, so the account is not new`;
    }
    if (!full && oldest && oldest.blockTime !== null) {
      const ageMs = now.getTime() - oldest.blockTime * 1000;
      if (ageMs < NEW_ACCOUNT_DAYS * DAY_MS) {
        findings.push(
          finding(
            'new_account',
            `The first transaction of this account is ${formatAge(ageMs)} old (${rfc3339(oldest.blockTime)}), younger than ${NEW_ACCOUNT_DAYS} days: the first page of getSignaturesForAddress (limit ${pageLimit}) held ${page.length}, so it reaches the account's first transaction.`,
            {
              method: 'getSignaturesForAddress',
              slot: slot ?? oldest.slot,
              value: {
                page_limit: pageLimit,
                signatures_in_page: page.length,
                page_full: false,
                oldest_signature: oldest.signature,
                oldest_slot: oldest.slot,
                oldest_block_time: rfc3339(oldest.blockTime),
                threshold_days: NEW_ACCOUNT_DAYS,
              },
            },
          ),
        );
      }
    }
  } else {
    Object.assign(facts, {
      activity_count: null,
      activity_count_capped: null,
      first_seen_at: null,
      last_seen_at: null,
      recent_transactions_checked: null,
    });
    incomplete(
      'getSignaturesForAddress',
      'the transaction history (account age, recent counterparties)',
      signaturesRead.status === 'rejected' ? signaturesRead.reason : undefined,
      { limit: pageLimit },
    );
  }

  // Recent transactions → counterparties (list-dependent: matched by the risk service).
  let counterparties: Counterparty[] = [];
  if (page && recentRead.status === 'fulfilled') {
    const { transactions, unavailable, failed } = recentRead.value;
    counterparties = counterpartiesOf(transactions, address);
    facts.recent_transactions_checked = transactions.length;
    if (failed.length > 0) {
      incomplete(
        'getTransaction',
        `${plural(failed.length, 'recent transaction', 'recent transactions')} (counterparties)`,
        failed[0]?.reason,
        { signatures: failed.map((f) => f.signature) },
      );
    }
    if (unavailable.length > 0) {
      incomplete(
        'getTransaction',
        `${plural(unavailable.length, 'recent transaction', 'recent transactions')} the node no longer serves (counterparties)`,
        undefined,
        { signatures: unavailable, answer: null },
      );
    }
  } else if (page && recentRead.status === 'rejected') {
    facts.recent_transactions_checked = null;
    incomplete('getTransaction', 'the recent transactions (counterparties)', recentRead.reason);
  }

  return {
    kind: accountRead.status === 'fulfilled' ? (facts.kind as ChainAnalysis['kind']) : 'wallet',
    findings,
    facts,
    complete: !findings.some((f) => f.code === 'check_incomplete'),
    dataAsOf: slot === undefined ? {} : { slot },
    listInputs: { counterparties },
  };
}

/** Existence, kind and balance facts; `undefined` = the account could not be read (all unknown). */
function accountFacts(account: SolanaAccount | null | undefined): Record<string, unknown> {
  if (account === undefined) {
    return {
      exists: null,
      kind: null,
      owner_program: null,
      executable: null,
      balance: null,
      balance_raw: null,
    };
  }
  const { kind, ownerProgram } = classifySolanaAccount(account);
  const lamports = account?.lamports ?? 0n;
  return {
    exists: account !== null,
    kind,
    owner_program: ownerProgram,
    executable: account?.executable ?? false,
    balance: formatSol(lamports),
    balance_raw: lamports.toString(),
  };
}

function decodeTokenAccount(
  pubkey: string,
  program: TokenProgramName,
  account: SolanaAccount,
): WalletTokenAccount | null {
  try {
    const token =
      program === 'token'
        ? getSplTokenDecoder().decode(account.data)
        : getToken2022Decoder().decode(account.data);
    return {
      token_account: pubkey,
      program,
      mint: token.mint,
      amount: token.amount.toString(),
      delegate: isSome(token.delegate) ? token.delegate.value : null,
      delegated_amount: token.delegatedAmount.toString(),
      // Both clients number AccountState alike: Uninitialized 0, Initialized 1, Frozen 2.
      frozen: (token.state as number) === (AccountState.Frozen as number),
    };
  } catch {
    return null;
  }
}

/** Lamports as a SOL decimal string, exact (`1.5`, `0`, `0.000000001`). */
export function formatSol(lamports: bigint): string {
  const whole = lamports / LAMPORTS_PER_SOL;
  const fraction = (lamports % LAMPORTS_PER_SOL).toString().padStart(9, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole.toString();
}

const rfc3339 = (blockTime: number | null): string | null =>
  blockTime === null ? null : new Date(blockTime * 1000).toISOString();

function formatAge(ms: number): string {
  const hours = Math.max(0, Math.floor(ms / 3_600_000));
  return hours < 48 ? plural(hours, 'hour', 'hours') : plural(Math.floor(hours / 24), 'day', 'days');
}

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;
