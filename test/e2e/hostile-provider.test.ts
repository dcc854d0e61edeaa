import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startServiceRetrying } from '../support/auth-helpers.js';
import { createCustomer, type TestCustomer } from '../support/customers.js';
import { gzipBomb, JsonRpcStub, oversizedAnswer, type StubReply } from '../support/jsonrpc-stub.js';
import { prepareEnv, type RunningService, type TestEnv } from '../support/service.js';

const MIB = 1024 * 1024;
const RPC_DEADLINE_MS = 5000;
const AGENT_KEY = 'agent-key-hostile-provider-0123';
/** USDC's mint: any well-formed address does, the provider never answers it properly. */
const MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';

/** The kernel's view of the service's memory: resident now, and the peak since the last reset. */
function memory(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]) / 1024;
  return { rssMb: kb('VmRSS'), peakMb: kb('VmHWM') };
}

/** Resets the peak (VmHWM) to the current RSS (Linux clear_refs, value 5). */
const resetPeak = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, '5');

/**
 * A node provider answering 400 MiB, plainly or as a gzip bomb (≈ 400 KiB on the wire): the service reads
 * at most RISKWATCH_RPC_MAX_RESPONSE_MIB of it, answers 503 provider_unavailable within the deadline, its
 * memory stays bounded, and the failure is counted and logged; the agent-health probe takes the same path.
 */
describe('hostile node provider: oversized answers (built service)', () => {
  let stub: JsonRpcStub;
  let mode: 'plain' | 'gzip' | 'retry-after-a-year' | 'healthy' = 'plain';
  let testEnv: TestEnv;
  let svc: RunningService;
  let customer: TestCustomer;
  const pid = () => svc.process.pid!;

  beforeAll(async () => {
    // Healthy answers: the mint does not exist.
    stub = await JsonRpcStub.start({
      getMultipleAccounts: () => ({ context: { slot: 1 }, value: [null, null] }),
      getTokenLargestAccounts: () => ({ context: { slot: 1 }, value: [] }),
    });
    stub.reply = (): StubReply => {
      switch (mode) {
        case 'plain':
          return { chunks: oversizedAnswer(400 * MIB) };
        case 'gzip':
          return { chunks: gzipBomb(400), headers: { 'content-encoding': 'gzip' } };
        case 'retry-after-a-year':
          mode = 'healthy'; // once
          return { status: 429, headers: { 'retry-after': '31536000' } };
        case 'healthy':
          return undefined;
      }
    };
    testEnv = await prepareEnv({
      RISKWATCH_RPC_SOLANA_MAINNET: stub.url('/v2/PROVIDER-SECRET'),
      RISKWATCH_RPC_RATE_PER_S: '0',
      RISKWATCH_RPC_DEADLINE_MS: String(RPC_DEADLINE_MS),
      RISKWATCH_RPC_CIRCUIT_FAILURES: '1000',
      RISKWATCH_RPC_RETRY_AFTER_MAX_MS: '1000',
      // One and a half answers at the default cap (32 MiB) may be read at once by the process.
      RISKWATCH_RPC_MAX_BUFFERED_MIB: '48',
      AGENT_KEYS: AGENT_KEY,
    });
    customer = await createCustomer(testEnv.env, 'hostile-provider', ['main']);
    svc = await startServiceRetrying(testEnv.env, 'api');
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await stub?.close();
    await testEnv?.dropDatabase();
  });

  it.each(['plain', 'gzip'] as const)(
    'answers scan/token with 503 within the deadline and RSS growth under 100 MB (%s 400 MiB)',
    async (which) => {
      mode = which;
      const before = stub.requests.length;
      const { rssMb } = memory(pid());
      resetPeak(pid());
      const started = Date.now();
      const res = await fetch(`${svc.baseUrl}/api/v1/scan/token`, {
        method: 'POST',
        headers: { 'x-api-key': customer.keys.main!.key, 'content-type': 'application/json' },
        body: JSON.stringify({ mint: MINT, network: 'mainnet' }),
      });
      const elapsed = Date.now() - started;
      const problem = await expectProblem(res, 503, 'provider_unavailable');
      const { peakMb } = memory(pid());
      console.log(
        `${which}: 503 in ${elapsed} ms, RSS ${rssMb.toFixed(0)} MB before, peak ${peakMb.toFixed(0)} MB ` +
          `(+${(peakMb - rssMb).toFixed(0)} MB), ${stub.requests.length - before} provider request(s)`,
      );
      expect(problem.detail).toMatch(/exceeded 33554432 bytes/);
      expect(elapsed).toBeLessThan(RPC_DEADLINE_MS);
      expect(peakMb - rssMb).toBeLessThan(100);
      expect(problem.detail).not.toContain('PROVIDER-SECRET');
    },
  );

  it('holds 8 concurrent scans of a 400 MiB answer to RISKWATCH_RPC_MAX_BUFFERED_MIB: RSS growth under 100 MB', async () => {
    mode = 'plain';
    const { rssMb } = memory(pid());
    resetPeak(pid());
    const scans = await Promise.all(
      Array.from({ length: 8 }, () =>
        fetch(`${svc.baseUrl}/api/v1/scan/token`, {
          method: 'POST',
          headers: { 'x-api-key': customer.keys.main!.key, 'content-type': 'application/json' },
          body: JSON.stringify({ mint: MINT, network: 'mainnet' }),
        }),
      ),
    );
    for (const res of scans) await expectProblem(res, 503, 'provider_unavailable');
    const { peakMb } = memory(pid());
    console.log(`8 concurrent: RSS ${rssMb.toFixed(0)} MB before, peak ${peakMb.toFixed(0)} MB`);
    expect(peakMb - rssMb).toBeLessThan(100);
  });

  it('caps a provider Retry-After: one 429 asking for a year idles the provider for RISKWATCH_RPC_RETRY_AFTER_MAX_MS, not until restart', async () => {
    mode = 'retry-after-a-year';
    const scan = () =>
      fetch(`${svc.baseUrl}/api/v1/scan/token`, {
        method: 'POST',
        headers: { 'x-api-key': customer.keys.main!.key, 'content-type': 'application/json' },
        body: JSON.stringify({ mint: MINT, network: 'mainnet' }),
      });
    const started = Date.now();
    let status = 503;
    while (status === 503 && Date.now() - started < 5000) {
      const res = await scan();
      status = res.status;
      await res.arrayBuffer();
      if (status === 503) await new Promise((r) => setTimeout(r, 100));
    }
    // Within its 5 s deadline the scan waits out the capped second and reads the provider again: the mint
    // does not exist there (404), where an uncapped wait would have answered 503 for a year.
    expect(status).toBe(404);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(stub.requests.at(-1)!.at - stub.requests.at(-2)!.at).toBeGreaterThanOrEqual(990);
  });

  it('counts the oversized answers in riskwatch_rpc_calls_total and logs the reason, never the URL', async () => {
    const metrics = await (await fetch(svc.metricsUrl)).text();
    expect(metrics).toMatch(
      /riskwatch_rpc_calls_total\{provider="solana\/mainnet#0",method="\w+",outcome="too_large"\} [1-9]/,
    );
    expect(svc.output()).toMatch(/"outcome":"too_large".*exceeded 33554432 bytes/);
    expect(svc.output()).not.toContain('PROVIDER-SECRET');
    // At start-up: the plain-http warning is for URLs outside loopback only.
    expect(svc.output()).not.toMatch(/plain http:\/\//);
  });

  it('keeps memory bounded when the agent-health probe meets the same provider', async () => {
    mode = 'gzip';
    const { rssMb } = memory(pid());
    resetPeak(pid());
    const res = await fetch(`${svc.baseUrl}/api/agent/health`, {
      headers: { 'x-service-agent-key': AGENT_KEY },
    });
    expect(res.status).toBe(200); // warn: degraded, not down
    const body = (await res.json()) as { checks: Record<string, { status: string; output?: string }[]> };
    const provider = body.checks['provider:solana/mainnet']![0]!;
    expect(provider.status).toBe('warn');
    expect(provider.output).toMatch(/exceeded 33554432 bytes/);
    expect(memory(pid()).peakMb - rssMb).toBeLessThan(100);
  });
});
