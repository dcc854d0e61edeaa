import { Migration } from '@mikro-orm/migrations';

/**
 * Day partitions (issue 23): usage_records, webhook_attempts and audit_log become tables partitioned by
 * range of their time (one partition per UTC day, made ahead by the `partitions-maintain` job; see
 * src/db/partitions.ts), so retention drops a whole day instead of deleting it row by row.
 *
 * PostgreSQL cannot partition a table in place. Per table, in this one transaction (writers wait on the
 * table's lock meanwhile, none fails, no row is copied):
 *   1. the table is renamed `<table>_historical` (its indexes get the same prefix);
 *   2. its primary key becomes (id, <time>): every unique index of a partitioned table must hold the
 *      partition key. This is the one step that reads every row (an index build); ids are unique alone
 *      anyway (time-ordered, 64 random bits), and a replayed usage batch repeats id and time together, so
 *      the drain's `on conflict` keeps working on (id, at);
 *   3. the partitioned parent is made with the old name, the same columns, constraints and indexes;
 *   4. the old table gets a CHECK on its range, validated first, so ATTACH finds the partition constraint
 *      implied and does not scan it again; it is attached as [MINVALUE, start of tomorrow (UTC)), or of
 *      the day after the newest row if a row is later than today: the range covers every row present;
 *   5. a DEFAULT partition takes whatever no other partition does (the job was not running): an insert
 *      never fails for want of a partition;
 *   6. triggers move to the parent: the usage rollups' statement trigger (rows inserted into any partition
 *      through the parent are in its transition table), the audit log's append-only row trigger (cloned
 *      by PostgreSQL onto every partition) and its TRUNCATE guard (on the parent and on each partition).
 * Rows arriving after the historical range go to day partitions, or the default until the job runs.
 *
 * Not partitioned, on purpose: `events` and `webhook_deliveries`. Their unique rules do not survive the
 * partition key: events' (account_id, seq) would become (account_id, seq, created_at), no longer one
 * event per number; deliveries' (endpoint_id, event_id), which makes a fan-out replayed idempotent
 * (`on conflict do nothing`), would become per time and let a replay make a second delivery. Deliveries
 * are also updated in place and read by id and by event id, which a time key cannot prune. Both stay
 * pruned by DELETE (they are one row per event and per endpoint, not per call or per attempt).
 *
 * Foreign keys: no table references these three (nor events or deliveries); PostgreSQL 15 would accept a
 * reference to a partitioned table only through a unique key holding the partition key.
 */

interface Partitioned {
  table: string;
  key: string;
  /** The parent's indexes besides the primary key: name → columns. */
  indexes: Record<string, string>;
}

const TABLES: Partitioned[] = [
  {
    table: 'usage_records',
    key: 'at',
    indexes: {
      usage_records_account_id_at_id_index: '"account_id", "at", "id"',
      usage_records_account_id_status_at_id_index: '"account_id", "status", "at", "id"',
      usage_records_account_id_endpoint_at_id_index: '"account_id", "endpoint", "at", "id"',
      usage_records_account_id_api_key_id_at_id_index: '"account_id", "api_key_id", "at", "id"',
      usage_records_account_id_request_id_at_index: '"account_id", "request_id", "at"',
    },
  },
  {
    table: 'webhook_attempts',
    key: 'attempted_at',
    indexes: { webhook_attempts_delivery_id_attempted_at_index: '"delivery_id", "attempted_at"' },
  },
  {
    table: 'audit_log',
    key: 'at',
    indexes: { audit_log_account_id_at_id_index: '"account_id", "at", "id"', audit_log_at_id_index: '"at", "id"' },
  },
];

const ROLL_UP_TRIGGER = (table: string) =>
  `create trigger usage_records_roll_up after insert on "${table}"
     referencing new table as inserted for each statement execute function usage_records_roll_up()`;
const APPEND_ONLY_TRIGGER = (table: string) =>
  `create trigger audit_log_append_only before update or delete on "${table}"
     for each row execute function audit_log_append_only()`;
const NO_TRUNCATE_TRIGGER = (table: string) =>
  `create trigger audit_log_no_truncate before truncate on "${table}"
     for each statement execute function audit_log_append_only()`;

export class Migration20261128120000 extends Migration {
  override name = 'Migration20261128120000';

  private async indexesOf(table: string): Promise<string[]> {
    const rows = (await this.execute(
      `select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid
        where i.indrelid = '"${table}"'::regclass and not i.indisprimary`,
    )) as { name: string }[];
    return rows.map((r) => r.name);
  }

  override async up(): Promise<void> {
    for (const { table, key, indexes } of TABLES) {
      const historical = `${table}_historical`;
      await this.execute(`lock table "${table}" in access exclusive mode`);
      const [bound] = (await this.execute(
        `select to_char((greatest(date_trunc('day', now(), 'UTC'), date_trunc('day', max("${key}"), 'UTC'))
                         + interval '1 day') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as upper
           from "${table}"`,
      )) as { upper: string }[];
      const upper = bound!.upper;

      await this.execute(`alter table "${table}" rename to "${historical}"`);
      for (const index of await this.indexesOf(historical))
        await this.execute(`alter index "${index}" rename to "${index.replace(table, historical).slice(0, 63)}"`);
      await this.execute(
        `alter table "${historical}" drop constraint "${table}_pkey",
           add constraint "${historical}_pkey" primary key ("id", "${key}")`,
      );

      // Columns, NOT NULLs and CHECKs as they are (before the range CHECK, which is the old table's own).
      await this.execute(
        `create table "${table}" (like "${historical}" including defaults including constraints)
           partition by range ("${key}")`,
      );
      await this.execute(`alter table "${table}" add constraint "${table}_pkey" primary key ("id", "${key}")`);
      for (const [name, columns] of Object.entries(indexes))
        await this.execute(`create index "${name}" on "${table}" (${columns})`);

      await this.execute(
        `alter table "${historical}" add constraint "${historical}_range" check ("${key}" < '${upper}') not valid`,
      );
      await this.execute(`alter table "${historical}" validate constraint "${historical}_range"`);
      await this.execute(
        `alter table "${table}" attach partition "${historical}" for values from (minvalue) to ('${upper}')`,
      );
      await this.execute(`create table "${table}_default" partition of "${table}" default`);
    }

    await this.execute(`drop trigger usage_records_roll_up on "usage_records_historical"`);
    await this.execute(ROLL_UP_TRIGGER('usage_records'));
    await this.execute(`alter table "usage_records_default" set (parallel_workers = 0)`);

    await this.execute(`drop trigger audit_log_append_only on "audit_log_historical"`);
    await this.execute(`drop trigger audit_log_no_truncate on "audit_log_historical"`);
    await this.execute(APPEND_ONLY_TRIGGER('audit_log'));
    for (const t of ['audit_log', 'audit_log_historical', 'audit_log_default'])
      await this.execute(NO_TRUNCATE_TRIGGER(t));
  }

  /** Back to plain tables: every row of every partition into the old table, which takes its name again. */
  override async down(): Promise<void> {
    for (const { table } of TABLES) {
      const historical = `${table}_historical`;
      await this.execute(`lock table "${table}" in access exclusive mode`);
      await this.execute(`alter table "${table}" detach partition "${historical}"`);
      await this.execute(`alter table "${historical}" drop constraint "${historical}_range"`);
      // Straight into the table (no trigger of the parent's fires: the rollups counted these rows already).
      await this.execute(`insert into "${historical}" select * from "${table}"`);
      await this.execute(`drop table "${table}"`);
      await this.execute(
        `alter table "${historical}" drop constraint "${historical}_pkey",
           add constraint "${table}_pkey" primary key ("id")`,
      );
      for (const index of await this.indexesOf(historical))
        await this.execute(`alter index "${index}" rename to "${index.replace(historical, table)}"`);
      await this.execute(`alter table "${historical}" rename to "${table}"`);
    }
    await this.execute(ROLL_UP_TRIGGER('usage_records'));
    await this.execute(`drop trigger if exists audit_log_no_truncate on "audit_log"`);
    await this.execute(APPEND_ONLY_TRIGGER('audit_log'));
    await this.execute(NO_TRUNCATE_TRIGGER('audit_log'));
  }
}
