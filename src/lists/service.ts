import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { inferChainFromAddress, parseAddress } from '../chains/addresses.js';
import { clip, resolveNetwork, type NetworkDef } from '../chains/registry.js';
import { decodeCursor, keysetPage } from '../platform/cursor.js';
import { AppError, invalidRequest, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { Orm } from '../platform/orm.js';
import { displayAddress, normaliseAddress } from './addresses.js';
import { LIST_NAMES, ListEntrySchema, type ListEntry, type ListName } from './entities.js';
import type { SanctionRecord } from './sanctions-files.js';

/** A sanctions list that names an address. */
export interface SanctionMatch {
  source: string;
  currency: string;
  name: string;
  uid: string | null;
  /** YYYY-MM-DD: the publication date of the list the match comes from. */
  list_as_of: string;
}

export interface ListEntryView {
  id: string;
  list: ListName;
  /** EIP-55 for EVM addresses. */
  target: string;
  /** null: every chain. */
  chain: string | null;
  label: string | null;
  reason: string | null;
  created_at: string;
  created_by: string;
}

/** What the lists say about one target for one account (ListsCache answers it from memory). */
export interface ListStatus {
  denied: ListEntryView | null;
  allowed: ListEntryView | null;
  sanctioned: SanctionMatch | null;
}

export interface NewListEntry {
  target: string;
  chain?: string | null | undefined;
  network?: string | null | undefined;
  label?: string | null | undefined;
  reason?: string | null | undefined;
}

export interface ListEntriesQuery {
  limit: number;
  cursor?: string | undefined;
  target?: string | undefined;
}

export interface SanctionsImportResult {
  source: string;
  list_as_of: string;
  total: number;
  added: number;
  removed: number;
  by_currency: Record<string, number>;
}

export interface SanctionsSourceView {
  source: string;
  list_as_of: string;
  imported_at: string;
  total: number;
  by_currency: Record<string, number>;
}

/** A raw-query row of list_entries (through row_to_json too: timestamps may arrive as strings). */
interface EntryRow {
  id: string;
  list: ListName;
  chain: string | null;
  target: string;
  label: string | null;
  reason: string | null;
  created_at: Date | string;
  created_by: string;
}

interface SanctionRow {
  source: string;
  currency: string;
  entity_name: string;
  entity_uid: string | null;
  list_as_of: string;
}

const ENTRY_COLUMNS = 'id, list, chain, target, label, reason, created_at, created_by';
/** list_as_of as text: a `date` must not pass through a JS Date (and the server's time zone). */
const SANCTION_COLUMNS = `source, currency, entity_name, entity_uid, to_char(list_as_of, 'YYYY-MM-DD') as list_as_of`;
/** Rows per INSERT of an import (one JSON parameter each). */
const IMPORT_BATCH = 5000;

/** `deny` / `allow`; any other name in a path is a list that does not exist (404, as for any resource). */
export function listName(list: string): ListName {
  if ((LIST_NAMES as readonly string[]).includes(list)) return list as ListName;
  throw new AppError('not_found', `List "${clip(list)}" was not found: the lists are deny and allow.`);
}

const entryView = (row: EntryRow): ListEntryView => ({
  id: row.id,
  list: row.list,
  target: displayAddress(row.target),
  chain: row.chain,
  label: row.label,
  reason: row.reason,
  created_at: new Date(row.created_at).toISOString(),
  created_by: row.created_by,
});

const entityRow = (e: ListEntry): EntryRow => ({
  id: e.id,
  list: e.list,
  chain: e.chain ?? null,
  target: e.target,
  label: e.label ?? null,
  reason: e.reason ?? null,
  created_at: e.createdAt,
  created_by: e.createdBy,
});

const sanctionMatch = (r: SanctionRow): SanctionMatch => ({
  source: r.source,
  currency: r.currency,
  name: r.entity_name,
  uid: r.entity_uid,
  list_as_of: r.list_as_of,
});

/**
 * Sanctions data (imported by operators, shared by every account) and each account's deny and allow lists.
 * Every list query is scoped to one account: one account's list never shows through another's. The risk
 * engine reads them through ListsCache, which this service tells of every change.
 */
export class ListsService {
  /** Lists name chains, not RPC endpoints: every network riskwatch knows counts, configured or not. */
  private readonly registry: { networks: readonly NetworkDef[]; configured: readonly NetworkDef[] };

  constructor(
    private readonly orm: Orm,
    networks: readonly NetworkDef[],
    /** Told after every committed change (ListsCache drops its copies, here and on other replicas). */
    private readonly onChange: (scope: { accountId: string } | 'sanctions') => Promise<void> = async () => {},
    /** `lists.max_entries_per_account`; unset: no ceiling. */
    private readonly limits: { maxEntriesPerAccount?: number | undefined } = {},
  ) {
    this.registry = { networks, configured: networks };
  }

  /**
   * Every sanctioned address (normalised) with the list naming it (the first by source and currency when
   * several do): the risk engine's in-memory index (ListsCache), reloaded when an import changes it.
   */
  async sanctionsIndex(): Promise<Map<string, SanctionMatch>> {
    const rows = await this.orm.em
      .getConnection()
      .execute<(SanctionRow & { address: string })[]>(
        `select address, ${SANCTION_COLUMNS} from sanctioned_addresses order by address, source, currency`,
      );
    const index = new Map<string, SanctionMatch>();
    for (const row of rows) if (!index.has(row.address)) index.set(row.address, sanctionMatch(row));
    return index;
  }

  /** Every entry of the account's lists, newest first. */
  async orgEntries(accountId: string): Promise<ListEntryView[]> {
    const entries = await this.orm.em
      .fork()
      .find(ListEntrySchema, { accountId }, { orderBy: { createdAt: 'desc', id: 'desc' } });
    return entries.map((e) => entryView(entityRow(e)));
  }

  /** One page of a list, newest first, optionally only the entries for one target. */
  async listEntries(
    accountId: string,
    list: string,
    q: ListEntriesQuery,
  ): Promise<{ data: ListEntryView[]; next_cursor: string | null }> {
    const where = ['account_id = ?', 'list = ?'];
    const params: unknown[] = [accountId, listName(list)];
    if (q.target !== undefined) {
      where.push('target = ?');
      params.push(normaliseAddress(q.target));
    }
    if (q.cursor) {
      const cursor = decodeCursor(q.cursor, 'lst');
      where.push('(created_at, id) < (?, ?)');
      params.push(cursor.at, cursor.id);
    }
    const rows = await this.orm.em.getConnection().execute<EntryRow[]>(
      `select ${ENTRY_COLUMNS} from list_entries where ${where.join(' and ')}
          order by created_at desc, id desc limit ?`,
      [...params, q.limit + 1],
    );
    return keysetPage(rows.map(entryView), q.limit, (e) => ({ at: e.created_at, id: e.id }));
  }

  /**
   * Adds a target to a list. With a chain or network the target must be an address of that chain and the
   * entry applies there; without either, the address format decides the validation (`0x…` EVM, base58
   * Solana) and the entry applies on every chain. The same target twice on one list and chain → conflict.
   */
  async addEntry(
    accountId: string,
    list: string,
    input: NewListEntry,
    createdBy: string,
  ): Promise<ListEntryView> {
    const name = listName(list);
    const { chain, target } = this.resolveTarget(input);
    let entry: ListEntry;
    try {
      entry = await this.orm.em.fork().transactional(async (em) => {
        await this.checkEntryCeiling(em, accountId);
        const created = em.create(ListEntrySchema, {
          id: newId('lst'),
          accountId,
          list: name,
          chain,
          target,
          label: input.label || null,
          reason: input.reason || null,
          createdBy,
        });
        await em.persist(created).flush();
        return created;
      });
    } catch (err) {
      if (!(err instanceof UniqueConstraintViolationException)) throw err;
      const existing = await this.orm.em
        .fork()
        .findOne(ListEntrySchema, { accountId, list: name, chain, target }, { fields: ['id'] });
      throw new AppError(
        'conflict',
        `${displayAddress(target)} is already on the ${name} list for ${chain ?? 'every chain'}` +
          (existing ? ` (entry ${existing.id}).` : '.'),
      );
    }
    await this.onChange({ accountId });
    return entryView(entityRow(entry));
  }

  /**
   * Refuses a new entry when the account's deny and allow lists together already hold the ceiling: the
   * risk engine keeps an account's lists in memory (ListsCache), so this bounds what one account costs
   * every replica. Runs in the adding transaction behind a per-account advisory lock, so concurrent adds
   * are counted one after the other and cannot pass the ceiling together.
   */
  private async checkEntryCeiling(em: EntityManager, accountId: string): Promise<void> {
    const max = this.limits.maxEntriesPerAccount;
    if (max === undefined) return;
    await em.execute('select pg_advisory_xact_lock(hashtext(?))', [`riskwatch:list-entries:${accountId}`]);
    const [counted] = await em.execute<{ n: number; account_name: string | null }[]>(
      `select count(*)::int as n, (select name from accounts where id = ?) as account_name
         from list_entries where account_id = ?`,
      [accountId, accountId],
    );
    const n = counted?.n ?? 0;
    if (n >= max)
      throw new AppError(
        'limit_exceeded',
        `Account ${counted?.account_name ?? accountId} already has ${n} entries on its deny and allow lists; ` +
          `the limit is ${max} (lists.max_entries_per_account / RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT). ` +
          'Remove entries to add others.',
      );
  }

  /** Removes an entry of this account's list; another account's entry (or another list's) is not found. */
  async removeEntry(accountId: string, list: string, id: string): Promise<ListEntryView> {
    const em = this.orm.em.fork();
    const entry = await em.findOne(ListEntrySchema, { id, accountId, list: listName(list) });
    if (!entry) throw notFound(`List entry "${clip(id)}"`);
    await em.remove(entry).flush();
    await this.onChange({ accountId });
    return entryView(entityRow(entry));
  }

  private resolveTarget(input: NewListEntry): { chain: string | null; target: string } {
    const chain = input.chain?.trim() || undefined;
    const network = input.network?.trim() || undefined;
    if (chain === undefined && network === undefined)
      return { chain: null, target: normaliseAddress(inferChainFromAddress(input.target).address) };
    // A network name alone (`sepolia`) belongs to the chain the address format implies; a CAIP-2 id names both.
    const chainName =
      chain ?? (network!.includes(':') ? undefined : inferChainFromAddress(input.target).network.chain);
    const def = resolveNetwork(chainName, network, this.registry);
    return { chain: def.chain, target: normaliseAddress(parseAddress(def, input.target)) };
  }

  /**
   * Replaces every row of `source` with `records`, in one transaction: a de-listed address disappears, and
   * importing the same file twice leaves the same rows. Imports of one source are serialised. An empty
   * record set is refused rather than taken as "the list is now empty" (a truncated or wrong file).
   */
  async importSanctions(input: {
    source: string;
    listAsOf: string;
    records: SanctionRecord[];
  }): Promise<SanctionsImportResult> {
    const key = (r: { currency: string; address: string }) => `${r.currency}\u0000${r.address}`;
    const unique = new Map<string, SanctionRecord>();
    for (const r of input.records) if (!unique.has(key(r))) unique.set(key(r), r);
    if (unique.size === 0)
      throw invalidRequest(
        `The file lists no digital currency addresses; "${input.source}" was left as it was.`,
      );
    const rows = [...unique.values()];

    const result = await this.orm.em.fork().transactional(async (em) => {
      await em.execute('select pg_advisory_xact_lock(hashtext(?))', [`riskwatch:sanctions:${input.source}`]);
      const previous = await em.execute<{ currency: string; address: string }[]>(
        'select currency, address from sanctioned_addresses where source = ?',
        [input.source],
      );
      await em.execute('delete from sanctioned_addresses where source = ?', [input.source], 'run');
      for (let i = 0; i < rows.length; i += IMPORT_BATCH) {
        const batch = rows.slice(i, i + IMPORT_BATCH);
        await em.execute(
          `insert into sanctioned_addresses
             (source, currency, address, entity_name, entity_uid, list_as_of, imported_at)
           select ?, r.currency, r.address, r.name, r.uid, ?::date, now()
             from jsonb_to_recordset(?::jsonb) as r(currency text, address text, name text, uid text)`,
          [input.source, input.listAsOf, JSON.stringify(batch)],
          'run',
        );
      }
      const before = new Set(previous.map(key));
      // Counted in a Map: a currency is file content, and `constructor` must not reach Object.prototype.
      const by_currency = new Map<string, number>();
      for (const r of rows) by_currency.set(r.currency, (by_currency.get(r.currency) ?? 0) + 1);
      const added = rows.filter((r) => !before.has(key(r))).length;
      return {
        source: input.source,
        list_as_of: input.listAsOf,
        total: rows.length,
        added,
        removed: before.size - (rows.length - added),
        by_currency: Object.fromEntries([...by_currency].sort(([a], [b]) => a.localeCompare(b))),
      };
    });
    await this.onChange('sanctions');
    return result;
  }

  /** The imported sanctions sources: as-of date, import time and counts per currency. */
  async sanctionSources(): Promise<SanctionsSourceView[]> {
    const rows = await this.orm.em
      .getConnection()
      .execute<
        { source: string; currency: string; n: string; list_as_of: string; imported_at: Date | string }[]
      >(
        `select source, currency, count(*) as n, to_char(max(list_as_of), 'YYYY-MM-DD') as list_as_of,
              max(imported_at) as imported_at
         from sanctioned_addresses group by source, currency order by source, currency`,
      );
    const sources = new Map<string, SanctionsSourceView>();
    for (const r of rows) {
      const view = sources.get(r.source) ?? {
        source: r.source,
        list_as_of: r.list_as_of,
        imported_at: new Date(r.imported_at).toISOString(),
        total: 0,
        // No prototype: a currency named `__proto__` is a key like any other.
        by_currency: Object.create(null) as Record<string, number>,
      };
      view.total += Number(r.n);
      view.by_currency[r.currency] = Number(r.n);
      sources.set(r.source, view);
    }
    return [...sources.values()];
  }
}
