/**
 * `BENCH_ONLY=evm-tokens npm run bench` (or `node dist/test/bench/evm-tokens.js` after a build): issue 20's
 * two measurements, on anvil behind the fault proxy with BENCH_RPC_LATENCY_MS (50) on every provider round
 * trip, the service as the `api` role.
 *
 *  - `erc20-cold`: POST /api/v1/scan/token of each ERC-20 of the token world (test/support/evm/tokens.ts:
 *    OpenZeppelin tokens and traps pooled on Uniswap V2), each never scanned before by that service (each
 *    round runs on a fresh Redis key prefix, so nothing is cached), one at a time: answer time (client side)
 *    and the sequential provider round trips on its critical path (the proxy's log: the longest chain of
 *    requests each started after the previous one ended). Goal: ≤ 3 round trips.
 *  - `approvals-10k`: GET /api/v1/approvals of a wallet with 10,000 Approval logs (20 token contracts × 500
 *    events over 50 spenders each: 1,000 (token, spender) pairs, every allowance still standing), cold each
 *    time (a fresh Redis prefix): provider calls by method, HTTP round trips, answer time, the service
 *    process's RSS before and after (VmRSS / VmHWM from /proc).
 *
 * Knobs: BENCH_ERC20_ROUNDS (3), BENCH_APPROVALS_REPEAT (3), BENCH_RPC_LATENCY_MS (50).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { getAddress, type Address, type Hex } from 'viem';
import { startAnvil } from '../support/evm/anvil.js';
import { compileApprovalContracts, sprayAbi } from '../support/evm/approval-contracts.js';
import { connectAnvil } from '../support/evm/contracts.js';
import { buildTokenWorld, type TokenName } from '../support/evm/tokens.js';
import { sequentialRoundTrips, startFaultProxy } from '../support/rpc-fault-proxy.js';
import { cliJson, prepareEnv, startService, type RunningService } from '../support/service.js';
import { intEnv } from './env.js';

const ROUNDS = intEnv('BENCH_ERC20_ROUNDS', 3, 1, 100);
const APPROVAL_REPEAT = intEnv('BENCH_APPROVALS_REPEAT', 3, 1, 100);
const LATENCY_MS = intEnv('BENCH_RPC_LATENCY_MS', 50, 1, 1000);
const ROUND_TRIP_GOAL = 3;

export interface EvmTokensReport {
  latencyMs: number;
  erc20Cold: {
    scans: number;
    p50Ms: number;
    maxMs: number;
    sequentialRoundTrips: { median: number; max: number };
    /** Provider calls of one scan (median), all methods. */
    callsPerScan: number;
    byToken: { token: string; ms: number; roundTrips: number; risk: string }[];
  };
  approvals: {
    logs: number;
    approvals: number;
    p50Ms: number;
    calls: Record<string, number>;
    httpRequests: number;
    sequentialRoundTrips: number;
    rssMiB: { before: number; after: number; peak: number };
  };
  failures: string[];
}

const percentile = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

/** VmRSS and VmHWM of a process, MiB (Linux). */
function memoryOf(pid: number | undefined): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

export async function benchEvmTokens(log: (line?: string) => void = console.log): Promise<EvmTokensReport> {
  const anvil = await startAnvil();
  const world = await buildTokenWorld(anvil.url);
  const proxy = await startFaultProxy(anvil.url);
  const { env, dropDatabase } = await prepareEnv({
    RISKWATCH_RPC_ETHEREUM_MAINNET: proxy.url,
    RISKWATCH_RPC_RATE_PER_S: '0',
    RISKWATCH_EVM_ROUTERS: JSON.stringify([{ network: 'eip155:1', address: world.uniswap.router }]),
    LOG_LEVEL: 'warn',
  });
  const services: RunningService[] = [];
  const failures: string[] = [];
  /** A service of its own Redis prefix: nothing it answers was cached before. */
  const freshService = async (label: string) => {
    const service = await startService(
      { ...env, REDIS_KEY_PREFIX: `${env.REDIS_KEY_PREFIX}${label}:` },
      'api',
    );
    services.push(service);
    return service;
  };
  try {
    const account = await cliJson<{ id: string }>(env, ['accounts', 'create', '--name', 'bench-evm-tokens']);
    await cliJson(env, ['entitlements', 'grant', account.id, '--rate-limit-per-min', '1000000']);
    const { key } = await cliJson<{ key: string }>(env, ['keys', 'create', account.id, '--name', 'bench']);

    // ---- cold ERC-20 scans
    const names = Object.keys(world.tokens).filter(
      (n) => n !== 'proxyImplementation' && n !== 'proxyAdmin',
    ) as TokenName[];
    const byToken: EvmTokensReport['erc20Cold']['byToken'] = [];
    const calls: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const service = await freshService(`erc20-${round}`);
      proxy.setLatency(LATENCY_MS);
      try {
        for (const name of names) {
          proxy.resetStats();
          const started = performance.now();
          const res = await fetch(`${service.baseUrl}/api/v1/scan/token`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': key },
            body: JSON.stringify({ mint: world.tokens[name], chain: 'ethereum' }),
          });
          const text = await res.text();
          const ms = performance.now() - started;
          const trips = sequentialRoundTrips(proxy.stats);
          calls.push(proxy.stats.totalCalls);
          if (res.status !== 200) {
            failures.push(`erc20-cold ${name}: ${res.status} ${text.slice(0, 200)}`);
            continue;
          }
          const body = JSON.parse(text) as { cached: boolean; risk_level: string };
          if (body.cached) failures.push(`erc20-cold ${name}: answered from the cache`);
          if (trips > ROUND_TRIP_GOAL) failures.push(`erc20-cold ${name}: ${trips} sequential round trips`);
          byToken.push({ token: name, ms, roundTrips: trips, risk: body.risk_level });
        }
      } finally {
        proxy.setLatency(0);
      }
    }
    const times = byToken.map((t) => t.ms);
    const trips = byToken.map((t) => t.roundTrips);
    const erc20Cold = {
      scans: byToken.length,
      p50Ms: percentile(times, 50),
      maxMs: Math.max(...times),
      sequentialRoundTrips: { median: percentile(trips, 50), max: Math.max(...trips) },
      callsPerScan: percentile(calls, 50),
      byToken,
    };
    log(
      `evm-tokens erc20-cold  ${erc20Cold.scans} scans at ${LATENCY_MS} ms per round trip: p50 ${erc20Cold.p50Ms.toFixed(0)} ms, ` +
        `max ${erc20Cold.maxMs.toFixed(0)} ms; sequential round trips ${erc20Cold.sequentialRoundTrips.median} ` +
        `(max ${erc20Cold.sequentialRoundTrips.max}, goal ≤ ${ROUND_TRIP_GOAL}); ${erc20Cold.callsPerScan} provider calls per scan`,
    );

    // ---- a wallet with 10,000 Approval logs
    const code = compileApprovalContracts();
    const conn = connectAnvil(anvil);
    const sprayer = conn.wallet(anvil.accounts[0]!.privateKey);
    const wallet = getAddress(anvil.accounts[5]!.address);
    const anvilRpc = async (method: string, params: unknown[]) => {
      const res = await fetch(anvil.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      return ((await res.json()) as { result: unknown }).result;
    };
    const TOKENS = 20;
    const PER_TOKEN = 500;
    const SPENDERS = 50;
    for (let i = 0; i < TOKENS; i++) {
      const token: Address = getAddress(`0x${(0xb0000 + i).toString(16).padStart(40, '0')}`);
      await anvilRpc('anvil_setCode', [token, code.ApprovalSpray]);
      const hash: Hex = await sprayer.writeContract({
        address: token,
        abi: sprayAbi,
        functionName: 'spray',
        args: [wallet, 0x2000n, BigInt(SPENDERS), BigInt(PER_TOKEN)],
        gas: 25_000_000n,
      });
      const receipt = await conn.publicClient.waitForTransactionReceipt({ hash });
      if (receipt.status !== 'success') throw new Error(`spraying approvals from ${token} failed`);
    }
    const approvalTimes: number[] = [];
    let lastCalls: Record<string, number> = {};
    let httpRequests = 0;
    let sequential = 0;
    let approvalsFound = 0;
    const service = await freshService('approvals-0');
    const before = memoryOf(service.process.pid);
    for (let i = 0; i < APPROVAL_REPEAT; i++) {
      const s = i === 0 ? service : await freshService(`approvals-${i}`);
      proxy.setLatency(LATENCY_MS);
      proxy.resetStats();
      const started = performance.now();
      const res = await fetch(`${s.baseUrl}/api/v1/approvals?target=${wallet}&chain=ethereum`, {
        headers: { 'x-api-key': key },
      });
      const text = await res.text();
      approvalTimes.push(performance.now() - started);
      proxy.setLatency(0);
      if (res.status !== 200) {
        failures.push(`approvals-10k: ${res.status} ${text.slice(0, 200)}`);
        continue;
      }
      const body = JSON.parse(text) as { approvals: unknown[]; complete: boolean; cached: boolean };
      if (!body.complete) failures.push('approvals-10k: complete false');
      if (body.cached) failures.push('approvals-10k: answered from the cache');
      approvalsFound = body.approvals.length;
      lastCalls = { ...proxy.stats.calls };
      httpRequests = proxy.stats.roundTrips;
      sequential = sequentialRoundTrips(proxy.stats);
    }
    const after = memoryOf(service.process.pid);
    if (approvalsFound !== TOKENS * SPENDERS)
      failures.push(`approvals-10k: ${approvalsFound} approvals, expected ${TOKENS * SPENDERS}`);
    const approvals = {
      logs: TOKENS * PER_TOKEN,
      approvals: approvalsFound,
      p50Ms: percentile(approvalTimes, 50),
      calls: lastCalls,
      httpRequests,
      sequentialRoundTrips: sequential,
      rssMiB: { before: before.rss, after: after.rss, peak: after.hwm },
    };
    log(
      `evm-tokens approvals-10k  ${approvals.logs} logs → ${approvals.approvals} approvals at ${LATENCY_MS} ms per round trip: ` +
        `p50 ${approvals.p50Ms.toFixed(0)} ms; calls ${JSON.stringify(approvals.calls)} in ${approvals.httpRequests} HTTP requests, ` +
        `${approvals.sequentialRoundTrips} sequential; api RSS ${before.rss.toFixed(0)} → ${after.rss.toFixed(0)} MiB (peak ${after.hwm.toFixed(0)})`,
    );
    for (const f of failures) log(`evm-tokens FAILURE ${f}`);
    return { latencyMs: LATENCY_MS, erc20Cold, approvals, failures };
  } finally {
    await Promise.allSettled(services.map((s) => s.stop()));
    await dropDatabase();
    await Promise.allSettled([proxy.close(), anvil.stop()]);
  }
}

if (import.meta.url === pathToFileURL(resolve(process.argv[1] ?? '')).href) {
  const report = await benchEvmTokens();
  console.log(JSON.stringify({ ...report, erc20Cold: { ...report.erc20Cold, byToken: undefined } }, null, 2));
  process.exitCode = report.failures.length ? 1 : 0;
}
