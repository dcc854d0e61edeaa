import { Redis } from 'ioredis';
import pg from 'pg';
import { getAddress, maxUint256, type Address, type Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobQueues } from '../../src/jobs/queues.js';
import { REORG_MARGIN } from '../../src/risk/approvals-since.js';
import { REDIS_URL } from '../support/env.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import {
  connectAnvil,
  deployPermitToken,
  deployRouter,
  permitTokenAbi,
  type AnvilConnection,
} from '../support/evm/contracts.js';
import { startFaultProxy, type FaultProxy } from '../support/rpc-fault-proxy.js';
import {
  cli,
  cliJson,
  eventually,
  prepareEnv,
  startService,
  type RunningService,
} from '../support/service.js';

/*
 * `approval_granted` (docs/api.md, "Watchlists"): the deep scan of an EVM wallet entry alerts on the
 * approvals granted since the entry's block cursor, and only those: real ERC-20 approvals on anvil, the
 * service (api + worker) reading it through a proxy that records every eth_getLogs range, so "no scan
 * rereads history" is seen on the wire. The test plays the scheduler by enqueuing deep `watchlist-tick`s.
 */

/** A schedule that does not fire during the run (1 January, midnight): scans come from the test. */
const NEVER = '0 0 1 1 *';

let anvil: RunningAnvil;
let proxy: FaultProxy;
let conn: AnvilConnection;
let env: Record<string, string>;
let dropDatabase: () => Promise<void>;
let db: pg.Client;
let bull: Redis;
let queues: JobQueues;
let svc: RunningService;
let key: string;
let scans = 0;
/** The block range of every eth_getLogs call the service made since the last `clearRanges()`. */
const ranges: { fromBlock: bigint; toBlock: bigint }[] = [];

let wallet: { address: Address; privateKey: Hex };
let token: Address;
let router: Address;
let watchlistId: string;
let entryId: string;

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${svc.baseUrl}${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  expect(res.status, `${method} ${path}`).toBeLessThan(300);
  return (await res.json()) as T;
}

/** One deep scan of the list (as the scheduler would enqueue it), waited for until its entry is checked. */
async function deepScan(): Promise<string> {
  const scanId = `test-deep-${watchlistId}-${scans++}`;
  const since = new Date();
  ranges.length = 0;
  await queues.enqueue(
    'watchlist-tick',
    { watchlist_id: watchlistId, scan_id: scanId, mode: 'deep' },
    scanId,
  );
  const checked = await eventually(
    async () => {
      const { rows } = await db.query<{ n: string }>(
        'select count(*) as n from watchlist_entries where id = $1 and deep_checked_at >= $2',
        [entryId, since],
      );
      return Number(rows[0]!.n) === 1;
    },
    20_000,
    50,
  );
  expect(checked, `deep scan ${scanId}`).toBe(true);
  return scanId;
}

const entryRow = async () =>
  (
    await db.query<{ approvals_cursor_block: string | null; last_outcome: string }>(
      'select approvals_cursor_block, last_outcome from watchlist_entries where id = $1',
      [entryId],
    )
  ).rows[0]!;

const cursor = async () => {
  const { approvals_cursor_block: c } = await entryRow();
  return c === null ? null : BigInt(c);
};

interface Alert {
  id: string;
  entry_id: string;
  type: string;
  severity: string;
  previous: unknown;
  current: Record<string, unknown>;
  evidence: { method: string; block?: number; raw: Record<string, unknown> };
}

const approvalAlerts = async (scanId?: string): Promise<Alert[]> =>
  (
    await db.query<Alert>(
      `select id, entry_id, type, severity, previous, current, evidence from watchlist_alerts
        where entry_id = $1 and type = 'approval_granted' and ($2::text is null or scan_id = $2)
        order by created_at, id`,
      [entryId, scanId ?? null],
    )
  ).rows;

/** `wallet` approves `spender` for `amount` of the token; the receipt's block and transaction. */
async function approve(spender: Address, amount: bigint): Promise<{ block: number; tx: Hex }> {
  const hash = await conn.wallet(wallet.privateKey).writeContract({
    address: token,
    abi: permitTokenAbi,
    functionName: 'approve',
    args: [spender, amount],
  });
  const receipt = await conn.publicClient.waitForTransactionReceipt({ hash, timeout: 10_000 });
  expect(receipt.status).toBe('success');
  return { block: Number(receipt.blockNumber), tx: hash };
}

async function mine(blocks: number): Promise<void> {
  const res = await fetch(anvil.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'anvil_mine',
      params: [`0x${blocks.toString(16)}`],
    }),
  });
  expect(((await res.json()) as { error?: unknown }).error).toBeUndefined();
}

const head = async () => conn.publicClient.getBlockNumber();

beforeAll(async () => {
  anvil = await startAnvil();
  proxy = await startFaultProxy(anvil.url);
  proxy.faults.limitLogs((range) => {
    ranges.push(range);
    return null;
  });
  conn = connectAnvil(anvil);
  const [deployer, owner] = anvil.accounts;
  wallet = { address: getAddress(owner!.address), privateKey: owner!.privateKey };
  const deployerWallet = conn.wallet(deployer!.privateKey);
  token = await deployPermitToken(deployerWallet, { name: 'Approved', symbol: 'APR', decimals: 18 });
  router = await deployRouter(deployerWallet);
  const minted = await deployerWallet.writeContract({
    address: token,
    abi: permitTokenAbi,
    functionName: 'mint',
    args: [wallet.address, 10n ** 21n],
  });
  await conn.publicClient.waitForTransactionReceipt({ hash: minted, timeout: 10_000 });
  // History: an unlimited approval to an EOA before the list watches the wallet is never alerted on.
  await approve(getAddress(anvil.accounts[3]!.address), maxUint256);

  ({ env, dropDatabase } = await prepareEnv({
    RISKWATCH_RPC_ETHEREUM_MAINNET: proxy.url,
    RISKWATCH_RPC_RATE_PER_S: '0',
    RISKWATCH_RPC_RETRIES: '1',
    RISKWATCH_RPC_BACKOFF_BASE_MS: '10',
    RISKWATCH_RPC_BACKOFF_MAX_MS: '50',
  }));
  const account = JSON.parse(await cli(env, ['accounts', 'create', '--name', 'approvals'])) as { id: string };
  await cliJson(env, ['entitlements', 'grant', account.id]);
  ({ key } = await cliJson<{ key: string }>(env, ['keys', 'create', account.id, '--name', 'watcher']));
  db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  bull = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  queues = new JobQueues(bull, env.REDIS_KEY_PREFIX!);
  svc = await startService(env, 'all');
  ({ id: watchlistId } = await api<{ id: string }>('POST', '/api/v1/watchlists', {
    name: 'treasury',
    schedule: NEVER,
    deep_schedule: NEVER,
  }));
  const added = await api<{ results: { status: string; id: string }[] }>(
    'POST',
    `/api/v1/watchlists/${watchlistId}/entries`,
    { entries: [{ target: wallet.address, chain: 'ethereum', label: 'hot wallet' }] },
  );
  expect(added.results[0]!.status).toBe('created');
  entryId = added.results[0]!.id;
}, 60_000);

afterAll(async () => {
  await svc?.stop();
  await queues?.close();
  bull?.disconnect();
  await db?.end();
  await dropDatabase?.();
  await proxy?.close();
  await anvil?.stop();
});

describe('approval_granted on an EVM wallet entry, from a block cursor', () => {
  it('the first deep scan is the baseline: the cursor at the head, no log read, nothing alerted', async () => {
    expect(await cursor()).toBeNull();
    const before = await head();
    await deepScan();
    expect(await approvalAlerts()).toEqual([]);
    const c = await cursor();
    expect(c).not.toBeNull();
    expect(c!).toBeGreaterThanOrEqual(before);
    // Neither the verdict (approvals: false) nor the approvals (no cursor yet) read a log.
    expect(proxy.stats.calls['eth_getLogs'] ?? 0).toBe(0);
    expect(ranges).toEqual([]);
    expect((await entryRow()).last_outcome).toBe('ok');
  }, 30_000);

  it('the next deep scan alerts exactly the new approvals, by spender, from the cursor on', async () => {
    const from = (await cursor())! + 1n;
    const eoa = getAddress(anvil.accounts[2]!.address);
    const toEoa = await approve(eoa, maxUint256);
    const toRouter = await approve(router, 1000n);
    // The cursor stays REORG_MARGIN blocks behind the head: let the chain pass the approvals by that much.
    await mine(Number(REORG_MARGIN));
    const scanId = await deepScan();

    const alerts = await approvalAlerts(scanId);
    expect(alerts.map((a) => [a.current.spender, a.severity])).toEqual(
      expect.arrayContaining([
        [eoa, 'high'],
        [router, 'low'],
      ]),
    );
    expect(alerts).toHaveLength(2);
    const byEoa = alerts.find((a) => a.current.spender === eoa)!;
    expect(byEoa.previous).toBeNull();
    expect(byEoa.current).toMatchObject({
      owner: wallet.address,
      asset: { type: 'erc20', address: token, symbol: 'APR', decimals: 18 },
      spender: eoa,
      amount: 'unlimited',
      all: false,
      kind: 'erc20',
      source: 'transaction',
      granted_at_block: toEoa.block,
      granted_tx: toEoa.tx,
      confirmed: true,
      spender_kind: 'eoa',
      risky: true,
    });
    expect(byEoa.evidence).toMatchObject({ method: 'eth_getLogs,eth_call', block: toEoa.block });
    const byRouter = alerts.find((a) => a.current.spender === router)!;
    expect(byRouter.current).toMatchObject({
      amount: '1000',
      granted_tx: toRouter.tx,
      granted_at_block: toRouter.block,
      risky: false,
    });
    // The logs read were the new blocks only; the cursor moved on, REORG_MARGIN blocks behind the head
    // (those are read again next time, alerting nothing twice).
    expect(ranges.length).toBeGreaterThan(0);
    expect(ranges.every((r) => r.fromBlock >= from)).toBe(true);
    expect(ranges.map((r) => r.fromBlock).sort((a, b) => (a < b ? -1 : 1))[0]).toBe(from);
    expect((await cursor())!).toBe(BigInt(toRouter.block));

    // The API serves them, and each is a watchlist.alert event carrying the alert as served.
    const served = await api<{ data: Alert[] }>(
      'GET',
      `/api/v1/watchlists/${watchlistId}/alerts?type=approval_granted`,
    );
    expect(served.data.map((a) => a.id).sort()).toEqual(alerts.map((a) => a.id).sort());
    for (const a of served.data)
      expect(a).toMatchObject({ type: 'approval_granted', previous: null, network: 'mainnet' });
    const events = await api<{ data: { type: string; data: { alert: Alert; entry: { id: string } } }[] }>(
      'GET',
      '/api/v1/events?types=watchlist.alert&limit=1000',
    );
    const granted = events.data.filter((e) => e.data.alert.type === 'approval_granted');
    expect(granted).toHaveLength(2);
    for (const e of granted) {
      expect(e.data.entry.id).toBe(entryId);
      expect(e.data.alert).toEqual(served.data.find((a) => a.id === e.data.alert.id));
    }
  }, 30_000);

  it('a deep scan with nothing new alerts nothing (the re-read margin included) and rereads no block before its cursor', async () => {
    const before = (await cursor())!;
    await mine(3);
    await deepScan();
    expect(await approvalAlerts()).toHaveLength(2);
    expect(ranges.length).toBeGreaterThan(0);
    expect(ranges.every((r) => r.fromBlock === before + 1n)).toBe(true);
    expect((await cursor())!).toBeGreaterThanOrEqual(before + 3n);
  }, 30_000);

  it('an approvals read that fails keeps the cursor and the chunk: the next deep scan catches up', async () => {
    const before = (await cursor())!;
    const late = getAddress(anvil.accounts[4]!.address);
    const grant = await approve(late, maxUint256);
    proxy.faults.limitLogs((range) => {
      ranges.push(range);
      return { code: -32000, message: 'internal error' };
    });
    try {
      await deepScan();
    } finally {
      proxy.faults.limitLogs((range) => {
        ranges.push(range);
        return null;
      });
    }
    // The entry was scanned (the chunk was written), its outcome names the failure, nothing was alerted.
    expect(await entryRow()).toEqual({
      approvals_cursor_block: before.toString(),
      last_outcome: 'provider_unavailable',
    });
    expect(await approvalAlerts()).toHaveLength(2);

    await mine(Number(REORG_MARGIN));
    const scanId = await deepScan();
    const alerts = await approvalAlerts(scanId);
    expect(alerts.map((a) => [a.current.spender, a.severity, a.current.granted_tx])).toEqual([
      [late, 'high', grant.tx],
    ]);
    expect(ranges.every((r) => r.fromBlock >= before + 1n)).toBe(true);
    expect(await entryRow()).toMatchObject({ last_outcome: 'ok' });
    expect((await cursor())!).toBeGreaterThanOrEqual(BigInt(grant.block));
  }, 30_000);
});
