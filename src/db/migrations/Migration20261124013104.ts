import { Migration } from '@mikro-orm/migrations';

export class Migration20261124013104 extends Migration {

  override name = 'Migration20261124013104';

  override up(): void | Promise<void> {
    this.addSql(`create table "events" ("id" varchar(40) not null, "account_id" varchar(40) not null, "seq" bigint not null, "type" varchar(60) not null, "watchlist_id" varchar(40) null, "data" jsonb not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "events_created_at_index" on "events" ("created_at");`);
    this.addSql(`alter table "events" add constraint "events_account_id_seq_unique" unique ("account_id", "seq");`);

    this.addSql(`create table "event_sequences" ("account_id" varchar(40) not null, "last_seq" bigint not null, primary key ("account_id"));`);

    this.addSql(`create table "webhook_attempts" ("id" varchar(40) not null, "account_id" varchar(40) not null, "delivery_id" varchar(40) not null, "endpoint_id" varchar(40) not null, "attempted_at" timestamptz not null, "status_code" int null, "latency_ms" int not null, "error" varchar(200) null, "response_body" varchar(1000) null, primary key ("id"));`);
    this.addSql(`create index "webhook_attempts_delivery_id_attempted_at_index" on "webhook_attempts" ("delivery_id", "attempted_at");`);

    this.addSql(`create table "webhook_deliveries" ("id" varchar(40) not null, "account_id" varchar(40) not null, "endpoint_id" varchar(40) not null, "event_id" varchar(40) not null, "event_seq" bigint not null, "status" text not null, "attempts" int not null, "next_attempt_at" timestamptz null, "last_attempt_at" timestamptz null, "last_status_code" int null, "last_error" varchar(200) null, "created_at" timestamptz not null, "succeeded_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "webhook_deliveries_endpoint_id_status_next_attempt_at_index" on "webhook_deliveries" ("endpoint_id", "status", "next_attempt_at");`);
    this.addSql(`create index "webhook_deliveries_account_id_created_at_id_index" on "webhook_deliveries" ("account_id", "created_at", "id");`);
    this.addSql(`create index "webhook_deliveries_status_next_attempt_at_index" on "webhook_deliveries" ("status", "next_attempt_at");`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_endpoint_id_event_id_unique" unique ("endpoint_id", "event_id");`);

    this.addSql(`create table "webhook_endpoints" ("id" varchar(40) not null, "account_id" varchar(40) not null, "url" varchar(2048) not null, "description" varchar(500) null, "events" jsonb not null, "watchlist_ids" jsonb null, "enabled" boolean not null, "secret" varchar(100) not null, "previous_secret" varchar(100) null, "previous_secret_expires_at" timestamptz null, "disabled_at" timestamptz null, "disabled_reason" varchar(200) null, "failing_since" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "webhook_endpoints_account_id_created_at_id_index" on "webhook_endpoints" ("account_id", "created_at", "id");`);

    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_status_check" check ("status" in ('pending', 'succeeded', 'failed'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "events" cascade;`);
    this.addSql(`drop table if exists "event_sequences" cascade;`);
    this.addSql(`drop table if exists "webhook_attempts" cascade;`);
    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);
    this.addSql(`drop table if exists "webhook_endpoints" cascade;`);
  }

}
