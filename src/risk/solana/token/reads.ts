import type { Address } from '@solana/kit';
import { RpcError } from '../../../chains/jsonrpc.js';
import { networkLabel } from '../../../chains/registry.js';
import type { SolanaAccount, SolanaRpc, TokenAccountBalance } from '../../../chains/solana.js';
import { AppError } from '../../../platform/errors.js';
import { settle } from '../../../platform/settle.js';
import type { OwnerLabel } from '../../known/solana.js';
import { tokenOwner } from './decode.js';
import type { LargestAccount } from './holders.js';
import type { IncompleteCheck, MintContext, SolanaTokenOptions } from './types.js';

/*
 * The provider round trips of a token scan, at most three in sequence on a cold scan:
 *   1. one JSON-RPC batch: getMultipleAccounts([mint, Metaplex metadata PDA]) + getTokenLargestAccounts(mint)
 *      (issued in the same tick, so the client sends them in one HTTP request);
 *   2. getMultipleAccounts of the largest token accounts, for their owners;
 *   3. getMultipleAccounts of those owners, to tell pool accounts (owned by a known AMM program) apart.
 * The mint read failing fails the scan (provider_unavailable); the holder reads fail on their own.
 */

interface LargestTokenAccounts {
  slot: number;
  accounts: TokenAccountBalance[];
}

export interface MintRead {
  slot: number;
  mintAccount: SolanaAccount | null;
  metadataAccount: SolanaAccount | null;
  /** getTokenLargestAccounts from the same batch, settled: the holder check may fail on its own. */
  largest: Promise<PromiseSettledResult<LargestTokenAccounts>>;
}

/** Round trip 1. Throws AppError('provider_unavailable') when the mint cannot be read. */
export async function readMint(
  rpc: SolanaRpc,
  mint: Address,
  metadataPda: Address,
  opts: SolanaTokenOptions,
): Promise<MintRead> {
  const read = opts.signal ? { signal: opts.signal } : {};
  // Both calls are issued in this tick, so they travel in one batch request.
  const accountsCall = rpc.getMultipleAccounts([mint, metadataPda], read);
  const largest = settle(rpc.getTokenLargestAccounts(mint, read));
  let accounts: Awaited<typeof accountsCall>;
  try {
    accounts = await accountsCall;
  } catch (err) {
    const largestRead = await largest;
    // The whole batch failed (the provider may choke on getTokenLargestAccounts, a heavy index scan):
    // read the mint alone once, so the holder check fails on its own rather than the whole scan.
    if (largestRead.status === 'fulfilled' || largestRead.reason instanceof RpcError || opts.signal?.aborted)
      throw providerError(err, rpc, 'getMultipleAccounts');
    accounts = await rpc
      .getMultipleAccounts([mint, metadataPda], read)
      .catch((retryErr: unknown) => Promise.reject(providerError(retryErr, rpc, 'getMultipleAccounts')));
  }
  const [mintAccount, metadataAccount] = accounts.accounts;
  return {
    slot: accounts.slot,
    mintAccount: mintAccount ?? null,
    metadataAccount: metadataAccount ?? null,
    largest,
  };
}

export interface HoldersRead {
  /** The largest token accounts with their owners; null when they could not be read. */
  largest: { slot: number; accounts: LargestAccount[] } | null;
  incomplete: IncompleteCheck[];
  /** Context slots of the reads used. */
  slots: number[];
}

/** Round trips 2 and 3: the owners of the largest token accounts, and the programs owning those owners. */
export async function readLargestHolders(
  rpc: SolanaRpc,
  ctx: MintContext,
  largest: PromiseSettledResult<LargestTokenAccounts>,
  opts: SolanaTokenOptions,
): Promise<HoldersRead> {
  const check = 'holder_concentration';
  const fail = (method: string, reason: string, slots: number[] = []): HoldersRead => ({
    largest: null,
    incomplete: [{ check, method, reason }],
    slots,
  });
  if (largest.status === 'rejected') return fail('getTokenLargestAccounts', describe(largest.reason));
  const { slot: largestSlot, accounts: top } = largest.value;
  const read = opts.signal ? { signal: opts.signal } : {};

  // Round trip 2: who owns the largest token accounts.
  let tokenAccounts: { slot: number; accounts: (SolanaAccount | null)[] };
  try {
    tokenAccounts = await rpc.getMultipleAccounts(
      top.map((t) => t.address),
      read,
    );
  } catch (err) {
    return fail('getMultipleAccounts', `the largest token accounts could not be read (${describe(err)})`, [
      largestSlot,
    ]);
  }
  const owners = top.map((_, i) => tokenOwner(ctx, tokenAccounts.accounts[i] ?? null));
  const labels = new Map<string, OwnerLabel>();
  for (const owner of owners) {
    const known = owner ? opts.known.owner(opts.network, owner) : undefined;
    if (owner && known) labels.set(owner, { label: known.label, kind: known.kind, matchedBy: 'address' });
  }

  // Round trip 3: the owners' own accounts, to recognise pools held through program-owned accounts.
  const unresolved = [...new Set(owners.filter((o): o is string => o !== null && !labels.has(o)))];
  const ownerPrograms = new Map<string, string | null>();
  const incomplete: IncompleteCheck[] = [];
  const slots = [largestSlot];
  if (tokenAccounts.slot > 0) slots.push(tokenAccounts.slot);
  if (unresolved.length > 0) {
    try {
      const ownerAccounts = await rpc.getMultipleAccounts(unresolved, read);
      slots.push(ownerAccounts.slot);
      unresolved.forEach((owner, i) => {
        const account = ownerAccounts.accounts[i] ?? null;
        ownerPrograms.set(owner, account?.owner ?? null);
        const program =
          account && !account.executable ? opts.known.ownerProgram(opts.network, account.owner) : undefined;
        if (program)
          labels.set(owner, { label: program.label, kind: program.kind, matchedBy: 'owner_program' });
      });
    } catch (err) {
      incomplete.push({
        check,
        method: 'getMultipleAccounts',
        reason: `the owners of the largest token accounts could not be read (${describe(err)}); pools held through program-owned accounts may be counted as holders`,
      });
    }
  }

  const accounts = top.map((t, i): LargestAccount => {
    const owner = owners[i] ?? null;
    return {
      tokenAccount: t.address,
      amount: t.amount,
      owner,
      ownerProgram: owner ? (ownerPrograms.get(owner) ?? null) : null,
      label: owner ? (labels.get(owner) ?? null) : null,
    };
  });
  return { largest: { slot: largestSlot, accounts }, incomplete, slots };
}

function describe(err: unknown): string {
  if (err instanceof RpcError)
    return `the node answered ${err.method} with error ${err.code}: ${err.rpcMessage}`;
  return err instanceof Error ? err.message : String(err);
}

/** Any failure to read the mint itself is the provider's: 503 provider_unavailable, retryable. */
function providerError(err: unknown, rpc: SolanaRpc, method: string): Error {
  if (err instanceof AppError) return err;
  if (err instanceof RpcError)
    return new AppError(
      'provider_unavailable',
      `The ${networkLabel(rpc.network)} node provider answered ${method} with error ${err.code}: ${err.rpcMessage}.`,
    );
  return err instanceof Error ? err : new Error(String(err));
}
