import { Migration } from '@mikro-orm/migrations';

export class Migration20261122032808 extends Migration {

  override name = 'Migration20261122032808';

  override up(): void | Promise<void> {
    this.addSql(`create table "list_entries" ("id" varchar(40) not null, "account_id" varchar(40) not null, "list" text not null, "chain" varchar(40) null, "target" varchar(200) not null, "label" varchar(200) null, "reason" varchar(1000) null, "created_at" timestamptz not null, "created_by" varchar(300) not null, primary key ("id"));`);
    this.addSql(`create index "list_entries_account_id_list_created_at_id_index" on "list_entries" ("account_id", "list", "created_at", "id");`);
    this.addSql(`create index "list_entries_account_id_target_index" on "list_entries" ("account_id", "target");`);
    this.addSql(`create unique index "list_entries_account_id_list_chain_target_unique" on "list_entries" ("account_id", "list", "chain", "target") nulls not distinct;`);

    this.addSql(`create table "sanctioned_addresses" ("source" varchar(100) not null, "currency" varchar(20) not null, "address" varchar(200) not null, "entity_name" varchar(500) not null, "entity_uid" varchar(100) null, "list_as_of" date not null, "imported_at" timestamptz not null, primary key ("source", "currency", "address"));`);
    this.addSql(`create index "sanctioned_addresses_address_index" on "sanctioned_addresses" ("address");`);

    this.addSql(`alter table "list_entries" add constraint "list_entries_list_check" check ("list" in ('deny', 'allow'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "list_entries" cascade;`);
    this.addSql(`drop table if exists "sanctioned_addresses" cascade;`);
  }

}
