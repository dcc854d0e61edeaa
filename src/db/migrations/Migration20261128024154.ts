import { Migration } from '@mikro-orm/migrations';

/**
 * Compliance workflows (issue 21): the append-only audit log, bulk screenings and their results, verdict
 * feedback, and what usage records say about a call's target (feedback names a call by its request id).
 *
 * The audit log's trigger refuses UPDATE, TRUNCATE and DELETE. The one DELETE it admits is the retention
 * prune's: a transaction that names its cut-off in `riskwatch.audit_prune_before` (set_config, local to
 * the transaction) may delete rows older than that cut-off, and only when the cut-off itself is at least
 * 30 days old, so no setting ever deletes a fresh record. It guards against the application and its
 * operators' mistakes, not against a database superuser (who can drop a trigger).
 */
export class Migration20261128024154 extends Migration {

  override name = 'Migration20261128024154';

  override up(): void | Promise<void> {
    this.addSql(`create table "audit_log" ("id" varchar(40) not null, "account_id" varchar(40) null, "at" timestamptz not null, "actor_type" text not null, "actor_id" varchar(300) not null, "actor_label" varchar(300) null, "action" varchar(100) not null, "resource_type" varchar(60) not null, "resource_id" varchar(200) null, "request_id" varchar(200) null, "client_address" varchar(100) null, "before" jsonb null, "after" jsonb null, primary key ("id"));`);
    this.addSql(`create index "audit_log_account_id_at_id_index" on "audit_log" ("account_id", "at", "id");`);
    this.addSql(`create index "audit_log_at_id_index" on "audit_log" ("at", "id");`);

    this.addSql(`create table "feedback" ("id" varchar(40) not null, "account_id" varchar(40) not null, "created_at" timestamptz not null, "created_by" varchar(300) not null, "kind" text not null, "request_id" varchar(200) null, "usage_id" varchar(40) null, "endpoint" varchar(200) null, "target" varchar(200) not null, "chain" varchar(40) null, "network" varchar(40) null, "finding_code" varchar(100) null, "note" varchar(2000) null, "applied_list" varchar(10) null, "list_entry_id" varchar(40) null, primary key ("id"));`);
    this.addSql(`create index "feedback_account_id_created_at_id_index" on "feedback" ("account_id", "created_at", "id");`);
    this.addSql(`create index "feedback_account_id_target_index" on "feedback" ("account_id", "target");`);

    this.addSql(`create table "screenings" ("id" varchar(40) not null, "account_id" varchar(40) not null, "created_by" varchar(300) not null, "depth" text not null, "status" text not null, "total" int not null, "invalid" int not null, "processed" int not null, "counts" jsonb not null, "created_at" timestamptz not null, "started_at" timestamptz null, "completed_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "screenings_account_id_created_at_id_index" on "screenings" ("account_id", "created_at", "id");`);
    this.addSql(`create index "screenings_status_created_at_index" on "screenings" ("status", "created_at");`);

    this.addSql(`create table "screening_results" ("screening_id" varchar(40) not null, "seq" int not null, "target" varchar(200) not null, "chain" varchar(40) null, "network" varchar(40) null, "label" varchar(200) null, "status" varchar(10) not null, "level" varchar(10) null, "score" smallint null, "decision" varchar(10) null, "complete" boolean null, "findings" jsonb null, "error" jsonb null, primary key ("screening_id", "seq"));`);
    this.addSql(`create index "screening_results_screening_id_level_seq_index" on "screening_results" ("screening_id", "level", "seq");`);
    this.addSql(`create index "screening_results_screening_id_decision_seq_index" on "screening_results" ("screening_id", "decision", "seq");`);

    this.addSql(`alter table "usage_records" add "target" varchar(200) null, add "chain" varchar(40) null, add "network" varchar(40) null, add "targets" int null;`);
    this.addSql(`create index "usage_records_account_id_request_id_at_index" on "usage_records" ("account_id", "request_id", "at");`);

    this.addSql(`alter table "audit_log" add constraint "audit_log_actor_type_check" check ("actor_type" in ('api_key', 'user', 'operator'));`);

    this.addSql(`alter table "feedback" add constraint "feedback_kind_check" check ("kind" in ('false_positive', 'false_negative', 'confirmed_malicious'));`);

    this.addSql(`alter table "screenings" add constraint "screenings_depth_check" check ("depth" in ('lists', 'state', 'full'));`);
    this.addSql(`alter table "screenings" add constraint "screenings_status_check" check ("status" in ('queued', 'running', 'completed'));`);

    this.addSql(`create function audit_log_append_only() returns trigger language plpgsql as $$
      declare
        cutoff timestamptz := nullif(current_setting('riskwatch.audit_prune_before', true), '')::timestamptz;
      begin
        if tg_op = 'DELETE' and cutoff is not null and cutoff <= now() - interval '30 days'
           and old.at < cutoff then
          return old;
        end if;
        raise exception 'audit_log is append-only: % refused', tg_op
          using errcode = 'insufficient_privilege',
                hint = 'Records leave only through the retention prune (audit.retention_days).';
      end $$;`);
    this.addSql(`create trigger audit_log_append_only before update or delete on "audit_log"
      for each row execute function audit_log_append_only();`);
    this.addSql(`create trigger audit_log_no_truncate before truncate on "audit_log"
      for each statement execute function audit_log_append_only();`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "audit_log" cascade;`);
    this.addSql(`drop function if exists audit_log_append_only();`);
    this.addSql(`drop table if exists "feedback" cascade;`);
    this.addSql(`drop table if exists "screenings" cascade;`);
    this.addSql(`drop table if exists "screening_results" cascade;`);

    this.addSql(`drop index "usage_records_account_id_request_id_at_index";`);
    this.addSql(`alter table "usage_records" drop column "target", drop column "chain", drop column "network", drop column "targets";`);
  }

}
