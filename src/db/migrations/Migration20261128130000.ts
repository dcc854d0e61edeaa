import { Migration } from '@mikro-orm/migrations';

/**
 * Watchlists at millions of entries (issue 23, part 3).
 *
 * 1. `watchlist_entries (watchlist_id, network, id)`: the tick's fan-out pages a list's entry ids network
 *    by network in id order (src/watchlists/repository/scans.ts) and lists its networks by skipping
 *    through this index. Before, the page was served by (watchlist_id, id) with a filter on the network,
 *    or, while a new list had no statistics (imported after the last ANALYZE), by whichever index on
 *    watchlist_id was smallest, every row of the list sorted for each page of 1,000: 65 ms instead of
 *    0.5 ms per page at 100,000 entries. The repository also runs those reads with sorting disabled, so
 *    the planner takes an index that gives the order whatever it believes the list holds. The build
 *    holds writes to the table (not reads) while it reads every row: seconds per million entries.
 *
 * 2. `watchlist_entry_counts`: each account's entries on all its watchlists, the number the
 *    account's ceiling (`watchlists.max_entries_per_account`) is checked against, instead of count(*)
 *    under the account's lock (200 ms per bulk call at 1M entries, 1,000 calls for a 1M-row CSV import).
 *    Statement-level AFTER triggers keep it, in the writing statement's transaction, from the rows
 *    really inserted or deleted (transition tables: an `on conflict do nothing` row is not counted): one
 *    upsert per statement and account, not one per row, whichever code writes (the API, the CSV import,
 *    a list deleted with its entries, an operator's fix-up). TRUNCATE empties it. Nothing moves an entry
 *    to another account (no statement updates `account_id`; an UPDATE trigger with transition tables
 *    would capture every scan's row updates). Creating the triggers holds writers until this migration
 *    commits, so the backfill below counts every entry made before them and the triggers every one after.
 */
export class Migration20261128130000 extends Migration {

  override name = 'Migration20261128130000';

  override up(): void | Promise<void> {
    this.addSql(`create index "watchlist_entries_watchlist_id_network_id_index" on "watchlist_entries" ("watchlist_id", "network", "id");`);

    this.addSql(`create table "watchlist_entry_counts" ("account_id" varchar(40) not null, "entries" bigint not null, primary key ("account_id"));`);
    // Accounts in key order in every statement: two statements writing several accounts lock them in
    // the same order (the service writes one account per statement anyway).
    this.addSql(`create function watchlist_entry_counts_follow() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          insert into watchlist_entry_counts as c (account_id, entries)
          select account_id, count(*) from inserted group by account_id order by account_id
          on conflict (account_id) do update set entries = c.entries + excluded.entries;
        elsif tg_op = 'DELETE' then
          insert into watchlist_entry_counts as c (account_id, entries)
          select account_id, -count(*) from deleted group by account_id order by account_id
          on conflict (account_id) do update set entries = c.entries + excluded.entries;
        else
          delete from watchlist_entry_counts;
        end if;
        return null;
      end $$;`);
    this.addSql(`create trigger watchlist_entry_counts_inserted after insert on watchlist_entries
      referencing new table as inserted for each statement execute function watchlist_entry_counts_follow();`);
    this.addSql(`create trigger watchlist_entry_counts_deleted after delete on watchlist_entries
      referencing old table as deleted for each statement execute function watchlist_entry_counts_follow();`);
    this.addSql(`create trigger watchlist_entry_counts_truncated after truncate on watchlist_entries
      for each statement execute function watchlist_entry_counts_follow();`);
    this.addSql(`insert into watchlist_entry_counts (account_id, entries)
      select account_id, count(*) from watchlist_entries group by account_id;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists watchlist_entry_counts_truncated on watchlist_entries;`);
    this.addSql(`drop trigger if exists watchlist_entry_counts_deleted on watchlist_entries;`);
    this.addSql(`drop trigger if exists watchlist_entry_counts_inserted on watchlist_entries;`);
    this.addSql(`drop function if exists watchlist_entry_counts_follow();`);
    this.addSql(`drop table if exists "watchlist_entry_counts";`);
    this.addSql(`drop index if exists "watchlist_entries_watchlist_id_network_id_index";`);
  }

}
