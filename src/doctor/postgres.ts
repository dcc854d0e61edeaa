import { MikroORM } from '@mikro-orm/postgresql';
import { ormOptions } from '../db/config.js';
import {
  DAY_MS,
  DAY_PARTITIONED,
  defaultPartitionName,
  partitionsOf,
  startOfUtcDay,
} from '../db/partitions.js';
import { migrations } from '../db/migrations/index.js';
import type { Finding } from './report.js';
import { maskUrl } from './secrets.js';
import { describeError, withTimeout } from './timeout.js';

/**
 * PostgreSQL 15 or newer: list entries' unique index uses `NULLS NOT DISTINCT` (README, "Organisation lists"),
 * so an older server cannot even run the migrations.
 */
export const MIN_POSTGRES_VERSION_NUM = 150000;
/** Clocks further apart than this are a warning (due times, retention and JWT ages mix both clocks). */
export const MAX_CLOCK_SKEW_MS = 2000;
/** The migrator's table (src/db/config.ts). */
const MIGRATIONS_TABLE = 'mikro_orm_migrations';

interface ServerFacts {
  version: string;
  versionNum: number;
  /** The server's clock (ms since the epoch) and the local clock halfway through the round trip. */
  serverMs: number;
  localMs: number;
  roundTripMs: number;
}

/**
 * Reachability and version, pending migrations and the clock, by SQL only: the doctor changes nothing. It
 * connects without the ORM's `ensureDatabase` (which would create a database a mistyped URL names) and
 * reads the migrator's table instead of asking the migrator (which creates that table when missing).
 */
export async function checkPostgres(databaseUrl: string, timeoutMs: number): Promise<Finding[]> {
  const where = maskUrl(databaseUrl);
  let orm: MikroORM | undefined;
  try {
    orm = await withTimeout(
      MikroORM.init({
        ...ormOptions(databaseUrl, [], 1),
        ensureDatabase: false,
        discovery: { warnWhenNoEntities: false },
      }),
      timeoutMs,
    );
    const sql = orm.em.getConnection();
    const run = <T>(query: string) => withTimeout(sql.execute<T[]>(query), timeoutMs);
    // The pool connects on the first query: an unreachable server, a wrong password or database fails here.
    const facts = await serverFacts(run);
    const migrationFinding = await pendingMigrations(run).catch((err): Finding => ({
      check: 'postgres:migrations',
      status: 'fail',
      detail: `cannot read ${MIGRATIONS_TABLE}: ${describeError(err)}`,
    }));
    const partitionFinding = await withTimeout(partitionsFinding(orm, run), timeoutMs).catch(
      (err): Finding => ({
        check: 'postgres:partitions',
        status: 'fail',
        detail: `cannot read the partitions: ${describeError(err)}`,
      }),
    );
    return [versionFinding(facts, where), migrationFinding, partitionFinding, clockFinding(facts)];
  } catch (err) {
    return [
      { check: 'postgres', status: 'fail', detail: `cannot connect to ${where}: ${describeError(err)}` },
      notRun('postgres:migrations'),
      notRun('postgres:partitions'),
      notRun('clock'),
    ];
  } finally {
    if (orm) await withTimeout(orm.close(true), timeoutMs).catch(() => undefined);
  }
}

const notRun = (check: string): Finding => ({
  check,
  status: 'info',
  detail: 'not checked: PostgreSQL did not answer',
});

type Run = <T>(query: string) => Promise<T[]>;

async function serverFacts(run: Run): Promise<ServerFacts> {
  const sent = Date.now();
  const [row] = await run<{ version: string; version_num: string; now_ms: string | number }>(
    `select current_setting('server_version') as version,
            current_setting('server_version_num') as version_num,
            (extract(epoch from clock_timestamp()) * 1000)::float8 as now_ms`,
  );
  const received = Date.now();
  if (!row) throw new Error('the server returned no row');
  return {
    version: row.version.split(' ')[0] ?? row.version,
    versionNum: Number(row.version_num),
    serverMs: Number(row.now_ms),
    localMs: (sent + received) / 2,
    roundTripMs: received - sent,
  };
}

function versionFinding(facts: ServerFacts, where: string): Finding {
  const what = `PostgreSQL ${facts.version} at ${where} (${facts.roundTripMs} ms)`;
  if (facts.versionNum < MIN_POSTGRES_VERSION_NUM)
    return {
      check: 'postgres',
      status: 'fail',
      detail: `${what}: riskwatch needs PostgreSQL 15 or newer (NULLS NOT DISTINCT unique indexes); upgrade the server`,
    };
  return { check: 'postgres', status: 'ok', detail: what };
}

/** Migration names as the migrator stores them (older releases kept the file extension). */
const bare = (name: string) => name.replace(/\.(ts|js)$/, '');

async function pendingMigrations(run: Run): Promise<Finding> {
  const check = 'postgres:migrations';
  const known = migrations.map((m) => m.name);
  const [table] = await run<{ present: boolean }>(
    `select to_regclass('${MIGRATIONS_TABLE}') is not null as present`,
  );
  if (!table?.present)
    return {
      check,
      status: 'fail',
      detail:
        `no migration applied (${known.length} pending: an empty database?): run \`riskwatch migrate\` ` +
        '(compose: `docker compose run --rm migrate`)',
    };
  const applied = new Set(
    (await run<{ name: string }>(`select name from ${MIGRATIONS_TABLE}`)).map((r) => bare(r.name)),
  );
  const pending = known.filter((name) => !applied.has(name));
  const unknown = [...applied].filter((name) => !known.includes(name));
  if (pending.length > 0)
    return {
      check,
      status: 'fail',
      detail:
        `${pending.length} of ${known.length} pending (${listed(pending)}): the API is not ready until ` +
        '`riskwatch migrate` applies them (compose: `docker compose run --rm migrate`)',
    };
  if (unknown.length > 0)
    return {
      check,
      status: 'warn',
      detail:
        `all ${known.length} applied, and ${unknown.length} this release does not know (${listed(unknown)}): ` +
        'a newer release migrated this database; run that release',
    };
  return { check, status: 'ok', detail: `all ${known.length} applied (latest ${known.at(-1) ?? 'none'})` };
}

const listed = (names: readonly string[]) =>
  names.length > 3 ? `${names.slice(0, 3).join(', ')}, …` : names.join(', ');

/** Rows counted in a default partition, at most (a count that large says enough). */
const DEFAULT_ROWS_CAP = 10_000;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * The day partitions (src/db/partitions.ts): rows waiting in a table's DEFAULT partition (days the
 * `partitions-maintain` job did not make: the scheduler or the workers were down) are a warning, they
 * are moved, in one transaction, when the job runs; no partition made ahead yet (a database just
 * migrated, the scheduler never started) is worth knowing, nothing lands in the default until that day.
 */
async function partitionsFinding(orm: MikroORM, run: Run): Promise<Finding> {
  const check = 'postgres:partitions';
  const tables = DAY_PARTITIONED.map((t) => t.table);
  const kinds = await run<{ name: string; kind: string | null }>(
    `select t.name, c.relkind::text as kind from unnest(array['${tables.join("','")}']) t(name)
       left join pg_class c on c.oid = to_regclass(t.name)`,
  );
  const flat = kinds.filter((k) => k.kind !== 'p').map((k) => k.name);
  if (flat.length > 0)
    return {
      check,
      status: 'info',
      detail: `not checked: ${flat.join(', ')} not partitioned yet (migrations pending)`,
    };
  const waiting: string[] = [];
  let madeTo = Infinity;
  for (const table of tables) {
    const fallback = defaultPartitionName(table);
    const [held] = await run<{ n: number }>(
      `select count(*)::int as n from (select 1 from "${fallback}" limit ${DEFAULT_ROWS_CAP}) d`,
    );
    const n = held?.n ?? 0;
    if (n > 0) waiting.push(`${fallback} ${n >= DEFAULT_ROWS_CAP ? `${DEFAULT_ROWS_CAP}+` : n} row(s)`);
    const ends = (await partitionsOf(orm.em, table)).map((p) => p.to?.getTime() ?? -Infinity);
    madeTo = Math.min(madeTo, Math.max(...ends));
  }
  const through = Number.isFinite(madeTo) ? `made through ${day(madeTo - DAY_MS)} (UTC)` : 'none made';
  const job = "the scheduler's partitions-maintain job (daily, and at every scheduler start)";
  if (waiting.length > 0)
    return {
      check,
      status: 'warn',
      detail:
        `${waiting.join(', ')} wait in a default partition: days without their partition, ${job} has not ` +
        `run for them (is the scheduler running, and a worker?); it moves them into their day when it does. ` +
        `Day partitions ${through}`,
    };
  const tomorrowEnd = startOfUtcDay(Date.now()) + 2 * DAY_MS;
  if (madeTo < tomorrowEnd)
    return {
      check,
      status: 'info',
      detail:
        `day partitions ${through}, none ahead yet: ${job} makes the days ahead; ` +
        'until it runs, later rows wait in the default partition',
    };
  return { check, status: 'ok', detail: `${tables.join(', ')}: day partitions ${through}; no default row` };
}

function clockFinding(facts: ServerFacts): Finding {
  const skew = Math.round(facts.serverMs - facts.localMs);
  const side = skew > 0 ? `${skew} ms ahead of` : skew < 0 ? `${-skew} ms behind` : 'the same as';
  const detail =
    `PostgreSQL's clock is ${side} this machine's ` +
    `(±${Math.ceil(facts.roundTripMs / 2)} ms, threshold ${MAX_CLOCK_SKEW_MS} ms)`;
  if (Math.abs(skew) > MAX_CLOCK_SKEW_MS)
    return {
      check: 'clock',
      status: 'warn',
      detail: `${detail}: synchronise both with NTP (schedules, retention and token ages read both clocks)`,
    };
  return { check: 'clock', status: 'ok', detail };
}
