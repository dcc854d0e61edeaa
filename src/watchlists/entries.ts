import type { EntityManager } from '@mikro-orm/postgresql';
import { lockAccount } from '../accounts/lock.js';
import { inferChainFromAddress, parseAddress } from '../chains/addresses.js';
import { clip, networkLabel, resolveNetwork, type NetworkDef } from '../chains/registry.js';
import type { Orm } from '../db/orm.js';
import { run, Where } from '../db/sql.js';
import { decodeCursor, keysetPage, type Page } from '../platform/cursor.js';
import { AppError, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { TARGET_TYPES, type TargetType } from '../risk/types.js';
import { requireWatchlist } from './lists.js';
import {
  MAX_ENTRIES_PER_CALL,
  type EntriesQuery,
  type EntryErrorCode,
  type NewEntry,
  type RemoveTarget,
} from './schemas.js';
import { ENTRY_COLUMNS, entryOf, KnownNetworks, type EntryRow, type EntryView } from './views.js';

/*
 * The entries of an account's watchlists, in bulk: each entry of a call is answered on its own (valid ones
 * kept), written with one statement per batch of rows, not one per entry. Removing an entry removes its
 * snapshots and alerts. Every query names the caller's account, so another account's id is simply not found.
 */

/** The networks an entry may name: ChainProviders fits (`resolve` accepts configured networks only). */
export interface NetworkResolver {
  /** Every network riskwatch knows, configured or not (entries of an unconfigured one are still shown). */
  readonly networks: readonly NetworkDef[];
  /** The configured network `chain` + `network` name, or `AppError('unsupported_chain')`. */
  resolve(chain: string | undefined, network: string | undefined): NetworkDef;
}

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

/** The target types each chain family has (risk-v2's rule). */
const TYPES_OF: Record<NetworkDef['family'], readonly TargetType[]> = {
  evm: ['wallet', 'contract'],
  solana: ['wallet', 'program', 'token'],
};

/** Rows per INSERT / DELETE statement (one JSON parameter each). */
const BATCH = 1000;

/** A valid entry of a bulk add, resolved to its network and normalised address. */
interface Candidate {
  index: number;
  network: NetworkDef;
  target: string;
  label: string | null;
  targetType: TargetType | null;
}

const PER_ENTRY_CODES = new Set<string>(['invalid_address', 'unsupported_chain', 'unsupported_target_type']);

/** A per-entry error from what resolving the entry threw; anything else is not the entry's fault. */
function entryError(index: number, target: string, err: unknown): EntryResult & RemoveResult {
  if (err instanceof AppError && PER_ENTRY_CODES.has(err.code))
    return { index, target, status: 'error', code: err.code as EntryErrorCode, message: err.message };
  throw err;
}

const tooMany = (n: number) =>
  new AppError(
    'too_many_entries',
    `${n} entries in one call: at most ${MAX_ENTRIES_PER_CALL.toLocaleString('en-US')}. Nothing was stored.`,
  );

/** Entries of an account's watchlists: bulk add and remove, list. */
export class WatchlistEntriesService {
  private readonly networks: KnownNetworks;

  constructor(
    private readonly orm: Orm,
    private readonly chains: NetworkResolver,
    private readonly options: EntriesOptions,
  ) {
    this.networks = new KnownNetworks(chains.networks);
  }

  /**
   * Adds up to MAX_ENTRIES_PER_CALL entries. Each is resolved as preflight resolves a target (neither chain
   * nor network: the address format decides; only configured networks) and answered on its own: `created`,
   * `exists` (already on the list), or an error with its code. The valid ones are stored, in one
   * transaction, a statement per BATCH rows. Entries past the account's ceiling are `limit_exceeded`; the
   * ones before them are kept. Concurrent adds of one account are counted one after the other (the
   * account row is locked), so they cannot pass the ceiling together.
   */
  async addEntries(
    accountId: string,
    watchlistId: string,
    entries: readonly NewEntry[],
  ): Promise<AddEntriesResult> {
    if (entries.length > MAX_ENTRIES_PER_CALL) throw tooMany(entries.length);
    const results: EntryResult[] = new Array<EntryResult>(entries.length);
    const candidates: Candidate[] = [];
    const firstIndex = new Map<string, number>();
    entries.forEach((input, index) => {
      let candidate: Candidate;
      try {
        candidate = this.resolveEntry(input, index);
      } catch (err) {
        results[index] = entryError(index, input.target.trim(), err);
        return;
      }
      const key = `${candidate.network.caip2} ${candidate.target}`;
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

    await this.orm.em.fork().transactional(async (em) => {
      const account = await lockAccount(em, accountId);
      await requireWatchlist(em, accountId, watchlistId, 'for share');
      if (candidates.length === 0) return;
      const exists = (c: Candidate, id: string) =>
        (results[c.index] = { index: c.index, target: c.target, status: 'exists', id });
      const found = await existingEntries(em, watchlistId, candidates);
      const fresh: Candidate[] = [];
      for (const c of candidates) {
        const id = found.get(`${c.network.caip2} ${c.target}`);
        if (id) exists(c, id);
        else fresh.push(c);
      }
      if (fresh.length === 0) return;

      const max = this.options.maxEntriesPerAccount;
      const [counted] = await em.execute<{ n: number }[]>(
        `select count(*)::int as n from watchlist_entries
          where watchlist_id in (select id from watchlists where account_id = ?)`,
        [accountId],
      );
      const room = Math.max(0, max - (counted?.n ?? 0));
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
      const toInsert = fresh.slice(0, room);
      const missed: Candidate[] = [];
      for (let i = 0; i < toInsert.length; i += BATCH) {
        const batch = toInsert.slice(i, i + BATCH);
        const rows = batch.map((c) => ({
          id: newId('wle'),
          chain: c.network.chain,
          network: c.network.caip2,
          target: c.target,
          label: c.label,
          target_type: c.targetType,
        }));
        const inserted = await em.execute<{ id: string; network: string; target: string }[]>(
          `insert into watchlist_entries (id, account_id, watchlist_id, chain, network, target, label, target_type, created_at)
           select r.id, ?, ?, r.chain, r.network, r.target, r.label, r.target_type, now()
             from jsonb_to_recordset(?::jsonb)
               as r(id text, chain text, network text, target text, label text, target_type text)
           on conflict (watchlist_id, network, target) do nothing
           returning id, network, target`,
          [accountId, watchlistId, JSON.stringify(rows)],
        );
        const ids = new Map(inserted.map((r) => [`${r.network} ${r.target}`, r.id]));
        for (const c of batch) {
          const id = ids.get(`${c.network.caip2} ${c.target}`);
          if (id) results[c.index] = { index: c.index, target: c.target, status: 'created', id };
          else missed.push(c);
        }
      }
      // Stored meanwhile by a writer that does not take the account lock: it exists now.
      if (missed.length) {
        const now = await existingEntries(em, watchlistId, missed);
        for (const c of missed) exists(c, now.get(`${c.network.caip2} ${c.target}`) ?? '');
      }
    });

    let created = 0;
    let exists = 0;
    for (const r of results) {
      if (r.status === 'created') created++;
      else if (r.status === 'exists') exists++;
    }
    return { created, exists, failed: results.length - created - exists, results };
  }

  /** One page of the list's entries in id order (the order they were added), optionally filtered. */
  async listEntries(accountId: string, watchlistId: string, q: EntriesQuery): Promise<Page<EntryView>> {
    await requireWatchlist(this.orm.em.fork(), accountId, watchlistId);
    const where = new Where('watchlist_id = ?', watchlistId)
      .and('account_id = ?', accountId)
      .andIf(q.level, 'risk_level = ?')
      .andIf(q.changed_since, 'changed_at >= ?')
      .andIf(q.cursor && decodeCursor(q.cursor, 'wle').id, 'id > ?');
    const rows = await run<EntryRow[]>(
      this.orm,
      `select ${ENTRY_COLUMNS} from watchlist_entries where ${where.sql} order by id limit ?`,
      [...where.params, q.limit + 1],
    );
    return keysetPage(
      rows.map((r) => entryOf(r, this.networks)),
      q.limit,
      (e) => ({ at: e.createdAt.toISOString(), id: e.id }),
    );
  }

  /** Removes one entry with its snapshots and alerts. */
  async removeEntry(accountId: string, watchlistId: string, entryId: string): Promise<EntryView> {
    return this.orm.em.fork().transactional(async (em) => {
      await requireWatchlist(em, accountId, watchlistId, 'for share');
      const [row] = await em.execute<EntryRow[]>(
        `delete from watchlist_entries where id = ? and watchlist_id = ? and account_id = ? returning ${ENTRY_COLUMNS}`,
        [entryId, watchlistId, accountId],
      );
      if (!row) throw notFound(`Entry "${clip(entryId)}" of watchlist ${watchlistId}`);
      await deleteEntryData(em, accountId, [row.id]);
      return entryOf(row, this.networks);
    });
  }

  /**
   * Removes entries by target: with chain or network, the target on that network (any network riskwatch
   * knows, configured or not: an entry outlives its provider); with neither, the target on every network
   * of the list. Their snapshots and alerts go with them. One transaction.
   */
  async removeEntries(
    accountId: string,
    watchlistId: string,
    targets: readonly RemoveTarget[],
  ): Promise<RemoveEntriesResult> {
    if (targets.length > MAX_ENTRIES_PER_CALL) throw tooMany(targets.length);
    const results: RemoveResult[] = new Array<RemoveResult>(targets.length);
    /** (target, network) pairs to look up: a target of every network is one pair per network of its family. */
    const wanted: { i: number; network: string; target: string }[] = [];
    const firstIndex = new Map<string, number>();
    targets.forEach((input, index) => {
      let resolved: { network: NetworkDef | null; target: string };
      try {
        resolved = this.resolveRemoval(input);
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
      else for (const caip2 of this.caip2sOf(target)) wanted.push({ i: index, network: caip2, target });
    });

    await this.orm.em.fork().transactional(async (em) => {
      await requireWatchlist(em, accountId, watchlistId, 'for share');
      for (let i = 0; i < wanted.length; i += BATCH) {
        const batch = wanted.slice(i, i + BATCH);
        // Looked up through the unique index (one probe per pair), then deleted by id.
        const removed = await em.execute<{ id: string; i: number }[]>(
          `select e.id, r.i from jsonb_to_recordset(?::jsonb) as r(i int, network text, target text)
             cross join lateral (
               select id from watchlist_entries
                where watchlist_id = ? and network = r.network and target = r.target and account_id = ?
                limit 1) e`,
          [JSON.stringify(batch), watchlistId, accountId],
        );
        if (removed.length === 0) continue;
        await em.execute(
          'delete from watchlist_entries where id in (select jsonb_array_elements_text(?::jsonb))',
          [JSON.stringify(removed.map((r) => r.id))],
          'run',
        );
        for (const { id, i: index } of removed) {
          const result = results[index]!;
          result.status = 'removed';
          (result.ids ??= []).push(id);
        }
        await deleteEntryData(
          em,
          accountId,
          removed.map((r) => r.id),
        );
      }
    });

    let removed = 0;
    let notFound = 0;
    for (const r of results) {
      if (r.status === 'removed') removed++;
      else if (r.status === 'not_found') notFound++;
    }
    return { removed, notFound, failed: results.length - removed - notFound, results };
  }

  /**
   * An entry's network and address, as preflight resolves a target: neither chain nor network → the
   * address format decides (base58 → solana/mainnet, 0x… → ethereum/mainnet); otherwise the network named
   * (a network name alone belongs to the chain the address format implies). Only configured networks.
   */
  private resolveEntry(input: NewEntry, index: number): Candidate {
    const { network, target } = this.resolveTarget(input, (chain, net) => this.chains.resolve(chain, net));
    let targetType: TargetType | null = null;
    const wanted = input.target_type?.trim();
    if (wanted) {
      const types = TYPES_OF[network.family];
      if (!(TARGET_TYPES as readonly string[]).includes(wanted) || !types.includes(wanted as TargetType))
        throw new AppError(
          'unsupported_target_type',
          `target_type "${clip(wanted, 40)}" does not exist on ${networkLabel(network)}: use ` +
            `${types.map((t) => `\`${t}\``).join(', ')}, or leave it out.`,
        );
      targetType = wanted as TargetType;
    }
    return { index, network, target, label: input.label?.trim() || null, targetType };
  }

  /** The CAIP-2 ids of every known network of the address's family (Solana or EVM). */
  private caip2sOf(target: string): string[] {
    const family = target.startsWith('0x') ? 'evm' : 'solana';
    return [...new Set(this.chains.networks.filter((n) => n.family === family).map((n) => n.caip2))];
  }

  /** A target to remove: on the network named (known, configured or not), or on every network (null). */
  private resolveRemoval(input: RemoveTarget): { network: NetworkDef | null; target: string } {
    if (!input.chain?.trim() && !input.network?.trim())
      return { network: null, target: inferChainFromAddress(input.target).address };
    const known = { networks: this.chains.networks, configured: this.chains.networks };
    return this.resolveTarget(input, (chain, net) => resolveNetwork(chain, net, known));
  }

  private resolveTarget(
    input: { target: string; chain?: string | null | undefined; network?: string | null | undefined },
    resolve: (chain: string | undefined, network: string | undefined) => NetworkDef,
  ): { network: NetworkDef; target: string } {
    const chain = input.chain?.trim() || undefined;
    const net = input.network?.trim() || undefined;
    if (chain === undefined && net === undefined) {
      const inferred = inferChainFromAddress(input.target);
      return { network: resolve(inferred.network.chain, inferred.network.network), target: inferred.address };
    }
    const chainName =
      chain ?? (net!.includes(':') ? undefined : inferChainFromAddress(input.target).network.chain);
    const network = resolve(chainName, net);
    return { network, target: parseAddress(network, input.target) };
  }
}

/**
 * The ids of the candidates already on the list, by `network target`: one `target = any(…)` look-up per
 * batch (network matched here). A lateral probe per row let the planner, on a list whose statistics are
 * stale (a new large list, before autovacuum's ANALYZE), filter every row of the list for each probe.
 */
async function existingEntries(
  em: EntityManager,
  watchlistId: string,
  candidates: readonly Candidate[],
): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const wanted = new Set(candidates.map((c) => `${c.network.caip2} ${c.target}`));
  for (let i = 0; i < candidates.length; i += BATCH) {
    const targets = [...new Set(candidates.slice(i, i + BATCH).map((c) => c.target))];
    const rows = await em.execute<{ id: string; network: string; target: string }[]>(
      'select id, network, target from watchlist_entries where watchlist_id = ? and target = any(?::text[])',
      [watchlistId, `{${targets.join(',')}}`], // addresses: base58 or hex, nothing to quote
    );
    for (const r of rows) {
      const key = `${r.network} ${r.target}`;
      if (wanted.has(key)) found.set(key, r.id);
    }
  }
  return found;
}

/** Deletes the snapshots and alerts of removed entries. */
async function deleteEntryData(
  em: EntityManager,
  accountId: string,
  entryIds: readonly string[],
): Promise<void> {
  if (entryIds.length === 0) return;
  const ids = JSON.stringify(entryIds);
  for (const table of ['watchlist_snapshots', 'watchlist_alerts'])
    await em.execute(
      `delete from ${table} where account_id = ? and entry_id in (select jsonb_array_elements_text(?::jsonb))`,
      [accountId, ids],
      'run',
    );
}
