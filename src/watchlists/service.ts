import type { EntityManager } from '@mikro-orm/postgresql';
import { inferChainFromAddress, parseAddress } from '../chains/addresses.js';
import { lockAccount } from '../accounts/lock.js';
import { clip, networkLabel, resolveNetwork, type NetworkDef } from '../chains/registry.js';
import type { Orm } from '../db/orm.js';
import { decodeCursor, keysetPage, type Page } from '../platform/cursor.js';
import { AppError, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { TARGET_TYPES, type TargetType } from '../risk/types.js';
import type { AlertStatus } from './entities.js';
import { nextRunAfter } from './schedule.js';
import {
  DEFAULT_BALANCE_CHANGE_PCT,
  MAX_ENTRIES_PER_CALL,
  type AlertsQuery,
  type AlertUpdate,
  type EntriesQuery,
  type EntryErrorCode,
  type NewEntry,
  type NewWatchlist,
  type RemoveTarget,
  type WatchlistUpdate,
} from './schemas.js';

/*
 * The watchlist API over the tables the scanner (scan.ts, workers/) fills: lists, their entries in bulk,
 * snapshot history and alerts (rescans: rescans.ts). Every query names the caller's account, so another
 * account's id is simply not found. Entries are written with one statement per batch of rows, not one per
 * entry.
 */

/** The networks an entry may name: ChainProviders fits (`resolve` accepts configured networks only). */
export interface NetworkResolver {
  /** Every network riskwatch knows, configured or not (entries of an unconfigured one are still shown). */
  readonly networks: readonly NetworkDef[];
  /** The configured network `chain` + `network` name, or `AppError('unsupported_chain')`. */
  resolve(chain: string | undefined, network: string | undefined): NetworkDef;
}

export interface WatchlistsOptions {
  /** `watchlists.default_schedule`, `watchlists.default_deep_schedule`. */
  defaultSchedule: string;
  defaultDeepSchedule: string;
  /** `watchlists.max_entries_per_account`: entries on all the account's watchlists together. */
  maxEntriesPerAccount: number;
  /** `watchlists.max_per_account`: watchlists of one account. */
  maxWatchlistsPerAccount: number;
}

export interface Thresholds {
  balance_change_pct: number;
}

export interface WatchlistView {
  id: string;
  name: string;
  schedule: string;
  deepSchedule: string;
  thresholds: Thresholds;
  entryCount: number;
  /** When each schedule is next due; null: a schedule from before the one-year rule with no run in a year. */
  nextTickAt: Date | null;
  nextDeepAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface EntryView {
  id: string;
  watchlistId: string;
  target: string;
  chain: string;
  /** The network's name as the registry knows it (`mainnet`); the CAIP-2 id when no network has it. */
  network: string;
  label: string | null;
  targetType: string | null;
  createdAt: Date;
  lastCheckedAt: Date | null;
  lastOutcome: string | null;
  riskLevel: string | null;
  riskScore: number | null;
  changedAt: Date | null;
  findings: { code: string; severity: string }[];
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

export interface SnapshotView {
  id: string;
  state: Record<string, unknown>;
  hash: string;
  readAt: Date;
  /** Where it was read: a Solana slot or an EVM block. */
  position: { slot: number } | { block: number };
  verdict: Record<string, unknown> | null;
}

export interface AlertView {
  id: string;
  watchlistId: string;
  entryId: string;
  target: string;
  chain: string;
  network: string;
  type: string;
  severity: string;
  previous: unknown;
  current: unknown;
  evidence: Record<string, unknown>;
  status: AlertStatus;
  createdAt: Date;
  updatedAt: Date;
}

/** The target types each chain family has (risk-v2's rule). */
const TYPES_OF: Record<NetworkDef['family'], readonly TargetType[]> = {
  evm: ['wallet', 'contract'],
  solana: ['wallet', 'program', 'token'],
};

/** Rows per INSERT / DELETE statement (one JSON parameter each). */
const BATCH = 1000;

type Time = Date | string;
const time = (t: Time): Date => new Date(t);
const timeOrNull = (t: Time | null): Date | null => (t === null ? null : new Date(t));

interface WatchlistRow {
  id: string;
  name: string;
  schedule: string;
  deep_schedule: string;
  thresholds: Record<string, number> | null;
  entry_count: number;
  next_tick_at: Time | null;
  next_deep_at: Time | null;
  created_at: Time;
  updated_at: Time;
}

interface EntryRow {
  id: string;
  watchlist_id: string;
  chain: string;
  network: string;
  target: string;
  label: string | null;
  target_type: string | null;
  created_at: Time;
  last_checked_at: Time | null;
  last_outcome: string | null;
  changed_at: Time | null;
  risk_level: string | null;
  risk_score: number | null;
  verdict: Record<string, unknown> | null;
}

interface SnapshotRow {
  id: string;
  state: Record<string, unknown>;
  hash: string;
  read_at_height: string | number;
  read_at: Time;
  verdict: Record<string, unknown> | null;
}

interface AlertRow {
  id: string;
  watchlist_id: string;
  entry_id: string;
  target: string;
  network: string;
  type: string;
  severity: string;
  previous: unknown;
  current: unknown;
  evidence: Record<string, unknown>;
  status: AlertStatus;
  created_at: Time;
  updated_at: Time;
}

const WATCHLIST_COLUMNS =
  'w.id, w.name, w.schedule, w.deep_schedule, w.thresholds, w.next_tick_at, w.next_deep_at, w.created_at, ' +
  'w.updated_at';
const ENTRY_COUNT =
  '(select count(*)::int from watchlist_entries e where e.watchlist_id = w.id) as entry_count';
const ENTRY_COLUMNS =
  'id, watchlist_id, chain, network, target, label, target_type, created_at, last_checked_at, last_outcome, ' +
  'changed_at, risk_level, risk_score, verdict';
const ALERT_COLUMNS =
  'id, watchlist_id, entry_id, target, network, type, severity, previous, current, evidence, status, ' +
  'created_at, updated_at';

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

const thresholdsOf = (input: { balance_change_pct?: number | undefined } | undefined): Thresholds => ({
  balance_change_pct: input?.balance_change_pct ?? DEFAULT_BALANCE_CHANGE_PCT,
});

const tooMany = (n: number) =>
  new AppError(
    'too_many_entries',
    `${n} entries in one call: at most ${MAX_ENTRIES_PER_CALL.toLocaleString('en-US')}. Nothing was stored.`,
  );

/**
 * Watchlists of an account: CRUD, bulk entries (per-entry results, valid ones kept), snapshot history and
 * alerts. Every query is scoped to the caller's account.
 */
export class WatchlistsService {
  private readonly byCaip2 = new Map<string, NetworkDef>();

  constructor(
    private readonly orm: Orm,
    private readonly chains: NetworkResolver,
    private readonly options: WatchlistsOptions,
  ) {
    for (const def of chains.networks) if (!this.byCaip2.has(def.caip2)) this.byCaip2.set(def.caip2, def);
  }

  // ---- watchlists ---------------------------------------------------------------------------------

  /**
   * Creates a list, its due times computed from its crons now. An account holds at most
   * `maxWatchlistsPerAccount` lists: concurrent creations are counted one after the other (the account row
   * is locked), and one more is `limit_exceeded`.
   */
  async createWatchlist(accountId: string, input: NewWatchlist): Promise<WatchlistView> {
    const schedule = input.schedule ?? this.options.defaultSchedule;
    const deepSchedule = input.deep_schedule ?? this.options.defaultDeepSchedule;
    const now = new Date();
    const row = await this.orm.em.fork().transactional(async (em) => {
      const account = await lockAccount(em, accountId);
      const max = this.options.maxWatchlistsPerAccount;
      const [counted] = await em.execute<{ n: number }[]>(
        'select count(*)::int as n from watchlists where account_id = ?',
        [accountId],
      );
      const n = counted?.n ?? 0;
      if (n >= max)
        throw new AppError(
          'limit_exceeded',
          `Account ${account} already has ${n} watchlists; the limit is ${max} ` +
            '(watchlists.max_per_account / RISKWATCH_MAX_WATCHLISTS_PER_ACCOUNT). Delete one to create ' +
            'another (a watchlist holds many entries, on any network).',
        );
      const [inserted] = await em.execute<WatchlistRow[]>(
        `insert into watchlists as w (id, account_id, name, schedule, deep_schedule, thresholds, next_tick_at,
                next_deep_at, created_at, updated_at)
         values (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?)
         returning ${WATCHLIST_COLUMNS}, 0 as entry_count`,
        [
          newId('wl'),
          accountId,
          input.name,
          schedule,
          deepSchedule,
          JSON.stringify(thresholdsOf(input.thresholds)),
          nextRunAfter(schedule, now),
          nextRunAfter(deepSchedule, now),
          now,
          now,
        ],
      );
      return inserted!;
    });
    return this.watchlistOf(row);
  }

  /** The account's watchlists, newest first. */
  async listWatchlists(
    accountId: string,
    q: { limit: number; cursor?: string | undefined },
  ): Promise<Page<WatchlistView>> {
    const where = ['w.account_id = ?'];
    const params: unknown[] = [accountId];
    if (q.cursor) {
      const c = decodeCursor(q.cursor, 'wl');
      where.push('(w.created_at, w.id) < (?, ?)');
      params.push(c.at, c.id);
    }
    const rows = await this.run<WatchlistRow[]>(
      `select ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT} from watchlists w where ${where.join(' and ')}
        order by w.created_at desc, w.id desc limit ?`,
      [...params, q.limit + 1],
    );
    return keysetPage(
      rows.map((r) => this.watchlistOf(r)),
      q.limit,
      (w) => ({ at: w.createdAt.toISOString(), id: w.id }),
    );
  }

  async getWatchlist(accountId: string, id: string): Promise<WatchlistView> {
    const [row] = await this.run<WatchlistRow[]>(
      `select ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT} from watchlists w where w.id = ? and w.account_id = ?`,
      [id, accountId],
    );
    if (!row) throw watchlistNotFound(id);
    return this.watchlistOf(row);
  }

  /** Changes the fields given; `thresholds` replaces the thresholds (a field left out takes its default). */
  async updateWatchlist(accountId: string, id: string, patch: WatchlistUpdate): Promise<WatchlistView> {
    const sets: string[] = [];
    const params: unknown[] = [];
    const set = (column: string, value: unknown, cast = '') => {
      sets.push(`${column} = ?${cast}`);
      params.push(value);
    };
    if (patch.name !== undefined) set('name', patch.name);
    // A changed cron's next due time is computed from now.
    const now = new Date();
    if (patch.schedule !== undefined) {
      set('schedule', patch.schedule);
      set('next_tick_at', nextRunAfter(patch.schedule, now));
    }
    if (patch.deep_schedule !== undefined) {
      set('deep_schedule', patch.deep_schedule);
      set('next_deep_at', nextRunAfter(patch.deep_schedule, now));
    }
    if (patch.thresholds !== undefined)
      set('thresholds', JSON.stringify(thresholdsOf(patch.thresholds)), '::jsonb');
    if (sets.length === 0) return this.getWatchlist(accountId, id);
    const [row] = await this.run<WatchlistRow[]>(
      `update watchlists w set ${sets.join(', ')}, updated_at = now() where w.id = ? and w.account_id = ?
       returning ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT}`,
      [...params, id, accountId],
    );
    if (!row) throw watchlistNotFound(id);
    return this.watchlistOf(row);
  }

  /** Deletes the list with its entries, their snapshots, its alerts and rescans, in one transaction. */
  async deleteWatchlist(accountId: string, id: string): Promise<WatchlistView> {
    return this.orm.em.fork().transactional(async (em) => {
      // FOR UPDATE: a bulk add (which holds the list FOR SHARE) finishes first, or waits and finds no list.
      const [row] = await em.execute<WatchlistRow[]>(
        `select ${WATCHLIST_COLUMNS}, ${ENTRY_COUNT} from watchlists w where w.id = ? and w.account_id = ? for update`,
        [id, accountId],
      );
      if (!row) throw watchlistNotFound(id);
      await em.execute(
        'delete from watchlist_alerts where watchlist_id = ? and account_id = ?',
        [id, accountId],
        'run',
      );
      await em.execute(
        `delete from watchlist_snapshots s using watchlist_entries e
          where s.entry_id = e.id and e.watchlist_id = ? and e.account_id = ?`,
        [id, accountId],
        'run',
      );
      await em.execute(
        'delete from watchlist_entries where watchlist_id = ? and account_id = ?',
        [id, accountId],
        'run',
      );
      await em.execute(
        'delete from watchlist_rescans where watchlist_id = ? and account_id = ?',
        [id, accountId],
        'run',
      );
      await em.execute('delete from watchlists where id = ? and account_id = ?', [id, accountId], 'run');
      return this.watchlistOf(row);
    });
  }

  // ---- entries ------------------------------------------------------------------------------------

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
    const where = ['watchlist_id = ?', 'account_id = ?'];
    const params: unknown[] = [watchlistId, accountId];
    if (q.level) {
      where.push('risk_level = ?');
      params.push(q.level);
    }
    if (q.changed_since) {
      where.push('changed_at >= ?');
      params.push(q.changed_since);
    }
    if (q.cursor) {
      where.push('id > ?');
      params.push(decodeCursor(q.cursor, 'wle').id);
    }
    const rows = await this.run<EntryRow[]>(
      `select ${ENTRY_COLUMNS} from watchlist_entries where ${where.join(' and ')} order by id limit ?`,
      [...params, q.limit + 1],
    );
    return keysetPage(
      rows.map((r) => this.entryOf(r)),
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
      return this.entryOf(row);
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

  // ---- snapshots ----------------------------------------------------------------------------------

  /** One page of an entry's snapshots (states written when they changed), newest first. */
  async listSnapshots(
    accountId: string,
    watchlistId: string,
    entryId: string,
    q: { limit: number; cursor?: string | undefined },
  ): Promise<Page<SnapshotView>> {
    const [entry] = await this.run<{ network: string }[]>(
      'select network from watchlist_entries where id = ? and watchlist_id = ? and account_id = ?',
      [entryId, watchlistId, accountId],
    );
    if (!entry) throw notFound(`Entry "${clip(entryId)}" of watchlist "${clip(watchlistId)}"`);
    const family =
      this.byCaip2.get(entry.network)?.family ?? (entry.network.startsWith('solana:') ? 'solana' : 'evm');
    const where = ['entry_id = ?', 'account_id = ?'];
    const params: unknown[] = [entryId, accountId];
    if (q.cursor) {
      const c = decodeCursor(q.cursor, 'snp');
      where.push('(read_at, id) < (?, ?)');
      params.push(c.at, c.id);
    }
    const rows = await this.run<SnapshotRow[]>(
      `select id, state, hash, read_at_height, read_at, verdict from watchlist_snapshots
        where ${where.join(' and ')} order by read_at desc, id desc limit ?`,
      [...params, q.limit + 1],
    );
    return keysetPage(
      rows.map((r): SnapshotView => {
        const height = Number(r.read_at_height);
        return {
          id: r.id,
          state: r.state,
          hash: r.hash,
          readAt: time(r.read_at),
          position: family === 'solana' ? { slot: height } : { block: height },
          verdict: r.verdict,
        };
      }),
      q.limit,
      (s) => ({ at: s.readAt.toISOString(), id: s.id }),
    );
  }

  // ---- alerts -------------------------------------------------------------------------------------

  /** One page of the list's alerts, newest first, optionally filtered. */
  async listAlerts(accountId: string, watchlistId: string, q: AlertsQuery): Promise<Page<AlertView>> {
    await requireWatchlist(this.orm.em.fork(), accountId, watchlistId);
    const where = ['watchlist_id = ?', 'account_id = ?'];
    const params: unknown[] = [watchlistId, accountId];
    const filter = (sql: string, value: unknown) => {
      where.push(sql);
      params.push(value);
    };
    if (q.status) filter('status = ?', q.status);
    if (q.type) filter('type = ?', q.type);
    if (q.severity) filter('severity = ?', q.severity);
    if (q.since) filter('created_at >= ?', q.since);
    if (q.cursor) {
      const c = decodeCursor(q.cursor, 'alr');
      where.push('(created_at, id) < (?, ?)');
      params.push(c.at, c.id);
    }
    const rows = await this.run<AlertRow[]>(
      `select ${ALERT_COLUMNS} from watchlist_alerts where ${where.join(' and ')}
        order by created_at desc, id desc limit ?`,
      [...params, q.limit + 1],
    );
    return keysetPage(
      rows.map((r) => this.alertOf(r)),
      q.limit,
      (a) => ({ at: a.createdAt.toISOString(), id: a.id }),
    );
  }

  /** Sets an alert's status (`acknowledged`, `resolved`). */
  async updateAlert(
    accountId: string,
    watchlistId: string,
    alertId: string,
    patch: AlertUpdate,
  ): Promise<AlertView> {
    const [row] = await this.run<AlertRow[]>(
      `update watchlist_alerts set status = ?, updated_at = now()
        where id = ? and watchlist_id = ? and account_id = ? returning ${ALERT_COLUMNS}`,
      [patch.status, alertId, watchlistId, accountId],
    );
    if (!row) throw notFound(`Alert "${clip(alertId)}" of watchlist "${clip(watchlistId)}"`);
    return this.alertOf(row);
  }

  // ---- helpers ------------------------------------------------------------------------------------

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

  private watchlistOf(r: WatchlistRow): WatchlistView {
    return {
      id: r.id,
      name: r.name,
      schedule: r.schedule,
      deepSchedule: r.deep_schedule,
      thresholds: thresholdsOf(r.thresholds ?? undefined),
      entryCount: Number(r.entry_count),
      nextTickAt: timeOrNull(r.next_tick_at),
      nextDeepAt: timeOrNull(r.next_deep_at),
      createdAt: time(r.created_at),
      updatedAt: time(r.updated_at),
    };
  }

  private entryOf(r: EntryRow): EntryView {
    const findings = Array.isArray(r.verdict?.findings) ? (r.verdict.findings as unknown[]) : [];
    return {
      id: r.id,
      watchlistId: r.watchlist_id,
      target: r.target,
      chain: r.chain,
      network: this.byCaip2.get(r.network)?.network ?? r.network,
      label: r.label,
      targetType: r.target_type,
      createdAt: time(r.created_at),
      lastCheckedAt: timeOrNull(r.last_checked_at),
      lastOutcome: r.last_outcome,
      riskLevel: r.risk_level,
      riskScore: r.risk_score,
      changedAt: timeOrNull(r.changed_at),
      findings: findings.flatMap((f) => {
        const { code, severity } = (f ?? {}) as { code?: unknown; severity?: unknown };
        return typeof code === 'string' && typeof severity === 'string' ? [{ code, severity }] : [];
      }),
    };
  }

  private alertOf(r: AlertRow): AlertView {
    const def = this.byCaip2.get(r.network);
    return {
      id: r.id,
      watchlistId: r.watchlist_id,
      entryId: r.entry_id,
      target: r.target,
      chain: def?.chain ?? r.network.split(':')[0]!,
      network: def?.network ?? r.network,
      type: r.type,
      severity: r.severity,
      previous: r.previous ?? null,
      current: r.current ?? null,
      evidence: r.evidence,
      status: r.status,
      createdAt: time(r.created_at),
      updatedAt: time(r.updated_at),
    };
  }

  private run<T>(sql: string, params: unknown[]): Promise<T> {
    return this.orm.em.getConnection().execute(sql, params) as Promise<T>;
  }
}

const watchlistNotFound = (id: string) => notFound(`Watchlist "${clip(id)}"`);

/** The account's watchlist, else `not_found` (another account's list included); `lock` holds it. */
export async function requireWatchlist(
  em: EntityManager,
  accountId: string,
  watchlistId: string,
  lock: '' | 'for share' | 'for update' = '',
): Promise<void> {
  const [row] = await em.execute<{ id: string }[]>(
    `select id from watchlists where id = ? and account_id = ? ${lock}`,
    [watchlistId, accountId],
  );
  if (!row) throw watchlistNotFound(watchlistId);
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
