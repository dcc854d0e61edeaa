import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from './orm.js';
import { run, time, type Db, type Time } from './sql.js';

/*
 * Day partitions (PostgreSQL declarative partitioning, by range of a timestamp, one partition per UTC day)
 * for the tables that grow with traffic and leave by age: usage_records, webhook_attempts, audit_log
 * (migration 20261128120000 says why events and webhook_deliveries are not). Each such table has
 *   - `<table>_historical`: the table as it was before the migration, attached for [MINVALUE, its upper
 *     bound); dropped whole once that bound is past the retention, pruned by DELETE until then;
 *   - `<table>_pYYYYMMDD`: one per day, made ahead by the `partitions-maintain` job;
 *   - `<table>_default`: rows no other partition takes (the job was not running), so an insert never
 *     fails; the job moves them into their day's partition when it makes it.
 * Retention drops whole partitions (detach, drop: no row-by-row DELETE, no bloat, no vacuum), in the
 * features' prunes (src/usage, src/audit, src/webhooks).
 */

export const DAY_MS = 86_400_000;
/** DDL on a partitioned table waits this long for its lock, then fails (the job retries): readers and the
 *  inserts queued behind the DDL never wait longer than this. */
const LOCK_TIMEOUT = '5s';

/** A table partitioned by UTC day on `key`. */
export interface DayPartitioned {
  table: string;
  key: string;
  /** What PostgreSQL does not carry from the parent to a new partition, as statements given its name. */
  onCreate: (partition: string) => string[];
}

export const USAGE_RECORDS: DayPartitioned = {
  table: 'usage_records',
  key: 'at',
  // Storage parameters are per partition (a partitioned table takes none): see migration 20261124034559.
  onCreate: (p) => [`alter table "${p}" set (parallel_workers = 0)`],
};
export const WEBHOOK_ATTEMPTS: DayPartitioned = {
  table: 'webhook_attempts',
  key: 'attempted_at',
  onCreate: () => [],
};
export const AUDIT_LOG: DayPartitioned = {
  table: 'audit_log',
  key: 'at',
  // A TRUNCATE of the parent is refused by the parent's trigger; one of the partition itself needs its own.
  onCreate: (p) => [
    `create trigger audit_log_no_truncate before truncate on "${p}"
       for each statement execute function audit_log_append_only()`,
  ],
};
export const DAY_PARTITIONED: readonly DayPartitioned[] = [USAGE_RECORDS, WEBHOOK_ATTEMPTS, AUDIT_LOG];

/** One partition of a table: `from` null is MINVALUE (the historical one); the default has neither. */
export interface Partition {
  name: string;
  from: Date | null;
  to: Date | null;
  isDefault: boolean;
}

export const startOfUtcDay = (t: Date | number): number =>
  Math.floor(new Date(t).getTime() / DAY_MS) * DAY_MS;
const ymd = (day: number) => new Date(day).toISOString().slice(0, 10).replaceAll('-', '');
export const dayPartitionName = (table: string, day: number): string => `${table}_p${ymd(day)}`;
export const defaultPartitionName = (table: string): string => `${table}_default`;

/** The partitions of `table`, oldest first, the default last (bounds read back from the catalog). */
export async function partitionsOf(db: Db, table: string): Promise<Partition[]> {
  const rows = await run<{ name: string; bound: string; from: Time | null; to: Time | null }[]>(
    db,
    `select c.relname as name, b.bound,
            (regexp_match(b.bound, 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz as "from",
            (regexp_match(b.bound, 'TO \\(''([^'']+)''\\)'))[1]::timestamptz as "to"
       from pg_inherits i
       join pg_class c on c.oid = i.inhrelid
       cross join lateral (select pg_get_expr(c.relpartbound, c.oid) as bound) b
      where i.inhparent = ?::regclass`,
    [table],
  );
  const partitions = rows.map((r) => ({
    name: r.name,
    from: r.from === null ? null : time(r.from),
    to: r.to === null ? null : time(r.to),
    isDefault: r.bound === 'DEFAULT',
  }));
  const order = (p: Partition) => (p.isDefault ? Infinity : (p.to?.getTime() ?? Infinity));
  return partitions.sort((a, b) => order(a) - order(b));
}

/** Serialises the partition DDL of one table across workers, bounded by LOCK_TIMEOUT. */
async function lockPartitions(em: EntityManager, table: string): Promise<void> {
  await run(em, `select set_config('lock_timeout', ?, true)`, [LOCK_TIMEOUT]);
  await run(em, 'select pg_advisory_xact_lock(hashtext(?))', [`riskwatch:partitions:${table}`]);
}

const covers = (p: Partition, from: number, to: number) =>
  !p.isDefault && (p.from === null || p.from.getTime() < to) && (p.to === null || p.to.getTime() > from);

/**
 * The `partitions-maintain` job: for every day-partitioned table, the partitions of today and the next
 * `daysAhead` days, and of every day whose rows wait in the default partition. Idempotent; what it made.
 */
export async function maintainPartitions(
  orm: Orm,
  daysAhead: number,
  now = new Date(),
): Promise<Record<string, string[]>> {
  const made: Record<string, string[]> = {};
  for (const spec of DAY_PARTITIONED) {
    const today = startOfUtcDay(now);
    const days = new Set(Array.from({ length: daysAhead + 1 }, (_, i) => today + i * DAY_MS));
    const waiting = await run<{ day: Time }[]>(
      orm,
      `select distinct date_trunc('day', "${spec.key}", 'UTC') as day from "${defaultPartitionName(spec.table)}"`,
    );
    for (const r of waiting) days.add(time(r.day).getTime());
    made[spec.table] = [];
    for (const day of [...days].sort((a, b) => a - b))
      if (await createDayPartition(orm, spec, day)) made[spec.table]!.push(dayPartitionName(spec.table, day));
  }
  return made;
}

/**
 * Makes the partition of `day` unless a partition covers it already. When the default partition holds
 * rows of that day, PostgreSQL refuses the new partition; then, in one transaction (inserts wait on the
 * parent's lock meanwhile, none fails): the default is detached, the day's partition made, the day's rows
 * moved into it (inserted into the partition itself, so the parent's statement triggers do not count
 * them twice; deleted from the detached default, which has lost the parent's row triggers with it), and
 * the default attached again. pg_partman's `partition_data_time` also moves a day out of its default in one
 * transaction, through a temporary table; the detached default plays that part here, and deleting from it
 * passes no append-only trigger (the audit log's refuses DELETE on any attached partition).
 */
export async function createDayPartition(orm: Orm, spec: DayPartitioned, day: number): Promise<boolean> {
  const { table, key } = spec;
  const end = day + DAY_MS;
  return orm.em.fork().transactional(async (em) => {
    await lockPartitions(em, table);
    if ((await partitionsOf(em, table)).some((p) => covers(p, day, end))) return false;
    const name = dayPartitionName(table, day);
    const fallback = defaultPartitionName(table);
    const [from, to] = [new Date(day).toISOString(), new Date(end).toISOString()];
    const create = `create table "${name}" partition of "${table}" for values from ('${from}') to ('${to}')`;
    const inDay = `"${key}" >= '${from}' and "${key}" < '${to}'`;
    const [held] = await run<{ n: number }[]>(
      em,
      `select count(*)::int as n from "${fallback}" where ${inDay}`,
    );
    if (!held?.n) {
      await run(em, create);
    } else {
      const columns = await run<{ list: string }[]>(
        em,
        `select string_agg(quote_ident(attname), ', ' order by attnum) as list from pg_attribute
          where attrelid = ?::regclass and attnum > 0 and not attisdropped`,
        [table],
      );
      const list = columns[0]!.list;
      await run(em, `alter table "${table}" detach partition "${fallback}"`);
      await run(em, create);
      await run(em, `insert into "${name}" (${list}) select ${list} from "${fallback}" where ${inDay}`);
      await run(em, `delete from "${fallback}" where ${inDay}`);
      await run(em, `alter table "${table}" attach partition "${fallback}" default`);
    }
    for (const sql of spec.onCreate(name)) await run(em, sql);
    return true;
  });
}

/** What a prune decides about a partition it may drop, in the transaction that would drop it. */
export interface DropHooks {
  /** True: the partition is still needed; it is kept (asked again at the next prune). */
  keep?: (em: EntityManager, partition: Partition) => Promise<boolean>;
  /** Runs before the drop, in its transaction: what goes with the partition's rows goes with them. */
  beforeDrop?: (em: EntityManager, partition: Partition) => Promise<void>;
}

/**
 * Detaches and drops, oldest first, each partition of `spec` (a day's, or the historical one) whose
 * whole range is before `cutoff`, unless `hooks.keep` holds it. Each drop is its own short transaction
 * (the parent's lock is held for milliseconds, whatever the partition's size). Returns the names dropped.
 */
export async function dropPartitionsBefore(
  orm: Orm,
  spec: DayPartitioned,
  cutoff: Date,
  hooks: DropHooks = {},
): Promise<string[]> {
  const dropped: string[] = [];
  for (const p of await partitionsOf(orm, spec.table)) {
    if (p.isDefault || p.to === null || p.to.getTime() > cutoff.getTime()) continue;
    const gone = await orm.em.fork().transactional(async (em) => {
      await lockPartitions(em, spec.table);
      if (!(await partitionsOf(em, spec.table)).some((q) => q.name === p.name)) return false;
      if (hooks.keep && (await hooks.keep(em, p))) return false;
      await hooks.beforeDrop?.(em, p);
      await run(em, `alter table "${spec.table}" detach partition "${p.name}"`);
      await run(em, `drop table "${p.name}"`);
      return true;
    });
    if (gone) dropped.push(p.name);
  }
  return dropped;
}

/**
 * The partitions a prune still deletes rows from: the historical one (until its whole range is past the
 * retention and it is dropped) and the default one. Day partitions are only ever dropped whole.
 */
export async function rowPrunedPartitions(db: Db, spec: DayPartitioned): Promise<string[]> {
  return (await partitionsOf(db, spec.table))
    .filter((p) => p.isDefault || p.from === null)
    .map((p) => p.name);
}
