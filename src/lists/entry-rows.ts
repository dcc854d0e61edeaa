import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../platform/ids.js';
import { AppError } from '../platform/errors.js';
import { run, time, type Db, type Time } from '../db/sql.js';
import { displayAddress } from './addresses.js';
import type { ListEntry, ListName } from './entities.js';

/*
 * The statements on list_entries that writers share: the rows as raw queries return them, the per-account
 * ceiling, and the "add unless it is there" of ListsService.ensureEntry, which runs in its caller's
 * transaction and so must never fail a statement on a duplicate (PostgreSQL would abort the transaction).
 */

/** A raw-query row of list_entries (through row_to_json too: timestamps may arrive as strings). */
export interface EntryRow {
  id: string;
  list: ListName;
  chain: string | null;
  target: string;
  label: string | null;
  reason: string | null;
  created_at: Time;
  created_by: string;
}

export const ENTRY_COLUMNS = 'id, list, chain, target, label, reason, created_at, created_by';

export const entryOf = (row: EntryRow, accountId: string): ListEntry => ({
  id: row.id,
  accountId,
  list: row.list,
  chain: row.chain,
  target: row.target,
  label: row.label,
  reason: row.reason,
  createdAt: time(row.created_at),
  createdBy: row.created_by,
});

/** What the audit log keeps of an entry (`list_entry.added` after, `list_entry.removed` before). */
export const entryAudit = (e: ListEntry): Record<string, unknown> => ({
  list: e.list,
  chain: e.chain ?? null,
  target: displayAddress(e.target),
  label: e.label ?? null,
  reason: e.reason ?? null,
});

/**
 * The entry that covers (account, list, chain, target): the one for that chain, else the one for every
 * chain (chain null), as the risk engine picks them; with chain null, only an every-chain entry. Null when
 * there is none.
 */
export async function findCoveringEntry(
  db: Db,
  accountId: string,
  key: { list: ListName; chain: string | null; target: string },
): Promise<ListEntry | null> {
  const [row] = await run<EntryRow[]>(
    db,
    `select ${ENTRY_COLUMNS} from list_entries
      where account_id = ? and list = ? and target = ? and (chain = ? or chain is null)
      order by chain nulls last limit 1`,
    [accountId, key.list, key.target, key.chain],
  );
  return row ? entryOf(row, accountId) : null;
}

/**
 * Inserts the entry unless (account, list, chain, target) is taken: the new entry, or null when another
 * transaction's entry holds the key (ON CONFLICT waits for it and never raises). Its time is cut to the
 * millisecond, the precision of the list's cursors.
 */
export async function insertEntryIfAbsent(
  db: Db,
  accountId: string,
  e: {
    list: ListName;
    chain: string | null;
    target: string;
    label: string | null;
    reason: string | null;
    createdBy: string;
  },
): Promise<ListEntry | null> {
  const [row] = await run<EntryRow[]>(
    db,
    `insert into list_entries (id, account_id, list, chain, target, label, reason, created_at, created_by)
     values (?, ?, ?, ?, ?, ?, ?, date_trunc('milliseconds', now()), ?)
     on conflict do nothing
     returning ${ENTRY_COLUMNS}`,
    [newId('lst'), accountId, e.list, e.chain, e.target, e.label, e.reason, e.createdBy],
  );
  return row ? entryOf(row, accountId) : null;
}

/**
 * Refuses a new entry when the account's deny and allow lists together already hold the ceiling: the
 * risk engine keeps an account's lists in memory (ListsCache), so this bounds what one account costs
 * every replica. Runs in the adding transaction behind a per-account advisory lock, so concurrent adds
 * are counted one after the other and cannot pass the ceiling together.
 */
export async function checkEntryCeiling(
  em: EntityManager,
  accountId: string,
  max: number | undefined,
): Promise<void> {
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
