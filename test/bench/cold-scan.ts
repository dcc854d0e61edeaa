/**
 * The bench's `scan-cold` measurement: `POST /api/v1/scan/token` for mints the service has never scanned
 * (nothing in its cache), one at a time, with a latency injected into every HTTP round trip to the Solana
 * facade. Each scan's wall time (client side) is reported in ms and as a multiple of that round-trip time,
 * with the facade's count of sequential round trips on its critical path. Informational: only an answer
 * other than a fresh 200 counts as a failure.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { SolanaFacade } from '../support/solana/facade.js';
import type { SolanaFixtures } from '../support/solana/fixtures.js';

export interface ColdScan {
  /** The fixture name (`cleanToken`, …). */
  name: string;
  mint: string;
  status: number;
  ms: number;
  /** ms ÷ the injected round-trip latency. */
  rtts: number;
  /** Longest chain of facade round trips each started after the previous one ended. */
  sequentialRoundTrips: number;
  /** HTTP requests to the facade (a JSON-RPC batch is one). */
  roundTrips: number;
  rpcCalls: number;
  /** Time with at least one facade round trip in flight (injected latency included). */
  rpcMs: number;
  /** ms − rpcMs: the service (and the HTTP exchange with this client) not waiting on the chain. */
  outsideRpcMs: number;
  /** Of outsideRpcMs: before the first round trip started, and after the last one ended. */
  beforeFirstRpcMs: number;
  afterLastRpcMs: number;
  /**
   * CPU time of the service's main thread (the event loop) during the scan, from /proc schedstat (ns
   * resolution; undefined where it is missing). JIT and GC helper threads are not in it.
   */
  serviceCpuMs: number | undefined;
  cached: boolean | undefined;
}

export interface ColdScanReport {
  latencyMs: number;
  mints: number;
  median: {
    ms: number;
    rtts: number;
    sequentialRoundTrips: number;
    rpcMs: number;
    outsideRpcMs: number;
    beforeFirstRpcMs: number;
    afterLastRpcMs: number;
    serviceCpuMs: number | undefined;
  };
  max: { ms: number; rtts: number; sequentialRoundTrips: number };
  min: { ms: number };
  scans: ColdScan[];
  failures: string[];
}

export interface ColdScanOptions {
  baseUrl: string;
  apiKey: string;
  facade: SolanaFacade;
  mints: SolanaFixtures['mints'];
  /** Injected per HTTP round trip to the facade while measuring. */
  latencyMs: number;
  /** Scanned once first, untimed and at no latency (code paths, the facade's token index), then left out. */
  warmUp?: keyof SolanaFixtures['mints'];
  /** The service's process id, for its main thread's CPU time. */
  servicePid?: number;
  log: (line: string) => void;
}

/** The facade's completed round trips: the union of their intervals, the first start and the last end. */
function chainTime(facade: SolanaFacade): { busyMs: number; firstStart: number; lastEnd: number } {
  const trips = facade.stats.log
    .filter((r): r is typeof r & { endedAt: number } => r.endedAt !== undefined)
    .sort((a, b) => a.startedAt - b.startedAt);
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const r of trips) {
    if (r.startedAt >= end) {
      total += r.endedAt - r.startedAt;
      end = r.endedAt;
    } else if (r.endedAt > end) {
      total += r.endedAt - end;
      end = r.endedAt;
    }
  }
  return {
    busyMs: total,
    firstStart: trips[0]?.startedAt ?? Number.NaN,
    lastEnd: Math.max(...trips.map((r) => r.endedAt)),
  };
}

/** CPU time of a process's main thread so far, ms (Linux /proc; undefined elsewhere). */
function mainThreadCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const ns = Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]);
    return Number.isFinite(ns) ? ns / 1e6 : undefined;
  } catch {
    return undefined;
  }
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

async function scan(
  o: ColdScanOptions,
  mint: string,
): Promise<{ status: number; started: number; ended: number; cached: boolean | undefined; text: string }> {
  const started = performance.now();
  const res = await fetch(`${o.baseUrl}/api/v1/scan/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-API-Key': o.apiKey },
    body: JSON.stringify({ mint, network: 'mainnet' }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  const ended = performance.now();
  let cached: boolean | undefined;
  try {
    const body = JSON.parse(text) as { cached?: unknown };
    cached = typeof body.cached === 'boolean' ? body.cached : undefined;
  } catch {
    cached = undefined;
  }
  return { status: res.status, started, ended, cached, text };
}

/**
 * Scans the warm-up mint, then every other mint once at `latencyMs`, sequentially. The latency is back to 0
 * when it returns or throws.
 */
export async function measureColdScans(o: ColdScanOptions): Promise<ColdScanReport> {
  const failures: string[] = [];
  const { facade } = o;

  const warm = o.warmUp;
  if (warm) {
    const w = await scan(o, o.mints[warm].address);
    if (w.status !== 200)
      failures.push(`scan-cold: warm-up scan of ${warm} answered ${w.status}: ${w.text.slice(0, 300)}`);
  }

  const names = (Object.keys(o.mints) as (keyof SolanaFixtures['mints'])[]).filter((n) => n !== warm);
  const scans: ColdScan[] = [];
  facade.setLatency(o.latencyMs);
  try {
    for (const name of names) {
      const mint = o.mints[name].address;
      await facade.idle();
      facade.stats.reset();
      const cpuBefore = mainThreadCpuMs(o.servicePid);
      const r = await scan(o, mint);
      const cpuAfter = mainThreadCpuMs(o.servicePid);
      const ms = r.ended - r.started;
      const chain = chainTime(facade);
      const s: ColdScan = {
        name,
        mint,
        status: r.status,
        ms,
        rtts: ms / o.latencyMs,
        sequentialRoundTrips: facade.stats.sequentialRoundTrips(),
        roundTrips: facade.stats.roundTrips,
        rpcCalls: facade.stats.callCount(),
        rpcMs: chain.busyMs,
        outsideRpcMs: ms - chain.busyMs,
        beforeFirstRpcMs: chain.firstStart - r.started,
        afterLastRpcMs: r.ended - chain.lastEnd,
        serviceCpuMs: cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined,
        cached: r.cached,
      };
      scans.push(s);
      o.log(
        `scan-cold  ${name.padEnd(26)} ${s.ms.toFixed(1).padStart(7)} ms  ${s.rtts.toFixed(2).padStart(5)}× RTT  ` +
          `${s.sequentialRoundTrips} sequential / ${s.roundTrips} round trips, ${s.rpcCalls} calls, ` +
          `chain ${s.rpcMs.toFixed(1)} ms + outside ${s.outsideRpcMs.toFixed(1)} ms ` +
          `(before first ${s.beforeFirstRpcMs.toFixed(1)}, after last ${s.afterLastRpcMs.toFixed(1)}), ` +
          `service cpu ${s.serviceCpuMs?.toFixed(1) ?? '-'} ms  ${s.status}`,
      );
      if (r.status !== 200)
        failures.push(`scan-cold: ${name} (${mint}) answered ${r.status}: ${r.text.slice(0, 300)}`);
      else if (r.cached !== false)
        failures.push(`scan-cold: ${name} (${mint}) answered cached: ${String(r.cached)}, not a cold scan`);
    }
  } finally {
    facade.setLatency(0);
  }

  const ok = scans.filter((s) => s.status === 200);
  const ms = ok.map((s) => s.ms);
  const seq = ok.map((s) => s.sequentialRoundTrips);
  const perRtt = (v: number) => v / o.latencyMs;
  const medianMs = ms.length ? median(ms) : Number.NaN;
  const maxMs = ms.length ? Math.max(...ms) : Number.NaN;
  return {
    latencyMs: o.latencyMs,
    mints: scans.length,
    median: {
      ms: medianMs,
      rtts: perRtt(medianMs),
      sequentialRoundTrips: seq.length ? median(seq) : 0,
      rpcMs: ok.length ? median(ok.map((s) => s.rpcMs)) : Number.NaN,
      outsideRpcMs: ok.length ? median(ok.map((s) => s.outsideRpcMs)) : Number.NaN,
      beforeFirstRpcMs: ok.length ? median(ok.map((s) => s.beforeFirstRpcMs)) : Number.NaN,
      afterLastRpcMs: ok.length ? median(ok.map((s) => s.afterLastRpcMs)) : Number.NaN,
      serviceCpuMs:
        ok.length && ok.every((s) => s.serviceCpuMs !== undefined)
          ? median(ok.map((s) => s.serviceCpuMs!))
          : undefined,
    },
    max: { ms: maxMs, rtts: perRtt(maxMs), sequentialRoundTrips: seq.length ? Math.max(...seq) : 0 },
    min: { ms: ms.length ? Math.min(...ms) : Number.NaN },
    scans,
    failures,
  };
}
