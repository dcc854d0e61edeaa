/**
 * The bench's `usage-history` scenario: `GET /api/v1/usage` with BENCH_USAGE_ROWS (1,000,000) calls in one
 * account over 90 days, and the usage drain's write cost.
 *
 * Seeding, by SQL (one `insert … select` over generate_series, the account's 3 keys, 6 endpoints, statuses
 * 200/400/401/429/503 with 429 at 2%, log-normal latencies around 35 ms, calls evenly spread over the 90
 * days up to now) into one partition per UTC day (the steady state of src/db/partitions.ts after 90 days;
 * the empty historical partition of a fresh database dropped): the secondary indexes of usage_records are
 * dropped first and built after, and the
 * rollup trigger is off for the session (`session_replication_role = replica`); the rollups are then built
 * with the migration's own backfill statement (`usageRollupSql`) over the account's calls, then VACUUM
 * ANALYZE. Each phase is timed, and the table and index sizes printed. A few answers are checked against a
 * brute-force count over usage_records before the load runs.
 *
 * Load: wrk (test/bench/wrk.ts), one thread, BENCH_USAGE_CONNECTIONS (10) connections for BENCH_USAGE_S
 * (8) seconds per query shape, against an `api` process alone (the calls it records wait in the Redis
 * stream: no drain competes for the cores). Goal: p99 ≤ 25 ms for every shape (printed MISS, not thrown).
 *
 * Then the prune of one day, timed: the oldest day's partition dropped by UsageService.prune (what the
 * `usage-prune` job does), and the next day deleted by the statement the prune ran before the partitions.
 *
 * Drain cost (`benchUsageDrain`): in a database of its own, UsageDrain.drainOnce over 50 stream entries of
 * 200 calls, BENCH_USAGE_DRAIN_ROUNDS (10) times, with usage_records as it was before the rollups (one
 * secondary index, no trigger), with the three filter indexes, and with the indexes and the rollup
 * trigger (what ships): calls stored per second, median of the rounds.
 *
 * Run alone: `npm run build && node dist/test/bench/usage-history.js` (BENCH_USAGE_ROWS=10000000 for the
 * large run; BENCH_USAGE_DRAIN=0 skips the drain part; BENCH_USAGE_KEEP_DB=1 keeps the seeded database;
 * BENCH_USAGE_API_PROCESSES=0 serves the API on every core). `npm run bench` runs it too (`usage-history`).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { usageRollupSql } from '../../src/db/migrations/Migration20261124034559.js';
import { connectDatabase as connectOrm } from '../../src/database.js';
import { createDayPartition, startOfUtcDay, USAGE_RECORDS } from '../../src/db/partitions.js';
import { newId } from '../../src/platform/ids.js';
import { createLogger } from '../../src/platform/logger.js';
import { UsageDrain } from '../../src/usage/drain.js';
import { BATCH_FIELD, type UsageEntry } from '../../src/usage/recorder.js';
import type { UsageBody } from '../../src/usage/schemas.js';
import { UsageService } from '../../src/usage/service.js';
import { createCustomer } from '../support/customers.js';
import { REDIS_URL } from '../support/env.js';
import { prepareEnv, startService } from '../support/service.js';
import { intEnv } from './env.js';
import { ensureWrk, runWrk, type WrkResult } from './wrk.js';

export interface UsageHistoryBenchOptions {
  /** Environment of the running riskwatch (DATABASE_URL, REDIS_URL…): the account is made with its CLI. */
  env: Record<string, string>;
  /** The running `api`'s base URL. */
  baseUrl: string;
  log?: (line?: string) => void;
  rows?: number;
  seconds?: number;
  connections?: number;
}

export interface UsageShapeResult extends WrkResult {
  shape: string;
  query: string;
}

export interface UsageHistoryBenchResult {
  rows: number;
  seed_s: { insert: number; indexes: number; rollups: number; vacuum: number };
  sizes: Record<string, string>;
  rollup_rows: number;
  shapes: UsageShapeResult[];
  /** The prune of one day: DROP of its partition, and the former DELETE on the next day's. */
  prune: { drop_s: number; dropped_rows: number; delete_s: number; deleted_rows: number };
}

const ENDPOINTS = [
  '/api/v1/shield/preflight',
  '/api/v1/risk/assess',
  '/api/v1/scan/token',
  '/api/v1/usage',
  '/api/v1/watchlists',
  '/api/v1/lists/deny/entries',
];
const SECONDARY_INDEXES: Record<string, string> = {
  usage_records_account_id_at_id_index: '(account_id, at, id)',
  usage_records_account_id_status_at_id_index: '(account_id, status, at, id)',
  usage_records_account_id_endpoint_at_id_index: '(account_id, endpoint, at, id)',
  usage_records_account_id_api_key_id_at_id_index: '(account_id, api_key_id, at, id)',
};
const P99_GOAL_MS = 25;

const DAY_MS = 86_400_000;
const seconds = (since: number) => Math.round((performance.now() - since) / 100) / 10;

/** Seeds `rows` calls of the account (keys: 60% / 30% / 10%) and builds their rollups; times each phase. */
async function seed(
  db: pg.Client,
  databaseUrl: string,
  accountId: string,
  keys: { id: string; prefix: string }[],
  rows: number,
  log: (line?: string) => void,
) {
  await layOutDays(db, databaseUrl, rows, log);
  await db.query(`set session_replication_role = replica`);
  await db.query(`set maintenance_work_mem = '1GB'`);
  await db.query(`set work_mem = '256MB'`);
  for (const name of Object.keys(SECONDARY_INDEXES)) await db.query(`drop index if exists ${name}`);
  let t = performance.now();
  await db.query(
    `insert into usage_records
       (id, account_id, api_key_id, api_key_prefix, method, endpoint, status, latency_ms, request_id, at)
     select 'use_' || lpad(to_hex(i), 28, '0'), $1,
            (array[$2, $2, $2, $2, $2, $2, $3, $3, $3, $4])[1 + k], (array[$5, $5, $5, $5, $5, $5, $6, $6, $6, $7])[1 + k],
            case when e < 3 then 'POST' else 'GET' end, ($8::text[])[1 + e],
            case when u < 0.88 then 200 when u < 0.93 then 400 when u < 0.96 then 401 when u < 0.98 then 429 else 503 end,
            least(120000, round(exp(ln(35) + 0.8 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))))::int,
            'bench-' || i, now() - (i * (90 * 86400.0 / $9)) * interval '1 second'
       from (select i, random() as u, floor(random() * 6)::int as e, floor(random() * 10)::int as k
               from generate_series(1, $9::int) i) s`,
    [
      accountId,
      keys[0]!.id,
      keys[1]!.id,
      keys[2]!.id,
      keys[0]!.prefix,
      keys[1]!.prefix,
      keys[2]!.prefix,
      ENDPOINTS,
      rows,
    ],
  );
  const insert = seconds(t);
  log(`  insert of ${rows.toLocaleString('en-US')} calls: ${insert} s`);
  t = performance.now();
  for (const [name, columns] of Object.entries(SECONDARY_INDEXES))
    await db.query(`create index ${name} on usage_records ${columns}`);
  const indexes = seconds(t);
  log(`  secondary indexes: ${indexes} s`);
  t = performance.now();
  if (!/^acc_[0-9a-f]+$/.test(accountId)) throw new Error(`unexpected account id ${accountId}`);
  await db.query(usageRollupSql(`(select * from usage_records where account_id = '${accountId}') calls`));
  const rollups = seconds(t);
  log(`  rollups (the migration's backfill statement): ${rollups} s`);
  await db.query(`set session_replication_role = origin`);
  t = performance.now();
  await db.query(`vacuum analyze usage_records`);
  await db.query(`vacuum analyze usage_rollups`);
  const vacuum = seconds(t);
  log(`  vacuum analyze: ${vacuum} s`);
  return { insert, indexes, rollups, vacuum };
}

/**
 * The history as it lies after 90 days of day partitions (src/db/partitions.ts): the historical partition
 * (empty in a fresh database) dropped, one partition per UTC day the seed covers, made as the
 * `partitions-maintain` job makes them.
 */
async function layOutDays(db: pg.Client, databaseUrl: string, rows: number, log: (line?: string) => void) {
  await db.query('alter table usage_records detach partition usage_records_historical');
  await db.query('drop table usage_records_historical');
  const orm = await connectOrm(databaseUrl);
  try {
    const t = performance.now();
    const first = startOfUtcDay(Date.now() - 90 * DAY_MS - 60_000);
    let made = 0;
    for (let day = first; day <= startOfUtcDay(Date.now()) + DAY_MS; day += DAY_MS)
      if (await createDayPartition(orm, USAGE_RECORDS, day)) made++;
    log(`  ${made} day partitions for ${rows.toLocaleString('en-US')} calls: ${seconds(t)} s`);
  } finally {
    await orm.close();
  }
}

/** Each usage table with its indexes (a partitioned table: all its partitions). */
async function sizes(db: pg.Client) {
  const { rows } = await db.query<{ name: string; size: string }>(
    `select name, pg_size_pretty(bytes) as size from (
       select 'usage_records' as name, sum(pg_total_relation_size(relid)) as bytes
         from pg_partition_tree('usage_records')
       union all select 'usage_rollups', pg_total_relation_size('usage_rollups')) t
      order by bytes desc`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.size]));
}

/**
 * The usage prune of one day of the history, as the job runs it (UsageService.prune with the retention
 * that makes the oldest day due): the day's partition detached and dropped with its rollups. Then, for
 * comparison, the next day pruned by the DELETE the prune used before the partitions (rows and rollups
 * before the cut-off), on that day's partition.
 */
async function pruneOneDay(db: pg.Client, databaseUrl: string, log: (line?: string) => void) {
  const oldest = startOfUtcDay(
    new Date((await db.query<{ at: Date }>('select min(at) as at from usage_records')).rows[0]!.at),
  );
  const inDay = async (day: number) =>
    Number(
      (
        await db.query<{ n: string }>('select count(*) as n from usage_records where at >= $1 and at < $2', [
          new Date(day),
          new Date(day + DAY_MS),
        ])
      ).rows[0]!.n,
    );
  const orm = await connectOrm(databaseUrl);
  try {
    const rows = await inDay(oldest);
    // Retention in days such that the cut-off is the end of the oldest day.
    const retention = Math.round((startOfUtcDay(Date.now()) - (oldest + DAY_MS)) / DAY_MS);
    let t = performance.now();
    const pruned = await new UsageService(orm).prune(retention);
    const dropS = (performance.now() - t) / 1000;
    const next = oldest + DAY_MS;
    const deleteRows = await inDay(next);
    t = performance.now();
    await db.query(
      `with rollups as (delete from usage_rollups where start < $1),
            calls as (delete from usage_records where at < $1 returning 1)
       select count(*) from calls`,
      [new Date(next + DAY_MS)],
    );
    const deleteS = (performance.now() - t) / 1000;
    log(
      `  prune of one day: DROP of ${pruned.dropped.join(', ')} (${rows.toLocaleString('en-US')} calls) ` +
        `${dropS.toFixed(3)} s; DELETE of the next day (${deleteRows.toLocaleString('en-US')} calls, ` +
        `its partition) ${deleteS.toFixed(3)} s`,
    );
    return { drop_s: dropS, dropped_rows: rows, delete_s: deleteS, deleted_rows: deleteRows };
  } finally {
    await orm.close();
  }
}

/** `GET /api/v1/usage` under load for each query shape, over a seeded history. */
export async function benchUsageHistory(opts: UsageHistoryBenchOptions): Promise<UsageHistoryBenchResult> {
  const log = opts.log ?? ((line = '') => console.log(line));
  const rows = opts.rows ?? intEnv('BENCH_USAGE_ROWS', 1_000_000, 1000, 100_000_000);
  const durationS = opts.seconds ?? intEnv('BENCH_USAGE_S', 8, 1, 120);
  const connections = opts.connections ?? intEnv('BENCH_USAGE_CONNECTIONS', 10, 1, 1000);
  log(`usage-history: ${rows.toLocaleString('en-US')} calls in one account over 90 days (${ensureWrk(log)})`);

  const customer = await createCustomer(opts.env, 'usage-bench', ['k0', 'k1', 'k2'], {
    rateLimitPerMin: 100_000_000,
  });
  const keys = ['k0', 'k1', 'k2'].map((k) => customer.keys[k]!);
  const db = new pg.Client({ connectionString: opts.env.DATABASE_URL });
  await db.connect();
  try {
    const seedS = await seed(db, opts.env.DATABASE_URL!, customer.accountId, keys, rows, log);
    const tableSizes = await sizes(db);
    const rollupRows = Number(
      (
        await db.query<{ n: string }>(`select count(*) as n from usage_rollups where account_id = $1`, [
          customer.accountId,
        ])
      ).rows[0]!.n,
    );
    log(`  sizes: ${JSON.stringify(tableSizes)}; ${rollupRows.toLocaleString('en-US')} rollup rows`);

    const now = Date.now();
    const threeDaysAgo = new Date(now - 3 * 86_400_000 - 17 * 60_000 - 23_456).toISOString();
    const tenDaysAgo = new Date(now - 10.5 * 86_400_000 - 7 * 60_000).toISOString();
    const twoDaysAgo = new Date(now - 2 * 86_400_000 + 41 * 60_000 + 5_000).toISOString();
    const shapes: [string, Record<string, string>][] = [
      ['page', { limit: '100' }],
      ['page status=429', { limit: '100', status: '429' }],
      ['page endpoint=', { limit: '100', endpoint: '/api/v1/scan/token' }],
      ['page api_key_id= (10% key)', { limit: '100', api_key_id: keys[2]!.id }],
      ['page from=3 days ago', { limit: '100', from: threeDaysAgo }],
      ['group_by=hour', { group_by: 'hour' }],
      ['group_by=day', { group_by: 'day' }],
      ['group_by=day status=429', { group_by: 'day', status: '429' }],
      ['group_by=hour from/to unaligned', { group_by: 'hour', from: tenDaysAgo, to: twoDaysAgo }],
    ];

    // The answers are exact: a few summaries against a brute-force count.
    const get = async (query: Record<string, string>) => {
      const res = await fetch(`${opts.baseUrl}/api/v1/usage?${new URLSearchParams(query).toString()}`, {
        headers: { 'X-API-Key': keys[0]!.key },
      });
      if (res.status !== 200)
        throw new Error(`usage ${JSON.stringify(query)}: ${res.status} ${await res.text()}`);
      return (await res.json()) as UsageBody;
    };
    const count = async (where: string, params: unknown[]) =>
      Number(
        (
          await db.query<{ n: string }>(
            `select count(*) as n from usage_records where account_id = $1 ${where}`,
            [customer.accountId, ...params],
          )
        ).rows[0]!.n,
      );
    const checks: [Record<string, string>, string, unknown[]][] = [
      [{ limit: '1' }, '', []],
      [{ limit: '1', status: '429' }, 'and status = 429', []],
      [{ limit: '1', from: threeDaysAgo }, 'and at >= $2', [threeDaysAgo]],
      [
        { group_by: 'hour', from: tenDaysAgo, to: twoDaysAgo },
        'and at >= $2 and at < $3',
        [tenDaysAgo, twoDaysAgo],
      ],
    ];
    for (const [query, where, params] of checks) {
      const [body, expected] = await Promise.all([get(query), count(where, params)]);
      if (body.summary.total !== expected)
        throw new Error(
          `usage ${JSON.stringify(query)}: summary.total ${body.summary.total}, count(*) ${expected}`,
        );
    }
    log(`  ${checks.length} summaries equal count(*) over usage_records`);

    const results: UsageShapeResult[] = [];
    for (const [shape, query] of shapes) {
      const qs = new URLSearchParams(query).toString();
      // Warm-up: the first answers of a shape read pages from disk.
      await runWrk(
        { url: `${opts.baseUrl}/api/v1/usage?${qs}`, method: 'GET', headers: { 'X-API-Key': keys[0]!.key } },
        connections,
        2,
      );
      const r = await runWrk(
        { url: `${opts.baseUrl}/api/v1/usage?${qs}`, method: 'GET', headers: { 'X-API-Key': keys[0]!.key } },
        connections,
        durationS,
      );
      results.push({ shape, query: qs, ...r });
    }
    log(`  wrk -t1 -c${connections} -d${durationS}s, one api process:`);
    log(`  | shape | req/s | p50 ms | p99 ms | non-2xx | goal p99 ≤ ${P99_GOAL_MS} ms |`);
    log('  |---|---|---|---|---|---|');
    for (const r of results)
      log(
        `  | ${r.shape} | ${r.rps.toFixed(0)} | ${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} | ${r.non2xx + r.errors + r.timeouts} | ${
          r.p99Ms <= P99_GOAL_MS && r.non2xx + r.errors + r.timeouts === 0 ? 'ok' : 'MISS'
        } |`,
      );
    const prune = await pruneOneDay(db, opts.env.DATABASE_URL!, log);
    return { rows, seed_s: seedS, sizes: tableSizes, rollup_rows: rollupRows, shapes: results, prune };
  } finally {
    await db.end();
  }
}

export interface UsageDrainBenchResult {
  /** Calls stored per second (median over the rounds), by how usage_records is set up. */
  before_rollups: number;
  with_filter_indexes: number;
  with_indexes_and_rollups: number;
}

/** UsageDrain's insert throughput (50 entries of 200 calls per pass), before and after the rollups. */
export async function benchUsageDrain(
  log: (line?: string) => void = console.log,
): Promise<UsageDrainBenchResult> {
  const rounds = intEnv('BENCH_USAGE_DRAIN_ROUNDS', 10, 1, 100);
  const { env, dropDatabase } = await prepareEnv();
  const orm = await connectOrm(env.DATABASE_URL!);
  const redis = new Redis(REDIS_URL);
  const streamKey = `${env.REDIS_KEY_PREFIX}usage:stream`;
  const drain = new UsageDrain(redis, orm, streamKey, createLogger('warn'));
  const sql = (q: string) => orm.em.getConnection().execute(q);
  let n = 0;
  const measure = async () => {
    const rates: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const multi = redis.multi();
      for (let e = 0; e < 50; e++) {
        const batch: UsageEntry[] = [];
        for (let i = 0; i < 200; i++, n++) {
          const at = new Date(Date.now() - (n % 5000) * 1000).toISOString();
          batch.push({
            id: newId('use'),
            account_id: `acc_drain${n % 3}`,
            api_key_id: `key_drain${n % 7}`,
            api_key_prefix: 'rwk_bnch',
            method: 'POST',
            endpoint: ENDPOINTS[n % ENDPOINTS.length]!,
            status: n % 50 === 0 ? 429 : 200,
            latency_ms: 5 + ((n * 7919) % 400),
            request_id: `drain-${n}`,
            at,
          });
        }
        multi.xadd(streamKey, '*', BATCH_FIELD, JSON.stringify(batch));
      }
      await multi.exec();
      const t = performance.now();
      let stored = 0;
      while (stored < 10_000) stored += await drain.drainOnce();
      rates.push(stored / ((performance.now() - t) / 1000));
    }
    rates.sort((a, b) => a - b);
    return Math.round(rates[Math.floor(rates.length / 2)]!);
  };
  try {
    await redis.xgroup('CREATE', streamKey, 'usage-drain', '0', 'MKSTREAM');
    await sql('alter table usage_records disable trigger usage_records_roll_up');
    for (const name of Object.keys(SECONDARY_INDEXES).slice(1)) await sql(`drop index ${name}`);
    const before = await measure();
    for (const [name, columns] of Object.entries(SECONDARY_INDEXES).slice(1))
      await sql(`create index ${name} on usage_records ${columns}`);
    const indexes = await measure();
    await sql('alter table usage_records enable trigger usage_records_roll_up');
    const rollups = await measure();
    log(
      `usage drain, calls stored/s (50 × 200 per pass, median of ${rounds}): before rollups ${before}, ` +
        `+ 3 filter indexes ${indexes}, + indexes and rollups ${rollups}`,
    );
    return { before_rollups: before, with_filter_indexes: indexes, with_indexes_and_rollups: rollups };
  } finally {
    redis.disconnect();
    await orm.close();
    await dropDatabase();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const { env, dropDatabase } = await prepareEnv();
  // BENCH_USAGE_API_PROCESSES: the api role on that many processes (0 = one per core; default 1).
  const processes = process.env.BENCH_USAGE_API_PROCESSES ?? '1';
  const api = await startService({ ...env, RISKWATCH_API_PROCESSES: processes }, 'api');
  console.log(`api processes: ${processes === '0' ? 'one per core' : processes}`);
  let results: Record<string, unknown>;
  try {
    results = { 'usage-history': await benchUsageHistory({ env, baseUrl: api.baseUrl }) };
  } finally {
    await api.stop();
    if (process.env.BENCH_USAGE_KEEP_DB === '1') console.log(`kept ${env.DATABASE_URL}`);
    else await dropDatabase();
  }
  if (process.env.BENCH_USAGE_DRAIN !== '0') results['usage-drain'] = await benchUsageDrain();
  const out = process.env.BENCH_OUT;
  if (out) {
    const previous = existsSync(out)
      ? (JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>)
      : {};
    writeFileSync(out, JSON.stringify({ ...previous, ...results }, null, 2));
  }
}
