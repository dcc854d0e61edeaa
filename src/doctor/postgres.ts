import { MikroORM } from '@mikro-orm/postgresql';
import { ormOptions } from '../db/config.js';
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
    return [versionFinding(facts, where), migrationFinding, clockFinding(facts)];
  } catch (err) {
    return [
      { check: 'postgres', status: 'fail', detail: `cannot connect to ${where}: ${describeError(err)}` },
      notRun('postgres:migrations'),
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
