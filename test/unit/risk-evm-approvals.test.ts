import { getAddress, maxUint160, maxUint256, numberToHex, parseUnits, type Abi, type Address } from 'viem';
import { waitForTransactionReceipt } from 'viem/actions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvmRpc } from '../../src/chains/evm.js';
import { BUILT_IN_NETWORKS } from '../../src/chains/registry.js';
import { AppError } from '../../src/platform/errors.js';
import {
  EVM_BLOCK_TIME_S,
  lookbackBlocks,
  readWalletApprovals,
  type WalletApproval,
  type WalletApprovals,
} from '../../src/risk/evm/approvals.js';
import { PERMIT2 } from '../../src/risk/known/spenders.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import {
  collectibleAbi,
  connectAnvil,
  deployCollectible,
  deployPermitToken,
  deployRouter,
  permitTokenAbi,
  routerAbi,
  type DeployWallet,
} from '../support/evm/contracts.js';
import {
  compileApprovalContracts,
  multiTokenAbi,
  permit2Abi,
  sprayAbi,
} from '../support/evm/approval-contracts.js';
import { testEvmRpc } from '../support/rpc-clients.js';
import {
  maxLogsRange,
  sequentialRoundTrips,
  startFaultProxy,
  type FaultProxy,
} from '../support/rpc-fault-proxy.js';

/*
 * readWalletApprovals against a real anvil: approvals granted, revoked, spent and expired by real
 * transactions, read through the fault proxy playing providers that cap eth_getLogs ranges, refuse
 * blocks, answer 413, fail the confirmation reads or are down.
 */

const ETHEREUM = BUILT_IN_NETWORKS.find((n) => n.chain === 'ethereum' && n.network === 'mainnet')!;
const spender = (n: number): Address => getAddress(`0x${String(n).repeat(40).slice(0, 40)}`);
const [S1, S2, S3, S4, S5, S6] = [1, 2, 3, 4, 5, 6].map(spender) as [
  Address,
  Address,
  Address,
  Address,
  Address,
  Address,
];
const FAKE_PERMIT2: Address = '0x0000000000000000000000000000000000fa4e02';
const MULTI: Address = '0x00000000000000000000000000000000000a1155';
const FAR = 2 ** 40; // an expiration far in the future (year 36812)

let anvil: RunningAnvil;
let proxy: FaultProxy;
let rpc: EvmRpc;
let owner: Address;
let head: bigint;
const t: Record<'tokenA' | 'tokenB' | 'collection' | 'router', Address> = {} as never;
/** Blocks where things happened (by what), for the refusal tests. */
const at = {} as Record<
  'unlimited' | 'exact' | 'router' | 'operator' | 'single' | 'multi' | 'permit2' | 'permit',
  number
>;

async function anvilRpc(method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(anvil.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

const mine = (blocks: number) => anvilRpc('anvil_mine', [numberToHex(blocks)]);

/** Sends one contract call and waits for it; returns its block. */
async function send(
  wallet: DeployWallet,
  address: Address,
  abi: Abi,
  functionName: string,
  args: readonly unknown[],
): Promise<number> {
  const hash = await wallet.writeContract({ address, abi, functionName, args });
  const receipt = await waitForTransactionReceipt(wallet, { hash, pollingInterval: 20, timeout: 10_000 });
  if (receipt.status !== 'success') throw new Error(`${functionName} on ${address} reverted`);
  return Number(receipt.blockNumber);
}

beforeAll(async () => {
  const code = compileApprovalContracts();
  anvil = await startAnvil();
  const conn = connectAnvil(anvil);
  const deployer = conn.wallet(anvil.accounts[0]!.privateKey);
  const wallet = conn.wallet(anvil.accounts[1]!.privateKey);
  owner = getAddress(anvil.accounts[1]!.address);
  const other = getAddress(anvil.accounts[2]!.address);
  await anvilRpc('anvil_setCode', [PERMIT2, code.MockPermit2]);
  await anvilRpc('anvil_setCode', [FAKE_PERMIT2, code.MockPermit2]);
  await anvilRpc('anvil_setCode', [MULTI, code.MultiToken]);

  t.tokenA = await deployPermitToken(deployer, { name: 'Token A', symbol: 'TKA', decimals: 18 });
  t.tokenB = await deployPermitToken(deployer, { name: 'Token B', symbol: 'TKB', decimals: 6 });
  t.collection = await deployCollectible(deployer);
  t.router = await deployRouter(deployer);
  await send(deployer, t.tokenA, permitTokenAbi, 'mint', [owner, parseUnits('1000', 18)]);
  await send(deployer, t.tokenB, permitTokenAbi, 'mint', [owner, parseUnits('500', 6)]);
  for (const id of [1n, 2n, 3n]) await send(deployer, t.collection, collectibleAbi, 'mint', [owner, id]);

  // ERC-20: revoked; unlimited; exact and below the balance; partly spent without an event.
  await send(wallet, t.tokenA, permitTokenAbi, 'approve', [S1, parseUnits('100', 18)]);
  await mine(100);
  await send(wallet, t.tokenA, permitTokenAbi, 'approve', [S1, 0n]);
  at.unlimited = await send(wallet, t.tokenA, permitTokenAbi, 'approve', [S2, maxUint256]);
  await mine(100);
  at.exact = await send(wallet, t.tokenB, permitTokenAbi, 'approve', [S3, parseUnits('10', 6)]);
  at.router = await send(wallet, t.tokenA, permitTokenAbi, 'approve', [t.router, parseUnits('50', 18)]);
  await send(deployer, t.router, routerAbi, 'pull', [t.tokenA, owner, other, parseUnits('20', 18)]);
  await mine(100);
  // ERC-721: an operator withdrawn, one standing; single approvals, one cleared by a transfer.
  await send(wallet, t.collection, collectibleAbi, 'setApprovalForAll', [S4, true]);
  await send(wallet, t.collection, collectibleAbi, 'setApprovalForAll', [S4, false]);
  at.operator = await send(wallet, t.collection, collectibleAbi, 'setApprovalForAll', [S5, true]);
  at.single = await send(wallet, t.collection, collectibleAbi, 'approve', [S6, 1n]);
  await send(wallet, t.collection, collectibleAbi, 'approve', [S6, 2n]);
  await send(wallet, t.collection, collectibleAbi, 'transferFrom', [owner, other, 2n]);
  at.multi = await send(wallet, MULTI, multiTokenAbi, 'setApprovalForAll', [S4, true]);
  await mine(100);
  // Permit2: unlimited; soon expired; expiration 0 (this block only); by permit(); locked down; a fake.
  const now = Number((await conn.publicClient.getBlock()).timestamp);
  at.permit2 = await send(wallet, PERMIT2, permit2Abi, 'approve', [t.tokenA, S1, maxUint160, FAR]);
  await send(wallet, PERMIT2, permit2Abi, 'approve', [t.tokenB, S2, 5_000_000n, now + 100]);
  await send(wallet, PERMIT2, permit2Abi, 'approve', [t.tokenA, S3, 7n, 0]);
  at.permit = await send(deployer, PERMIT2, permit2Abi, 'permitUnchecked', [owner, t.tokenB, S5, 1000n, FAR]);
  await send(wallet, PERMIT2, permit2Abi, 'approve', [t.tokenB, S6, 123n, FAR]);
  await send(wallet, PERMIT2, permit2Abi, 'lockdown', [t.tokenB, S6]);
  await send(wallet, FAKE_PERMIT2, permit2Abi, 'approve', [t.tokenA, S4, maxUint160, FAR]);
  await anvilRpc('evm_increaseTime', [1000]);
  await mine(50);
  head = BigInt((await anvilRpc('eth_blockNumber', [])) as string);

  proxy = await startFaultProxy(anvil.url);
  rpc = testEvmRpc(proxy.url);
});

afterAll(async () => {
  await proxy?.close();
  await anvil?.stop();
});

const read = (client = rpc, extra: Partial<Parameters<typeof readWalletApprovals>[2]> = {}) =>
  readWalletApprovals(client, owner, { head, fromBlock: 0n, ...extra });

const brief = (a: Partial<WalletApproval>) => `${a.kind} ${a.asset?.address} ${a.spender}`;

/** What the chain above leaves standing, newest grant first. */
function expected(): Partial<WalletApproval>[] {
  return [
    {
      kind: 'permit2',
      spender: S5,
      amount: 1000n,
      unlimited: false,
      grantedAtBlock: at.permit,
      asset: { type: 'erc20', address: t.tokenB, symbol: 'TKB', decimals: 6 },
      coversBalance: false,
      expiresAt: new Date(FAR * 1000),
    },
    {
      kind: 'permit2',
      spender: S1,
      amount: maxUint160,
      unlimited: true,
      coversBalance: true,
      grantedAtBlock: at.permit2,
      asset: { type: 'erc20', address: t.tokenA, symbol: 'TKA', decimals: 18 },
    },
    {
      kind: 'erc1155_operator',
      spender: S4,
      all: true,
      unlimited: true,
      grantedAtBlock: at.multi,
      coversBalance: true,
      asset: { type: 'erc1155', address: MULTI },
    },
    {
      kind: 'erc721',
      spender: S6,
      amount: 1n,
      all: false,
      unlimited: false,
      grantedAtBlock: at.single,
      coversBalance: true,
      asset: { type: 'erc721', address: t.collection, tokenId: 1n, symbol: 'CLCT' },
    },
    {
      kind: 'erc721_operator',
      spender: S5,
      all: true,
      unlimited: true,
      coversBalance: true,
      grantedAtBlock: at.operator,
      asset: { type: 'erc721', address: t.collection, symbol: 'CLCT' },
    },
    {
      kind: 'erc20',
      spender: t.router,
      amount: parseUnits('30', 18), // 50 approved, 20 pulled: no event says so, the read does
      asset: { type: 'erc20', address: t.tokenA },
      unlimited: false,
      coversBalance: false,
      grantedAtBlock: at.router,
    },
    {
      kind: 'erc20',
      spender: S3,
      amount: parseUnits('10', 6),
      asset: { type: 'erc20', address: t.tokenB, symbol: 'TKB', decimals: 6 },
      unlimited: false,
      coversBalance: false,
      grantedAtBlock: at.exact,
    },
    {
      kind: 'erc20',
      spender: S2,
      amount: maxUint256,
      unlimited: true,
      coversBalance: true,
      grantedAtBlock: at.unlimited,
      asset: { type: 'erc20', address: t.tokenA, symbol: 'TKA', decimals: 18 },
    },
  ];
}

function expectAll(result: WalletApprovals): void {
  expect(result.approvals.map(brief)).toEqual(expected().map(brief));
  result.approvals.forEach((a, i) => expect(a).toMatchObject(expected()[i]!));
  for (const a of result.approvals) {
    expect(a).toMatchObject({ owner, source: 'transaction', confirmed: true });
    expect(a.grantedTx).toMatch(/^0x[0-9a-f]{64}$/);
  }
}

describe('readWalletApprovals', () => {
  it('keeps what stands at the head: revoked, spent, transferred, expired and locked-down approvals drop', async () => {
    proxy.resetStats();
    const result = await read();
    expectAll(result);
    expect(result).toMatchObject({ fromBlock: 0, toBlock: Number(head), complete: true, gaps: [] });
    const erc20 = result.approvals.find((a) => a.spender === S3)!;
    expect(erc20.expiresAt).toBeNull();
    // One window, then one batch: the state of 11 candidates (3 allowances, ownerOf + getApproved of 2 NFTs,
    // 2 operators, 4 Permit2 allowances), symbol ×4 tokens, decimals + balance ×2, ERC-165 ×1, the header.
    expect(result.calls).toEqual({ getLogs: 1, reads: 13 + 4 + 4 + 1 + 1, roundTrips: 2 });
    expect(proxy.stats.calls.eth_getLogs).toBe(1);
    expect(sequentialRoundTrips(proxy.stats)).toBe(2);
  });

  it('a provider capping ranges at 50 blocks: the windows halve until they pass, nothing is missed', async () => {
    proxy.faults.limitLogs(maxLogsRange(50n));
    try {
      proxy.resetStats();
      const result = await read();
      expectAll(result);
      expect(result.complete).toBe(true);
      // One window at a time while refused (halving), then waves of windows of the size that passed.
      let span = head + 1n;
      let refusals = 0;
      while (span > 50n) [span, refusals] = [span / 2n, refusals + 1];
      // (each range cut by a halving may leave one short window more)
      const windows = Math.ceil(Number(head + 1n) / Number(span));
      expect(result.calls.getLogs).toBeGreaterThanOrEqual(refusals + windows);
      expect(result.calls.getLogs).toBeLessThanOrEqual(2 * refusals + windows);
      expect(proxy.stats.calls.eth_getLogs).toBe(result.calls.getLogs);
      expect(result.calls.roundTrips).toBe(sequentialRoundTrips(proxy.stats));
    } finally {
      proxy.faults.clear();
    }
  });

  it('a refusal that names a range that works (Infura): taken at its word, fewer calls than halving', async () => {
    proxy.faults.limitLogs(({ fromBlock, toBlock }) =>
      toBlock - fromBlock + 1n > 150n
        ? {
            code: -32005,
            message:
              'query returned more than 10000 results. Try with this block range ' +
              `[${numberToHex(fromBlock)}, ${numberToHex(fromBlock + 149n)}].`,
          }
        : null,
    );
    try {
      const result = await read();
      expectAll(result);
      expect(result.calls.getLogs).toBe(1 + Math.ceil(Number(head + 1n) / 150));
    } finally {
      proxy.faults.clear();
    }
  });

  it('HTTP 413 for a batch holding a large range: every window of it halved, nothing missed', async () => {
    proxy.faults.limitLogs(({ fromBlock, toBlock }) => (toBlock - fromBlock > 200n ? { status: 413 } : null));
    try {
      proxy.resetStats();
      // Windows of 300 blocks: the first wave is one batch of several, answered 413 as a whole.
      const result = await read(testEvmRpc(proxy.url), { maxRange: 300n });
      expectAll(result);
      expect(result.complete).toBe(true);
      expect(proxy.stats.faulted).toBeGreaterThan(0);
    } finally {
      proxy.faults.clear();
    }
  });

  it('a block refused even alone: a gap with the provider message, complete false, the rest found', async () => {
    const block = BigInt(at.exact);
    proxy.faults.limitLogs(({ fromBlock, toBlock }) =>
      fromBlock <= block && block <= toBlock
        ? { code: -32005, message: 'query returned more than 10000 results' }
        : null,
    );
    try {
      const result = await read();
      expect(result.complete).toBe(false);
      expect(result.gaps).toEqual([
        {
          fromBlock: at.exact,
          toBlock: at.exact,
          reason: 'eth_getLogs refused even one block: query returned more than 10000 results (code -32005)',
        },
      ]);
      // Only the approval granted in that block is missing.
      expect(result.approvals.map(brief)).toEqual(
        expected()
          .filter((e) => e.spender !== S3)
          .map(brief),
      );
    } finally {
      proxy.faults.clear();
    }
  });

  it('a budget of eth_getLogs calls spent: the rest is a gap, no throw', async () => {
    proxy.faults.limitLogs(maxLogsRange(10n));
    try {
      const result = await read(rpc, { maxLogCalls: 20 });
      expect(result.calls.getLogs).toBe(20);
      expect(result.complete).toBe(false);
      expect(result.gaps).toEqual([
        {
          fromBlock: 0,
          toBlock: expect.any(Number) as number,
          reason: 'not read: the budget of 20 eth_getLogs calls was spent',
        },
      ]);
      // Newest first: the Permit2 approvals of the last blocks were read.
      expect(result.approvals.map((a) => a.kind)).toContain('permit2');
    } finally {
      proxy.faults.clear();
    }
  });

  it('confirmation reads failing: approvals kept from their logs, unconfirmed, with a gap at the head', async () => {
    proxy.faults.forMethod('eth_call', { status: 503 });
    try {
      const result = await read(testEvmRpc(proxy.url));
      expect(result.complete).toBe(false);
      expect(result.gaps.length).toBeGreaterThan(0);
      for (const gap of result.gaps) {
        expect(gap).toMatchObject({ fromBlock: Number(head), toBlock: Number(head) });
        expect(gap.reason).toMatch(/^confirmation reads? .* failed: .*HTTP 503/);
      }
      expect(result.approvals.every((a) => !a.confirmed)).toBe(true);
      // The log's amount where the read would have said 30; the withdrawn ones stay withdrawn.
      expect(result.approvals.find((a) => a.spender === t.router)?.amount).toBe(parseUnits('50', 18));
      expect(result.approvals.map(brief)).not.toContain(`erc721_operator ${t.collection} ${S4}`);
    } finally {
      proxy.faults.clear();
    }
  });

  it('a provider that is down: provider_unavailable, since nothing could be read', async () => {
    proxy.faults.always({ status: 503 });
    try {
      await expect(read(testEvmRpc(proxy.url))).rejects.toSatisfy(
        (err: unknown) => err instanceof AppError && err.code === 'provider_unavailable',
      );
    } finally {
      proxy.faults.clear();
    }
  });

  it('a caller that gave up: provider_unavailable, nothing more is asked', async () => {
    const abandoned = new AbortController();
    abandoned.abort();
    proxy.resetStats();
    await expect(read(rpc, { signal: abandoned.signal })).rejects.toSatisfy(
      (err: unknown) => err instanceof AppError && err.code === 'provider_unavailable',
    );
    expect(proxy.stats.roundTrips).toBe(0);
  });

  it('10,000 approval logs fan in to one window and one batch of reads', async () => {
    const code = compileApprovalContracts();
    const conn = connectAnvil(anvil);
    const sprayer = conn.wallet(anvil.accounts[0]!.privateKey);
    const wallet = getAddress(anvil.accounts[3]!.address);
    const tokens = Array.from({ length: 20 }, (_, i) =>
      getAddress(`0x${(0x5a000 + i).toString(16).padStart(40, '0')}`),
    );
    for (const token of tokens) {
      await anvilRpc('anvil_setCode', [token, code.ApprovalSpray]);
      await send(sprayer, token, sprayAbi, 'spray', [wallet, 0x1000n, 10n, 500n]);
    }
    const top = BigInt((await anvilRpc('eth_blockNumber', [])) as string);
    proxy.resetStats();
    const heapBefore = process.memoryUsage().heapUsed;
    const started = performance.now();
    const result = await readWalletApprovals(rpc, wallet, { head: top, fromBlock: 0n });
    const ms = performance.now() - started;
    const heapMiB = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
    if (process.env.RISKWATCH_TEST_MEASURE)
      process.stdout.write(
        `10,000 logs: ${ms.toFixed(0)} ms, heap +${heapMiB.toFixed(1)} MiB, ${JSON.stringify(result.calls)}, ${proxy.stats.roundTrips} HTTP requests\n`,
      );
    expect(result.complete).toBe(true);
    expect(result.approvals).toHaveLength(200);
    expect(result.calls).toEqual({ getLogs: 1, reads: 200 + 20 * 3 + 1, roundTrips: 2 });
    // The logs, then the reads split by batch_max (50) into 6 HTTP requests sent together.
    expect(proxy.stats.roundTrips).toBe(1 + Math.ceil(261 / 50));
  });
});

describe('lookbackBlocks and the block times', () => {
  it('turns days into blocks, rounding up', () => {
    expect(lookbackBlocks(90, 12)).toBe(648_000n);
    expect(lookbackBlocks(30, 0.25)).toBe(10_368_000n);
    expect(lookbackBlocks(1, 0.45)).toBe(192_000n);
    expect(lookbackBlocks(1, 7)).toBe(12_343n);
    expect(lookbackBlocks(0, 2)).toBe(0n);
    expect(() => lookbackBlocks(-1, 12)).toThrow(RangeError);
    expect(() => lookbackBlocks(1, 0)).toThrow(RangeError);
  });

  it('has a block time for every built-in EVM network', () => {
    for (const n of BUILT_IN_NETWORKS.filter((n) => n.family === 'evm'))
      expect(EVM_BLOCK_TIME_S[n.caip2], n.caip2).toBeGreaterThan(0);
    expect(EVM_BLOCK_TIME_S[ETHEREUM.caip2]).toBe(12);
  });
});
