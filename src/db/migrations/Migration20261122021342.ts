import { Migration } from '@mikro-orm/migrations';

export class Migration20261122021342 extends Migration {

  override name = 'Migration20261122021342';

  override up(): void | Promise<void> {
    this.addSql(`create table "accounts" ("id" varchar(40) not null, "org_id" varchar(200) not null, "name" varchar(200) not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "accounts" add constraint "accounts_org_id_unique" unique ("org_id");`);

    this.addSql(`create table "api_keys" ("id" varchar(40) not null, "account_id" varchar(40) not null, "name" varchar(200) not null, "prefix" varchar(8) not null, "key_hash" varchar(64) not null, "created_by" varchar(300) not null, "created_at" timestamptz not null, "expires_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_key_hash_unique" unique ("key_hash");`);
    this.addSql(`create index "api_keys_account_id_created_at_index" on "api_keys" ("account_id", "created_at");`);

    this.addSql(`create table "entitlements" ("id" varchar(40) not null, "account_id" varchar(40) not null, "plan" varchar(40) not null, "status" text not null, "expires_at" timestamptz null, "rate_limit_per_min" int null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "entitlements" add constraint "entitlements_account_id_plan_unique" unique ("account_id", "plan");`);

    this.addSql(`create table "impact_counters" ("metric" varchar(60) not null, "hour" timestamptz not null, "count" bigint not null, primary key ("metric", "hour"));`);

    this.addSql(`create table "impact_snapshots" ("id" smallint primary key, "body" jsonb not null, "generated_at" timestamptz not null);`);

    this.addSql(`create table "usage_records" ("id" varchar(40) not null, "account_id" varchar(40) not null, "api_key_id" varchar(40) not null, "api_key_prefix" varchar(8) not null, "method" varchar(10) not null, "endpoint" varchar(200) not null, "status" smallint not null, "latency_ms" int not null, "request_id" varchar(200) not null, "at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "usage_records_account_id_at_id_index" on "usage_records" ("account_id", "at", "id");`);

    this.addSql(`alter table "api_keys" add constraint "api_keys_account_id_foreign" foreign key ("account_id") references "accounts" ("id");`);

    this.addSql(`alter table "entitlements" add constraint "entitlements_account_id_foreign" foreign key ("account_id") references "accounts" ("id");`);
    this.addSql(`alter table "entitlements" add constraint "entitlements_status_check" check ("status" in ('active', 'suspended', 'revoked'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "api_keys" drop constraint "api_keys_account_id_foreign";`);
    this.addSql(`alter table "entitlements" drop constraint "entitlements_account_id_foreign";`);

    this.addSql(`drop table if exists "accounts" cascade;`);
    this.addSql(`drop table if exists "api_keys" cascade;`);
    this.addSql(`drop table if exists "entitlements" cascade;`);
    this.addSql(`drop table if exists "impact_counters" cascade;`);
    this.addSql(`drop table if exists "impact_snapshots" cascade;`);
    this.addSql(`drop table if exists "usage_records" cascade;`);
  }

}
