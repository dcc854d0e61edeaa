import type { EntityManager } from '@mikro-orm/postgresql';
import { lockAccount } from '../accounts/lock.js';
import type { Actor } from '../audit/actor.js';
import { clip, networkLabel, type NetworkDef } from '../chains/registry.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { AppError, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { AUDIT_SAMPLE, auditEntriesAdded, auditEntriesRemoved, auditEntryRemoved } from './audit.js';
import { requireWatchlist } from './lists.js';
import type { WatchlistRepository } from './repository.js';
import {
  MAX_ENTRIES_PER_CALL,
  type EntriesQuery,
  type EntryErrorCode,
  type NewEntry,
  type RemoveTarget,
} from './schemas.js';
import { entryError, EntryTargets, type Candidate, type NetworkResolver } from './targets.js';
import { entryOf, KnownNetworks, type EntryView } from './views.js';

/*
 * The entries of an account's watchlists, in bulk: each entry of a call is answered on its own (valid ones
 * kept), written with one statement per batch of rows, not one per entry (repository/entries.ts). Removing an
 * entry removes its snapshots and alerts. Every statement names the caller's account, so another account's id
 * is simply not found. Each call is audited (audit.ts) in its transaction: one record, however many entries.
 */

export interface EntriesOptions {
  /** `watchlists.max_entries_per_account`: entries on all the account's watchlists together. */
  maxEntriesPerAccount: number;
}

export interface EntryResult {
  index: number;
  target: string;
  status: 'created' | 'exists' | 'error';
  id?: string;
  code?: EntryErrorCode;
  message?: string;
}

export interface AddEntriesResult {
  created: number;
  exists: number;
  failed: number;
  results: EntryResult[];
}

export interface RemoveResult {
  index: number;
  target: string;
  status: 'removed' | 'not_found' | 'error';
  ids?: string[];
  code?: EntryErrorCode;
  message?: string;
}

export interface RemoveEntriesResult {
  removed: number;
  notFound: number;
  failed: number;
  results: RemoveResult[];
}

/** An entry's (network, target), the list's unique key, as one map key. */
const pairKey = (network: string, target: string) => `${network} ${target}`;

/** Rows per INSERT / DELETE statement (one JSON parameter each). */
const BATCH = 1000;

const tooMany = (n: number) =>
  new AppError(
    'too_many_entries',
    `${n} entries in one call: at most ${MAX_ENTRIES_PER_CALL.toLocaleString('en-US')}. Nothing was stored.`,
  );

function addedCounts(results: readonly EntryResult[]) {
  let created = 0;
  let exists = 0;
  for (const r of results) {
    if (r.status === 'created') created++;
    else if (r.status === 'exists') exists++;
  }
  return { created, exists, failed: results.length - created - exists };
}

function removedCounts(results: readonly RemoveResult[]) {
  let removed = 0;
  let notFound = 0;
  for (const r of results) {
    if (r.status === 'removed') removed++;
    else if (r.status === 'not_found') notFound++;
  }
  return { removed, notFound, failed: results.length - removed - notFound };
}

/** Entries of an account's watchlists: bulk add and remove, list. */
export class WatchlistEntriesService {
  private readonly networks: KnownNetworks;
  private readonly targets: EntryTargets;

  constructor(
    private readonly repo: WatchlistRepository,
    chains: NetworkResolver,
    private readonly options: EntriesOptions,
  ) {
    this.networks = new KnownNetworks(chains.networks);
    this.targets = new EntryTargets(chains);
  }

  /**
   * Adds up to MAX_ENTRIES_PER_CALL entries. Each is resolved as preflight resolves a target (neither chain
   * nor network: the address format decides; only configured networks) and answered on its own: `created`,
   * `exists` (already on the list), or an error with its code. The valid ones are stored, in one
   * transaction, a statement per BATCH rows. Entries past the account's ceiling are `limit_exceeded`; the
   * ones before them are kept. Concurrent adds of one account are counted one after the other (the
   * account row is locked), so they cannot pass the ceiling together. The call is audited by one
   * `watchlist_entries.added` record (its counts and first entries, with `auditContext`) when it created any.
   */
  async addEntries(
    accountId: string,
    watchlistId: string,
    entries: readonly NewEntry[],
    actor: Actor,
    auditContext?: Record<string, unknown>,
  ): Promise<AddEntriesResult> {
    if (entries.length > MAX_ENTRIES_PER_CALL) throw tooMany(entries.length);
    const results: EntryResult[] = new Array<EntryResult>(entries.length);
    const candidates: Candidate[] = [];
    const firstIndex = new Map<string, number>();
    entries.forEach((input, index) => {
      let candidate: Candidate;
      try {
        candidate = this.targets.entry(input, index);
      } catch (err) {
        results[index] = entryError(index, input.target.trim(), err);
        return;
      }
      const key = pairKey(candidate.network.caip2, candidate.target);
      const first = firstIndex.get(key);
      if (first !== undefined) {
        results[index] = {
          index,
          target: candidate.target,
          status: 'error',
          code: 'duplicate_in_request',
          message: `${candidate.target} on ${networkLabel(candidate.network)} is already entry ${first} of this request.`,
        };
        return;
      }
      firstIndex.set(key, index);
      candidates.push(candidate);
    });

    await this.repo.transactional(async (em) => {
      await this.insertEntries(em, accountId, watchlistId, candidates, results);
      const { created, exists, failed } = addedCounts(results);
      const sample = candidates.flatMap((c) => {
        const r = results[c.index]!;
        return r.status === 'created' ? [{ id: r.id!, target: c.target, network: c.network.caip2 }] : [];
      });
      await auditEntriesAdded(
        em,
        actor,
        accountId,
        watchlistId,
        { entries: entries.length, created, exists, failed, sample: sample.slice(0, AUDIT_SAMPLE) },
        auditContext,
      );
    });
    return { ...addedCounts(results), results };
  }

  /**
   * The account's lock, the list held FOR SHARE, and the candidates not on the list yet stored within the
   * account's ceiling, in `em`'s transaction: each candidate's result set (created, exists, limit_exceeded).
   * When every candidate fits under the ceiling they are inserted at once (`on conflict do nothing`: the
   * unique index answers for each row), and only those not inserted are looked up, for their ids: a bulk
   * add of new entries reads nothing of the list, whatever its size or the planner's statistics. Near the
   * ceiling the entries already there are found first, so that only new ones take room.
   */
  private async insertEntries(
    em: EntityManager,
    accountId: string,
    watchlistId: string,
    candidates: readonly Candidate[],
    results: EntryResult[],
  ): Promise<void> {
    const account = await lockAccount(em, accountId);
    await requireWatchlist(this.repo.lists, accountId, watchlistId, em, 'for share');
    if (candidates.length === 0) return;
    const max = this.options.maxEntriesPerAccount;
    const room = Math.max(0, max - (await this.repo.entries.countOfAccount(em, accountId)));
    if (candidates.length <= room) {
      await this.store(em, accountId, watchlistId, candidates, results);
      return;
    }
    const found = await this.existingEntries(em, watchlistId, candidates);
    const fresh: Candidate[] = [];
    for (const c of candidates) {
      const id = found.get(pairKey(c.network.caip2, c.target));
      if (id) results[c.index] = { index: c.index, target: c.target, status: 'exists', id };
      else fresh.push(c);
    }
    for (const c of fresh.slice(room))
      results[c.index] = {
        index: c.index,
        target: c.target,
        status: 'error',
        code: 'limit_exceeded',
        message:
          `Account ${account} would hold more than ${max} watchlist entries ` +
          '(watchlists.max_entries_per_account / RISKWATCH_MAX_WATCHLIST_ENTRIES_PER_ACCOUNT). ' +
          'Remove entries to add others.',
      };
    await this.store(em, accountId, watchlistId, fresh.slice(0, room), results);
  }

  /**
   * Inserts `candidates` (BATCH rows per statement) and sets each one's result: `created`, or `exists`
   * with the id of the entry already there (on the list before, or stored meanwhile by a writer that does
   * not take the account lock).
   */
  private async store(
    em: EntityManager,
    accountId: string,
    watchlistId: string,
    candidates: readonly Candidate[],
    results: EntryResult[],
  ): Promise<void> {
    const missed: Candidate[] = [];
    for (let i = 0; i < candidates.length; i += BATCH) {
      const batch = candidates.slice(i, i + BATCH);
      const rows = batch.map((c) => ({
        id: newId('wle'),
        chain: c.network.chain,
        network: c.network.caip2,
        target: c.target,
        label: c.label,
        target_type: c.targetType,
      }));
      const inserted = await this.repo.entries.insert(em, accountId, watchlistId, rows);
      const ids = new Map(inserted.map((r) => [pairKey(r.network, r.target), r.id]));
      for (const c of batch) {
        const id = ids.get(pairKey(c.network.caip2, c.target));
        if (id) results[c.index] = { index: c.index, target: c.target, status: 'created', id };
        else missed.push(c);
      }
    }
    if (missed.length === 0) return;
    const there = await this.existingEntries(em, watchlistId, missed);
    for (const c of missed)
      results[c.index] = {
        index: c.index,
        target: c.target,
        status: 'exists',
        id: there.get(pairKey(c.network.caip2, c.target)) ?? '',
      };
  }

  /** One page of the list's entries in id order (the order they were added), optionally filtered. */
  async listEntries(accountId: string, watchlistId: string, q: EntriesQuery): Promise<Page<EntryView>> {
    await requireWatchlist(this.repo.lists, accountId, watchlistId);
    const rows = await this.repo.entries.page(accountId, watchlistId, q);
    return keysetPage(
      rows.map((r) => entryOf(r, this.networks)),
      q.limit,
      (e) => ({ at: e.createdAt.toISOString(), id: e.id }),
    );
  }

  /** Removes one entry with its snapshots and alerts. */
  async removeEntry(
    accountId: string,
    watchlistId: string,
    entryId: string,
    actor: Actor,
  ): Promise<EntryView> {
    return this.repo.transactional(async (em) => {
      // Writers of an account's entries take its lock first (see `removeEntries`).
      await lockAccount(em, accountId);
      await requireWatchlist(this.repo.lists, accountId, watchlistId, em, 'for share');
      const row = await this.repo.entries.deleteOne(em, accountId, watchlistId, entryId);
      if (!row) throw notFound(`Entry "${clip(entryId)}" of watchlist ${watchlistId}`);
      await auditEntryRemoved(em, actor, accountId, row);
      return entryOf(row, this.networks);
    });
  }

  /**
   * Removes entries by target: with chain or network, the target on that network (any network riskwatch
   * knows, configured or not: an entry outlives its provider); with neither, the target on every network
   * of the list. Their snapshots and alerts go with them. One transaction, audited by one
   * `watchlist_entries.removed` record when it removed any.
   */
  async removeEntries(
    accountId: string,
    watchlistId: string,
    targets: readonly RemoveTarget[],
    actor: Actor,
  ): Promise<RemoveEntriesResult> {
    if (targets.length > MAX_ENTRIES_PER_CALL) throw tooMany(targets.length);
    const results: RemoveResult[] = new Array<RemoveResult>(targets.length);
    /** (target, network) pairs to look up: a target of every network is one pair per network of its family. */
    const wanted: { i: number; network: string; target: string }[] = [];
    const firstIndex = new Map<string, number>();
    targets.forEach((input, index) => {
      let resolved: { network: NetworkDef | null; target: string };
      try {
        resolved = this.targets.removal(input);
      } catch (err) {
        results[index] = entryError(index, input.target.trim(), err);
        return;
      }
      const key = `${resolved.network?.caip2 ?? '*'} ${resolved.target}`;
      const first = firstIndex.get(key);
      if (first !== undefined) {
        results[index] = {
          index,
          target: resolved.target,
          status: 'error',
          code: 'duplicate_in_request',
          message: `${resolved.target} is already target ${first} of this request.`,
        };
        return;
      }
      firstIndex.set(key, index);
      results[index] = { index, target: resolved.target, status: 'not_found' };
      const { network, target } = resolved;
      if (network) wanted.push({ i: index, network: network.caip2, target });
      else
        for (const caip2 of this.targets.caip2sOf(target)) wanted.push({ i: index, network: caip2, target });
    });

    await this.repo.transactional(async (em) => {
      // The account's lock, as a bulk add takes it: an add of several batches holds the list's counter
      // row (watchlist_entry_counts) from its first insert, so a removal running beside it, whose trigger
      // waits on that row, must not hold a row the add's next batch inserts again (a deadlock).
      await lockAccount(em, accountId);
      await requireWatchlist(this.repo.lists, accountId, watchlistId, em, 'for share');
      for (let i = 0; i < wanted.length; i += BATCH)
        for (const { id, i: index } of await this.repo.entries.deleteAt(
          em,
          accountId,
          watchlistId,
          wanted.slice(i, i + BATCH),
        )) {
          const result = results[index]!;
          result.status = 'removed';
          (result.ids ??= []).push(id);
        }
      const { removed, notFound, failed } = removedCounts(results);
      const sample = results.flatMap((r) =>
        r.status === 'removed' ? [{ target: r.target, ids: r.ids! }] : [],
      );
      await auditEntriesRemoved(em, actor, accountId, watchlistId, {
        targets: targets.length,
        removed,
        not_found: notFound,
        failed,
        sample: sample.slice(0, AUDIT_SAMPLE),
      });
    });
    return { ...removedCounts(results), results };
  }

  /** The ids of the candidates already on the list, by `network target` (a look-up per BATCH targets). */
  private async existingEntries(
    em: EntityManager,
    watchlistId: string,
    candidates: readonly Candidate[],
  ): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const wanted = new Set(candidates.map((c) => pairKey(c.network.caip2, c.target)));
    for (let i = 0; i < candidates.length; i += BATCH) {
      const batch = candidates.slice(i, i + BATCH);
      const networks = [...new Set(batch.map((c) => c.network.caip2))];
      const targets = [...new Set(batch.map((c) => c.target))];
      for (const r of await this.repo.entries.withTargets(em, watchlistId, networks, targets)) {
        const key = pairKey(r.network, r.target);
        if (wanted.has(key)) found.set(key, r.id);
      }
    }
    return found;
  }
}
