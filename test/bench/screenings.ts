/**
 * The bench's `screenings` scenario (issue 21): bulk screenings (src/screenings/, src/risk/screen.ts) at the
 * sizes the issue names, with an `api` and a `worker` process of the built service, PostgreSQL, Redis and a
 * LiteSVM chain served by its JSON-RPC facade with an injected latency.
 *
 * The world: a bare LiteSVM chain (SolanaTestChain) where the targets are the watchlists bench's addresses
 * (sha256("riskwatch-bench-watchlist:<i>"), test/bench/watchlists.ts); BENCH_SCREEN_MISSING_PCT of every
 * 100 (10: i mod 100 < 10) are left missing, every other one is a system account holding 1 SOL written with
 * `chain.setAccount`. The facade's latency (50 ms) is set after the set-up; the service gets the facade as
 * solana/mainnet and RISKWATCH_RPC_RATE_PER_S=50 (the provider's limit, counted in Redis); screenings may
 * use `screenings.provider_share_pct` of it (their own Redis gate, src/screenings/runner.ts takeShare).
 * Targets go up in ONE POST of 100,000 (`{"target": …}` only: 5.7 MB, under the 8 MiB body limit).
 *
 * Phases, each timed from the submission (the POST sent, the CLI spawned) to `completed` (a PostgreSQL
 * poll of the screening's row every 100 ms, `time`; `completed_at`, the database's clock, beside it),
 * counted at the facade (JSON-RPC calls per method, HTTP round trips), in BullMQ's records of the
 * screening's jobs (the `screening-start` job, every `screening-chunk`: wait, duration, attempts), in the
 * worker's metrics (provider attempts by outcome) and /proc (VmRSS sampled every 200 ms, VmHWM, CPU time;
 * the machine's busy share of all cores from /proc/stat, the load average before):
 *   state 50%    100,000 targets, depth `state`, the default share (50 % of 50/s = 25 calls/s)
 *   state 100%   the same on a worker restarted with RISKWATCH_SCREENINGS_PROVIDER_SHARE_PCT=100 (50/s)
 *   lists api    100,000 targets, depth `lists`, on a fresh `api` process and a fresh default worker: the
 *                POST's own latency and the API's peak RSS (VmHWM: its start and this POST only)
 *   lists cli    `riskwatch screenings import ACCOUNT FILE.csv --depth lists` of a 1,000,000-row file
 *                (header `target`), under /usr/bin/time -v when present (its max RSS, user and system
 *                time; else VmHWM polled from /proc): the command's wall time, its own `seconds`, then the
 *                time until the workers completed it, from the spawn
 * Goals: state: getMultipleAccounts ≤ ⌈N/100⌉ × 1.05 (1,050), time ≤ 1.25 × the rate bound (calls ÷ the
 * rate screenings may use: 40 s at 25/s, 20 s at 50/s), worker VmHWM ≤ 512 MB (the helm chart's worker
 * limit); lists api: POST → completed ≤ 5 s, API VmHWM ≤ 512 MB (the API's limit). The CLI is timed, with
 * no goal. A goal missed prints MISS (the run still succeeds); a failure (exit 1) is a POST that is not
 * 202 or refuses a target, a CLI that fails or counts other rows, a screening not completed within
 * BENCH_SCREEN_CAP_S, processed ≠ the valid targets, a result still pending, at `state` another number
 * of `account_not_found` findings than missing accounts, or a lost start: the service's `screening-start`
 * job ran and the screening is still `queued` (it would never complete). The bench then enqueues
 * `screening-start` itself, as the runner does after a completion, and measures on from the submission.
 * BullMQ's records are read by job id (`start-<screening>`, chunks `<screening>-<seq>`).
 *
 * Knobs: BENCH_SCREEN_TARGETS (100000), BENCH_SCREEN_LATENCY_MS (50), BENCH_SCREEN_RATE_PER_S (50),
 * BENCH_SCREEN_MISSING_PCT (10), BENCH_SCREEN_CLI_ROWS (1000000; 0 = no CLI phase),
 * BENCH_SCREEN_CHUNK_CONCURRENCY (the service's default, 8), BENCH_SCREEN_CAP_S (600, per screening),
 * BENCH_SCREEN_ANALYZE (0; 1 = `ANALYZE screening_results` by the bench as soon as each submission is
 * answered, inside the timed window: on a server with autovacuum off, or before autovacuum gets to a
 * table that just grew, the planner knows nothing of the new screening's rows, and the chunks' verdict
 * UPDATE (src/screenings/repository.ts writeVerdicts) joins every pending row of the screening with
 * every verdict — seconds per chunk at 100,000 rows — until the UPDATE was bounded to the chunk's seq
 * range; kept to show that the statistics no longer matter; its time is reported).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { lamports } from '@solana/kit';
import type { Job } from 'bullmq';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { MAIN, startService, type RunningService } from '../support/service.js';
import { SolanaTestChain, SYSTEM_PROGRAM } from '../support/solana/chain.js';
import { startSolanaFacade, type SolanaFacade } from '../support/solana/facade.js';
import { intEnv } from './env.js';
import {
  benchAddresses,
  benchDeployment,
  byLabel,
  diffCounts,
  mb,
  processCpuS,
  procStatusKb,
  scrape,
  seconds,
  type WatchlistsBenchOptions,
} from './watchlists.js';

/** log, defer (clean-up steps) and track (child processes), as the watchlists scenario takes them. */
export type ScreeningsBenchOptions = WatchlistsBenchOptions;

export interface ScreenPhase {
  name: string;
  depth: 'state' | 'lists';
  via: 'api' | 'cli';
  screening_id: string;
  targets: number;
  /** Targets the screening must process (total − invalid). */
  valid: number;
  /** State phases: screenings' share of the provider rate, % and calls/s. */
  share_pct?: number;
  rate_used_per_s?: number;
  /** The POST's own latency (API), ms. */
  post_ms?: number;
  /** Submission → the 100 ms poll that saw `completed`, ms (the goal's time). */
  ms: number;
  /** Submission → `completed_at` (PostgreSQL's now() of the completing transaction), ms. */
  completed_at_ms: number;
  /**
   * Submission → the submitting transaction's start (the screening row's `created_at`, PostgreSQL's now()):
   * before it the request is read, parsed and every target checked; after it the rows are inserted.
   */
  tx_start_ms: number | undefined;
  /** The `screening-start` job that started it (the bench's own after a lost start), from submission, ms. */
  start_job?: { started_ms: number; duration_ms: number; by_bench: boolean };
  /** The service's `screening-start` ran before the submission committed and started nothing (a failure). */
  lost_start?: string;
  /** BENCH_SCREEN_ANALYZE=1: the bench's ANALYZE screening_results after the submission, ms. */
  analyze_ms?: number;
  chunks: {
    seen: number;
    retried: number;
    failed: number;
    mean_ms: number;
    p50_ms: number;
    p95_ms: number;
    max_ms: number;
    /** Mean time from a chunk's enqueue to its start, ms. */
    wait_mean_ms: number;
    first_start_ms: number;
    last_end_ms: number;
    /** Sum of chunk durations ÷ (last end − first start): how many ran at once on average. */
    parallel: number;
  };
  rpc: {
    calls: number;
    by_method: Record<string, number>;
    round_trips: number;
    max_in_flight: number;
    first_call_ms: number;
    last_answer_ms: number;
    calls_per_s: number;
    max_calls_in_1s: number;
    /** calls ÷ the rate screenings may use, s. */
    rate_bound_s?: number;
  };
  db: { done: number; pending: number; not_found: number };
  worker: {
    pid: number | undefined;
    cpu_s: number | undefined;
    rss_peak_sampled_mb: number | undefined;
    vm_hwm_mb: number | undefined;
    rpc_attempts: Record<string, number>;
  };
  api?: {
    cpu_s: number | undefined;
    idle_rss_mb: number | undefined;
    rss_peak_sampled_mb: number | undefined;
    vm_hwm_mb: number | undefined;
  };
  cli?: {
    command_s: number;
    import_seconds: number | undefined;
    rows: number | undefined;
    valid: number | undefined;
    max_rss_mb: number | undefined;
    user_s: number | undefined;
    system_s: number | undefined;
    rss_from: '/usr/bin/time -v' | '/proc VmHWM polled';
  };
  machine: { busy_pct: number | undefined; busy_core_s: number | undefined; load_before: number };
}

export interface GoalRow {
  phase: string;
  metric: string;
  measured: string;
  goal: string;
  verdict: 'OK' | 'MISS' | 'info';
}

export interface ScreeningsReport {
  settings: {
    targets: number;
    missing: number;
    latency_ms: number;
    rate_per_s: number;
    chunk_concurrency: number | 'default (8)';
    cli_rows: number;
    cap_s: number;
    analyze: boolean;
  };
  setup: { accounts_s: number; csv_s?: number; csv_mb?: number };
  phases: ScreenPhase[];
  goals: GoalRow[];
  verdict: 'OK' | 'MISS' | 'ERROR';
  failures: string[];
}

const SOL = 1_000_000_000n;
const STATE_CHUNK = 100;
/** The helm chart's memory limit of the api and worker pods, MB. */
const MAX_RSS_MB = 512;
const LISTS_MAX_MS = 5000;
const POLL_MS = 100;
/** The service's default `screenings.provider_share_pct`. */
const DEFAULT_SHARE_PCT = 50;
const TIME_BIN = '/usr/bin/time';
/** Job id prefix of the `screening-start` the bench enqueues after a lost start. */
const BENCH_START = 'bench-start';

const SETTINGS = {
  targets: intEnv('BENCH_SCREEN_TARGETS', 100_000, 1000, 100_000),
  latencyMs: intEnv('BENCH_SCREEN_LATENCY_MS', 50, 0, 1000),
  ratePerS: intEnv('BENCH_SCREEN_RATE_PER_S', 50, 2, 100_000),
  missingPct: intEnv('BENCH_SCREEN_MISSING_PCT', 10, 0, 100),
  cliRows: intEnv('BENCH_SCREEN_CLI_ROWS', 1_000_000, 0, 10_000_000),
  chunkConcurrency: process.env.BENCH_SCREEN_CHUNK_CONCURRENCY
    ? intEnv('BENCH_SCREEN_CHUNK_CONCURRENCY', 4, 1, 64)
    : undefined,
  capS: intEnv('BENCH_SCREEN_CAP_S', 600, 10, 7200),
  analyze: intEnv('BENCH_SCREEN_ANALYZE', 0, 0, 1) === 1,
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isMissing = (i: number) => i % 100 < SETTINGS.missingPct;
/** As the runner computes it: at least 1 call/s. */
const shareRate = (pct: number) => Math.max(1, Math.floor((SETTINGS.ratePerS * pct) / 100));

/** Jiffies of all cores, busy and total, from /proc/stat (undefined where it is missing). */
function machineJiffies(): { busy: number; total: number } | undefined {
  try {
    const v = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = v.reduce((a, b) => a + b, 0);
    return { busy: total - v[3]! - v[4]!, total };
  } catch {
    return undefined;
  }
}

function percentile(sorted: readonly number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The facts a submission hands back to the phase: the screening, and for the CLI its process figures. */
interface Submitted {
  screeningId: string;
  valid: number;
  postMs?: number;
  cli?: ScreenPhase['cli'];
}

export async function runScreeningsBench(o: ScreeningsBenchOptions): Promise<ScreeningsReport> {
  const { log } = o;
  const n = SETTINGS.targets;
  const failures: string[] = [];
  const report: ScreeningsReport = {
    settings: {
      targets: n,
      missing: 0,
      latency_ms: SETTINGS.latencyMs,
      rate_per_s: SETTINGS.ratePerS,
      chunk_concurrency: SETTINGS.chunkConcurrency ?? 'default (8)',
      cli_rows: SETTINGS.cliRows,
      cap_s: SETTINGS.capS,
      analyze: SETTINGS.analyze,
    },
    setup: { accounts_s: 0 },
    phases: [],
    goals: [],
    verdict: 'ERROR',
    failures,
  };
  log(
    `screenings: ${n.toLocaleString('en-US')} Solana targets (${SETTINGS.missingPct} % missing), facade ` +
      `latency ${SETTINGS.latencyMs} ms, provider limit ${SETTINGS.ratePerS} calls/s, chunk concurrency ` +
      `${report.settings.chunk_concurrency}, CLI file ${SETTINGS.cliRows.toLocaleString('en-US')} rows` +
      (SETTINGS.analyze ? ', ANALYZE screening_results after each submission' : ''),
  );

  // The chain: most targets funded system accounts, some missing.
  let started = performance.now();
  const chain = await SolanaTestChain.create();
  const addresses = benchAddresses(n);
  addresses.forEach((address, i) => {
    if (isMissing(i)) report.settings.missing++;
    else
      chain.setAccount({
        address,
        lamports: lamports(SOL),
        programAddress: SYSTEM_PROGRAM,
        executable: false,
        data: new Uint8Array(0),
      });
  });
  const facade: SolanaFacade = await startSolanaFacade(chain.svm, chain.ledger);
  o.defer(async () => {
    await facade.close();
    log('cleanup: screenings facade closed');
  });
  report.setup.accounts_s = seconds(performance.now() - started);
  log(
    `screenings: ${(n - report.settings.missing).toLocaleString('en-US')} accounts written, ` +
      `${report.settings.missing.toLocaleString('en-US')} left missing, in ${report.setup.accounts_s} s`,
  );

  // The service's database, Redis prefix and environment.
  const { env, accountId, apiKey, db, queues } = await benchDeployment(o, 'screenings', 'bench-screen', {
    RISKWATCH_RPC_SOLANA_MAINNET: facade.url,
    RISKWATCH_RPC_RATE_PER_S: String(SETTINGS.ratePerS),
    ...(SETTINGS.chunkConcurrency
      ? { RISKWATCH_SCREENINGS_CHUNK_CONCURRENCY: String(SETTINGS.chunkConcurrency) }
      : {}),
  });

  // The CLI's file, written before anything is measured.
  const csv = join(tmpdir(), `riskwatch-bench-screenings-${process.pid}.csv`);
  if (SETTINGS.cliRows > 0) {
    started = performance.now();
    const text = `target\n${benchAddresses(SETTINGS.cliRows).join('\n')}\n`;
    await writeFile(csv, text);
    o.defer(() => rm(csv, { force: true }));
    report.setup.csv_s = seconds(performance.now() - started);
    report.setup.csv_mb = Math.round(text.length / 104_857.6) / 10;
    log(
      `screenings: ${SETTINGS.cliRows.toLocaleString('en-US')}-row CSV (${report.setup.csv_mb} MB) ` +
        `written in ${report.setup.csv_s} s`,
    );
  }

  /** A role of the service, stopped (once) by the clean-up or by `stop()`. */
  const startRole = async (role: 'api' | 'worker', extra: Record<string, string> = {}) => {
    const svc: RunningService = await startService({ ...env, ...extra }, role);
    o.track(svc.process);
    let stopped: Promise<string> | undefined;
    const stop = () =>
      (stopped ??= Promise.race([
        svc.stop().then((code) => `exit ${String(code)}`),
        sleep(15_000).then(() => {
          svc.process.kill('SIGKILL');
          return 'killed after 15 s';
        }),
      ]));
    o.defer(async () => log(`cleanup: screenings ${role} pid ${svc.process.pid} ${await stop()}`));
    return { svc, stop };
  };

  facade.setLatency(SETTINGS.latencyMs);

  /**
   * One screening, measured from `submit` to `completed`. `api` is the API process when the submission
   * goes through it (its RSS and CPU are reported).
   */
  const phase = async (
    name: string,
    depth: ScreenPhase['depth'],
    worker: RunningService,
    api: RunningService | undefined,
    submit: (t0Wall: number) => Promise<Submitted>,
    sharePct?: number,
  ): Promise<ScreenPhase> => {
    const alive = () => {
      for (const [role, svc] of [
        ['worker', worker],
        ['api', api],
      ] as const)
        if (svc && (svc.process.exitCode !== null || svc.process.signalCode !== null))
          throw new Error(`screenings ${name}: the ${role} exited:\n${svc.output().slice(-4000)}`);
    };
    alive();
    await facade.idle(200);
    facade.stats.reset();
    const wpid = worker.process.pid;
    const apid = api?.process.pid;
    const metricsBefore = await scrape(worker.metricsUrl);
    const cpuBefore = { worker: processCpuS(wpid), api: processCpuS(apid) };
    const jiffiesBefore = machineJiffies();
    const loadBefore = Math.round(loadavg()[0]! * 100) / 100;
    const apiIdle = procStatusKb(apid, 'VmRSS');
    const peak = { worker: procStatusKb(wpid, 'VmRSS'), api: apiIdle };
    const sampler = setInterval(() => {
      const w = procStatusKb(wpid, 'VmRSS');
      const a = procStatusKb(apid, 'VmRSS');
      if (w !== undefined && (peak.worker === undefined || w > peak.worker)) peak.worker = w;
      if (a !== undefined && (peak.api === undefined || a > peak.api)) peak.api = a;
    }, 200);
    sampler.unref();

    const t0Wall = Date.now();
    const t0 = performance.now();
    let sub: Submitted;
    let lostStart: string | undefined;
    let analyzeMs: number | undefined;
    let observed: number;
    let completedAt: Date;
    try {
      sub = await submit(t0Wall);
      if (SETTINGS.analyze) {
        const t = performance.now();
        await db.query('analyze screening_results');
        analyzeMs = Math.round(performance.now() - t);
      }
      lostStart = await ensureStarted(name, sub.screeningId, t0Wall);
      let lastShown = performance.now();
      for (;;) {
        alive();
        const { rows } = await db.query<{ status: string; processed: number; completed_at: Date | null }>(
          'select status, processed, completed_at from screenings where id = $1',
          [sub.screeningId],
        );
        const row = rows[0];
        const now = performance.now();
        if (row?.status === 'completed' && row.completed_at) {
          observed = now - t0;
          completedAt = row.completed_at;
          break;
        }
        if (now - t0 > SETTINGS.capS * 1000)
          throw new Error(
            `screenings ${name}: ${row?.status ?? 'no row'} with ${row?.processed ?? 0} of ${sub.valid} ` +
              `processed after ${SETTINGS.capS} s (BENCH_SCREEN_CAP_S); ${await startJobOf(sub.screeningId, t0Wall)}; ` +
              (await analyzedOf()),
          );
        if (now - lastShown >= 10_000) {
          lastShown = now;
          log(
            `  ${name}: ${seconds(now - t0).toFixed(0)} s, ${row?.status ?? '?'}, ` +
              `${(row?.processed ?? 0).toLocaleString('en-US')} processed, ${facade.stats.callCount()} calls`,
          );
        }
        await sleep(POLL_MS);
      }
    } finally {
      clearInterval(sampler);
    }
    await facade.idle(200);
    const cpuAfter = { worker: processCpuS(wpid), api: processCpuS(apid) };
    const jiffiesAfter = machineJiffies();
    const metricsAfter = await scrape(worker.metricsUrl);
    const id = sub.screeningId;

    // The screening as the API shows it, and its rows.
    if (api) {
      const res = await fetch(`${api.baseUrl}/api/v1/screenings/${id}`, {
        headers: { 'X-API-Key': apiKey },
        signal: AbortSignal.timeout(30_000),
      });
      const body = (await res.json()) as { status?: string; processed?: number };
      if (res.status !== 200 || body.status !== 'completed' || body.processed !== sub.valid)
        failures.push(
          `screenings ${name}: GET answered ${res.status}, ${body.status}, processed ${body.processed}, ` +
            `expected completed, ${sub.valid}`,
        );
    }
    const { rows: stored } = await db.query<{
      processed: number;
      created_at: Date;
      done: string;
      pending: string;
      nf: string;
    }>(
      `select s.processed, s.created_at,
              count(*) filter (where r.status = 'done') as done,
              count(*) filter (where r.status = 'pending') as pending,
              count(*) filter (where r.findings @> '[{"code": "account_not_found"}]') as nf
         from screenings s join screening_results r on r.screening_id = s.id
        where s.id = $1 group by s.processed, s.created_at`,
      [id],
    );
    const counts = {
      processed: stored[0]?.processed ?? 0,
      done: Number(stored[0]?.done ?? 0),
      pending: Number(stored[0]?.pending ?? 0),
      not_found: Number(stored[0]?.nf ?? 0),
    };
    const expect = (what: string, got: number, want: number) => {
      if (got !== want) failures.push(`screenings ${name} ${what}: ${got}, expected ${want}`);
    };
    expect('processed', counts.processed, sub.valid);
    expect('results done', counts.done, sub.valid);
    expect('results pending', counts.pending, 0);
    if (depth === 'state') expect('account_not_found findings', counts.not_found, report.settings.missing);

    // BullMQ's records of its jobs (the last 1,000 of a queue are kept: every chunk of 100,000 at `state`).
    const startJob = await queues
      .queue('screening-start')
      .getJob(`${lostStart ? BENCH_START : 'start'}-${id}`);
    const ofThis = (jobs: (Job | undefined)[]) =>
      jobs.filter((j): j is Job => !!j && (j.data as { screening_id?: string }).screening_id === id);
    const chunkQueue = queues.queue('screening-chunk');
    const jobs = ofThis(await chunkQueue.getJobs(['completed'], 0, -1));
    const failedJobs = ofThis(await chunkQueue.getJobs(['failed'], 0, -1));
    const done = jobs.filter((j) => j.processedOn && j.finishedOn);
    const durations = done.map((j) => j.finishedOn! - j.processedOn!).sort((a, b) => a - b);
    const firstStart = Math.min(...done.map((j) => j.processedOn!));
    const lastEnd = Math.max(...done.map((j) => j.finishedOn!));
    const busy = durations.reduce((a, b) => a + b, 0);

    const stats = facade.stats;
    const trips = stats.log.filter((r) => r.endedAt !== undefined);
    const tripStart = trips.length ? Math.min(...trips.map((r) => r.startedAt)) : t0;
    const tripEnd = trips.length ? Math.max(...trips.map((r) => r.endedAt!)) : t0;
    const perSecond = new Map<number, number>();
    for (const r of trips) {
      const bucket = Math.floor((r.startedAt - tripStart) / 1000);
      perSecond.set(bucket, (perSecond.get(bucket) ?? 0) + r.methods.length);
    }
    const calls = stats.callCount();
    const rateUsed = sharePct === undefined ? undefined : shareRate(sharePct);
    const cpu = (pid: 'worker' | 'api') =>
      cpuBefore[pid] !== undefined && cpuAfter[pid] !== undefined
        ? Math.round((cpuAfter[pid] - cpuBefore[pid]) * 100) / 100
        : undefined;
    const busyJiffies =
      jiffiesBefore && jiffiesAfter
        ? { busy: jiffiesAfter.busy - jiffiesBefore.busy, total: jiffiesAfter.total - jiffiesBefore.total }
        : undefined;

    return {
      name,
      depth,
      via: sub.cli ? 'cli' : 'api',
      screening_id: id,
      targets: sub.cli?.rows ?? n,
      valid: sub.valid,
      ...(sharePct !== undefined ? { share_pct: sharePct, rate_used_per_s: rateUsed } : {}),
      ...(sub.postMs !== undefined ? { post_ms: sub.postMs } : {}),
      ...(lostStart ? { lost_start: lostStart } : {}),
      ...(analyzeMs !== undefined ? { analyze_ms: analyzeMs } : {}),
      ms: Math.round(observed),
      completed_at_ms: completedAt.getTime() - t0Wall,
      tx_start_ms: stored[0] ? stored[0].created_at.getTime() - t0Wall : undefined,
      ...(startJob?.processedOn && startJob.finishedOn
        ? {
            start_job: {
              started_ms: startJob.processedOn - t0Wall,
              duration_ms: startJob.finishedOn - startJob.processedOn,
              by_bench: !!lostStart,
            },
          }
        : {}),
      chunks: {
        seen: jobs.length,
        retried: jobs.filter((j) => Math.max(j.attemptsMade, j.attemptsStarted) > 1).length,
        failed: failedJobs.length,
        mean_ms: done.length ? Math.round(busy / done.length) : 0,
        p50_ms: percentile(durations, 50),
        p95_ms: percentile(durations, 95),
        max_ms: durations.at(-1) ?? 0,
        wait_mean_ms: done.length
          ? Math.round(done.reduce((a, j) => a + (j.processedOn! - j.timestamp), 0) / done.length)
          : 0,
        first_start_ms: done.length ? firstStart - t0Wall : 0,
        last_end_ms: done.length ? lastEnd - t0Wall : 0,
        parallel: done.length ? Math.round((busy / Math.max(1, lastEnd - firstStart)) * 100) / 100 : 0,
      },
      rpc: {
        calls,
        by_method: { ...stats.calls },
        round_trips: stats.roundTrips,
        max_in_flight: stats.maxInFlight,
        first_call_ms: Math.round(tripStart - t0),
        last_answer_ms: Math.round(tripEnd - t0),
        calls_per_s: Math.round((calls / Math.max(1, tripEnd - tripStart)) * 1000 * 10) / 10,
        max_calls_in_1s: Math.max(0, ...perSecond.values()),
        ...(rateUsed ? { rate_bound_s: Math.round((calls / rateUsed) * 10) / 10 } : {}),
      },
      db: { done: counts.done, pending: counts.pending, not_found: counts.not_found },
      worker: {
        pid: wpid,
        cpu_s: cpu('worker'),
        rss_peak_sampled_mb: mb(peak.worker),
        vm_hwm_mb: mb(procStatusKb(wpid, 'VmHWM')),
        rpc_attempts: diffCounts(
          byLabel(metricsAfter, 'riskwatch_rpc_calls_total', 'outcome'),
          byLabel(metricsBefore, 'riskwatch_rpc_calls_total', 'outcome'),
        ),
      },
      ...(api
        ? {
            api: {
              cpu_s: cpu('api'),
              idle_rss_mb: mb(apiIdle),
              rss_peak_sampled_mb: mb(peak.api),
              vm_hwm_mb: mb(procStatusKb(apid, 'VmHWM')),
            },
          }
        : {}),
      ...(sub.cli ? { cli: sub.cli } : {}),
      machine: {
        busy_pct: busyJiffies ? Math.round((busyJiffies.busy / busyJiffies.total) * 1000) / 10 : undefined,
        busy_core_s: busyJiffies ? Math.round(busyJiffies.busy) / 100 : undefined,
        load_before: loadBefore,
      },
    };
  };

  /** When screening_results was last analyzed, and autovacuum's setting: the planner's view of the rows. */
  const analyzedOf = async () => {
    const { rows } = await db.query<{ manual: Date | null; auto: Date | null; autovacuum: string }>(
      `select last_analyze as manual, last_autoanalyze as auto, current_setting('autovacuum') as autovacuum
         from pg_stat_user_tables where relname = 'screening_results'`,
    );
    const r = rows[0];
    return (
      `screening_results last analyzed ${r?.manual?.toISOString() ?? 'never'} (auto: ` +
      `${r?.auto?.toISOString() ?? 'never'}, autovacuum ${r?.autovacuum ?? '?'}; BENCH_SCREEN_ANALYZE=1 analyzes it)`
    );
  };

  /** What became of the screening's `screening-start` job: when it ran and what it started. */
  const startJobOf = async (id: string, t0Wall: number) => {
    const job = await queues.queue('screening-start').getJob(`start-${id}`);
    if (!job) return `no job start-${id}`;
    const { rows } = await db.query<{ created_at: Date }>('select created_at from screenings where id = $1', [
      id,
    ]);
    return (
      `job start-${id} ${await job.getState()}, enqueued +${job.timestamp - t0Wall} ms, ran ` +
      `+${(job.processedOn ?? 0) - t0Wall}..+${(job.finishedOn ?? 0) - t0Wall} ms, returned ` +
      `${JSON.stringify(job.returnvalue)}; the screening row's created_at (its transaction's start) ` +
      `+${(rows[0]?.created_at.getTime() ?? 0) - t0Wall} ms`
    );
  };

  /**
   * The service enqueues `screening-start` inside the submitting transaction (src/screenings/service.ts,
   * `store`): a worker that runs it before the commit finds nothing queued and starts nothing, and the
   * screening stays `queued` until another of the account's screenings completes. Once that job has run:
   * a screening still `queued` (the bench runs one at a time, so nothing is ahead of it) was lost; that is
   * recorded as a failure, and the bench enqueues `screening-start` itself, as the runner does after a
   * completion, so the phase is still measured (from the same submission time).
   */
  const ensureStarted = async (name: string, id: string, t0Wall: number) => {
    const until = Date.now() + 30_000;
    for (;;) {
      const job = await queues.queue('screening-start').getJob(`start-${id}`);
      const state = job ? await job.getState() : 'missing';
      if (state === 'completed' || state === 'failed' || state === 'missing' || Date.now() > until) break;
      await sleep(20);
    }
    const { rows } = await db.query<{ status: string }>('select status from screenings where id = $1', [id]);
    if (rows[0]?.status !== 'queued') return undefined;
    const why = await startJobOf(id, t0Wall);
    await queues.enqueue('screening-start', { account_id: accountId }, `${BENCH_START}-${id}`);
    const lost = `lost start: still queued after its start job ran (${why}); the bench enqueued ${BENCH_START}-${id} at +${Date.now() - t0Wall} ms`;
    failures.push(`screenings ${name}: ${lost}`);
    log(`  ${name}: ${lost}`);
    return lost;
  };

  /** One POST of every target at `depth`; a refused target or another status than 202 fails the run. */
  const post = (api: RunningService, depth: ScreenPhase['depth']) => async (): Promise<Submitted> => {
    const body = JSON.stringify({ targets: addresses.map((target) => ({ target })), depth });
    const t = performance.now();
    const res = await fetch(`${api.baseUrl}/api/v1/screenings`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-API-Key': apiKey },
      body,
      signal: AbortSignal.timeout(SETTINGS.capS * 1000),
    });
    const text = await res.text();
    const postMs = Math.round(performance.now() - t);
    if (res.status !== 202)
      throw new Error(`POST /api/v1/screenings (${depth}) answered ${res.status}: ${text.slice(0, 500)}`);
    const answer = JSON.parse(text) as {
      screening_id: string;
      screening: { total: number; invalid: number };
      errors: unknown[];
    };
    if (answer.errors.length || answer.screening.total !== n)
      failures.push(
        `screenings POST ${depth}: total ${answer.screening.total}, ${answer.errors.length} refused ` +
          `(expected ${n}, none): ${JSON.stringify(answer.errors.slice(0, 3))}`,
      );
    log(
      `  POST ${depth}: 202 in ${seconds(postMs)} s (${(body.length / 1_048_576).toFixed(1)} MiB), ` +
        `${answer.screening_id}`,
    );
    return {
      screeningId: answer.screening_id,
      valid: answer.screening.total - answer.screening.invalid,
      postMs,
    };
  };

  const show = (p: ScreenPhase) =>
    log(
      `screenings ${p.name}: ${seconds(p.ms)} s to completed (completed_at +${seconds(p.completed_at_ms)} s)` +
        (p.post_ms !== undefined ? `, POST ${seconds(p.post_ms)} s` : '') +
        `, ${p.rpc.calls} calls (getMultipleAccounts ${p.rpc.by_method.getMultipleAccounts ?? 0}) in ` +
        `${p.rpc.round_trips} round trips, ${p.chunks.seen} chunks of mean ${p.chunks.mean_ms} ms, ` +
        `worker VmHWM ${p.worker.vm_hwm_mb ?? '-'} MB`,
    );

  // 1. `state`, the default share, then the whole rate.
  const apiA = await startRole('api');
  let worker = await startRole('worker');
  const stateDefault = await phase(
    `state ${DEFAULT_SHARE_PCT}%`,
    'state',
    worker.svc,
    apiA.svc,
    post(apiA.svc, 'state'),
    DEFAULT_SHARE_PCT,
  );
  report.phases.push(stateDefault);
  show(stateDefault);
  log(`  worker stop: ${await worker.stop()}`);
  worker = await startRole('worker', { RISKWATCH_SCREENINGS_PROVIDER_SHARE_PCT: '100' });
  const stateFull = await phase('state 100%', 'state', worker.svc, apiA.svc, post(apiA.svc, 'state'), 100);
  report.phases.push(stateFull);
  show(stateFull);
  log(`  api stop: ${await apiA.stop()}, worker stop: ${await worker.stop()}`);

  // 2. `lists` through the API: a fresh API (its peak is this POST's) and a fresh default worker.
  const apiB = await startRole('api');
  worker = await startRole('worker');
  await sleep(1000);
  const listsApi = await phase('lists api', 'lists', worker.svc, apiB.svc, post(apiB.svc, 'lists'));
  report.phases.push(listsApi);
  show(listsApi);
  log(`  api stop: ${await apiB.stop()}`);

  // 3. The CLI import of the big file, then the workers' time to complete it.
  if (SETTINGS.cliRows > 0) {
    const listsCli = await phase('lists cli', 'lists', worker.svc, undefined, (t0Wall) =>
      importCsv(o, env, accountId, csv, t0Wall),
    );
    report.phases.push(listsCli);
    show(listsCli);
    if (listsCli.cli?.rows !== SETTINGS.cliRows || listsCli.cli.valid !== SETTINGS.cliRows)
      failures.push(
        `screenings lists cli: rows ${listsCli.cli?.rows}, valid ${listsCli.cli?.valid}, ` +
          `expected ${SETTINGS.cliRows} each`,
      );
  }
  log(`  worker stop: ${await worker.stop()}`);

  report.goals = goalsOf(report.phases);
  report.verdict = failures.length ? 'ERROR' : report.goals.some((g) => g.verdict === 'MISS') ? 'MISS' : 'OK';
  printScreenings(report, log);
  return report;
}

/**
 * `riskwatch screenings import ACCOUNT FILE --depth lists` as an operator runs it, under /usr/bin/time -v
 * when there is one (its max RSS and CPU times), else with VmHWM polled from /proc.
 */
async function importCsv(
  o: ScreeningsBenchOptions,
  env: Record<string, string>,
  accountId: string,
  file: string,
  t0Wall: number,
): Promise<Submitted> {
  const args = [MAIN, 'screenings', 'import', accountId, file, '--depth', 'lists'];
  const timed = existsSync(TIME_BIN);
  const child = timed
    ? spawn(TIME_BIN, ['-v', process.execPath, ...args], {
        env: { ...process.env, ...env },
        cwd: PROJECT_ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : spawn(process.execPath, args, {
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
    for (const line of d.toString().split('\n')) if (line.startsWith('import:')) o.log(`  cli: ${line}`);
  });
  const exited = new Promise<number | string>((res) =>
    child.once('exit', (code, signal) => res(code ?? signal!)),
  );
  let hwm: number | undefined;
  const poll = timed
    ? undefined
    : setInterval(() => {
        const kb = procStatusKb(child.pid, 'VmHWM');
        if (kb !== undefined) hwm = kb;
      }, 100);
  // GNU time does not pass a signal on: at the cap, its child (the command) is stopped by its pid.
  const cap = setTimeout(() => {
    const pid = child.pid!;
    try {
      const inner = timed ? Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()) : 0;
      process.kill(inner || pid, 'SIGTERM');
    } catch {
      // gone already
    }
  }, SETTINGS.capS * 1000);
  const code = await exited;
  clearTimeout(cap);
  if (poll) clearInterval(poll);
  const commandMs = Date.now() - t0Wall;
  if (code !== 0)
    throw new Error(`riskwatch screenings import exited ${code}: ${stderr.trim().slice(-1000)}`);
  const summary = JSON.parse(stdout) as {
    screening_id: string;
    rows: number;
    valid: number;
    seconds: number;
  };
  const field = (label: string) => {
    const m = new RegExp(`^\\s*${label}:\\s*([\\d.]+)`, 'm').exec(stderr);
    return m ? Number(m[1]) : undefined;
  };
  const maxRssKb = timed ? field('Maximum resident set size \\(kbytes\\)') : hwm;
  return {
    screeningId: summary.screening_id,
    valid: summary.valid,
    cli: {
      command_s: seconds(commandMs),
      import_seconds: summary.seconds,
      rows: summary.rows,
      valid: summary.valid,
      max_rss_mb: mb(maxRssKb),
      user_s: timed ? field('User time \\(seconds\\)') : undefined,
      system_s: timed ? field('System time \\(seconds\\)') : undefined,
      rss_from: timed ? '/usr/bin/time -v' : '/proc VmHWM polled',
    },
  };
}

function goalsOf(phases: readonly ScreenPhase[]): GoalRow[] {
  const rows: GoalRow[] = [];
  const judge = (phase: string, metric: string, measured: number, max: number, unit: string) =>
    rows.push({
      phase,
      metric,
      measured: `${measured.toLocaleString('en-US')}${unit}`,
      goal: `≤ ${max.toLocaleString('en-US')}${unit}`,
      verdict: measured <= max ? 'OK' : 'MISS',
    });
  const info = (phase: string, metric: string, measured: string) =>
    rows.push({ phase, metric, measured, goal: '-', verdict: 'info' });
  for (const p of phases) {
    if (p.depth === 'state') {
      const maxCalls = Math.floor(Math.ceil(p.valid / STATE_CHUNK) * 1.05);
      judge(p.name, 'getMultipleAccounts calls', p.rpc.by_method.getMultipleAccounts ?? 0, maxCalls, '');
      info(p.name, 'all calls / HTTP round trips', `${p.rpc.calls} / ${p.rpc.round_trips}`);
      const bound = p.rpc.rate_bound_s ?? 0;
      info(p.name, `rate bound (calls ÷ ${p.rate_used_per_s}/s)`, `${bound} s`);
      judge(p.name, 'POST → completed', seconds(p.ms), Math.round(bound * 1.25 * 10) / 10, ' s');
      judge(p.name, 'worker peak RSS (VmHWM)', p.worker.vm_hwm_mb ?? Number.NaN, MAX_RSS_MB, ' MB');
    } else if (p.via === 'api') {
      judge(p.name, 'POST → completed (upload included)', seconds(p.ms), LISTS_MAX_MS / 1000, ' s');
      info(p.name, 'POST latency (202)', `${seconds(p.post_ms ?? 0)} s`);
      judge(p.name, 'API peak RSS (VmHWM)', p.api?.vm_hwm_mb ?? Number.NaN, MAX_RSS_MB, ' MB');
    } else {
      info(p.name, 'command wall time', `${p.cli?.command_s} s`);
      info(p.name, 'its own `seconds`', `${p.cli?.import_seconds} s`);
      info(p.name, `command peak RSS (${p.cli?.rss_from})`, `${p.cli?.max_rss_mb ?? '-'} MB`);
      info(p.name, 'spawn → completed (workers)', `${seconds(p.ms)} s`);
      info(p.name, 'worker peak RSS (sampled)', `${p.worker.rss_peak_sampled_mb ?? '-'} MB`);
    }
  }
  return rows;
}

function table(rows: string[][], left: ReadonlySet<number>, log: (line?: string) => void): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row.map((cell, i) => (left.has(i) ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  log(line(rows[0]!).trimEnd());
  log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows.slice(1)) log(line(row).trimEnd());
}

function printScreenings(r: ScreeningsReport, log: (line?: string) => void): void {
  const s = (ms: number | undefined) => (ms === undefined ? '-' : seconds(ms).toFixed(2));
  log();
  table(
    [
      [
        'phase',
        'targets',
        'POST s',
        'tx start s',
        'start job s',
        'first chunk s',
        'last chunk s',
        'completed s',
        'chunks',
        'chunk ms mean/p50/p95/max',
        'parallel',
        'wait ms',
        'calls',
        'round trips',
        'calls/s',
        'busiest 1 s',
        'worker CPU s',
        'API CPU s',
        'machine busy %',
        'load',
      ],
      ...r.phases.map((p) => [
        p.name,
        p.targets.toLocaleString('en-US'),
        s(p.post_ms),
        s(p.tx_start_ms),
        p.start_job
          ? `${s(p.start_job.started_ms)}+${s(p.start_job.duration_ms)}${p.start_job.by_bench ? ' (bench)' : ''}`
          : '-',
        s(p.chunks.first_start_ms),
        s(p.chunks.last_end_ms),
        s(p.ms),
        `${p.chunks.seen}${p.chunks.retried ? ` (${p.chunks.retried} retried)` : ''}`,
        `${p.chunks.mean_ms}/${p.chunks.p50_ms}/${p.chunks.p95_ms}/${p.chunks.max_ms}`,
        p.chunks.parallel.toFixed(2),
        String(p.chunks.wait_mean_ms),
        String(p.rpc.calls),
        String(p.rpc.round_trips),
        p.rpc.calls_per_s.toFixed(1),
        String(p.rpc.max_calls_in_1s),
        String(p.worker.cpu_s ?? '-'),
        String(p.api?.cpu_s ?? '-'),
        String(p.machine.busy_pct ?? '-'),
        String(p.machine.load_before),
      ]),
    ],
    new Set([0]),
    log,
  );
  log();
  for (const p of r.phases)
    log(
      `  ${p.name} (${p.screening_id}): ${p.analyze_ms !== undefined ? `bench ANALYZE ${p.analyze_ms} ms; ` : ''}calls by method ${JSON.stringify(p.rpc.by_method)}, max in flight ` +
        `${p.rpc.max_in_flight}, first call +${p.rpc.first_call_ms} ms, last answer +${p.rpc.last_answer_ms} ms; ` +
        `provider attempts ${JSON.stringify(p.worker.rpc_attempts)}; results done ${p.db.done}, pending ` +
        `${p.db.pending}, account_not_found ${p.db.not_found}; worker pid ${p.worker.pid} RSS peak ` +
        `${p.worker.rss_peak_sampled_mb ?? '-'} MB (VmHWM ${p.worker.vm_hwm_mb ?? '-'} MB)` +
        (p.api
          ? `; API RSS ${p.api.idle_rss_mb ?? '-'} MB before, peak ${p.api.rss_peak_sampled_mb ?? '-'} MB ` +
            `(VmHWM ${p.api.vm_hwm_mb ?? '-'} MB)`
          : '') +
        (p.cli
          ? `; CLI ${p.cli.command_s} s (itself ${p.cli.import_seconds} s), max RSS ${p.cli.max_rss_mb ?? '-'} MB, ` +
            `CPU user ${p.cli.user_s ?? '-'} s + system ${p.cli.system_s ?? '-'} s`
          : ''),
    );
  log(
    `  set-up: accounts ${r.setup.accounts_s} s` +
      (r.setup.csv_s !== undefined ? `, CSV ${r.setup.csv_mb} MB in ${r.setup.csv_s} s` : ''),
  );
  log();
  table(
    [['phase', 'metric', 'measured', 'goal', 'verdict'], ...r.goals.map((g) => Object.values(g) as string[])],
    new Set([0, 1, 4]),
    log,
  );
  log();
  log(`screenings: ${r.verdict}`);
  for (const g of r.goals.filter((x) => x.verdict === 'MISS'))
    log(`MISS screenings ${g.phase}: ${g.metric} ${g.measured} > ${g.goal.replace('≤ ', '')}`);
}
