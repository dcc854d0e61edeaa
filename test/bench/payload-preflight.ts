/**
 * `BENCH_ONLY=payload npm run bench` (or `node dist/test/bench/payload-preflight.js` after a build): shield
 * preflights with a payload (issue 18's acceptance), with BENCH_RPC_LATENCY_MS (50) injected into every HTTP
 * round trip to the node provider, one request at a time. For each shape: p50 and p99 of the answer time
 * (client side), and the count of sequential provider round trips on its critical path (from the proxy's
 * own log: the longest chain of round trips each started after the previous one ended).
 *
 * Shapes, on anvil (eth_simulateV1) behind the latency proxy and on the LiteSVM facade (simulateTransaction):
 *   - `evm-approve-cold`: approve(max) to a new spender each time (its chain analysis not cached);
 *   - `evm-approve-cached`: the same approve to one spender (its analysis cached; simulations never are);
 *   - `evm-swap`: ETH for tokens, the token only revealed by the logs (its metadata read after the simulation);
 *   - `solana-transfer-cold` / `-cached`: a SOL transfer to a new / the same recipient.
 * Goal: ≤ 2 sequential round trips with the counterparties cached, ≤ 3 cold, every answer within
 * `risk.preflight.deadline_ms` (1500 ms).
 *
 * Knobs: BENCH_PAYLOAD_REQUESTS (30 per shape), BENCH_RPC_LATENCY_MS (50).
 */
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createNoopSigner, generateKeyPairSigner, lamports } from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';
import {
  encodeFunctionData,
  keccak256,
  maxUint256,
  numberToHex,
  parseEther,
  toHex,
  getAddress,
  type Address,
  type Hex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { startAnvil } from '../support/evm/anvil.js';
import {
  connectAnvil,
  deployPermitToken,
  deployRouter,
  deploySwap,
  permitTokenAbi,
  swapAbi,
} from '../support/evm/contracts.js';
import { startFaultProxy, sequentialRoundTrips } from '../support/rpc-fault-proxy.js';
import { cliJson, prepareEnv, startService } from '../support/service.js';
import { buildSolanaWorld } from '../support/solana/fixtures.js';
import { buildWireTransaction } from '../support/solana/wire.js';
import { intEnv } from './env.js';

const REQUESTS = intEnv('BENCH_PAYLOAD_REQUESTS', 30, 3, 1000);
const LATENCY_MS = intEnv('BENCH_RPC_LATENCY_MS', 50, 1, 1000);
const DEADLINE_MS = 1500;

export interface PayloadShape {
  shape: string;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Sequential provider round trips on the critical path: median and max over the requests. */
  sequentialRoundTrips: { median: number; max: number };
  decisions: Record<string, number>;
  /** Answers that were not 200, or that took longer than the preflight deadline. */
  failures: string[];
}

export interface PayloadReport {
  latencyMs: number;
  deadlineMs: number;
  shapes: PayloadShape[];
}

const percentile = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

export async function benchPayloads(log: (line?: string) => void = console.log): Promise<PayloadReport> {
  const anvil = await startAnvil();
  const proxy = await startFaultProxy(anvil.url);
  const world = await buildSolanaWorld();
  const facade = await world.startFacade();
  const { env, dropDatabase } = await prepareEnv({
    RISKWATCH_RPC_ETHEREUM_MAINNET: proxy.url,
    RISKWATCH_RPC_SOLANA_MAINNET: facade.url,
    RISKWATCH_RPC_RATE_PER_S: '0',
    LOG_LEVEL: 'warn',
  });
  const service = await startService(env, 'api');
  try {
    const account = await cliJson<{ id: string }>(env, ['accounts', 'create', '--name', 'bench-payload']);
    await cliJson(env, ['entitlements', 'grant', account.id, '--rate-limit-per-min', '1000000']);
    const { key } = await cliJson<{ key: string }>(env, ['keys', 'create', account.id, '--name', 'bench']);

    // EVM: a token, a swap and a router-like spender from real Solidity; a user holding tokens and ETH.
    const chain = connectAnvil(anvil);
    const deployer = chain.wallet(anvil.accounts[0]!.privateKey);
    const user = privateKeyToAccount(keccak256(toHex('riskwatch:bench:payload:user')));
    const token = await deployPermitToken(deployer, { name: 'Bench Token', symbol: 'BNCH', decimals: 18 });
    const swap = await deploySwap(deployer, { rate: 1000n });
    const router = await deployRouter(deployer);
    const wait = async (hash: Promise<Hex>) =>
      chain.publicClient.waitForTransactionReceipt({ hash: await hash });
    await wait(deployer.sendTransaction({ to: user.address, value: parseEther('100') }));
    for (const to of [user.address, swap])
      await wait(
        deployer.writeContract({
          address: token,
          abi: permitTokenAbi,
          functionName: 'mint',
          args: [to, 10n ** 30n],
        }),
      );

    // Solana: a funded user and a used recipient.
    const sol = world.chain;
    const solUser = await sol.signer('bench:payload:user');
    const solFriend = (await sol.signer('bench:payload:friend')).address;
    sol.svm.airdrop(solUser.address, lamports(1000n * 10n ** 9n));
    sol.svm.airdrop(solFriend, lamports(10n ** 9n));

    const post = async (body: Record<string, unknown>) => {
      const started = performance.now();
      const res = await fetch(`${service.baseUrl}/api/v1/shield/preflight`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, ms: performance.now() - started, text };
    };
    const approveTo = (spender: Address) => ({
      chain: 'ethereum',
      intent: 'approve',
      from: user.address,
      transaction: {
        from: user.address,
        to: token,
        data: encodeFunctionData({
          abi: permitTokenAbi,
          functionName: 'approve',
          args: [spender, maxUint256],
        }),
      },
    });
    const solTransfer = async (to: string) => ({
      chain: 'solana',
      intent: 'transfer',
      from: solUser.address,
      transaction: await buildWireTransaction({
        feePayer: solUser.address,
        version: 'legacy',
        blockhash: '11111111111111111111111111111111',
        instructions: [
          getTransferSolInstruction({
            source: createNoopSigner(solUser.address),
            destination: to as never,
            amount: 10_000_000n,
          }),
        ],
      }),
    });
    const randomSpender = () => getAddress(keccak256(toHex(`bench:spender:${Math.random()}`)).slice(0, 42));

    const shapes: {
      shape: string;
      family: 'evm' | 'solana';
      body: () => Promise<Record<string, unknown>>;
    }[] = [
      { shape: 'evm-approve-cold', family: 'evm', body: () => Promise.resolve(approveTo(randomSpender())) },
      { shape: 'evm-approve-cached', family: 'evm', body: () => Promise.resolve(approveTo(router)) },
      {
        shape: 'evm-swap',
        family: 'evm',
        body: () =>
          Promise.resolve({
            chain: 'ethereum',
            intent: 'interact',
            from: user.address,
            transaction: {
              from: user.address,
              to: swap,
              data: encodeFunctionData({ abi: swapAbi, functionName: 'buy', args: [token] }),
              value: numberToHex(parseEther('0.01')),
            },
          }),
      },
      {
        shape: 'solana-transfer-cold',
        family: 'solana',
        body: async () => solTransfer((await generateKeyPairSigner()).address),
      },
      { shape: 'solana-transfer-cached', family: 'solana', body: () => solTransfer(solFriend) },
    ];

    const report: PayloadReport = { latencyMs: LATENCY_MS, deadlineMs: DEADLINE_MS, shapes: [] };
    for (const s of shapes) {
      // Untimed, at no latency: code paths warm, and the cached shapes' counterparties in the cache.
      const warm = await post(await s.body());
      if (warm.status !== 200)
        throw new Error(`${s.shape}: warm-up answered ${warm.status}: ${warm.text.slice(0, 300)}`);
      const times: number[] = [];
      const trips: number[] = [];
      const decisions: Record<string, number> = {};
      const failures: string[] = [];
      proxy.setLatency(LATENCY_MS);
      facade.setLatency(LATENCY_MS);
      try {
        for (let i = 0; i < REQUESTS; i++) {
          const body = await s.body();
          await facade.idle();
          proxy.resetStats();
          facade.stats.reset();
          const r = await post(body);
          times.push(r.ms);
          trips.push(
            s.family === 'evm' ? sequentialRoundTrips(proxy.stats) : facade.stats.sequentialRoundTrips(),
          );
          if (r.status !== 200) failures.push(`${r.status}: ${r.text.slice(0, 200)}`);
          else {
            const answer = JSON.parse(r.text) as { decision: string; complete: boolean };
            const label = `${answer.decision}${answer.complete ? '' : ' (incomplete)'}`;
            decisions[label] = (decisions[label] ?? 0) + 1;
          }
          if (r.ms > DEADLINE_MS)
            failures.push(`answered in ${r.ms.toFixed(0)} ms, past the ${DEADLINE_MS} ms deadline`);
        }
      } finally {
        proxy.setLatency(0);
        facade.setLatency(0);
      }
      const shape: PayloadShape = {
        shape: s.shape,
        requests: REQUESTS,
        p50Ms: percentile(times, 50),
        p99Ms: percentile(times, 99),
        maxMs: Math.max(...times),
        sequentialRoundTrips: { median: percentile(trips, 50), max: Math.max(...trips) },
        decisions,
        failures,
      };
      report.shapes.push(shape);
      log(
        `payload  ${s.shape.padEnd(24)} p50 ${shape.p50Ms.toFixed(1).padStart(6)} ms  p99 ${shape.p99Ms.toFixed(1).padStart(6)} ms  ` +
          `sequential round trips ${shape.sequentialRoundTrips.median} (max ${shape.sequentialRoundTrips.max})  ` +
          `${JSON.stringify(decisions)}${failures.length ? `  FAILURES ${failures.length}: ${failures[0]}` : ''}`,
      );
    }
    return report;
  } finally {
    await service.stop();
    await dropDatabase();
    await Promise.allSettled([proxy.close(), facade.close(), anvil.stop()]);
  }
}

if (import.meta.url === pathToFileURL(resolve(process.argv[1] ?? '')).href) {
  const report = await benchPayloads();
  console.log(JSON.stringify(report, null, 2));
}
