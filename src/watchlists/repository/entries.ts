import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../../db/orm.js';
import { run, textArray, Where } from '../../db/sql.js';
import { decodeCursor } from '../../platform/cursor.js';
import type { EntriesQuery } from '../schemas.js';
import type { EntryRow } from '../views.js';

const ENTRY_COLUMNS =
  'id, watchlist_id, chain, network, target, label, target_type, created_at, last_checked_at, last_outcome, ' +
  'changed_at, risk_level, risk_score, verdict';

/** A new entry's row (its list and account given apart). */
export interface NewEntryRow {
  id: string;
  chain: string;
  /** CAIP-2 id. */
  network: string;
  target: string;
  label: string | null;
  target_type: string | null;
}

/** A (network, target) pair of a removal, with the index of the request item it answers. */
export interface TargetProbe {
  i: number;
  network: string;
  target: string;
}

/** The existence look-up of a bulk add (exported for the plan test). */
export const withTargetsSql =
  'select id, network, target from watchlist_entries ' +
  'where watchlist_id = ? and network = any(?::text[]) and target = any(?::text[])';

/** The watchlist_entries table, and the snapshots and alerts that go with a removed entry. */
export class EntryRows {
  constructor(private readonly orm: Orm) {}

  /**
   * The entries of the list at one of `networks` with one of `targets`: `network = any(…) and target =
   * any(…)`, both index conditions of the (watchlist_id, network, target) unique index, so PostgreSQL
   * descends it once per pair asked (the caller keeps the pairs it wants). With `target = any(…)` alone
   * the index was scanned over every entry of the list for each batch (a bulk add of 10,000 took 0.4 s on
   * an empty list, 1.7 s on a list of 1,000,000). A lateral probe per row let the planner, on a list whose
   * statistics are stale (a new large list, before autovacuum's ANALYZE), filter every row of the list
   * for each probe.
   */
  withTargets(
    em: EntityManager,
    watchlistId: string,
    networks: readonly string[],
    targets: readonly string[],
  ): Promise<{ id: string; network: string; target: string }[]> {
    return em.execute<{ id: string; network: string; target: string }[]>(withTargetsSql, [
      watchlistId,
      textArray(networks),
      textArray(targets),
    ]);
  }

  /**
   * Entries on all the account's lists together, in `em`'s transaction: its lists' counters
   * (watchlist_entry_counts), which statement triggers on watchlist_entries move in the transaction of
   * every insert and delete (Migration20261128140000), so reading them costs the same at 10 entries or 10
   * million (count(*) took 200 ms at 1M, under the account's lock, for each bulk call). Read under the
   * account's lock, it counts every add committed before; a delete not yet committed is still counted
   * (the safe side of a ceiling).
   */
  async countOfAccount(em: EntityManager, accountId: string): Promise<number> {
    const [row] = await em.execute<{ n: string }[]>(
      'select coalesce(sum(entries), 0) as n from watchlist_entry_counts where account_id = ?',
      [accountId],
    );
    return Number(row?.n ?? 0);
  }

  /** Inserts `rows` on the list (one statement); returns those inserted (one already there is skipped). */
  insert(
    em: EntityManager,
    accountId: string,
    watchlistId: string,
    rows: readonly NewEntryRow[],
  ): Promise<{ id: string; network: string; target: string }[]> {
    return em.execute<{ id: string; network: string; target: string }[]>(
      `insert into watchlist_entries (id, account_id, watchlist_id, chain, network, target, label, target_type, created_at)
       select r.id, ?, ?, r.chain, r.network, r.target, r.label, r.target_type, now()
         from jsonb_to_recordset(?::jsonb)
           as r(id text, chain text, network text, target text, label text, target_type text)
       on conflict (watchlist_id, network, target) do nothing
       returning id, network, target`,
      [accountId, watchlistId, JSON.stringify(rows)],
    );
  }

  /** One page of the list's entries in id order, filtered (`limit + 1` rows). */
  page(accountId: string, watchlistId: string, q: EntriesQuery): Promise<EntryRow[]> {
    const where = new Where('watchlist_id = ?', watchlistId)
      .and('account_id = ?', accountId)
      .andIf(q.level, 'risk_level = ?')
      .andIf(q.changed_since, 'changed_at >= ?')
      .andIf(q.cursor && decodeCursor(q.cursor, 'wle').id, 'id > ?');
    return run<EntryRow[]>(
      this.orm,
      `select ${ENTRY_COLUMNS} from watchlist_entries where ${where.sql} order by id limit ?`,
      [...where.params, q.limit + 1],
    );
  }

  /** Deletes one entry of the list with its snapshots and alerts; its row, or undefined when not there. */
  async deleteOne(
    em: EntityManager,
    accountId: string,
    watchlistId: string,
    entryId: string,
  ): Promise<EntryRow | undefined> {
    const [row] = await em.execute<EntryRow[]>(
      `delete from watchlist_entries where id = ? and watchlist_id = ? and account_id = ? returning ${ENTRY_COLUMNS}`,
      [entryId, watchlistId, accountId],
    );
    if (row) await this.deleteHistory(em, accountId, [row.id]);
    return row;
  }

  /**
   * Deletes the list's entries at the (network, target) pairs of `probes` (looked up through the unique
   * index, one probe per pair, then deleted by id), with their snapshots and alerts; returns each entry
   * deleted with the index of its probe.
   */
  async deleteAt(
    em: EntityManager,
    accountId: string,
    watchlistId: string,
    probes: readonly TargetProbe[],
  ): Promise<{ id: string; i: number }[]> {
    const found = await em.execute<{ id: string; i: number }[]>(
      `select e.id, r.i from jsonb_to_recordset(?::jsonb) as r(i int, network text, target text)
         cross join lateral (
           select id from watchlist_entries
            where watchlist_id = ? and network = r.network and target = r.target and account_id = ?
            limit 1) e`,
      [JSON.stringify(probes), watchlistId, accountId],
    );
    if (found.length === 0) return [];
    const ids = found.map((r) => r.id);
    await em.execute(
      'delete from watchlist_entries where id in (select jsonb_array_elements_text(?::jsonb))',
      [JSON.stringify(ids)],
      'run',
    );
    await this.deleteHistory(em, accountId, ids);
    return found;
  }

  /** Deletes the snapshots and alerts of removed entries. */
  private async deleteHistory(em: EntityManager, accountId: string, entryIds: readonly string[]) {
    const ids = JSON.stringify(entryIds);
    for (const table of ['watchlist_snapshots', 'watchlist_alerts'])
      await em.execute(
        `delete from ${table} where account_id = ? and entry_id in (select jsonb_array_elements_text(?::jsonb))`,
        [accountId, ids],
        'run',
      );
  }
}
