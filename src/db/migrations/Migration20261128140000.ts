import { Migration } from '@mikro-orm/migrations';

/**
 * Entry counts per watchlist (issue 23, part 3): `watchlist_entry_counts` (Migration20261128130000) is now
 * kept per account and list, `(account_id, watchlist_id) → entries`, by the same statement triggers.
 * A list's `entry_count` (GET of a list, the page of lists, the audit record of a deletion) reads its row
 * instead of counting the list's entries (a count(*) of 1M index entries per list, per read); the
 * account's ceiling reads the sum of its lists' rows (at most `watchlists.max_per_account`, one index
 * range). A list's row goes when its last entry does (a deleted list leaves none; no row reads as 0), so
 * the table needs no foreign key, which the cascade deleting a list's entries would trip over: the
 * trigger runs after the list's row is gone.
 *
 * The table is emptied and refilled in this transaction, writers of watchlist_entries held meanwhile
 * (SHARE ROW EXCLUSIVE: reads go on): every entry is counted once, by the backfill or by the trigger. The
 * counter table is locked first: a bulk add reads it (the ceiling) before it inserts entries, so locking
 * the entries first would wait for such an add while it waits for the counters (a deadlock).
 */
export class Migration20261128140000 extends Migration {

  override name = 'Migration20261128140000';

  override up(): void | Promise<void> {
    this.addSql(`lock table "watchlist_entry_counts" in access exclusive mode;`);
    this.addSql(`lock table "watchlist_entries" in share row exclusive mode;`);
    this.addSql(`delete from "watchlist_entry_counts";`);
    this.addSql(`alter table "watchlist_entry_counts" drop constraint "watchlist_entry_counts_pkey";`);
    this.addSql(`alter table "watchlist_entry_counts" add column "watchlist_id" varchar(40) not null;`);
    this.addSql(`alter table "watchlist_entry_counts" add constraint "watchlist_entry_counts_pkey" primary key ("account_id", "watchlist_id");`);
    // Keys in order in every statement: two statements writing several lists lock their rows in the
    // same order (the service writes one list per statement anyway).
    this.addSql(`create or replace function watchlist_entry_counts_follow() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          insert into watchlist_entry_counts as c (account_id, watchlist_id, entries)
          select account_id, watchlist_id, count(*) from inserted
           group by account_id, watchlist_id order by account_id, watchlist_id
          on conflict (account_id, watchlist_id) do update set entries = c.entries + excluded.entries;
        elsif tg_op = 'DELETE' then
          insert into watchlist_entry_counts as c (account_id, watchlist_id, entries)
          select account_id, watchlist_id, -count(*) from deleted
           group by account_id, watchlist_id order by account_id, watchlist_id
          on conflict (account_id, watchlist_id) do update set entries = c.entries + excluded.entries;
          delete from watchlist_entry_counts c
           using (select distinct account_id, watchlist_id from deleted) d
           where c.account_id = d.account_id and c.watchlist_id = d.watchlist_id and c.entries <= 0;
        else
          delete from watchlist_entry_counts;
        end if;
        return null;
      end $$;`);
    this.addSql(`insert into watchlist_entry_counts (account_id, watchlist_id, entries)
      select account_id, watchlist_id, count(*) from watchlist_entries group by account_id, watchlist_id;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`lock table "watchlist_entry_counts" in access exclusive mode;`);
    this.addSql(`lock table "watchlist_entries" in share row exclusive mode;`);
    this.addSql(`delete from "watchlist_entry_counts";`);
    this.addSql(`alter table "watchlist_entry_counts" drop constraint "watchlist_entry_counts_pkey";`);
    this.addSql(`alter table "watchlist_entry_counts" drop column "watchlist_id";`);
    this.addSql(`alter table "watchlist_entry_counts" add constraint "watchlist_entry_counts_pkey" primary key ("account_id");`);
    this.addSql(`create or replace function watchlist_entry_counts_follow() returns trigger language plpgsql as $$
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
    this.addSql(`insert into watchlist_entry_counts (account_id, entries)
      select account_id, count(*) from watchlist_entries group by account_id;`);
  }

}
