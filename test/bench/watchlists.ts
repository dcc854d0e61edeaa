/**
 * The bench's `watchlists` scenario: the watchlist scan pipeline (src/watchlists/scan.ts) at the size the
 * issue asks for — 100,000 Solana entries on one watchlist — with a real worker process (`riskwatch
 * worker`), PostgreSQL, Redis and a LiteSVM chain served by its JSON-RPC facade with an injected latency.
 *
 * The world: a bare LiteSVM chain (SolanaTestChain, not the fixture world: none of its tokens is watched)
 * where each watched address is a system account holding 1 SOL, written with `chain.setAccount` (4 s for
 * 100,000; a transaction each would take minutes, and what the scan reads — owner, lamports, no data — is
 * the same). The addresses are sha256("riskwatch-bench-watchlist:<i>") as 32-byte keys. The entries go in
 * by SQL, 10,000 a statement (the set-up's fast path), then ANALYZE (what autovacuum does within a minute;
 * it is off on some test servers). The facade's latency (50 ms) is set after the set-up; the worker gets the
 * facade as solana/mainnet and RISKWATCH_RPC_RATE_PER_S=50 (the provider's limit, counted in Redis), the
 * default scan concurrency (8 chunk jobs) and deep concurrency (4). At 50 calls/s the rate limit binds, not
 * the concurrency: 8 chunks of ~150 ms (rate-limit waits included) could go ~50 chunks/s.
 *
 * Phases, each a `watchlist-tick` enqueued as the scheduler would, timed from the enqueue to the last
 * entry's `last_checked_at` (the worker's clock, this machine's) and counted at the facade (JSON-RPC calls
 * per method, HTTP round trips), in the worker's metrics (chunk durations, RPC attempts, V8 heap) and in
 * PostgreSQL (snapshot rows and alerts of that scan, entry outcomes):
 *   baseline   every entry new: one state read per 100, a snapshot each, no analysis, no alert
 *   unchanged  goals: calls ≤ ⌈N/100⌉ × 1.05, time ≤ 1.25 × the rate-limit bound (⌈N/100⌉ calls at the
 *              rate), the worker's peak RSS (VmHWM after the last tick) ≤ 85 % of its memory limit (it runs
 *              in a 512 MiB memory cgroup with the chart's heap setting); no snapshot, no alert
 *   changed    1 % of the accounts get 0.1 SOL by real System transfers (so the deep analysis sees history:
 *              getSignaturesForAddress and getTransaction answer something), one in every 100 entries in
 *              id order, i.e. one per chunk; the list's thresholds are {"balance_change_pct": 1}: exactly
 *              those entries get a snapshot and a `balance_changed` alert; other alerts are listed apart.
 *              Each analysis is 5 more calls (getMultipleAccounts, 2 × getTokenAccountsByOwner,
 *              getSignaturesForAddress, getTransaction): 6,000 calls, ~120 s at 50/s.
 * Then the bulk paths, each on a new list of the same account: 10 × POST /api/v1/watchlists/{id}/entries
 * of 10,000 (an `api` process) and `riskwatch watchlists import ACCOUNT WATCHLIST FILE.csv` of a
 * 100,000-row file (its own process: start and exit included, the import's own seconds apart). Each stops
 * after BENCH_WATCH_BULK_CAP_S (what it stored by then is reported as CAPPED) and prints "SKIP (not built
 * yet)" when the route answers 404 or the command is unknown.
 *
 * After the baseline tick, PostgreSQL's size of watchlist_entries (heap, each index), watchlist_snapshots
 * and watchlist_alerts, and the same scaled to a million entries.
 *
 * Knobs: BENCH_WATCH_ENTRIES (100000; up to 1000000), BENCH_WATCH_WORKERS (1: worker processes, each in a
 * memory cgroup of its own, sharing the provider limit and the queue as replicas do), BENCH_WATCH_LATENCY_MS
 * (50), BENCH_WATCH_RATE_PER_S (50), BENCH_WATCH_SCAN_CONCURRENCY (the service's default, per worker),
 * BENCH_WATCH_WORKER_MEMORY_MB (512: each worker's memory cgroup; 0 = none), BENCH_WATCH_WORKER_NODE_OPTIONS
 * (the workers' NODE_OPTIONS; default "--max-old-space-size-percentage=75", the chart's),
 * BENCH_WATCH_CHANGED_EVERY (one entry in every K changes before the changed tick; default entries / 1,000,
 * at least 100: 1,000 changed entries), BENCH_WATCH_CHANGED (1; 0 = no changed tick), BENCH_WATCH_ANALYZE
 * (1; 0 = no ANALYZE after the set-up), BENCH_WATCH_BULK (1; 0 = no API/CSV paths), BENCH_WATCH_BULK_CAP_S
 * (180; 0 = no cap). At 1,000,000 entries: `BENCH_ONLY=watchlists BENCH_WATCH_ENTRIES=1000000
 * BENCH_WATCH_WORKERS=4`.
 *
 * Goals missed print MISS (the run still succeeds); wrong counts (a snapshot or alert too many or too few),
 * a phase that does not finish, or a failed bulk call are failures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { getAddressDecoder, lamports, type Address } from '@solana/kit';
import { Redis } from 'ioredis';
import pg from 'pg';
import { JobQueues, type ScanMode } from '../../src/jobs/queues.js';
import { newId } from '../../src/platform/ids.js';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { REDIS_URL } from '../support/env.js';
import { memoryCgroup } from '../support/cgroup.js';
import { cli, MAIN, prepareEnv, startService, type RunningService } from '../support/service.js';
import { SolanaTestChain, SYSTEM_PROGRAM } from '../support/solana/chain.js';
import { startSolanaFacade, type SolanaFacade } from '../support/solana/facade.js';
import { transferSol } from '../support/solana/token.js';
import { intEnv } from './env.js';

export interface WatchlistsBenchOptions {
  log: (line?: string) => void;
  /** Registers a clean-up step; the caller runs them (last first) however the run ends. */
  defer: (step: () => Promise<void>) => void;
  /** A child process the caller must kill if it exits first. */
  track: (child: ChildProcess) => void;
}

/** One timed tick of the big list. */
export interface WatchPhase {
  name: 'baseline' | 'unchanged' | 'changed';
  mode: ScanMode;
  scan_id: string;
  entries: number;
  /** Enqueue → the latest `last_checked_at` of the list (the worker's clock), ms. */
  ms: number;
  /** Enqueue → the poll (every 250 ms) that found no entry left, ms. */
  observed_ms: number;
  rpc: {
    /** JSON-RPC calls the facade answered (a batch's elements each count). */
    calls: number;
    by_method: Record<string, number>;
    /** HTTP requests to the facade (a batch is one). */
    round_trips: number;
    max_in_flight: number;
    /** Enqueue → the first request reached the facade, ms. */
    first_call_ms: number;
    /** Enqueue → the last answer left the facade, ms. */
    last_answer_ms: number;
    /** calls ÷ (last answer − first call). */
    calls_per_s: number;
    /** Calls in the busiest 1-second window (aligned on the first call). */
    max_calls_in_1s: number;
    /** The provider limit's floor for these calls: calls ÷ rate, s. */
    rate_bound_s: number;
  };
  db: {
    /** Snapshot rows of this scan. */
    snapshots: number;
    /** Alerts of this scan, by type. */
    alerts: Record<string, number>;
    /** The list's entries by `last_outcome` after the scan. */
    outcomes: Record<string, number>;
    /** Changed phase: risk levels of the analysed entries. */
    levels?: Record<string, number>;
  };
  /** Over every worker process: counts summed, memory the highest of one process. */
  worker: {
    chunks: number;
    chunk_mean_ms: number;
    /** Provider attempts the worker counted, by outcome (riskwatch_rpc_calls_total). */
    rpc_attempts: Record<string, number>;
    /** Mean HTTP exchange per call (riskwatch_rpc_request_duration_seconds), ms. */
    rpc_exchange_mean_ms: number;
    /** CPU time (user + system) of the worker process during the phase, s. */
    cpu_s: number | undefined;
    /** Highest VmRSS sampled every 200 ms during the phase, MB. */
    rss_peak_sampled_mb: number | undefined;
    /** VmHWM (peak since the process started) at the end of the phase, MB. */
    vm_hwm_mb: number | undefined;
    /**
     * The V8 heap and the memory outside it (prom-client's default metrics), the highest of the samples
     * taken every 5 s during the phase and at its end, MB: RSS ≈ heap total + external + code and the rest.
     */
    heap_used_peak_mb: number;
    heap_total_peak_mb: number;
    external_peak_mb: number;
  };
  /** Each worker process on its own. */
  workers: WorkerPhase[];
}

/** One worker process during a phase. */
export interface WorkerPhase {
  pid: number | undefined;
  chunks: number;
  cpu_s: number | undefined;
  rss_peak_sampled_mb: number | undefined;
  vm_hwm_mb: number | undefined;
}

/** PostgreSQL's size of the watchlist tables after the baseline tick (every entry has a snapshot), MB. */
export interface WatchStorage {
  /** Entries on the big list (the table holds no other yet). */
  entries: number;
  entries_heap_mb: number;
  /** Every index of watchlist_entries, by name. */
  entries_indexes_mb: Record<string, number>;
  /** pg_total_relation_size: heap, TOAST, indexes. */
  entries_total_mb: number;
  snapshots_rows: number;
  snapshots_total_mb: number;
  alerts_rows: number;
  alerts_total_mb: number;
  /** Live and dead row versions of watchlist_entries (every tick updates every entry). */
  entries_live_tuples: number;
  entries_dead_tuples: number;
  /** The totals scaled to 1,000,000 entries, MB. */
  per_million: { entries_mb: number; snapshots_mb: number; alerts_mb: number; total_mb: number };
}

export interface BulkTiming {
  path: 'api' | 'csv';
  /** `capped`: stopped after BENCH_WATCH_BULK_CAP_S; `stored` says how far it got. */
  status: 'ok' | 'capped' | 'skipped' | 'failed';
  note?: string;
  entries?: number;
  /** Wall time of all the calls (API) or of the command (CSV: process start and exit included), s. */
  seconds?: number;
  /** Per POST (API), s. */
  calls_s?: number[];
  /** The import's own `seconds` (CSV: reading and adding, without process start). */
  import_seconds?: number;
  created?: number;
  /** Entries of that list in PostgreSQL afterwards. */
  stored?: number;
}

export interface WatchlistsReport {
  settings: {
    entries: number;
    latency_ms: number;
    rate_per_s: number;
    scan_concurrency: number | 'default (8)';
    deep_concurrency: 'default (4)';
    worker_node_options: string;
    analyze: boolean;
    bulk_cap_s: number;
    workers: number;
    changed_every: number;
    changed: number;
    balance_change_pct: number;
  };
  setup: {
    accounts_s: number;
    entries_sql_s: number;
    worker_start_s: number;
    /** The worker's VmRSS once it answers its metrics port, before any job, MB (the first worker's). */
    worker_idle_rss_mb: number | undefined;
    transfers_s?: number;
  };
  phases: WatchPhase[];
  storage?: WatchStorage;
  bulk: BulkTiming[];
  goals: {
    max_calls: number;
    max_ms: number;
    max_rss_mb: number;
    calls: number | undefined;
    ms: number | undefined;
    rss_mb: number | undefined;
    verdict: 'OK' | 'MISS' | 'ERROR';
    missed: string[];
  };
  /** The highest of the workers (the RSS goal is per process), and each worker's. */
  worker_end: {
    vm_hwm_mb: number | undefined;
    vm_rss_mb: number | undefined;
    workers: { pid: number | undefined; vm_hwm_mb: number | undefined; vm_rss_mb: number | undefined }[];
  };
  failures: string[];
}

const NETWORK = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
/** A schedule that does not fire during the run (1 January, midnight): ticks come from the bench. */
const NEVER = '0 0 1 1 *';
const SOL = 1_000_000_000n;
const CHUNK = 100;
const SQL_BATCH = 10_000;
const API_BATCH = 10_000;
const MAX_RSS_MB = 512;
/** The worker's heap as a share of its memory limit: the chart's and compose's `worker.heapPercent`. */
const WORKER_HEAP_PERCENT = 75;
/** The worker's peak RSS goal, as a share of its memory limit. */
const RSS_SHARE_OF_LIMIT = 0.85;
const POLL_MS = 250;

const SETTINGS = {
  entries: intEnv('BENCH_WATCH_ENTRIES', 100_000, 1000, 1_000_000),
  latencyMs: intEnv('BENCH_WATCH_LATENCY_MS', 50, 0, 1000),
  ratePerS: intEnv('BENCH_WATCH_RATE_PER_S', 50, 1, 100_000),
  scanConcurrency: process.env.BENCH_WATCH_SCAN_CONCURRENCY
    ? intEnv('BENCH_WATCH_SCAN_CONCURRENCY', 8, 1, 256)
    : undefined,
  balanceChangePct: 1,
  /**
   * Worker processes (each `riskwatch worker` in its own memory cgroup, as replicas of the chart's
   * worker): they share the provider limit through Redis and take the chunk jobs from one queue.
   */
  workers: intEnv('BENCH_WATCH_WORKERS', 1, 1, 8),
  /**
   * One entry in every this many (id order) gets a transfer before the changed tick: by default 1,000
   * entries whatever the list's size (one per chunk at 100,000, one per ten chunks at 1,000,000), so
   * the changed tick's analyses (5 calls each) stay 5,000 calls and its state reads grow with the list.
   */
  changedEvery: intEnv('BENCH_WATCH_CHANGED_EVERY', 0, 0, 1_000_000),
  /** 0: no changed tick (at a million entries, the baseline and unchanged ticks are the measure). */
  changedTick: intEnv('BENCH_WATCH_CHANGED', 1, 0, 1) === 1,
  /** 0: leave the API and CSV paths out. */
  bulk: intEnv('BENCH_WATCH_BULK', 1, 0, 1) === 1,
  /** Each bulk path stops after this long (0 = no limit); what it stored by then is reported. */
  bulkCapS: intEnv('BENCH_WATCH_BULK_CAP_S', 180, 0, 3600),
  /**
   * 0: leave watchlist_entries unanalysed after the set-up (a server with autovacuum off, before any ANALYZE):
   * the planner then has no statistics of the big list. 1 (default): ANALYZE, as autovacuum would have.
   */
  analyze: intEnv('BENCH_WATCH_ANALYZE', 1, 0, 1) === 1,
  /**
   * The worker's memory limit, MiB: it runs in a memory cgroup of that size (test/support/cgroup.ts), as in
   * its container (the chart's and compose's default, 512), and its peak RSS goal is 85 % of it. 0: no
   * cgroup, the goal 512 MB.
   */
  workerMemoryMb: intEnv('BENCH_WATCH_WORKER_MEMORY_MB', 512, 0, 65_536),
  /** NODE_OPTIONS of the worker; by default the chart's heap setting (a share of the memory limit). */
  workerNodeOptions:
    process.env.BENCH_WATCH_WORKER_NODE_OPTIONS ?? `--max-old-space-size-percentage=${WORKER_HEAP_PERCENT}`,
};

/** One entry in every `changedEvery` (id order) changes before the changed tick. */
const changedEvery = (n: number) => SETTINGS.changedEvery || Math.max(100, Math.round(n / 1000));

/**
 * What the scenario may take, s (run.ts's watchdog): its three ticks at the provider limit (the state
 * reads of two and a half ticks, the changed tick's analyses), the set-up, and the two capped bulk paths.
 */
export function watchlistsBudgetS(): number {
  const n = SETTINGS.entries;
  const calls = SETTINGS.changedTick ? (3 * n) / CHUNK + 6 * (n / changedEvery(n)) : (2 * n) / CHUNK;
  return Math.round(
    600 + (12 * calls) / SETTINGS.ratePerS + n / 2000 + (SETTINGS.bulk ? 2 * SETTINGS.bulkCapS + 120 : 0),
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The highest of the values known (a worker's /proc may be gone), or undefined. */
const highest = (values: (number | undefined)[]) =>
  values.some((v) => v !== undefined) ? Math.max(...values.filter((v) => v !== undefined)) : undefined;
export const seconds = (ms: number) => Math.round(ms) / 1000;
export const mb = (kb: number | undefined) => (kb === undefined ? undefined : Math.round(kb / 102.4) / 10);

/** `VmRSS`, `VmHWM`… of /proc/<pid>/status in kB (undefined where /proc is missing or the process is gone). */
export function procStatusKb(pid: number | undefined, field: string): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

const CLK_TCK = 100; // Linux's USER_HZ on every architecture Node runs on

/** user + system CPU time of a process, s. */
export function processCpuS(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return undefined;
  }
}

// ---- Prometheus text ---------------------------------------------------------------------------------

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * The samples of a Prometheus endpoint. A busy process (a worker on a loaded 2-core machine) may reset or
 * refuse a scrape now and then: three attempts, a second apart, before the error (with its cause).
 */
export async function scrape(url: string): Promise<Sample[]> {
  let text: string | undefined;
  for (let attempt = 1; text === undefined; attempt++) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      text = await res.text();
    } catch (err) {
      if (attempt >= 3) {
        const cause = (err as Error & { cause?: Error }).cause;
        throw new Error(`scraping ${url}: ${(err as Error).message}${cause ? ` (${cause.message})` : ''}`, {
          cause: err,
        });
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

const sumOf = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);

export function byLabel(samples: Sample[], name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples)
    if (s.name === name) out[s.labels[label] ?? '?'] = (out[s.labels[label] ?? '?'] ?? 0) + s.value;
  return out;
}

export function diffCounts(
  after: Record<string, number>,
  before: Record<string, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

// ---- the bench ---------------------------------------------------------------------------------------

/** Deterministic 32-byte keys as base58 addresses: the same list on every run. */
export function benchAddresses(n: number): Address[] {
  const decoder = getAddressDecoder();
  return Array.from({ length: n }, (_, i) =>
    decoder.decode(createHash('sha256').update(`riskwatch-bench-watchlist:${i}`).digest()),
  );
}

export async function deleteRedisPrefix(prefix: string): Promise<number> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
  let deleted = 0;
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length) deleted += await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}

/**
 * A bench's own deployment of the service: a database and Redis prefix of its own (dropped and deleted
 * when the bench ends), an account with an API key and an entitlement without a practical rate limit, a
 * PostgreSQL client and the job queues. `extraEnv` adds the bench's settings to the environment.
 */
export async function benchDeployment(
  o: Pick<WatchlistsBenchOptions, 'log' | 'defer'>,
  name: string,
  orgId: string,
  extraEnv: Record<string, string>,
) {
  const testEnv = await prepareEnv({ LOG_LEVEL: 'warn', ...extraEnv });
  const env: Record<string, string> = { ...testEnv.env, NODE_ENV: 'production' };
  const prefix = env.REDIS_KEY_PREFIX!;
  o.defer(async () => {
    await testEnv.dropDatabase();
    const keys = await deleteRedisPrefix(prefix);
    o.log(`cleanup: ${name} database dropped, ${keys} Redis keys under ${prefix} deleted`);
  });
  const boot = await cli(env, ['bootstrap', '--org-id', orgId]);
  const accountId = /^account\s+(\S+)/m.exec(boot)?.[1];
  const apiKey = /^api key\s+(\S+)/m.exec(boot)?.[1];
  if (!accountId || !apiKey) throw new Error(`bootstrap printed no account or API key:\n${boot}`);
  await cli(env, ['entitlements', 'grant', orgId, '--rate-limit-per-min', '100000000']);

  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  o.defer(() => db.end());
  const bull = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queues = new JobQueues(bull, prefix);
  o.defer(async () => {
    await queues.close();
    bull.disconnect();
  });
  return { env, accountId, apiKey, db, queues };
}

export async function runWatchlistsBench(o: WatchlistsBenchOptions): Promise<WatchlistsReport> {
  const { log } = o;
  const n = SETTINGS.entries;
  const chunks = Math.ceil(n / CHUNK);
  const every = changedEvery(n);
  const changedCount = Math.ceil((n - Math.floor(every / 2)) / every);
  const failures: string[] = [];
  const report: WatchlistsReport = {
    settings: {
      entries: n,
      latency_ms: SETTINGS.latencyMs,
      rate_per_s: SETTINGS.ratePerS,
      scan_concurrency: SETTINGS.scanConcurrency ?? 'default (8)',
      deep_concurrency: 'default (4)',
      worker_node_options: SETTINGS.workerNodeOptions,
      analyze: SETTINGS.analyze,
      bulk_cap_s: SETTINGS.bulkCapS,
      workers: SETTINGS.workers,
      changed_every: every,
      changed: changedCount,
      balance_change_pct: SETTINGS.balanceChangePct,
    },
    setup: { accounts_s: 0, entries_sql_s: 0, worker_start_s: 0, worker_idle_rss_mb: undefined },
    phases: [],
    bulk: [],
    goals: {
      max_calls: Math.floor(chunks * 1.05),
      max_ms: Math.round(1.25 * (chunks / SETTINGS.ratePerS) * 1000),
      max_rss_mb: SETTINGS.workerMemoryMb
        ? Math.round(SETTINGS.workerMemoryMb * RSS_SHARE_OF_LIMIT * 10) / 10
        : MAX_RSS_MB,
      calls: undefined,
      ms: undefined,
      rss_mb: undefined,
      verdict: 'ERROR',
      missed: [],
    },
    worker_end: { vm_hwm_mb: undefined, vm_rss_mb: undefined, workers: [] },
    failures,
  };
  log(
    `watchlists: ${n.toLocaleString('en-US')} Solana entries, facade latency ${SETTINGS.latencyMs} ms, ` +
      `provider limit ${SETTINGS.ratePerS} calls/s, scan concurrency ${report.settings.scan_concurrency}, ` +
      `${SETTINGS.workers} worker process${SETTINGS.workers === 1 ? '' : 'es'}`,
  );

  // The chain: a bare LiteSVM chain, every watched address a funded system account.
  let started = performance.now();
  const chain = await SolanaTestChain.create();
  const addresses = benchAddresses(n);
  for (const address of addresses)
    chain.setAccount({
      address,
      lamports: lamports(SOL),
      programAddress: SYSTEM_PROGRAM,
      executable: false,
      data: new Uint8Array(0),
    });
  const facade: SolanaFacade = await startSolanaFacade(chain.svm, chain.ledger);
  o.defer(async () => {
    await facade.close();
    log('cleanup: watchlists facade closed');
  });
  report.setup.accounts_s = seconds(performance.now() - started);
  log(`watchlists: ${n.toLocaleString('en-US')} accounts written in ${report.setup.accounts_s} s`);

  // The service's database, Redis prefix and environment.
  const { env, accountId, apiKey, db, queues } = await benchDeployment(o, 'watchlists', 'bench-watch', {
    RISKWATCH_RPC_SOLANA_MAINNET: facade.url,
    RISKWATCH_RPC_RATE_PER_S: String(SETTINGS.ratePerS),
    // The big list and the two bulk paths' lists are all this account's.
    RISKWATCH_MAX_WATCHLIST_ENTRIES_PER_ACCOUNT: String(Math.max(1_000_000, 3 * n)),
    ...(SETTINGS.scanConcurrency
      ? { RISKWATCH_WATCHLIST_SCAN_CONCURRENCY: String(SETTINGS.scanConcurrency) }
      : {}),
  });
  const workerEnv: Record<string, string> = SETTINGS.workerNodeOptions
    ? { ...env, NODE_OPTIONS: SETTINGS.workerNodeOptions }
    : { ...env };
  /** Each worker's environment: a memory cgroup of its own, as each replica has its container's limit. */
  const workerEnvs: Record<string, string>[] = [];
  for (let w = 0; w < SETTINGS.workers; w++) {
    if (!SETTINGS.workerMemoryMb) {
      workerEnvs.push(workerEnv);
      continue;
    }
    const cg = memoryCgroup(`riskwatch-bench-worker-${process.pid}-${w}`, SETTINGS.workerMemoryMb);
    if ('why' in cg) {
      log(`watchlists: worker ${w} runs without a memory limit: ${cg.why}`);
      workerEnvs.push(workerEnv);
      continue;
    }
    workerEnvs.push({ ...workerEnv, RISKWATCH_TEST_CGROUP: cg.dir });
    o.defer(() => Promise.resolve(cg.remove()));
    log(
      `watchlists: worker ${w} runs in a ${SETTINGS.workerMemoryMb} MiB memory cgroup (${cg.dir}), ` +
        `NODE_OPTIONS ${SETTINGS.workerNodeOptions || '(none)'}`,
    );
  }

  const createList = async (name: string, thresholds: Record<string, number>) => {
    const id = newId('wl');
    await db.query(
      `insert into watchlists (id, account_id, name, schedule, deep_schedule, thresholds, created_at, updated_at)
       values ($1, $2, $3, $4, $4, $5, now(), now())`,
      [id, accountId, name, NEVER, JSON.stringify(thresholds)],
    );
    return id;
  };
  const countEntries = async (watchlistId: string) =>
    Number(
      (
        await db.query<{ n: string }>('select count(*) as n from watchlist_entries where watchlist_id = $1', [
          watchlistId,
        ])
      ).rows[0]!.n,
    );

  const listId = await createList(`bench ${n.toLocaleString('en-US')}`, {
    balance_change_pct: SETTINGS.balanceChangePct,
  });
  started = performance.now();
  for (let i = 0; i < n; i += SQL_BATCH) {
    const targets = addresses.slice(i, i + SQL_BATCH);
    await db.query(
      `insert into watchlist_entries (id, account_id, watchlist_id, chain, network, target, created_at)
       select t.id, $1, $2, 'solana', $3, t.target, now() from unnest($4::text[], $5::text[]) as t(id, target)`,
      [accountId, listId, NETWORK, targets.map(() => newId('wle')), targets],
    );
  }
  report.setup.entries_sql_s = seconds(performance.now() - started);
  if ((await countEntries(listId)) !== n) throw new Error(`the list holds not ${n} entries`);
  // What autovacuum would have done by the first tick (it is off on some test servers): the planner knows
  // the list.
  if (SETTINGS.analyze) await db.query('analyze watchlist_entries');
  log(`watchlists: ${n.toLocaleString('en-US')} entries inserted by SQL in ${report.setup.entries_sql_s} s`);

  // The workers (one at a time: each takes seconds of CPU to start).
  started = performance.now();
  const workers: RunningService[] = [];
  for (const wEnv of workerEnvs) {
    const worker = await startService(wEnv, 'worker');
    workers.push(worker);
    o.track(worker.process);
    o.defer(async () => {
      const code = await Promise.race([worker.stop(), sleep(15_000).then(() => 'timeout')]);
      if (code === 'timeout') worker.process.kill('SIGKILL');
      log(`cleanup: watchlists worker ${worker.process.pid} exit ${String(code)}`);
    });
  }
  const pids = workers.map((w) => w.process.pid);
  report.setup.worker_start_s = seconds(performance.now() - started);
  await sleep(1000);
  report.setup.worker_idle_rss_mb = mb(procStatusKb(pids[0], 'VmRSS'));
  log(
    `watchlists: worker pid${pids.length > 1 ? 's' : ''} ${pids.join(', ')} up in ${report.setup.worker_start_s} s ` +
      `(idle RSS ${pids.map((pid) => mb(procStatusKb(pid, 'VmRSS'))).join(', ')} MB)`,
  );
  facade.setLatency(SETTINGS.latencyMs);

  const alive = () => {
    for (const worker of workers)
      if (worker.process.exitCode !== null || worker.process.signalCode !== null)
        throw new Error(`a watchlists worker exited:\n${worker.output().slice(-4000)}`);
  };
  const scrapeAll = () => Promise.all(workers.map((w) => scrape(w.metricsUrl)));
  // The poll counts the list's unchecked entries: at a million, every 2 s (a scan of the list each time).
  const pollMs = Math.max(POLL_MS, Math.round(n / 500));

  let scans = 0;
  const phase = async (
    name: WatchPhase['name'],
    mode: ScanMode,
    timeoutMs: number,
    analysed?: readonly string[],
  ): Promise<WatchPhase> => {
    alive();
    await facade.idle(200);
    facade.stats.reset();
    const before = await scrapeAll();
    const cpuBefore = pids.map((pid) => processCpuS(pid));
    const rssPeak = pids.map((pid) => procStatusKb(pid, 'VmRSS'));
    const sampler = setInterval(() => {
      pids.forEach((pid, w) => {
        const rss = procStatusKb(pid, 'VmRSS');
        if (rss !== undefined && (rssPeak[w] === undefined || rss > rssPeak[w])) rssPeak[w] = rss;
      });
    }, 200);
    sampler.unref();
    const heap = { used: 0, total: 0, external: 0 };
    const noteHeap = (all: Sample[][]) => {
      for (const samples of all) {
        heap.used = Math.max(heap.used, sumOf(samples, 'nodejs_heap_size_used_bytes'));
        heap.total = Math.max(heap.total, sumOf(samples, 'nodejs_heap_size_total_bytes'));
        heap.external = Math.max(heap.external, sumOf(samples, 'nodejs_external_memory_bytes'));
      }
    };
    let lastHeapSample = performance.now();

    const scanId = `bench-${name}-${Date.now()}-${scans++}`;
    const since = new Date();
    const t0 = performance.now();
    await queues.enqueue('watchlist-tick', { watchlist_id: listId, scan_id: scanId, mode }, scanId);
    let observed: number | undefined;
    let lastShown = t0;
    try {
      for (;;) {
        alive();
        const { rows } = await db.query<{ pending: string }>(
          `select count(*) as pending from watchlist_entries
            where watchlist_id = $1 and (last_checked_at is null or last_checked_at < $2)`,
          [listId, since],
        );
        const pending = Number(rows[0]!.pending);
        const now = performance.now();
        if (pending === 0) {
          observed = now - t0;
          break;
        }
        if (now - t0 > timeoutMs)
          throw new Error(
            `watchlists ${name}: ${pending} of ${n} entries still unchecked after ${seconds(timeoutMs)} s`,
          );
        if (now - lastHeapSample >= 5000) {
          lastHeapSample = now;
          // A sample of the heap peaks only: one that fails is skipped.
          noteHeap(await scrapeAll().catch(() => []));
        }
        if (now - lastShown >= 10_000) {
          lastShown = now;
          log(
            `  ${name}: ${seconds(now - t0).toFixed(0)} s, ${(n - pending).toLocaleString('en-US')} checked, ` +
              `${facade.stats.callCount()} calls`,
          );
        }
        await sleep(pollMs);
      }
    } finally {
      clearInterval(sampler);
    }
    await facade.idle(200);
    const cpuAfter = pids.map((pid) => processCpuS(pid));
    const afterEach = await scrapeAll();
    noteHeap(afterEach);
    const after = afterEach.flat();
    const beforeAll = before.flat();
    const chunksOf = (samples: Sample[]) =>
      sumOf(samples, 'riskwatch_watchlist_chunk_duration_seconds_count', { mode });
    const perWorker: WorkerPhase[] = pids.map((pid, w) => {
      const cpu =
        cpuBefore[w] !== undefined && cpuAfter[w] !== undefined ? cpuAfter[w] - cpuBefore[w] : undefined;
      return {
        pid,
        chunks: chunksOf(afterEach[w]!) - chunksOf(before[w]!),
        cpu_s: cpu === undefined ? undefined : Math.round(cpu * 100) / 100,
        rss_peak_sampled_mb: mb(rssPeak[w]),
        vm_hwm_mb: mb(procStatusKb(pid, 'VmHWM')),
      };
    });

    const [{ last }] = (
      await db.query<{ last: Date }>(
        'select max(last_checked_at) as last from watchlist_entries where watchlist_id = $1',
        [listId],
      )
    ).rows as [{ last: Date }];
    const snapshots = Number(
      (
        await db.query<{ n: string }>('select count(*) as n from watchlist_snapshots where scan_id = $1', [
          scanId,
        ])
      ).rows[0]!.n,
    );
    const alerts = Object.fromEntries(
      (
        await db.query<{ type: string; n: string }>(
          'select type, count(*) as n from watchlist_alerts where scan_id = $1 group by type order by type',
          [scanId],
        )
      ).rows.map((r) => [r.type, Number(r.n)]),
    );
    const outcomes = Object.fromEntries(
      (
        await db.query<{ outcome: string | null; n: string }>(
          `select last_outcome as outcome, count(*) as n from watchlist_entries where watchlist_id = $1
            group by last_outcome order by last_outcome`,
          [listId],
        )
      ).rows.map((r) => [r.outcome ?? 'null', Number(r.n)]),
    );
    const levels = analysed
      ? Object.fromEntries(
          (
            await db.query<{ level: string | null; n: string }>(
              `select risk_level as level, count(*) as n from watchlist_entries
                where watchlist_id = $1 and id = any($2::text[]) group by risk_level order by risk_level`,
              [listId, analysed],
            )
          ).rows.map((r) => [r.level ?? 'null', Number(r.n)]),
        )
      : undefined;

    const stats = facade.stats;
    const trips = stats.log.filter((r) => r.endedAt !== undefined);
    const firstStart = Math.min(...trips.map((r) => r.startedAt));
    const lastEnd = Math.max(...trips.map((r) => r.endedAt!));
    const perSecond = new Map<number, number>();
    for (const r of trips) {
      const bucket = Math.floor((r.startedAt - firstStart) / 1000);
      perSecond.set(bucket, (perSecond.get(bucket) ?? 0) + r.methods.length);
    }
    const calls = stats.callCount();
    const chunkCount = chunksOf(after) - chunksOf(beforeAll);
    const chunkSum =
      sumOf(after, 'riskwatch_watchlist_chunk_duration_seconds_sum', { mode }) -
      sumOf(beforeAll, 'riskwatch_watchlist_chunk_duration_seconds_sum', { mode });
    const exchangeCount =
      sumOf(after, 'riskwatch_rpc_request_duration_seconds_count') -
      sumOf(beforeAll, 'riskwatch_rpc_request_duration_seconds_count');
    const exchangeSum =
      sumOf(after, 'riskwatch_rpc_request_duration_seconds_sum') -
      sumOf(beforeAll, 'riskwatch_rpc_request_duration_seconds_sum');

    return {
      name,
      mode,
      scan_id: scanId,
      entries: n,
      ms: Math.round(new Date(last).getTime() - since.getTime()),
      observed_ms: Math.round(observed),
      rpc: {
        calls,
        by_method: { ...stats.calls },
        round_trips: stats.roundTrips,
        max_in_flight: stats.maxInFlight,
        first_call_ms: Math.round(firstStart - t0),
        last_answer_ms: Math.round(lastEnd - t0),
        calls_per_s: Math.round((calls / Math.max(1, lastEnd - firstStart)) * 1000 * 10) / 10,
        max_calls_in_1s: Math.max(0, ...perSecond.values()),
        rate_bound_s: Math.round((calls / SETTINGS.ratePerS) * 10) / 10,
      },
      db: { snapshots, alerts, outcomes, ...(levels ? { levels } : {}) },
      worker: {
        chunks: chunkCount,
        chunk_mean_ms: chunkCount ? Math.round((chunkSum / chunkCount) * 1000) : 0,
        rpc_attempts: diffCounts(
          byLabel(after, 'riskwatch_rpc_calls_total', 'outcome'),
          byLabel(beforeAll, 'riskwatch_rpc_calls_total', 'outcome'),
        ),
        rpc_exchange_mean_ms: exchangeCount ? Math.round((exchangeSum / exchangeCount) * 1000 * 10) / 10 : 0,
        cpu_s: perWorker.some((w) => w.cpu_s === undefined)
          ? undefined
          : Math.round(perWorker.reduce((a, w) => a + w.cpu_s!, 0) * 100) / 100,
        rss_peak_sampled_mb: highest(perWorker.map((w) => w.rss_peak_sampled_mb)),
        vm_hwm_mb: highest(perWorker.map((w) => w.vm_hwm_mb)),
        heap_used_peak_mb: mb(heap.used / 1024)!,
        heap_total_peak_mb: mb(heap.total / 1024)!,
        external_peak_mb: mb(heap.external / 1024)!,
      },
      workers: perWorker,
    };
  };

  const show = (p: WatchPhase) =>
    log(
      `watchlists ${p.name}: ${seconds(p.ms)} s, ${p.rpc.calls} calls ` +
        `(getMultipleAccounts ${p.rpc.by_method.getMultipleAccounts ?? 0}) in ${p.rpc.round_trips} round trips, ` +
        `${p.db.snapshots} snapshots, alerts ${JSON.stringify(p.db.alerts)}, outcomes ${JSON.stringify(p.db.outcomes)}, ` +
        `worker RSS peak ${p.worker.rss_peak_sampled_mb} MB (VmHWM ${p.worker.vm_hwm_mb} MB; heap used ` +
        `${p.worker.heap_used_peak_mb} of ${p.worker.heap_total_peak_mb} MB, external ${p.worker.external_peak_mb} MB)` +
        (p.workers.length > 1
          ? `; per worker (pid chunks CPU-s VmHWM-MB): ${p.workers
              .map((w) => `${w.pid} ${w.chunks} ${w.cpu_s ?? '-'} ${w.vm_hwm_mb ?? '-'}`)
              .join(' / ')}`
          : ''),
    );
  /**
   * A tick's time limit: twelve times its provider bound, at least 10 minutes (a baseline of a million
   * entries writes a million snapshots: on 2 shared cores PostgreSQL and the facade, not the provider
   * limit, set its pace; measured: 778 s for the baseline, over 1,200 s for the unchanged tick).
   */
  const tickTimeoutMs = (calls: number) =>
    Math.max(600_000, Math.round((12 * calls * 1000) / SETTINGS.ratePerS));
  const expect = (what: string, got: number, want: number) => {
    if (got !== want) failures.push(`watchlists ${what}: ${got}, expected ${want}`);
  };
  const alertTotal = (p: WatchPhase) => Object.values(p.db.alerts).reduce((a, b) => a + b, 0);

  // 1. Baseline: every entry new.
  const baseline = await phase('baseline', 'tick', tickTimeoutMs(chunks));
  report.phases.push(baseline);
  show(baseline);
  expect('baseline snapshots', baseline.db.snapshots, n);
  expect('baseline alerts', alertTotal(baseline), 0);
  // The tables once every entry has its first snapshot (later ticks add row versions, not rows); shown
  // now, so a later phase that fails does not lose it.
  report.storage = await storage(db, n);
  log(`watchlists storage after the baseline: ${JSON.stringify(report.storage)}`);

  // 2. Unchanged: the goals.
  const unchanged = await phase('unchanged', 'tick', tickTimeoutMs(chunks));
  report.phases.push(unchanged);
  show(unchanged);
  expect('unchanged snapshots', unchanged.db.snapshots, 0);
  expect('unchanged alerts', alertTotal(unchanged), 0);

  // 3. Changed, by real transfers: one entry in every `every` in id order (at 100: one per chunk).
  if (!SETTINGS.changedTick) {
    report.settings.changed = 0;
    log('watchlists: no changed tick (BENCH_WATCH_CHANGED=0)');
  } else {
    const { rows: changed } = await db.query<{ id: string; target: string }>(
      `select id, target from (
         select id, target, row_number() over (order by id) - 1 as i from watchlist_entries where watchlist_id = $1
       ) e where i % $2 = $3 order by id`,
      [listId, every, Math.floor(every / 2)],
    );
    started = performance.now();
    for (const e of changed)
      await transferSol(chain, { from: chain.payer, to: e.target as Address, amount: SOL / 10n });
    report.setup.transfers_s = seconds(performance.now() - started);
    log(
      `watchlists: ${changed.length} accounts changed by transfers of 0.1 SOL in ${report.setup.transfers_s} s`,
    );
    report.settings.changed = changed.length;
    const changedIds = changed.map((e) => e.id);
    const changedPhase = await phase(
      'changed',
      'tick',
      Math.max(1_200_000, tickTimeoutMs(chunks + 6 * changed.length)),
      changedIds,
    );
    report.phases.push(changedPhase);
    show(changedPhase);
    expect('changed snapshots', changedPhase.db.snapshots, changed.length);
    const onChanged = Number(
      (
        await db.query<{ n: string }>(
          'select count(*) as n from watchlist_snapshots where scan_id = $1 and entry_id = any($2::text[])',
          [changedPhase.scan_id, changedIds],
        )
      ).rows[0]!.n,
    );
    expect('changed snapshots of the changed entries', onChanged, changed.length);
    expect('changed balance_changed alerts', changedPhase.db.alerts.balance_changed ?? 0, changed.length);
    const balanceOnChanged = Number(
      (
        await db.query<{ n: string }>(
          `select count(distinct entry_id) as n from watchlist_alerts
            where scan_id = $1 and type = 'balance_changed' and entry_id = any($2::text[])`,
          [changedPhase.scan_id, changedIds],
        )
      ).rows[0]!.n,
    );
    expect('changed entries with a balance_changed alert', balanceOnChanged, changed.length);
  }

  const ends = pids.map((pid) => ({
    pid,
    vm_hwm_mb: mb(procStatusKb(pid, 'VmHWM')),
    vm_rss_mb: mb(procStatusKb(pid, 'VmRSS')),
  }));
  report.worker_end = {
    vm_hwm_mb: highest(ends.map((e) => e.vm_hwm_mb)),
    vm_rss_mb: highest(ends.map((e) => e.vm_rss_mb)),
    workers: ends,
  };

  // Goals (the unchanged tick; RSS: each worker's peak over every phase, the highest of them).
  const g = report.goals;
  g.calls = unchanged.rpc.calls;
  g.ms = unchanged.ms;
  g.rss_mb = report.worker_end.vm_hwm_mb;
  if (g.calls > g.max_calls) g.missed.push(`unchanged tick: ${g.calls} calls > ${g.max_calls}`);
  if (g.ms > g.max_ms) g.missed.push(`unchanged tick: ${seconds(g.ms)} s > ${seconds(g.max_ms)} s`);
  if (g.rss_mb === undefined) g.missed.push('worker RSS: not readable (/proc)');
  else if (g.rss_mb > g.max_rss_mb) g.missed.push(`worker peak RSS ${g.rss_mb} MB > ${g.max_rss_mb} MB`);

  // 4. The bulk paths, each on a list of its own.
  if (SETTINGS.bulk) {
    report.bulk.push(await bulkApi(o, env, apiKey, createList, countEntries, addresses, failures));
    report.bulk.push(await bulkCsv(o, env, accountId, createList, countEntries, addresses, failures));
  }

  g.verdict = failures.length ? 'ERROR' : g.missed.length ? 'MISS' : 'OK';
  printWatchlists(report, log);
  return report;
}

/** The watchlist tables' size in PostgreSQL (the big list only: before the bulk paths add theirs). */
async function storage(db: pg.Client, n: number): Promise<WatchStorage> {
  const size = async (sql: string, params: unknown[] = []) =>
    Number((await db.query<{ b: string }>(sql, params)).rows[0]!.b);
  const mbOf = (bytes: number) => Math.round(bytes / 1024 / 102.4) / 10;
  const total = (table: string) => size('select pg_total_relation_size($1::regclass) as b', [table]);
  const rows = (table: string) => size(`select count(*) as b from ${table}`);
  const { rows: indexes } = await db.query<{ name: string; b: string }>(
    `select indexrelid::regclass::text as name, pg_relation_size(indexrelid) as b from pg_index
      where indrelid = 'watchlist_entries'::regclass order by 1`,
  );
  const { rows: tuples } = await db.query<{ live: string; dead: string }>(
    `select n_live_tup as live, n_dead_tup as dead from pg_stat_user_tables where relname = 'watchlist_entries'`,
  );
  const entriesTotal = await total('watchlist_entries');
  const snapshotsTotal = await total('watchlist_snapshots');
  const alertsTotal = await total('watchlist_alerts');
  const perMillion = (bytes: number) => mbOf((bytes * 1_000_000) / n);
  return {
    entries: n,
    entries_heap_mb: mbOf(await size(`select pg_relation_size('watchlist_entries') as b`)),
    entries_indexes_mb: Object.fromEntries(indexes.map((i) => [i.name, mbOf(Number(i.b))])),
    entries_total_mb: mbOf(entriesTotal),
    snapshots_rows: await rows('watchlist_snapshots'),
    snapshots_total_mb: mbOf(snapshotsTotal),
    alerts_rows: await rows('watchlist_alerts'),
    alerts_total_mb: mbOf(alertsTotal),
    entries_live_tuples: Number(tuples[0]?.live ?? 0),
    entries_dead_tuples: Number(tuples[0]?.dead ?? 0),
    per_million: {
      entries_mb: perMillion(entriesTotal),
      snapshots_mb: perMillion(snapshotsTotal),
      alerts_mb: perMillion(alertsTotal),
      total_mb: perMillion(entriesTotal + snapshotsTotal + alertsTotal),
    },
  };
}

type CreateList = (name: string, thresholds: Record<string, number>) => Promise<string>;
type CountEntries = (watchlistId: string) => Promise<number>;

/** 10 POSTs of 10,000 entries to an `api` process, one after the other. */
async function bulkApi(
  o: WatchlistsBenchOptions,
  env: Record<string, string>,
  apiKey: string,
  createList: CreateList,
  countEntries: CountEntries,
  addresses: readonly string[],
  failures: string[],
): Promise<BulkTiming> {
  const api = await startService(env, 'api');
  o.track(api.process);
  let stopped = false;
  const stop = async () => {
    if (!stopped) await api.stop();
    stopped = true;
  };
  try {
    const listId = await createList('bench api', {});
    const url = `${api.baseUrl}/api/v1/watchlists/${listId}/entries`;
    const calls: number[] = [];
    let created = 0;
    let capped = false;
    const started = performance.now();
    const deadline = SETTINGS.bulkCapS ? started + SETTINGS.bulkCapS * 1000 : Number.POSITIVE_INFINITY;
    for (let i = 0; i < addresses.length; i += API_BATCH) {
      const left = deadline - performance.now();
      if (left <= 0) {
        capped = true;
        break;
      }
      const body = JSON.stringify({
        entries: addresses.slice(i, i + API_BATCH).map((target) => ({ target })),
      });
      const t = performance.now();
      let res: Response;
      let text: string;
      try {
        res = await fetch(url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-API-Key': apiKey },
          body,
          signal: AbortSignal.timeout(Math.ceil(Math.min(left, 900_000))),
        });
        text = await res.text();
      } catch (err) {
        if ((err as Error).name !== 'TimeoutError') throw err;
        calls.push(seconds(performance.now() - t));
        capped = true;
        break;
      }
      calls.push(seconds(performance.now() - t));
      if (res.status === 404 && i === 0) {
        o.log(`watchlists api: SKIP (not built yet): POST ${new URL(url).pathname} answered 404`);
        return { path: 'api', status: 'skipped', note: `404: ${text.slice(0, 200)}` };
      }
      if (res.status !== 200) {
        const note = `POST entries ${i / API_BATCH + 1} answered ${res.status}: ${text.slice(0, 300)}`;
        failures.push(`watchlists api: ${note}`);
        return { path: 'api', status: 'failed', note, calls_s: calls };
      }
      created += (JSON.parse(text) as { created: number }).created;
      o.log(`  api: POST ${calls.length} of ${Math.ceil(addresses.length / API_BATCH)}: ${calls.at(-1)} s`);
    }
    const total = seconds(performance.now() - started);
    await stop(); // a request cut off by the cap commits or rolls back before the count
    const stored = await countEntries(listId);
    if (!capped && (created !== addresses.length || stored !== addresses.length))
      failures.push(`watchlists api: created ${created}, stored ${stored}, expected ${addresses.length}`);
    return {
      path: 'api',
      status: capped ? 'capped' : 'ok',
      entries: addresses.length,
      seconds: total,
      calls_s: calls,
      created,
      stored,
    };
  } finally {
    await stop();
  }
}

/** `riskwatch watchlists import` of a CSV file of every address (its own process, as an operator runs it). */
async function bulkCsv(
  o: WatchlistsBenchOptions,
  env: Record<string, string>,
  accountId: string,
  createList: CreateList,
  countEntries: CountEntries,
  addresses: readonly string[],
  failures: string[],
): Promise<BulkTiming> {
  const file = join(tmpdir(), `riskwatch-bench-watchlist-${process.pid}.csv`);
  await writeFile(file, `target\n${addresses.join('\n')}\n`);
  o.defer(() => rm(file, { force: true }));
  const listId = await createList('bench csv', {});
  const started = performance.now();
  const child = spawn(process.execPath, [MAIN, 'watchlists', 'import', accountId, listId, file], {
    env: { ...process.env, ...env },
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  o.track(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const line of d.toString().split('\n')) if (line.startsWith('import:')) o.log(`  csv: ${line}`);
  });
  const exited = new Promise<number | string>((res) =>
    child.once('exit', (code, signal) => res(code ?? signal!)),
  );
  let capped = false;
  const cap = SETTINGS.bulkCapS
    ? setTimeout(() => {
        capped = true;
        child.kill('SIGTERM');
      }, SETTINGS.bulkCapS * 1000)
    : undefined;
  const code = await exited;
  clearTimeout(cap);
  const total = seconds(performance.now() - started);
  const stored = await countEntries(listId);
  if (capped) return { path: 'csv', status: 'capped', entries: addresses.length, seconds: total, stored };
  if (code !== 0) {
    if (/unknown command|too many arguments/i.test(stderr)) {
      o.log('watchlists csv: SKIP (not built yet): `riskwatch watchlists import` is not a command');
      return { path: 'csv', status: 'skipped', note: stderr.trim().slice(0, 200) };
    }
    const note = `riskwatch watchlists import exited ${code}: ${stderr.trim().slice(-500)}`;
    failures.push(`watchlists csv: ${note}`);
    return { path: 'csv', status: 'failed', note, stored };
  }
  let summary: { created?: number; seconds?: number };
  try {
    summary = JSON.parse(stdout) as typeof summary;
  } catch {
    summary = {};
  }
  if (summary.created !== addresses.length || stored !== addresses.length)
    failures.push(
      `watchlists csv: created ${summary.created}, stored ${stored}, expected ${addresses.length}: ${stdout.slice(0, 300)}`,
    );
  return {
    path: 'csv',
    status: 'ok',
    entries: addresses.length,
    seconds: total,
    ...(summary.seconds !== undefined ? { import_seconds: summary.seconds } : {}),
    ...(summary.created !== undefined ? { created: summary.created } : {}),
    stored,
  };
}

function printWatchlists(r: WatchlistsReport, log: (line?: string) => void): void {
  const g = r.goals;
  const rows = [
    [
      'phase',
      'entries',
      'time s',
      'rate bound s',
      'calls',
      'getMultipleAccounts',
      'round trips',
      'calls/s',
      'chunk ms',
      'snapshots',
      'alerts',
      'worker RSS peak MB',
      'worker CPU s',
    ],
    ...r.phases.map((p) => [
      p.name,
      p.entries.toLocaleString('en-US'),
      seconds(p.ms).toFixed(1),
      p.rpc.rate_bound_s.toFixed(1),
      String(p.rpc.calls),
      String(p.rpc.by_method.getMultipleAccounts ?? 0),
      String(p.rpc.round_trips),
      p.rpc.calls_per_s.toFixed(1),
      String(p.worker.chunk_mean_ms),
      String(p.db.snapshots),
      Object.entries(p.db.alerts)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || '0',
      String(p.worker.rss_peak_sampled_mb ?? '-'),
      String(p.worker.cpu_s ?? '-'),
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => (i === 0 || i === 10 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ');
  log();
  log(line(rows[0]!).trimEnd());
  log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows.slice(1)) log(line(row).trimEnd());
  log();
  for (const p of r.phases) {
    const other = Object.entries(p.rpc.by_method)
      .filter(([m]) => m !== 'getMultipleAccounts')
      .map(([m, c]) => `${m} ${c}`)
      .join(', ');
    log(
      `  ${p.name}: first call +${p.rpc.first_call_ms} ms, last answer +${p.rpc.last_answer_ms} ms, ` +
        `observed done +${p.observed_ms} ms; busiest second ${p.rpc.max_calls_in_1s} calls; ` +
        `max in flight ${p.rpc.max_in_flight}; exchange ${p.worker.rpc_exchange_mean_ms} ms/call; ` +
        `attempts ${JSON.stringify(p.worker.rpc_attempts)}; worker heap used ${p.worker.heap_used_peak_mb} ` +
        `of ${p.worker.heap_total_peak_mb} MB, external ${p.worker.external_peak_mb} MB (peaks)` +
        (other ? `; other calls: ${other}` : '') +
        (p.db.levels ? `; analysed entries' levels ${JSON.stringify(p.db.levels)}` : '') +
        `; outcomes ${JSON.stringify(p.db.outcomes)}`,
    );
  }
  if (r.worker_end.workers.length > 1)
    for (const w of r.worker_end.workers)
      log(
        `  worker ${w.pid}: VmHWM ${w.vm_hwm_mb ?? '-'} MB (peak over the whole run), ` +
          `VmRSS ${w.vm_rss_mb ?? '-'} MB at the end; chunks ${r.phases.map((p) => `${p.name} ${p.workers.find((x) => x.pid === w.pid)?.chunks ?? '-'}`).join(', ')}`,
      );
  log(
    `  worker${r.worker_end.workers.length > 1 ? 's (the highest)' : ''}: idle RSS ${r.setup.worker_idle_rss_mb ?? '-'} MB, ` +
      `VmHWM ${r.worker_end.vm_hwm_mb ?? '-'} MB (peak over the whole run), VmRSS ${r.worker_end.vm_rss_mb ?? '-'} MB at the end`,
  );
  const st = r.storage;
  if (st)
    log(
      `  PostgreSQL after the baseline tick, ${st.entries.toLocaleString('en-US')} entries: watchlist_entries ` +
        `${st.entries_total_mb} MB (heap ${st.entries_heap_mb} MB, ${st.entries_live_tuples.toLocaleString('en-US')} live / ` +
        `${st.entries_dead_tuples.toLocaleString('en-US')} dead row versions; indexes ` +
        `${Object.entries(st.entries_indexes_mb)
          .map(([k, v]) => `${k.replace(/^watchlist_entries_/, '')} ${v}`)
          .join(
            ', ',
          )}), watchlist_snapshots ${st.snapshots_total_mb} MB (${st.snapshots_rows.toLocaleString('en-US')} rows), ` +
        `watchlist_alerts ${st.alerts_total_mb} MB (${st.alerts_rows.toLocaleString('en-US')} rows); per million entries: ` +
        `entries ${st.per_million.entries_mb} MB, snapshots ${st.per_million.snapshots_mb} MB, alerts ` +
        `${st.per_million.alerts_mb} MB, ${st.per_million.total_mb} MB in all`,
    );
  log(
    `  set-up: accounts ${r.setup.accounts_s} s, entries by SQL ${r.setup.entries_sql_s} s, worker start ` +
      `${r.setup.worker_start_s} s, ${r.settings.changed} transfers ${r.setup.transfers_s ?? '-'} s`,
  );
  for (const b of r.bulk) {
    const what =
      b.path === 'api'
        ? `${r.settings.entries.toLocaleString('en-US')} entries by the API (${Math.ceil(r.settings.entries / API_BATCH)} POSTs of ≤ ${API_BATCH.toLocaleString('en-US')})`
        : `${r.settings.entries.toLocaleString('en-US')} entries by CSV import`;
    if (b.status === 'skipped') log(`  ${what}: SKIP (not built yet)`);
    else if (b.status === 'failed') log(`  ${what}: ERROR ${b.note ?? ''}`);
    else if (b.status === 'capped')
      log(
        `  ${what}: CAPPED after ${b.seconds} s (BENCH_WATCH_BULK_CAP_S): ${b.stored?.toLocaleString('en-US')} stored` +
          (b.calls_s ? ` (per call ${b.calls_s.join(' / ')} s)` : ''),
      );
    else
      log(
        `  ${what}: ${b.seconds} s` +
          (b.calls_s ? ` (per call ${b.calls_s.join(' / ')} s)` : '') +
          (b.import_seconds !== undefined ? ` (the import itself ${b.import_seconds} s)` : '') +
          `, ${b.stored?.toLocaleString('en-US')} stored`,
      );
  }
  log();
  log(
    `watchlists goals (unchanged tick): calls ${g.calls ?? '-'} ≤ ${g.max_calls}, ` +
      `time ${g.ms === undefined ? '-' : seconds(g.ms)} s ≤ ${seconds(g.max_ms)} s, ` +
      `worker peak RSS ${g.rss_mb ?? '-'} MB ≤ ${g.max_rss_mb} MB: ${g.verdict}`,
  );
  if (g.verdict === 'MISS') log(`MISS watchlists: ${g.missed.join('; ')}`);
}
