import { Migration } from '@mikro-orm/migrations';

export class Migration20261124005653 extends Migration {

  override name = 'Migration20261124005653';

  override up(): void | Promise<void> {
    this.addSql(`create table "watchlists" ("id" varchar(40) not null, "account_id" varchar(40) not null, "name" varchar(200) not null, "schedule" varchar(100) not null, "deep_schedule" varchar(100) not null, "thresholds" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "watchlists_account_id_created_at_id_index" on "watchlists" ("account_id", "created_at", "id");`);

    this.addSql(`create table "watchlist_alerts" ("id" varchar(40) not null, "account_id" varchar(40) not null, "watchlist_id" varchar(40) not null, "entry_id" varchar(40) not null, "target" varchar(100) not null, "network" varchar(80) not null, "type" varchar(40) not null, "severity" varchar(20) not null, "previous" jsonb null, "current" jsonb null, "evidence" jsonb not null, "fingerprint" varchar(64) not null, "scan_id" varchar(80) not null, "status" text not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "watchlist_alerts_watchlist_id_created_at_id_index" on "watchlist_alerts" ("watchlist_id", "created_at", "id");`);
    this.addSql(`create index "watchlist_alerts_account_id_created_at_id_index" on "watchlist_alerts" ("account_id", "created_at", "id");`);
    this.addSql(`alter table "watchlist_alerts" add constraint "watchlist_alerts_entry_id_fingerprint_unique" unique ("entry_id", "fingerprint");`);

    this.addSql(`create table "watchlist_entries" ("id" varchar(40) not null, "account_id" varchar(40) not null, "watchlist_id" varchar(40) not null, "chain" varchar(40) not null, "network" varchar(80) not null, "target" varchar(100) not null, "label" varchar(200) null, "target_type" varchar(20) null, "created_at" timestamptz not null, "last_checked_at" timestamptz null, "last_outcome" varchar(40) null, "state_hash" varchar(64) null, "snapshot_id" varchar(40) null, "changed_at" timestamptz null, "risk_level" varchar(20) null, "risk_score" int null, "verdict" jsonb null, "deep_checked_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "watchlist_entries_watchlist_id_id_index" on "watchlist_entries" ("watchlist_id", "id");`);
    this.addSql(`create index "watchlist_entries_watchlist_id_risk_level_id_index" on "watchlist_entries" ("watchlist_id", "risk_level", "id");`);
    this.addSql(`create index "watchlist_entries_watchlist_id_changed_at_index" on "watchlist_entries" ("watchlist_id", "changed_at");`);
    this.addSql(`create index "watchlist_entries_watchlist_id_last_checked_at_index" on "watchlist_entries" ("watchlist_id", "last_checked_at");`);
    this.addSql(`alter table "watchlist_entries" add constraint "watchlist_entries_watchlist_id_network_target_unique" unique ("watchlist_id", "network", "target");`);

    this.addSql(`create table "watchlist_rescans" ("id" varchar(40) not null, "account_id" varchar(40) not null, "watchlist_id" varchar(40) not null, "total" int not null, "created_at" timestamptz not null, "finished_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "watchlist_rescans_watchlist_id_created_at_index" on "watchlist_rescans" ("watchlist_id", "created_at");`);

    this.addSql(`create table "watchlist_snapshots" ("id" varchar(40) not null, "account_id" varchar(40) not null, "entry_id" varchar(40) not null, "scan_id" varchar(80) not null, "state" jsonb not null, "hash" varchar(64) not null, "read_at_height" bigint not null, "read_at" timestamptz not null, "verdict" jsonb null, primary key ("id"));`);
    this.addSql(`create index "watchlist_snapshots_entry_id_read_at_id_index" on "watchlist_snapshots" ("entry_id", "read_at", "id");`);
    this.addSql(`alter table "watchlist_snapshots" add constraint "watchlist_snapshots_entry_id_scan_id_unique" unique ("entry_id", "scan_id");`);

    this.addSql(`alter table "watchlist_alerts" add constraint "watchlist_alerts_status_check" check ("status" in ('open', 'acknowledged', 'resolved'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "watchlists" cascade;`);
    this.addSql(`drop table if exists "watchlist_alerts" cascade;`);
    this.addSql(`drop table if exists "watchlist_entries" cascade;`);
    this.addSql(`drop table if exists "watchlist_rescans" cascade;`);
    this.addSql(`drop table if exists "watchlist_snapshots" cascade;`);
  }

}
