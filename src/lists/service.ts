import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { actorName, operatorActor, type Actor } from '../audit/actor.js';
import { recordAudit } from '../audit/log.js';
import { inferChainFromAddress, parseAddress } from '../chains/addresses.js';
import { clip, resolveNetwork, type NetworkDef } from '../chains/registry.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { AppError, invalidRequest, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { Orm } from '../db/orm.js';
import { run, runBound, time, Where, type Time } from '../db/sql.js';
import { displayAddress, normaliseAddress } from './addresses.js';
import { LIST_NAMES, ListEntrySchema, type ListEntry, type ListName } from './entities.js';
import {
  checkEntryCeiling,
  ENTRY_COLUMNS,
  entryAudit,
  entryOf,
  findCoveringEntry,
  insertEntryIfAbsent,
  type EntryRow,
} from './entry-rows.js';
import type { SanctionRecord } from './sanctions-files.js';
import type { ListEntriesQuery, ListEntryBody, NewListEntry, SanctionMatchBody } from './schemas.js';

export type { ListEntry, ListName } from './entities.js';

/** A sanctions list that names an address. */
export interface SanctionMatch {
  source: string;
  currency: string;
  /** The listed party, and its uid on that list. */
  name: string;
  uid: string | null;
  /** YYYY-MM-DD: the publication date of the list the match comes from. */
  listAsOf: string;
}

/**
 * What the lists say about one target for one account (ListsCache answers it from memory). Entries and
 * matches are as the API shows them: the risk engine puts them in findings' evidence as they are.
 */
export interface ListStatus {
  denied: ListEntryBody | null;
  allowed: ListEntryBody | null;
  sanctioned: SanctionMatchBody | null;
}

/** What an import changed. */
export interface SanctionsImport {
  source: string;
  listAsOf: string;
  total: number;
  added: number;
  removed: number;
  /** Addresses per currency label, by label. */
  byCurrency: Map<string, number>;
}

/** One imported sanctions source. */
export interface SanctionsSource {
  source: string;
  listAsOf: string;
  importedAt: Date;
  total: number;
  byCurrency: Map<string, number>;
}

interface SanctionRow {
  source: string;
  currency: string;
  entity_name: string;
  entity_uid: string | null;
  list_as_of: string;
}

/** list_as_of as text: a `date` must not pass through a JS Date (and the server's time zone). */
const SANCTION_COLUMNS = `source, currency, entity_name, entity_uid, to_char(list_as_of, 'YYYY-MM-DD') as list_as_of`;
/** Rows per INSERT of an import (one JSON parameter each). */
const IMPORT_BATCH = 5000;

/** `deny` / `allow`; any other name in a path is a list that does not exist (404, as for any resource). */
export function listName(list: string): ListName {
  if ((LIST_NAMES as readonly string[]).includes(list)) return list as ListName;
  throw new AppError('not_found', `List "${clip(list)}" was not found: the lists are deny and allow.`);
}

const sanctionMatch = (r: SanctionRow): SanctionMatch => ({
  source: r.source,
  currency: r.currency,
  name: r.entity_name,
  uid: r.entity_uid,
  listAsOf: r.list_as_of,
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
    const rows = await run<(SanctionRow & { address: string })[]>(
      this.orm,
      `select address, ${SANCTION_COLUMNS} from sanctioned_addresses order by address, source, currency`,
    );
    const index = new Map<string, SanctionMatch>();
    for (const row of rows) if (!index.has(row.address)) index.set(row.address, sanctionMatch(row));
    return index;
  }

  /**
   * Every entry of the account's lists, newest first, as plain objects: ListsCache keeps them a while, and
   * managed entities would keep their EntityManager alive with them.
   */
  async orgEntries(accountId: string): Promise<ListEntry[]> {
    const rows = await run<EntryRow[]>(
      this.orm,
      `select ${ENTRY_COLUMNS} from list_entries where account_id = ? order by created_at desc, id desc`,
      [accountId],
    );
    return rows.map((row) => entryOf(row, accountId));
  }

  /** One page of a list, newest first, optionally only the entries for one target. */
  async listEntries(accountId: string, list: string, q: ListEntriesQuery): Promise<Page<ListEntry>> {
    const where = new Where('account_id = ? and list = ?', accountId, listName(list));
    if (q.target !== undefined) where.and('target = ?', normaliseAddress(q.target));
    where.before(q.cursor, 'lst', 'created_at', 'id');
    const rows = await run<EntryRow[]>(
      this.orm,
      `select ${ENTRY_COLUMNS} from list_entries where ${where.sql}
          order by created_at desc, id desc limit ?`,
      [...where.params, q.limit + 1],
    );
    return keysetPage(
      rows.map((row) => entryOf(row, accountId)),
      q.limit,
      (e) => ({ at: e.createdAt.toISOString(), id: e.id }),
    );
  }

  /**
   * Adds a target to a list. With a chain or network the target must be an address of that chain and the
   * entry applies there; without either, the address format decides the validation (`0x…` EVM, base58
   * Solana) and the entry applies on every chain. The same target twice on one list and chain → conflict.
   * Audited (`list_entry.added`) in the same transaction.
   */
  async addEntry(accountId: string, list: string, input: NewListEntry, actor: Actor): Promise<ListEntry> {
    const name = listName(list);
    const { chain, target } = this.resolveTarget(input);
    let entry: ListEntry;
    try {
      entry = await this.orm.em.fork().transactional(async (em) => {
        await checkEntryCeiling(em, accountId, this.limits.maxEntriesPerAccount);
        const created = em.create(ListEntrySchema, {
          id: newId('lst'),
          accountId,
          list: name,
          chain,
          target,
          label: input.label || null,
          reason: input.reason || null,
          createdBy: actorName(actor),
        });
        await em.persist(created).flush();
        await this.audit(em, actor, 'list_entry.added', created);
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
    return entry;
  }

  /**
   * Puts a target on a list inside the caller's transaction `em` (feedback applied to a list, …): the entry
   * of (account, list, chain, target) when there is one, or the target's every-chain entry on that list,
   * which covers the chain too (`created: false`, no 409, nothing audited), else a new one, within the
   * per-account ceiling (`limit_exceeded`), audited `list_entry.added` in `em`. The
   * target and chain are checked as addEntry checks them. No statement fails on a duplicate, so the caller's
   * transaction survives a race with another writer. The caller tells the risk engine after its commit:
   * `changed(accountId)`.
   */
  async ensureEntry(
    em: EntityManager,
    accountId: string,
    list: string,
    input: Pick<NewListEntry, 'target' | 'chain' | 'network' | 'label' | 'reason'>,
    actor: Actor,
  ): Promise<{ entry: ListEntry; created: boolean }> {
    const key = { list: listName(list), ...this.resolveTarget(input) };
    const existing = await findCoveringEntry(em, accountId, key);
    if (existing) return { entry: existing, created: false };
    await checkEntryCeiling(em, accountId, this.limits.maxEntriesPerAccount);
    const row = {
      ...key,
      label: input.label || null,
      reason: input.reason || null,
      createdBy: actorName(actor),
    };
    const created = await insertEntryIfAbsent(em, accountId, row);
    if (!created) {
      // Another transaction added it meanwhile (and committed: ON CONFLICT waited for it).
      const theirs = await findCoveringEntry(em, accountId, key);
      if (theirs) return { entry: theirs, created: false };
      throw new AppError('conflict', 'The list entry changed meanwhile; try again.');
    }
    await this.audit(em, actor, 'list_entry.added', created);
    return { entry: created, created: true };
  }

  /** Tells the risk engine (every replica) that the account's lists changed: after a commit of ensureEntry. */
  changed(accountId: string): Promise<void> {
    return this.onChange({ accountId });
  }

  /**
   * Removes an entry of this account's list, audited (`list_entry.removed`) in the same transaction;
   * another account's entry (or another list's) is not found.
   */
  async removeEntry(accountId: string, list: string, id: string, actor: Actor): Promise<ListEntry> {
    const name = listName(list);
    const entry = await this.orm.em.fork().transactional(async (em) => {
      const found = await em.findOne(ListEntrySchema, { id, accountId, list: name });
      if (!found) throw notFound(`List entry "${clip(id)}"`);
      await em.remove(found).flush();
      await this.audit(em, actor, 'list_entry.removed', found);
      return found;
    });
    await this.onChange({ accountId });
    return entry;
  }

  private audit(em: EntityManager, actor: Actor, action: string, entry: ListEntry): Promise<void> {
    const view = entryAudit(entry);
    return recordAudit(em, actor, {
      accountId: entry.accountId,
      action,
      resourceType: 'list_entry',
      resourceId: entry.id,
      ...(action === 'list_entry.removed' ? { before: view } : { after: view }),
    });
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
   * Audited (`sanctions.imported`, no account; the operator `actor`) in the same transaction.
   */
  async importSanctions(
    input: { source: string; listAsOf: string; records: SanctionRecord[] },
    actor: Actor = operatorActor(),
  ): Promise<SanctionsImport> {
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
        await runBound(
          em,
          `insert into sanctioned_addresses
             (source, currency, address, entity_name, entity_uid, list_as_of, imported_at)
           select $1, r.currency, r.address, r.name, r.uid, $2::date, now()
             from jsonb_to_recordset($3::jsonb) as r(currency text, address text, name text, uid text)`,
          [input.source, input.listAsOf, JSON.stringify(batch)],
        );
      }
      const before = new Set(previous.map(key));
      // Counted in a Map: a currency is file content, and `constructor` must not reach Object.prototype.
      const byCurrency = new Map<string, number>();
      for (const r of rows) byCurrency.set(r.currency, (byCurrency.get(r.currency) ?? 0) + 1);
      const added = rows.filter((r) => !before.has(key(r))).length;
      const removed = before.size - (rows.length - added);
      await recordAudit(em, actor, {
        accountId: null,
        action: 'sanctions.imported',
        resourceType: 'sanctions_source',
        resourceId: input.source,
        after: { source: input.source, list_as_of: input.listAsOf, total: rows.length, added, removed },
      });
      return {
        source: input.source,
        listAsOf: input.listAsOf,
        total: rows.length,
        added,
        removed,
        byCurrency: new Map([...byCurrency].sort(([a], [b]) => a.localeCompare(b))),
      };
    });
    await this.onChange('sanctions');
    return result;
  }

  /** The imported sanctions sources: as-of date, import time and counts per currency. */
  async sanctionSources(): Promise<SanctionsSource[]> {
    const rows = await run<
      { source: string; currency: string; n: string; list_as_of: string; imported_at: Time }[]
    >(
      this.orm,
      `select source, currency, count(*) as n, to_char(max(list_as_of), 'YYYY-MM-DD') as list_as_of,
              max(imported_at) as imported_at
         from sanctioned_addresses group by source, currency order by source, currency`,
    );
    const sources = new Map<string, SanctionsSource>();
    for (const r of rows) {
      const source = sources.get(r.source) ?? {
        source: r.source,
        listAsOf: r.list_as_of,
        importedAt: time(r.imported_at),
        total: 0,
        byCurrency: new Map<string, number>(),
      };
      source.total += Number(r.n);
      source.byCurrency.set(r.currency, Number(r.n));
      sources.set(r.source, source);
    }
    return [...sources.values()];
  }
}
