/**
 * `npm run bench`: riskwatch's HTTP throughput against bare Koa 3 doing the same request shapes, in one
 * run. The load generator is wrk (C, one thread; test/bench/wrk.ts installs the Debian package when it is
 * missing), not a Node generator that would need a core of its own on a 2-core machine and pull every ratio
 * toward 1; the output names it. Bare Koa and riskwatch run as child processes on 127.0.0.1, riskwatch as
 * production runs it: `api`, `worker` (the usage drain, the queues) and `scheduler` in separate processes.
 * wrk loads one target at a time. After a warm-up of every target, each round measures the baseline and
 * then every scenario (baseline, scenario…, baseline, scenario…); the medians over the rounds give req/s,
 * p50 and p99, and each scenario's ratio is its median req/s over its baseline's: the bare `GET` hello-world,
 * or for a scenario naming one (`floor`), the bare target of its own request shape.
 *
 * Scenarios: `public-impact` (no auth; goal ≥ 0.7 of the bare hello-world), `usage-api-key` (API key +
 * entitlement + rate limit + usage recording + a usage page) and `preflight-cached` (POST shield/preflight
 * for a Solana wallet whose chain analysis is in the risk cache: the whole API-key path plus the cache read,
 * lists and policy; goals ≥ 0.8 of its floor and p99 ≤ 10 ms). Its floor is `bare-koa-post`, on the bare Koa
 * process: the same POST body read by koa-body and a JSON answer of the preflight's size, nothing else —
 * what that request shape costs on Koa, whatever riskwatch does. The cache is warmed before measuring and a
 * second call must answer `cached: true`; the service gets cache TTLs of an hour, so nothing expires.
 *
 * `scan-cold` (after the rounds): POST scan/token, one at a time, for each Solana mint fixture the service
 * never scanned (USDC is scanned first, untimed, as the warm-up and left out), with BENCH_RPC_LATENCY_MS
 * injected into every round trip to the chain. It prints each scan's time in ms and in round-trip times,
 * and the facade's count of sequential round trips (the design budget is 3); then the median and the max.
 * To tell where time beyond the round trips goes, each scan also shows the time with a chain round trip in
 * flight vs outside them, and the CPU time of the service's main thread (test/bench/cold-scan.ts).
 *
 * The chain, for both: this process builds the LiteSVM Solana world of test/support/solana (2–4 s) and
 * serves it over its JSON-RPC facade as the service's solana/mainnet provider (RPC rate limit off: the
 * facade is local, the provider quota is not what is measured). With BENCH_ONLY naming neither, it is not
 * built.
 *
 * `watchlists` (last; test/bench/watchlists.ts has the details): the watchlist scan pipeline with 100,000
 * Solana entries on one list, a `riskwatch worker` process, and a world of its own — a bare LiteSVM chain
 * where every watched address is a system account written with setAccount, served by the facade with
 * 50 ms per round trip — and the provider limit RISKWATCH_RPC_RATE_PER_S=50 (shared in Redis), default
 * scan concurrency (8 chunk jobs of 100). Three ticks, each timed from the enqueue to the last entry's
 * `last_checked_at`: `baseline` (every entry new: a snapshot each, no analysis), `unchanged` (the goals),
 * `changed` (1,000 accounts, one per chunk, got 0.1 SOL by real transfers; thresholds balance_change_pct 1).
 * The numbers: `calls` are the JSON-RPC calls the facade answered (each element of a batch counts;
 * `round trips` are its HTTP requests, fewer: chunks' reads issued in the same tick share a batch);
 * `rate bound` is calls ÷ 50/s, the floor the provider limit sets; `time` is enqueue → the latest
 * `last_checked_at`; `calls/s` the calls over first call → last answer; `chunk ms` the worker's mean chunk
 * job (rate-limit waits included); `worker RSS peak` the highest VmRSS sampled every 200 ms in the phase,
 * with the V8 heap (used/total) and external memory from the worker's metrics beside it; the RSS goal is
 * judged on VmHWM (the worker's peak since it started) after the last tick. Goals of the unchanged tick:
 * calls ≤ ⌈N/100⌉ × 1.05 = 1,050, time ≤ 1.25 × 1,000 calls at 50/s = 25 s, peak RSS ≤ 512 MB (the helm
 * chart's worker limit). The worker runs with Node's default heap sizing, which follows the machine's
 * memory (or a container's limit): on a large host V8 keeps 128 MB of young generation and lets the old
 * generation grow to a few hundred MB before collecting, so RSS there says more about V8 than about the
 * live data (tens of MB); BENCH_WATCH_WORKER_NODE_OPTIONS runs it with other heap flags. The changed tick
 * must write exactly 1,000 snapshot rows and 1,000 `balance_changed` alerts (other alerts, from the deep
 * analyses, are shown apart); its time is mostly those analyses' 5,000 calls at 50/s. Then the bulk paths,
 * timed: 10 × POST /api/v1/watchlists/{id}/entries of 10,000 (an `api` process) and `riskwatch watchlists
 * import` of a 100,000-row CSV (process start included; the import's own seconds apart), each stopped after
 * BENCH_WATCH_BULK_CAP_S (reported as CAPPED, with the entries stored by then) and SKIP while its route or
 * command is not built. BENCH_ONLY=watchlists runs only this: no bare Koa, no riskwatch API of the HTTP
 * rounds, no fixture world.
 *
 * Timing is measured, not asserted: a scenario missing a goal prints MISS and still exits 0. A target that
 * answers anything but 2xx (or errors / times out), a preflight that does not come from the cache, a
 * cold scan that is not a fresh 200, or a watchlist tick that does not finish or writes other snapshot or
 * alert counts than expected makes the run exit 1.
 *
 * Knobs (environment): BENCH_DURATION_S (10), BENCH_WARMUP_S (3), BENCH_ROUNDS (3), BENCH_CONNECTIONS
 * (50), BENCH_ONLY (comma-separated names among public-impact, usage-api-key, preflight-cached,
 * bare-koa-post, scan-cold, usage-history, api-scaling, watchlists, webhooks, schedules, payload, evm-tokens,
 * screenings; the baseline always runs, unless watchlists, webhooks, schedules, payload, evm-tokens or screenings
 * is the only name; `screenings`: test/bench/screenings.ts, bulk screenings of 100,000 targets at depth state
 * (at the default provider share and at 100 %) and lists, and a 1,000,000-row CLI import, knobs
 * BENCH_SCREEN_*; `evm-tokens`:
 * test/bench/evm-tokens.ts, cold ERC-20 scans and a wallet's approvals from 10,000 logs; `payload`:
 * test/bench/payload-preflight.ts, shield preflights with a payload at 50 ms per provider round trip;
 * `webhooks`: test/bench/webhooks.ts, 10,000
 * events to verifying receivers; `schedules`: test/bench/watchlist-schedules.ts, 3,000 watchlists of one
 * account against another account's webhook; `usage-history`: test/bench/usage-history.ts and its BENCH_USAGE_* knobs;
 * `api-scaling`: the API on every core against one process, on public-impact and preflight-cached),
 * BENCH_RPC_LATENCY_MS (50: per chain round trip during scan-cold), BENCH_WATCH_* (the watchlists
 * scenario's entries, latency, rate, concurrency, worker heap flags, ANALYZE, bulk paths and their cap:
 * test/bench/watchlists.ts), BENCH_OUT
 * (results JSON; default <os tmpdir>/bench-results.json), BENCH_CPU_PROF_DIR (run both servers with
 * --cpu-prof; the profiles, named by pid, are written there when they stop).
 *
 * Besides req/s, each run reports the server process's CPU time per request (from /proc, Linux only):
 * unlike req/s it hardly moves when other work shares the machine, so `cpu ratio` (bare Koa's CPU µs per
 * request ÷ the scenario's) is the steadier efficiency figure. It counts the Node process only, not the
 * PostgreSQL or Redis work a request causes.
 *
 * Every riskwatch request streams a usage row that the worker drains into PostgreSQL after the run ends;
 * a bare Koa run started during that drain shares the machine with it and reads low, which inflates every
 * ratio over it (0.88 instead of 0.59 for preflight-cached, measured). So each bare Koa run first waits for
 * a quiet machine: the usage stream empty and the worker idle (`quiet floor` in the output).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { usageStreamKey } from '../../src/usage/recorder.js';
import { REDIS_URL } from '../support/env.js';
import type { SolanaFacade } from '../support/solana/facade.js';
import { buildSolanaWorld, type SolanaWorld } from '../support/solana/fixtures.js';
import {
  cli,
  freePort,
  prepareEnv,
  startService,
  type RunningService,
  type TestEnv,
} from '../support/service.js';
import { measureColdScans, type ColdScanReport } from './cold-scan.js';
import { runWatchlistsBench, watchlistsBudgetS, type WatchlistsReport } from './watchlists.js';
import { benchWebhooks } from './webhooks.js';
import { benchPayloads } from './payload-preflight.js';
import { benchEvmTokens } from './evm-tokens.js';
import { runScreeningsBench, type ScreeningsReport } from './screenings.js';
import { benchSchedules } from './watchlist-schedules.js';
import { benchUsageHistory } from './usage-history.js';
import { ensureWrk, runWrk, stopWrk } from './wrk.js';
import { intEnv } from './env.js';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One request shape measured against the riskwatch API. Later targets are one more entry in `scenarios`. */
export interface Scenario {
  name: string;
  method: Method;
  /** Path and query string on the riskwatch API. */
  path: string;
  headers?: Record<string, string>;
  /** Sent as JSON (Content-Type: application/json) unless already a string. */
  body?: unknown;
  /** Goal for req/s riskwatch ÷ its baseline; without one the ratio is informational. */
  minRatio?: number;
  /** The baseline: this bare scenario (the same request shape), else the bare GET hello-world. */
  floor?: string;
  /** Goal for the median p99 latency, ms. */
  maxP99Ms?: number;
  /** The status of the one probe request before measuring (default 200); while measuring, any non-2xx fails. */
  expectStatus?: number;
  /** The probe warms the risk cache; a second request must then answer `"cached": true`. */
  expectCached?: boolean;
  /** Needs the Solana chain (the LiteSVM world and its facade). */
  solana?: boolean;
  /** Measured on the bare Koa process instead of riskwatch (a reference, not the product). */
  bare?: boolean;
}

/** What the service is seeded with before it starts, for scenarios that need credentials or a chain. */
interface Fixtures {
  apiKey: string;
  /** A Solana wallet on the facade's chain (the preflight target). */
  solanaWallet: string;
}

/** The cold scan/token measurement: not a wrk scenario, but selectable in BENCH_ONLY as one. */
const SCAN_COLD = 'scan-cold';

/** BENCH_ONLY=name,name: measure just those scenarios (the baseline always runs). */
const ONLY = process.env.BENCH_ONLY?.split(',')
  .map((s) => s.trim())
  .filter(Boolean);
const RUN_SCAN_COLD = !ONLY?.length || ONLY.includes(SCAN_COLD);

// ---- watchlists (test/bench/watchlists.ts) ---------------------------------------------------------

/** The watchlist scan at 100,000 entries: not a wrk scenario, but selectable in BENCH_ONLY. */
const WATCHLISTS = 'watchlists';
const RUN_WATCHLISTS = !ONLY?.length || ONLY.includes(WATCHLISTS);
/** BENCH_ONLY=watchlists alone: no baseline, no HTTP targets, no fixture world. */
const ONLY_WATCHLISTS = !!ONLY?.length && ONLY.every((name) => name === WATCHLISTS);
/** What the watchlists scenario may take (its three ticks at the provider limit and the bulk adds), s. */
const WATCHLISTS_BUDGET_S = watchlistsBudgetS();

/** Runs it with this file's clean-up and child-process safety net; its failures join `failures`. */
async function runWatchlists(failures: string[]): Promise<WatchlistsReport> {
  log();
  const report = await runWatchlistsBench({
    log,
    defer: (step) => {
      cleanupSteps.push(step);
    },
    track: (child) => children.add(child),
  });
  failures.push(...report.failures);
  return report;
}

/** BENCH_ONLY=watchlists: just that, and its results in BENCH_OUT. */
async function watchlistsAlone(): Promise<number> {
  log(
    `riskwatch bench (watchlists): node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'})`,
  );
  const failures: string[] = [];
  const watchlists = await runWatchlists(failures);
  for (const f of failures) log(`ERROR ${f}`);
  const ok = failures.length === 0;
  writeResults({ ok, watchlists: { ...watchlists, failures: undefined }, failures });
  return ok ? 0 : 1;
}

// ---- (end of watchlists) ---------------------------------------------------------------------------

/** Webhook delivery of 10,000 events (test/bench/webhooks.ts): selectable in BENCH_ONLY, runs last. */
const WEBHOOKS = 'webhooks';
const RUN_WEBHOOKS = !ONLY?.length || ONLY.includes(WEBHOOKS);
const ONLY_WEBHOOKS = !!ONLY?.length && ONLY.every((name) => name === WEBHOOKS);

/** BENCH_ONLY=webhooks: just that, and its results in BENCH_OUT. */
async function webhooksAlone(): Promise<number> {
  const webhooks = await benchWebhooks();
  writeResults({ ok: true, webhooks });
  return 0;
}

/**
 * One account's 3,000 watchlist schedules against another account's webhook (test/bench/watchlist-schedules.ts):
 * selectable in BENCH_ONLY, runs after webhooks.
 */
const SCHEDULES = 'schedules';
const RUN_SCHEDULES = !ONLY?.length || ONLY.includes(SCHEDULES);
const ONLY_SCHEDULES = !!ONLY?.length && ONLY.every((name) => name === SCHEDULES);

/** BENCH_ONLY=schedules: just that, and its results in BENCH_OUT. */
async function schedulesAlone(): Promise<number> {
  const schedules = await benchSchedules(log);
  writeResults({ ok: true, schedules });
  return 0;
}

/**
 * Shield preflights with a payload, 50 ms per provider round trip (test/bench/payload-preflight.ts):
 * selectable in BENCH_ONLY, runs after schedules.
 */
const PAYLOAD = 'payload';
const RUN_PAYLOAD = !ONLY?.length || ONLY.includes(PAYLOAD);
const ONLY_PAYLOAD = !!ONLY?.length && ONLY.every((name) => name === PAYLOAD);

/**
 * Cold ERC-20 scans and a wallet's approvals from 10,000 logs, 50 ms per provider round trip
 * (test/bench/evm-tokens.ts): selectable in BENCH_ONLY, runs after payload.
 */
const EVM_TOKENS = 'evm-tokens';
const RUN_EVM_TOKENS = !ONLY?.length || ONLY.includes(EVM_TOKENS);
const ONLY_EVM_TOKENS = !!ONLY?.length && ONLY.every((name) => name === EVM_TOKENS);

/**
 * Bulk screenings at 100,000 targets and a 1,000,000-row import (test/bench/screenings.ts): selectable in
 * BENCH_ONLY, runs after evm-tokens.
 */
const SCREENINGS = 'screenings';
const RUN_SCREENINGS = !ONLY?.length || ONLY.includes(SCREENINGS);
const ONLY_SCREENINGS = !!ONLY?.length && ONLY.every((name) => name === SCREENINGS);
/** What the screenings scenario may take (two state screenings at 25 and 50 calls/s, the imports), s. */
const SCREENINGS_BUDGET_S = 1200;

/** Runs it with this file's clean-up and child-process safety net; its failures join `failures`. */
async function runScreenings(failures: string[]): Promise<ScreeningsReport> {
  log();
  const report = await runScreeningsBench({
    log,
    defer: (step) => {
      cleanupSteps.push(step);
    },
    track: (child) => children.add(child),
  });
  failures.push(...report.failures);
  return report;
}

/** BENCH_ONLY=screenings: just that, and its results in BENCH_OUT; wrong counts fail it. */
async function screeningsAlone(): Promise<number> {
  const failures: string[] = [];
  const screenings = await runScreenings(failures);
  for (const f of failures) log(`ERROR ${f}`);
  writeResults({ ok: failures.length === 0, screenings: { ...screenings, failures: undefined }, failures });
  return failures.length === 0 ? 0 : 1;
}

/** BENCH_ONLY=evm-tokens: just that, and its results in BENCH_OUT; a failure (non-200, > 3 round trips) fails it. */
async function evmTokensAlone(): Promise<number> {
  const evmTokens = await benchEvmTokens(log);
  writeResults({ ok: evmTokens.failures.length === 0, evmTokens, failures: evmTokens.failures });
  return evmTokens.failures.length === 0 ? 0 : 1;
}

/** BENCH_ONLY=payload: just that, and its results in BENCH_OUT; failures (non-200, past the deadline) fail it. */
async function payloadAlone(): Promise<number> {
  const payload = await benchPayloads(log);
  const failures = payload.shapes.flatMap((s) => s.failures.map((f) => `payload ${s.shape}: ${f}`));
  for (const f of failures) log(`ERROR ${f}`);
  writeResults({ ok: failures.length === 0, payload, failures });
  return failures.length === 0 ? 0 : 1;
}

function scenarios(f: Fixtures): Scenario[] {
  const all: Scenario[] = [
    { name: 'public-impact', method: 'GET', path: '/api/public/impact', minRatio: 0.7 },
    {
      // API-key auth (cached lookup) + entitlement + Redis rate limit + usage XADD + two usage queries.
      name: 'usage-api-key',
      method: 'GET',
      path: '/api/v1/usage?limit=1',
      headers: { 'X-API-Key': f.apiKey },
    },
    {
      // The usage-api-key path (auth, entitlement, rate limit, usage XADD) + the risk cache read (a Redis
      // GET of the wallet's chain analysis) + the account's lists + intent policy.
      name: 'preflight-cached',
      method: 'POST',
      path: '/api/v1/shield/preflight',
      headers: { 'X-API-Key': f.apiKey },
      body: { target: f.solanaWallet, intent: 'transfer' },
      floor: 'bare-koa-post',
      minRatio: 0.8,
      maxP99Ms: 10,
      expectCached: true,
      solana: true,
    },
    {
      // The floor of preflight-cached's request shape: bare Koa reading the same body with koa-body and
      // answering a preflight-sized JSON, nothing else (test/bench/bare-koa.ts).
      name: 'bare-koa-post',
      method: 'POST',
      path: '/json',
      body: { target: f.solanaWallet || '3E8LW5fTg7wAb34Wj9bJTcfFWYtzZFsVPhhDfEYRAvZi', intent: 'transfer' },
      bare: true,
    },
  ];
  if (!ONLY?.length) return all;
  const unknown = ONLY.filter(
    (name) =>
      name !== SCAN_COLD &&
      name !== SCALING &&
      name !== USAGE_HISTORY &&
      name !== WATCHLISTS &&
      name !== WEBHOOKS &&
      name !== SCHEDULES &&
      name !== PAYLOAD &&
      name !== EVM_TOKENS &&
      name !== SCREENINGS &&
      !all.some((s) => s.name === name),
  );
  if (unknown.length)
    throw new Error(
      `BENCH_ONLY names no scenario: ${unknown.join(', ')} ` +
        `(known: ${[...all.map((s) => s.name), SCAN_COLD, USAGE_HISTORY, SCALING, WATCHLISTS, WEBHOOKS, SCHEDULES, PAYLOAD, EVM_TOKENS, SCREENINGS].join(', ')})`,
    );
  // api-scaling measures its scenarios, and a scenario is measured with its floor.
  const chosen = all.filter(
    (s) => ONLY.includes(s.name) || (ONLY.includes(SCALING) && SCALED.includes(s.name)),
  );
  const floors = chosen.map((s) => s.floor);
  return all.filter((s) => chosen.includes(s) || floors.includes(s.name));
}

/** A concrete HTTP target: the baseline or a scenario on the running service. */
interface Target {
  name: string;
  /** The server process answering this target, for its CPU time. */
  pid: number | undefined;
  label: string;
  url: string;
  method: Method;
  headers: Record<string, string>;
  body?: string;
  expectStatus: number;
  expectCached: boolean;
}

interface RunStats {
  rps: number;
  /** CPU time (user + system) of the server process per response, µs; undefined where /proc is missing. */
  cpuUsPerReq: number | undefined;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

const SETTINGS = {
  durationS: intEnv('BENCH_DURATION_S', 10, 1, 120),
  warmupS: intEnv('BENCH_WARMUP_S', 3, 0, 60),
  rounds: intEnv('BENCH_ROUNDS', 3, 1, 9),
  connections: intEnv('BENCH_CONNECTIONS', 50, 1, 1000),
  rpcLatencyMs: intEnv('BENCH_RPC_LATENCY_MS', 50, 1, 1000),
};
const OUT = resolve(process.env.BENCH_OUT || join(tmpdir(), 'bench-results.json'));
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF_DIR ? resolve(process.env.BENCH_CPU_PROF_DIR) : undefined;
const BARE_KOA = join(PROJECT_ROOT, 'dist', 'test', 'bench', 'bare-koa.js');
const SECRET_HEADERS = new Set(['x-api-key', 'authorization', 'x-service-agent-key']);

const log = (line = ''): void => {
  process.stdout.write(`${line}\n`);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Clock ticks per second of /proc/<pid>/stat times. */
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** user + system CPU time of a process in µs, or undefined where /proc is not available. */
function processCpuUs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / CLK_TCK) * 1e6;
  } catch {
    return undefined;
  }
}

const redactHeaders = (headers: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(headers).map(([k, v]) => [k, SECRET_HEADERS.has(k.toLowerCase()) ? '[redacted]' : v]),
  );

/** The results JSON at BENCH_OUT, with the time and the machine; says where it is. */
function writeResults(results: Record<string, unknown>): void {
  const machine = { node: process.version, cpus: cpus().length, cpu_model: cpus()[0]?.model.trim() };
  const body = { generated_at: new Date().toISOString(), machine, ...results };
  writeFileSync(OUT, `${JSON.stringify(body, null, 2)}\n`);
  log(`results: ${OUT}`);
}

// ---- child processes -------------------------------------------------------------------------------

const children = new Set<ChildProcess>();
// Safety net: whatever happens to this process, no server it started outlives it.
process.on('exit', () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

const hasExited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** SIGTERM, wait up to `graceMs`, then SIGKILL; resolves with how it ended. */
async function stopChild(child: ChildProcess, graceMs: number): Promise<string> {
  const exited = new Promise<string>((res) => {
    if (hasExited(child)) res(`exit ${child.exitCode ?? child.signalCode}`);
    else child.once('exit', (code, signal) => res(`exit ${code ?? signal}`));
  });
  if (!hasExited(child)) child.kill('SIGTERM');
  const outcome = await Promise.race([exited, sleep(graceMs).then(() => 'timeout')]);
  if (outcome !== 'timeout') return outcome;
  child.kill('SIGKILL');
  return `killed after ${graceMs} ms (${await Promise.race([exited, sleep(2000).then(() => 'no exit')])})`;
}

async function waitFor200(url: string, child: ChildProcess, output: () => string, timeoutMs: number) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (hasExited(child)) throw new Error(`${url}: process exited early:\n${output()}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`${url}: not answering 200 within ${timeoutMs} ms:\n${output()}`);
    await sleep(100);
  }
}

async function startBareKoa(
  extraEnv: Record<string, string>,
): Promise<{ baseUrl: string; child: ChildProcess; output: () => string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [BARE_KOA], {
    env: { ...process.env, PORT: String(port), NODE_ENV: 'production', ...extraEnv },
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitFor200(`${baseUrl}/`, child, () => out, 15_000);
  return { baseUrl, child, output: () => out };
}

// ---- measuring -------------------------------------------------------------------------------------

/** One wrk run of `durationS` seconds against `t`. */
async function measure(t: Target, durationS: number): Promise<RunStats> {
  const cpuBefore = processCpuUs(t.pid);
  const r = await runWrk(
    { url: t.url, method: t.method, headers: t.headers, ...(t.body !== undefined ? { body: t.body } : {}) },
    SETTINGS.connections,
    durationS,
  );
  const cpuAfter = processCpuUs(t.pid);
  return {
    rps: r.rps,
    cpuUsPerReq:
      cpuBefore !== undefined && cpuAfter !== undefined && r.requests > 0
        ? (cpuAfter - cpuBefore) / r.requests
        : undefined,
    p50: r.p50Ms,
    p99: r.p99Ms,
    requests: r.requests,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
  };
}

/**
 * Waits until the worker has drained every usage batch the runs before streamed (the usage stream is
 * empty: drained entries are deleted) and its CPU has settled (under 5 % of a core over half a second), so
 * a baseline is never measured beside the drain of riskwatch's previous run. Returns the ms it waited.
 */
async function waitQuiet(redis: Redis, streamKey: string, workerPid: number | undefined): Promise<number> {
  const started = performance.now();
  const until = started + 120_000;
  for (;;) {
    const backlog = await redis.xlen(streamKey);
    const cpuBefore = processCpuUs(workerPid) ?? 0;
    await sleep(500);
    const busy = ((processCpuUs(workerPid) ?? 0) - cpuBefore) / 500_000;
    if (backlog === 0 && busy < 0.05) return Math.round(performance.now() - started);
    if (performance.now() > until) {
      log(`quiet: still ${backlog} usage batches and the worker at ${(busy * 100).toFixed(0)} % after 120 s`);
      return Math.round(performance.now() - started);
    }
  }
}

async function request(t: Target): Promise<{ status: number; text: string }> {
  const res = await fetch(t.url, {
    method: t.method,
    headers: t.headers,
    ...(t.body !== undefined ? { body: t.body } : {}),
    signal: AbortSignal.timeout(5000),
  });
  return { status: res.status, text: await res.text() };
}

/**
 * One request before measuring, so a wrong scenario fails with the answer it got, not a count. For a
 * cached target it also warms the cache, and then a second request must say it came from there (the
 * cache write follows the first answer, so a few tries are allowed).
 */
async function probe(t: Target): Promise<void> {
  const first = await request(t);
  if (first.status !== t.expectStatus)
    throw new Error(
      `${t.name}: ${t.label} answered ${first.status}, expected ${t.expectStatus}: ${first.text.slice(0, 500)}`,
    );
  if (!t.expectCached) return;
  let last = first;
  for (let attempt = 0; attempt < 10; attempt++) {
    await sleep(attempt === 0 ? 0 : 100);
    last = await request(t);
    let cached: unknown;
    try {
      cached = (JSON.parse(last.text) as { cached?: unknown }).cached;
    } catch {
      cached = undefined;
    }
    if (last.status === t.expectStatus && cached === true) return;
  }
  throw new Error(
    `${t.name}: ${t.label} did not answer "cached": true after warming: ${last.status} ${last.text.slice(0, 500)}`,
  );
}

function toTarget(s: Scenario, baseUrl: string, pid: number | undefined): Target {
  const headers = { ...s.headers };
  let body: string | undefined;
  if (s.body !== undefined) {
    body = typeof s.body === 'string' ? s.body : JSON.stringify(s.body);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
      headers['Content-Type'] = 'application/json';
  }
  return {
    name: s.name,
    pid,
    label: `${s.method} ${s.path}`,
    url: `${baseUrl}${s.path}`,
    method: s.method,
    headers,
    ...(body !== undefined ? { body } : {}),
    expectStatus: s.expectStatus ?? 200,
    expectCached: s.expectCached ?? false,
  };
}

const failureOf = (phase: string, t: Target, s: RunStats) =>
  s.non2xx > 0 || s.errors > 0
    ? `${phase} ${t.name}: ${s.non2xx} non-2xx, ${s.errors} errors (${s.timeouts} timeouts)`
    : undefined;

// ---- api scaling -----------------------------------------------------------------------------------

/**
 * `GET /api/v1/usage` with a million calls in the account (test/bench/usage-history.ts: BENCH_USAGE_ROWS,
 * seeded by SQL, each query shape under wrk -c10): selectable in BENCH_ONLY.
 */
const USAGE_HISTORY = 'usage-history';
const RUN_USAGE_HISTORY = !ONLY?.length || ONLY.includes(USAGE_HISTORY);

/** The API on every core (server.api_processes = cores) against one process: selectable in BENCH_ONLY. */
const SCALING = 'api-scaling';
const RUN_SCALING = !ONLY?.length || ONLY.includes(SCALING);
/** The scenarios measured on both. */
const SCALED = ['public-impact', 'preflight-cached'];

interface ScalingReport {
  name: string;
  processes: number;
  single: { rps: number; p99: number };
  multi: { rps: number; p99: number };
  scaling: number;
}

/**
 * A second `api` with RISKWATCH_API_PROCESSES set to the number of cores, beside the one-process API of the
 * rounds (same database, Redis, worker): each scaled scenario alternates between the two for the rounds,
 * and `scaling` is the median req/s of the many over the one. wrk's thread, PostgreSQL, Redis and the worker
 * share those same cores, so on a 2-core machine the ceiling is well below 2.
 */
async function measureScaling(
  env: Record<string, string>,
  single: RunningService,
  scaled: Target[],
  failures: string[],
): Promise<ScalingReport[]> {
  const processes = availableParallelism();
  log();
  log(`api-scaling: ${processes} API processes (RISKWATCH_API_PROCESSES=${processes}) vs 1`);
  const multi = await startService({ ...env, RISKWATCH_API_PROCESSES: String(processes) }, 'api');
  children.add(multi.process);
  try {
    const reports: ScalingReport[] = [];
    for (const t of scaled) {
      const onMulti: Target = { ...t, pid: undefined, url: t.url.replace(single.baseUrl, multi.baseUrl) };
      await probe(onMulti);
      await measure(onMulti, SETTINGS.warmupS || 1);
      const one: RunStats[] = [];
      const many: RunStats[] = [];
      for (let round = 1; round <= SETTINGS.rounds; round++) {
        for (const [target, runs] of [
          [t, one],
          [onMulti, many],
        ] as const) {
          const r = await measure(target, SETTINGS.durationS);
          runs.push(r);
          const f = failureOf(`api-scaling round ${round}`, target, r);
          if (f) failures.push(f);
        }
        log(
          `round ${round}  ${t.name.padEnd(16)} 1 process ${one.at(-1)!.rps.toFixed(0).padStart(7)} req/s, ` +
            `${processes} processes ${many.at(-1)!.rps.toFixed(0).padStart(7)} req/s`,
        );
      }
      const med = (runs: RunStats[]) => ({
        rps: median(runs.map((r) => r.rps)),
        p99: median(runs.map((r) => r.p99)),
      });
      const report = { name: t.name, processes, single: med(one), multi: med(many), scaling: 0 };
      report.scaling = report.multi.rps / report.single.rps;
      reports.push(report);
    }
    for (const r of reports)
      log(
        `api-scaling ${r.name}: 1 process ${r.single.rps.toFixed(0)} req/s (p99 ${r.single.p99.toFixed(1)} ms), ` +
          `${r.processes} processes ${r.multi.rps.toFixed(0)} req/s (p99 ${r.multi.p99.toFixed(1)} ms): ` +
          `×${r.scaling.toFixed(2)}`,
      );
    return reports;
  } finally {
    log(`api-scaling: ${await stopChild(multi.process, 15_000)}`);
  }
}

// ---- report ----------------------------------------------------------------------------------------

interface TargetReport {
  name: string;
  request: string;
  runs: RunStats[];
  median: { rps: number; p50: number; p99: number; cpuUsPerReq: number | undefined };
  ratio?: number;
  /** The baseline of `ratio`. */
  ratioOf?: string;
  /** Bare Koa's CPU µs per request ÷ this target's (1 = as cheap as the baseline). */
  cpuRatio?: number;
  minRatio?: number;
  maxP99Ms?: number;
  /** The goals missed, in words (verdict MISS). */
  missed?: string[];
  verdict: 'baseline' | 'OK' | 'MISS' | 'info' | 'ERROR';
}

function summarise(
  t: Target,
  runs: RunStats[],
  failed: boolean,
): Omit<TargetReport, 'verdict'> & { failed: boolean } {
  return {
    name: t.name,
    request: t.label,
    runs,
    median: {
      rps: median(runs.map((r) => r.rps)),
      p50: median(runs.map((r) => r.p50)),
      p99: median(runs.map((r) => r.p99)),
      cpuUsPerReq: runs.every((r) => r.cpuUsPerReq !== undefined)
        ? median(runs.map((r) => r.cpuUsPerReq!))
        : undefined,
    },
    failed,
  };
}

function goalText(r: TargetReport): string {
  const goals = [
    ...(r.minRatio !== undefined ? [`>= ${r.minRatio.toFixed(2)}`] : []),
    ...(r.maxP99Ms !== undefined ? [`p99 <= ${r.maxP99Ms} ms`] : []),
  ];
  return goals.length ? goals.join(', ') : '-';
}

function printTable(reports: TargetReport[]): void {
  const rows = [
    [
      'target',
      'request',
      'req/s per round',
      'median req/s',
      'p50 ms',
      'p99 ms',
      'cpu µs/req',
      'ratio',
      'goal',
      'verdict',
      'cpu ratio',
    ],
    ...reports.map((r) => [
      r.name,
      r.request,
      r.runs.map((x) => x.rps.toFixed(0)).join(' / '),
      r.median.rps.toFixed(0),
      r.median.p50.toFixed(1),
      r.median.p99.toFixed(1),
      r.median.cpuUsPerReq === undefined ? '-' : r.median.cpuUsPerReq.toFixed(0),
      r.ratio === undefined ? '-' : `${r.ratio.toFixed(2)} of ${r.ratioOf}`,
      goalText(r),
      r.verdict,
      r.cpuRatio === undefined ? '-' : r.cpuRatio.toFixed(2),
    ]),
  ];
  const numeric = new Set([3, 4, 5, 6, 7, 10]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row.map((cell, i) => (numeric.has(i) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  ');
  log(line(rows[0]!).trimEnd());
  log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows.slice(1)) log(line(row).trimEnd());
}

// ---- main ------------------------------------------------------------------------------------------

let cleanupOnce: Promise<void> | undefined;
let cleanupSteps: (() => Promise<void>)[] = [];

/** Stops the servers, drops the database and deletes the Redis keys; runs once, whatever called it. */
function cleanup(): Promise<void> {
  cleanupOnce ??= (async () => {
    stopWrk();
    for (const step of cleanupSteps.reverse()) {
      try {
        await step();
      } catch (err) {
        log(`cleanup: ${(err as Error).message}`);
      }
    }
    cleanupSteps = [];
  })();
  return cleanupOnce;
}

async function deleteRedisPrefix(prefix: string): Promise<number> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
  let deleted = 0;
  try {
    await redis.connect();
    let cursor = '0';
    for (let i = 0; i < 100_000; i++) {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length) deleted += await redis.del(...keys);
      cursor = next;
      if (cursor === '0') break;
    }
  } finally {
    redis.disconnect();
  }
  return deleted;
}

async function main(): Promise<number> {
  const planned = scenarios({ apiKey: '', solanaWallet: '' });
  const plannedTargets = 1 + planned.length;
  const needsSolana = RUN_SCAN_COLD || planned.some((s) => s.solana);
  const budgetS =
    plannedTargets * (SETTINGS.warmupS + 5) +
    SETTINGS.rounds * plannedTargets * (SETTINGS.durationS + 5) +
    (needsSolana ? 120 : 0) +
    (RUN_WATCHLISTS ? WATCHLISTS_BUDGET_S : 0) +
    (RUN_SCREENINGS ? SCREENINGS_BUDGET_S : 0) +
    (RUN_WEBHOOKS ? 600 : 0) +
    (RUN_SCHEDULES ? 300 : 0) +
    (RUN_PAYLOAD ? 300 : 0) +
    (RUN_USAGE_HISTORY ? 900 : 0) +
    (RUN_SCALING
      ? SCALED.length * (2 * SETTINGS.rounds * (SETTINGS.durationS + 5) + SETTINGS.warmupS + 30)
      : 0) +
    240;
  const watchdog = setTimeout(() => {
    log(`bench: still running after ${budgetS} s; giving up`);
    void cleanup().finally(() => process.exit(2));
  }, budgetS * 1000);
  watchdog.unref();
  if (ONLY_WATCHLISTS) return watchlistsAlone();
  if (ONLY_WEBHOOKS) return webhooksAlone();
  if (ONLY_SCHEDULES) return schedulesAlone();
  if (ONLY_PAYLOAD) return payloadAlone();
  if (ONLY_EVM_TOKENS) return evmTokensAlone();
  if (ONLY_SCREENINGS) return screeningsAlone();

  const wrkVersion = ensureWrk(log);
  log(
    `riskwatch bench: node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'}), ` +
      `${SETTINGS.rounds} rounds x ${SETTINGS.durationS} s per target, warm-up ${SETTINGS.warmupS} s`,
  );
  log(
    `load generator: ${wrkVersion} — C, light: -t1 (one thread), -c${SETTINGS.connections}, no pinning; ` +
      `riskwatch runs as production does, api / worker / scheduler in separate processes`,
  );

  // The service: a fresh database, a Redis prefix of its own, an API key with a limit never reached.
  const testEnv: TestEnv = await prepareEnv({ LOG_LEVEL: 'warn' });
  const prefix = testEnv.env.REDIS_KEY_PREFIX!;
  cleanupSteps.push(async () => {
    await testEnv.dropDatabase();
    const n = await deleteRedisPrefix(prefix);
    log(`cleanup: database dropped, ${n} Redis keys under ${prefix} deleted`);
  });
  const boot = await cli(testEnv.env, ['bootstrap', '--org-id', 'bench']);
  const apiKey = /^api key\s+(\S+)/m.exec(boot)?.[1];
  if (!apiKey) throw new Error(`bootstrap printed no API key:\n${boot}`);
  await cli(testEnv.env, ['entitlements', 'grant', 'bench', '--rate-limit-per-min', '100000000']);

  // The chain: a LiteSVM world served by its JSON-RPC facade in this process, as solana/mainnet.
  let world: SolanaWorld | undefined;
  let facade: SolanaFacade | undefined;
  const chainEnv: Record<string, string> = {};
  if (needsSolana) {
    const started = performance.now();
    world = await buildSolanaWorld();
    const f = await world.startFacade();
    facade = f;
    cleanupSteps.push(async () => {
      await f.close();
      log('cleanup: Solana facade closed');
    });
    Object.assign(chainEnv, {
      RISKWATCH_RPC_SOLANA_MAINNET: f.url,
      RISKWATCH_RPC_RATE_PER_S: '0',
      RISKWATCH_RISK_CACHE_TTL_LOW_S: '3600',
      RISKWATCH_RISK_CACHE_TTL_MEDIUM_S: '3600',
      RISKWATCH_RISK_CACHE_TTL_HIGH_S: '3600',
      RISKWATCH_RISK_CACHE_TTL_CRITICAL_S: '3600',
    });
    log(
      `Solana world built and served on ${f.url} in ${((performance.now() - started) / 1000).toFixed(1)} s ` +
        `(${Object.keys(world.fixtures.mints).length} mints)`,
    );
  }

  if (CPU_PROF_DIR) mkdirSync(CPU_PROF_DIR, { recursive: true });
  const profEnv: Record<string, string> = CPU_PROF_DIR
    ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${CPU_PROF_DIR}` }
    : {};
  const bare = await startBareKoa(profEnv);
  cleanupSteps.push(async () => log(`cleanup: bare Koa ${await stopChild(bare.child, 5000)}`));

  // The roles as production runs them: the API alone in its process, the usage drain and the jobs in a
  // worker, the periodic jobs in a scheduler.
  const serviceEnv = { ...testEnv.env, ...chainEnv, NODE_ENV: 'production' };
  const svc: RunningService = await startService({ ...serviceEnv, ...profEnv }, 'api');
  children.add(svc.process);
  cleanupSteps.push(async () => log(`cleanup: riskwatch api ${await stopChild(svc.process, 15_000)}`));
  let workerPid: number | undefined;
  for (const role of ['worker', 'scheduler'] as const) {
    const side = await startService(serviceEnv, role);
    children.add(side.process);
    if (role === 'worker') workerPid = side.process.pid;
    cleanupSteps.push(async () => log(`cleanup: riskwatch ${role} ${await stopChild(side.process, 15_000)}`));
  }
  log(
    `bare Koa on ${bare.baseUrl} (pid ${bare.child.pid}), ` +
      `riskwatch api on ${svc.baseUrl} (pid ${svc.process.pid}), worker and scheduler beside it`,
  );

  const baseline: Target = {
    name: 'bare-koa',
    pid: bare.child.pid,
    label: 'GET /',
    url: `${bare.baseUrl}/`,
    method: 'GET',
    headers: {},
    expectStatus: 200,
    expectCached: false,
  };
  const defs = scenarios({ apiKey, solanaWallet: world?.fixtures.wallets.oldWallet.address ?? '' });
  const targets = [
    baseline,
    ...defs.map((s) =>
      s.bare ? toTarget(s, bare.baseUrl, bare.child.pid) : toTarget(s, svc.baseUrl, svc.process.pid),
    ),
  ];
  for (const t of targets) await probe(t);

  const failures: string[] = [];
  const alive = () => {
    if (hasExited(svc.process)) throw new Error(`riskwatch exited during the bench:\n${svc.output()}`);
    if (hasExited(bare.child)) throw new Error(`bare Koa exited during the bench:\n${bare.output()}`);
  };

  if (SETTINGS.warmupS > 0)
    for (const t of targets) {
      alive();
      const s = await measure(t, SETTINGS.warmupS);
      log(`warm-up  ${t.name.padEnd(16)} ${s.rps.toFixed(0).padStart(7)} req/s`);
      const f = failureOf('warm-up', t, s);
      if (f) failures.push(f);
    }

  // Bare Koa is measured only once the worker has drained the usage the riskwatch runs before it streamed.
  const quietRedis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  cleanupSteps.push(() => Promise.resolve(quietRedis.disconnect()));
  const usageStream = usageStreamKey(prefix);
  const quietWaitsMs: number[] = [];
  const runs = new Map<Target, RunStats[]>(targets.map((t) => [t, []]));
  for (let round = 1; round <= SETTINGS.rounds; round++)
    for (const t of targets) {
      alive();
      if (t.pid === bare.child.pid) quietWaitsMs.push(await waitQuiet(quietRedis, usageStream, workerPid));
      const s = await measure(t, SETTINGS.durationS);
      runs.get(t)!.push(s);
      log(
        `round ${round}  ${t.name.padEnd(16)} ${s.rps.toFixed(0).padStart(7)} req/s  ` +
          `p50 ${s.p50.toFixed(1)} ms  p99 ${s.p99.toFixed(1)} ms  ` +
          `cpu ${s.cpuUsPerReq?.toFixed(0) ?? '-'} µs/req  non-2xx ${s.non2xx}`,
      );
      const f = failureOf(`round ${round}`, t, s);
      if (f) failures.push(f);
    }

  if (quietWaitsMs.length)
    log(
      `quiet floor: each bare Koa run waited for the usage drain and an idle worker first ` +
        `(${quietWaitsMs.length} waits, median ${median(quietWaitsMs)} ms, max ${Math.max(...quietWaitsMs)} ms)`,
    );

  let coldScan: ColdScanReport | undefined;
  if (RUN_SCAN_COLD && facade && world) {
    alive();
    log();
    log(`scan-cold: POST /api/v1/scan/token, sequential, ${SETTINGS.rpcLatencyMs} ms per chain round trip`);
    coldScan = await measureColdScans({
      baseUrl: svc.baseUrl,
      apiKey,
      facade,
      mints: world.fixtures.mints,
      latencyMs: SETTINGS.rpcLatencyMs,
      warmUp: 'usdc',
      servicePid: svc.process.pid,
      log,
    });
    failures.push(...coldScan.failures);
  }

  const base = summarise(
    baseline,
    runs.get(baseline)!,
    runs.get(baseline)!.some((r) => !!failureOf('', baseline, r)),
  );
  const reports: TargetReport[] = [{ ...base, verdict: base.failed ? 'ERROR' : 'baseline' }];
  const sums = targets.slice(1).map((t) =>
    summarise(
      t,
      runs.get(t)!,
      runs.get(t)!.some((r) => !!failureOf('', t, r)),
    ),
  );
  targets.slice(1).forEach((t, i) => {
    const def = defs[i]!;
    const sum = sums[i]!;
    const floor = def.floor ? sums.find((x) => x.name === def.floor) : base;
    if (!floor) throw new Error(`${def.name}: its floor ${def.floor} was not measured (BENCH_ONLY)`);
    const ratio = sum.median.rps / floor.median.rps;
    const cpuRatio =
      floor.median.cpuUsPerReq !== undefined && sum.median.cpuUsPerReq
        ? floor.median.cpuUsPerReq / sum.median.cpuUsPerReq
        : undefined;
    const missed = [
      ...(def.minRatio !== undefined && !(ratio >= def.minRatio)
        ? [`ratio ${ratio.toFixed(2)} < ${def.minRatio.toFixed(2)}`]
        : []),
      ...(def.maxP99Ms !== undefined && !(sum.median.p99 <= def.maxP99Ms)
        ? [`p99 ${sum.median.p99.toFixed(1)} ms > ${def.maxP99Ms} ms`]
        : []),
    ];
    const verdict = sum.failed
      ? 'ERROR'
      : def.minRatio === undefined && def.maxP99Ms === undefined
        ? 'info'
        : missed.length
          ? 'MISS'
          : 'OK';
    reports.push({
      ...sum,
      ratio,
      ratioOf: floor.name,
      ...(cpuRatio !== undefined ? { cpuRatio } : {}),
      ...(def.minRatio !== undefined ? { minRatio: def.minRatio } : {}),
      ...(def.maxP99Ms !== undefined ? { maxP99Ms: def.maxP99Ms } : {}),
      ...(missed.length ? { missed } : {}),
      verdict,
    });
  });

  log();
  printTable(reports);
  log();
  for (const r of reports) if (r.verdict === 'MISS') log(`MISS ${r.name}: ${r.missed?.join('; ')}`);
  if (coldScan) {
    const c = coldScan;
    log(
      `cold scan/token: median ${c.median.ms.toFixed(0)} ms = ${c.median.rtts.toFixed(1)}× RTT ` +
        `(${c.latencyMs} ms), max ${c.max.ms.toFixed(0)} ms = ${c.max.rtts.toFixed(1)}× RTT, ` +
        `max sequential round trips ${c.max.sequentialRoundTrips} ` +
        `(budget 3: ${c.max.sequentialRoundTrips <= 3 ? 'OK' : 'MISS'}; ${c.mints} mints)`,
    );
    log(
      `cold scan/token: median time with a chain round trip in flight ${c.median.rpcMs.toFixed(0)} ms, ` +
        `outside them ${c.median.outsideRpcMs.toFixed(0)} ms (service work + the client's HTTP exchange; ` +
        `${c.median.beforeFirstRpcMs.toFixed(0)} ms before the first, ${c.median.afterLastRpcMs.toFixed(0)} ms after the last); ` +
        `service main-thread CPU ${c.median.serviceCpuMs?.toFixed(1) ?? '-'} ms per scan`,
    );
  }
  const usageHistory = RUN_USAGE_HISTORY
    ? (log(), await benchUsageHistory({ env: serviceEnv, baseUrl: svc.baseUrl, log }))
    : undefined;
  const scaling = RUN_SCALING
    ? await measureScaling(
        serviceEnv,
        svc,
        targets.slice(1).filter((t) => SCALED.includes(t.name)),
        failures,
      )
    : undefined;
  const watchlists = RUN_WATCHLISTS ? await runWatchlists(failures) : undefined;
  const webhooks = RUN_WEBHOOKS ? await benchWebhooks() : undefined;
  const schedules = RUN_SCHEDULES ? await benchSchedules(log) : undefined;
  const payload = RUN_PAYLOAD ? await benchPayloads(log) : undefined;
  if (payload)
    failures.push(...payload.shapes.flatMap((s) => s.failures.map((f) => `payload ${s.shape}: ${f}`)));
  const evmTokens = RUN_EVM_TOKENS ? await benchEvmTokens(log) : undefined;
  if (evmTokens) failures.push(...evmTokens.failures);
  const screenings = RUN_SCREENINGS ? await runScreenings(failures) : undefined;
  for (const f of failures) log(`ERROR ${f}`);

  const ok = failures.length === 0;
  writeResults({
    ok,
    settings: {
      ...SETTINGS,
      load_generator: `${wrkVersion}, one thread`,
      rps: 'requests ÷ run duration',
      latency: 'ms, every response',
    },
    order: 'per round: baseline, then each scenario; medians over rounds; then scan-cold, then watchlists',
    targets: reports.map((r, i) => ({
      ...r,
      headers: redactHeaders(targets[i]!.headers),
    })),
    ...(coldScan
      ? {
          scan_cold: {
            request: 'POST /api/v1/scan/token, sequential, each mint never scanned before',
            warm_up: 'usdc (untimed, not counted)',
            ...coldScan,
            failures: undefined,
          },
        }
      : {}),
    ...(usageHistory ? { usage_history: usageHistory } : {}),
    ...(scaling ? { api_scaling: scaling } : {}),
    ...(watchlists ? { watchlists: { ...watchlists, failures: undefined } } : {}),
    ...(webhooks ? { webhooks } : {}),
    ...(schedules ? { schedules } : {}),
    ...(payload ? { payload } : {}),
    ...(evmTokens ? { evmTokens } : {}),
    ...(screenings ? { screenings: { ...screenings, failures: undefined } } : {}),
    failures,
  });
  if (CPU_PROF_DIR) log(`cpu profiles of the service: ${CPU_PROF_DIR} (written when it stops)`);
  return ok ? 0 : 1;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    log(`bench: ${signal}, stopping`);
    void cleanup().finally(() => process.exit(130));
  });

let code: number;
try {
  code = await main();
} catch (err) {
  log(`bench failed: ${(err as Error).stack ?? String(err)}`);
  code = 1;
}
await cleanup();
process.exitCode = code;
