import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import {
  ADMIN_CHANGED_TOPIC,
  EIP1967_ADMIN_SLOT,
  EIP1967_IMPLEMENTATION_SLOT,
  UPGRADED_TOPIC,
} from '../support/evm/bytecode.js';
import { buildEvmWorld, type EvmFixture, type EvmWorld } from '../support/evm/fixtures.js';
import { startFaultProxy, type FaultProxy } from '../support/rpc-fault-proxy.js';

/*
 * The EVM test support is checked over raw JSON-RPC (plain fetch, no viem), so a fixture is what the
 * chain says it is, not what the library that built it believes.
 */

interface RpcResponse {
  jsonrpc: '2.0';
  id: number | null;
  result?: unknown;
  error?: { code: number; message: string };
}

let nextId = 1;
function call(
  method: string,
  params: unknown[] = [],
): { jsonrpc: '2.0'; id: number; method: string; params: unknown[] } {
  return { jsonrpc: '2.0', id: nextId++, method, params };
}

async function post(url: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
}

async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await post(url, call(method, params));
  const body = (await res.json()) as RpcResponse;
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

/** One HTTP request carrying all calls; results come back in request order (matched by id). */
async function rpcBatch(url: string, calls: ReturnType<typeof call>[]): Promise<unknown[]> {
  const res = await post(url, calls);
  const answers = (await res.json()) as RpcResponse[];
  return calls.map((c) => {
    const a = answers.find((x) => x.id === c.id);
    if (!a || a.error) throw new Error(`${c.method}: ${a?.error?.message ?? 'no answer'}`);
    return a.result;
  });
}

const hex = (n: bigint | number): string => `0x${n.toString(16)}`;

let anvil: RunningAnvil;
let world: EvmWorld;

beforeAll(async () => {
  anvil = await startAnvil();
  world = await buildEvmWorld(anvil.url);
});

afterAll(async () => {
  await anvil?.stop();
});

describe('anvil', () => {
  it('runs chain id 1 on a loopback port with the funded dev accounts', async () => {
    expect(anvil.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await rpc(anvil.url, 'eth_chainId')).toBe('0x1');
    expect(anvil.accounts).toHaveLength(10);
    expect(anvil.accounts[0]?.address.toLowerCase()).toBe('0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266');
    expect(world.fixtures.deployer.address.toLowerCase()).toBe(anvil.accounts[0]?.address.toLowerCase());
  });

  it('stops: the port no longer answers', async () => {
    const other = await startAnvil();
    expect(await rpc(other.url, 'eth_blockNumber')).toBe('0x0');
    await other.stop();
    await expect(rpc(other.url, 'eth_blockNumber')).rejects.toThrow();
    await other.stop(); // idempotent
  });
});

describe('EVM world', () => {
  it('is at the block it reports', async () => {
    expect(BigInt(await rpc<string>(anvil.url, 'eth_blockNumber'))).toBe(world.blockNumber);
    expect(world.blockNumber).toBeGreaterThan(5n);
  });

  it('every fixture has the nonce, balance and code of the catalogue (one batch request)', async () => {
    const all = Object.values(world.fixtures);
    const block = hex(world.blockNumber);
    const results = await rpcBatch(
      anvil.url,
      all.flatMap((f) => [
        call('eth_getTransactionCount', [f.address, block]),
        call('eth_getBalance', [f.address, block]),
        call('eth_getCode', [f.address, block]),
      ]),
    );
    const seen = all.map((f, i) => ({
      name: f.name,
      nonce: Number(results[3 * i] as string),
      balance: BigInt(results[3 * i + 1] as string),
      code: results[3 * i + 2] as string,
    }));
    expect(seen).toEqual(
      all.map((f) => ({ name: f.name, nonce: f.nonce, balance: f.balance, code: f.code })),
    );
    // All addresses are distinct.
    expect(new Set(all.map((f) => f.address.toLowerCase())).size).toBe(all.length);
  });

  it('fresh address: nonce 0, balance 0, no code', async () => {
    const { address, fresh } = world.fixtures.freshAddress;
    expect(fresh).toBe(true);
    expect(await rpc(anvil.url, 'eth_getTransactionCount', [address, 'latest'])).toBe('0x0');
    expect(await rpc(anvil.url, 'eth_getBalance', [address, 'latest'])).toBe('0x0');
    expect(await rpc(anvil.url, 'eth_getCode', [address, 'latest'])).toBe('0x');
    // Nothing else is fresh.
    expect(
      Object.values(world.fixtures)
        .filter((f) => f.fresh)
        .map((f) => f.name),
    ).toEqual(['freshAddress']);
  });

  it('funded EOA has sent transactions and holds ether', async () => {
    const f = world.fixtures.fundedEoa;
    expect(f.nonce).toBeGreaterThan(0);
    expect(Number(await rpc<string>(anvil.url, 'eth_getTransactionCount', [f.address, 'latest']))).toBe(
      f.nonce,
    );
    expect(BigInt(await rpc<string>(anvil.url, 'eth_getBalance', [f.address, 'latest']))).toBeGreaterThan(
      10n ** 18n,
    );
  });

  it.each(['delegatedWallet', 'delegatedToMalicious'] as const)(
    '%s: eth_getCode is 0xef0100 ‖ delegate, and calls run the delegate in the EOA',
    async (name) => {
      const f: EvmFixture = world.fixtures[name];
      expect(f.kind).toBe('delegated_eoa');
      const code = await rpc<string>(anvil.url, 'eth_getCode', [f.address, 'latest']);
      expect(code).toMatch(/^0xef0100[0-9a-f]{40}$/);
      expect(code).toBe(`0xef0100${f.delegate?.slice(2).toLowerCase()}`);
      const delegate =
        world.fixtures[name === 'delegatedWallet' ? 'walletImplementation' : 'maliciousDelegate'];
      expect(f.delegate).toBe(delegate.address);
      expect(await rpc(anvil.url, 'eth_call', [{ to: f.address, data: '0x' }, 'latest'])).toBe(f.callResult);
      // Same magic as the delegate called directly, but address(this) is the EOA.
      expect(f.callResult?.slice(0, 66)).toBe(delegate.callResult?.slice(0, 66));
      expect(f.callResult?.slice(-40)).toBe(f.address.slice(2).toLowerCase());
    },
  );

  it.each(['delegatedWallet', 'delegatedToMalicious'] as const)(
    '%s was delegated by a real type-4 transaction authorizing its delegate',
    async (name) => {
      const f = world.fixtures[name];
      const tx = await rpc<{
        type: string;
        from: string;
        authorizationList: { address: string; chainId: string; nonce: string }[];
      }>(anvil.url, 'eth_getTransactionByHash', [f.tx]);
      expect(tx.type).toBe('0x4');
      expect(tx.authorizationList).toHaveLength(1);
      expect(tx.authorizationList[0]?.address.toLowerCase()).toBe(f.delegate?.toLowerCase());
      expect(tx.authorizationList[0]?.chainId).toBe('0x1');
      // Self-paid (the EOA is the sender) vs sponsored (someone else submits the EOA's signature).
      const selfPaid = tx.from.toLowerCase() === f.address.toLowerCase();
      expect(selfPaid).toBe(name === 'delegatedWallet');
    },
  );

  it('the two 7702 delegates are different contracts', () => {
    expect(world.fixtures.delegatedWallet.delegate).not.toBe(world.fixtures.delegatedToMalicious.delegate);
  });

  it('proxy: the EIP-1967 slots hold implementation and admin, written by its constructor', async () => {
    const { address, proxy } = world.fixtures.proxy;
    expect(proxy).toBeDefined();
    const word = (a: string): string => `0x${a.slice(2).toLowerCase().padStart(64, '0')}`;
    expect(await rpc(anvil.url, 'eth_getStorageAt', [address, EIP1967_IMPLEMENTATION_SLOT, 'latest'])).toBe(
      word(proxy!.implementation),
    );
    expect(await rpc(anvil.url, 'eth_getStorageAt', [address, EIP1967_ADMIN_SLOT, 'latest'])).toBe(
      word(proxy!.admin),
    );
    expect(proxy!.implementation).toBe(world.fixtures.proxyImplementation.address);
    // The constructor also emitted the EIP-1967 events, in its deployment transaction.
    const logs = await rpc<{ topics: string[]; data: string }[]>(anvil.url, 'eth_getLogs', [
      { address, fromBlock: '0x0', toBlock: 'latest' },
    ]);
    expect(logs.map((l) => l.topics[0])).toEqual([UPGRADED_TOPIC, ADMIN_CHANGED_TOPIC]);
    expect(logs[0]?.topics[1]).toBe(word(proxy!.implementation));
    expect(logs[1]?.data).toBe(`${word('0x0')}${word(proxy!.admin).slice(2)}`);
  });

  it('proxy: eth_call reaches the implementation (DELEGATECALL, in the proxy context)', async () => {
    const { proxy, proxyImplementation } = world.fixtures;
    const viaProxy = await rpc<string>(anvil.url, 'eth_call', [
      { to: proxy.address, data: '0x12345678' },
      'latest',
    ]);
    expect(viaProxy).toBe(proxy.callResult);
    const direct = await rpc<string>(anvil.url, 'eth_call', [{ to: proxyImplementation.address }, 'latest']);
    expect(direct).toBe(proxyImplementation.callResult);
    expect(viaProxy.slice(0, 66)).toBe(direct.slice(0, 66)); // same code ran
    expect(viaProxy.slice(-40)).toBe(proxy.address.slice(2).toLowerCase()); // as the proxy
  });

  it('plain contract has code and is no proxy', async () => {
    const f = world.fixtures.plainContract;
    expect(f.code.length).toBeGreaterThan(2);
    expect(f.proxy).toBeUndefined();
    expect(await rpc(anvil.url, 'eth_getStorageAt', [f.address, EIP1967_IMPLEMENTATION_SLOT, 'latest'])).toBe(
      `0x${'0'.repeat(64)}`,
    );
    expect(await rpc(anvil.url, 'eth_call', [{ to: f.address }, 'latest'])).toBe(f.callResult);
  });

  it('lookalike shares the first 4 and last 4 hex characters of the allow-listed address, and has history', () => {
    const a = world.fixtures.allowlisted.address.toLowerCase();
    const b = world.fixtures.lookalike.address.toLowerCase();
    expect(b).not.toBe(a);
    expect(b.slice(2, 6)).toBe(a.slice(2, 6));
    expect(b.slice(-4)).toBe(a.slice(-4));
    expect(b.slice(6, -4)).not.toBe(a.slice(6, -4));
    expect(world.fixtures.lookalike.balance).toBeGreaterThan(0n);
  });

  it('sanctioned and deny-listed addresses are plain EOAs that are not fresh', () => {
    for (const f of [world.fixtures.sanctioned, world.fixtures.denylisted]) {
      expect(f.kind).toBe('eoa');
      expect(f.code).toBe('0x');
      expect(f.fresh).toBe(false);
    }
  });
});

describe('JSON-RPC fault proxy (in front of anvil)', () => {
  let proxy: FaultProxy;
  beforeAll(async () => {
    proxy = await startFaultProxy(anvil.url);
  });
  afterAll(async () => {
    await proxy?.close();
  });
  const reset = (): void => {
    proxy.faults.clear();
    proxy.setLatency(0);
    proxy.resetStats();
  };

  it('listens on loopback and passes calls through, counting them', async () => {
    reset();
    expect(proxy.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await rpc(proxy.url, 'eth_chainId')).toBe('0x1');
    expect(proxy.stats).toMatchObject({ roundTrips: 1, totalCalls: 1, forwarded: 1, faulted: 0 });
    expect(proxy.stats.calls).toEqual({ eth_chainId: 1 });
  });

  it('a batch array is one round trip, its calls are counted one by one', async () => {
    reset();
    const f = world.fixtures.fundedEoa;
    const [chainId, balance, nonce] = await rpcBatch(proxy.url, [
      call('eth_chainId'),
      call('eth_getBalance', [f.address, hex(world.blockNumber)]),
      call('eth_getTransactionCount', [f.address, hex(world.blockNumber)]),
    ]);
    expect([chainId, BigInt(balance as string), Number(nonce as string)]).toEqual([
      '0x1',
      f.balance,
      f.nonce,
    ]);
    expect(proxy.stats.roundTrips).toBe(1);
    expect(proxy.stats.totalCalls).toBe(3);
    expect({ ...proxy.stats.calls }).toEqual({
      eth_chainId: 1,
      eth_getBalance: 1,
      eth_getTransactionCount: 1,
    });
  });

  it('429 with Retry-After, for the next request only', async () => {
    reset();
    proxy.faults.next(1, { status: 429, retryAfterS: 2 });
    const res = await post(proxy.url, call('eth_blockNumber'));
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('2');
    await res.arrayBuffer();
    expect(await rpc(proxy.url, 'eth_blockNumber')).toBe(hex(world.blockNumber)); // recovered by itself
    expect(proxy.stats).toMatchObject({ roundTrips: 2, faulted: 1, forwarded: 1 });
  });

  it('500, for as long as it is set; clear() recovers', async () => {
    reset();
    proxy.faults.always({ status: 500 });
    for (let i = 0; i < 2; i++) {
      const res = await post(proxy.url, call('eth_blockNumber'));
      expect(res.status).toBe(500);
      expect(res.headers.get('retry-after')).toBeNull();
      await res.arrayBuffer();
    }
    proxy.faults.clear();
    expect(await rpc(proxy.url, 'eth_blockNumber')).toBe(hex(world.blockNumber));
    expect(proxy.stats.forwarded).toBe(1);
  });

  it('garbage: 200 with a body that is not JSON', async () => {
    reset();
    proxy.faults.next(1, 'garbage');
    const res = await post(proxy.url, call('eth_blockNumber'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    await expect(res.json()).rejects.toThrow(SyntaxError);
  });

  it('truncated: a prefix of the real answer, which does not parse', async () => {
    reset();
    const whole = JSON.stringify(await (await post(anvil.url, { ...call('eth_chainId'), id: 7 })).json());
    proxy.faults.next(1, 'truncated');
    const res = await post(proxy.url, { ...call('eth_chainId'), id: 7 });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.length).toBeGreaterThan(0);
    expect(text.length).toBeLessThan(whole.length);
    expect(whole.startsWith(text)).toBe(true);
    expect(() => JSON.parse(text) as unknown).toThrow(SyntaxError);
    expect(proxy.stats.forwarded).toBe(1);
  });

  it('hang: no answer; the client aborts it, and the proxy lets go of it', async () => {
    reset();
    proxy.faults.next(1, 'hang');
    const started = Date.now();
    await expect(post(proxy.url, call('eth_blockNumber'), AbortSignal.timeout(300))).rejects.toMatchObject({
      name: 'TimeoutError',
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    await expect.poll(() => proxy.stats.inFlight).toBe(0);
    expect(await rpc(proxy.url, 'eth_blockNumber')).toBe(hex(world.blockNumber));
  });

  it('forMethod only faults requests containing that method', async () => {
    reset();
    proxy.faults.forMethod('eth_getCode', 'hang');
    expect(await rpc(proxy.url, 'eth_chainId')).toBe('0x1');
    const ctl = new AbortController();
    const pending = post(
      proxy.url,
      call('eth_getCode', [world.fixtures.proxy.address, 'latest']),
      ctl.signal,
    );
    await expect.poll(() => proxy.stats.roundTrips).toBe(2);
    ctl.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(proxy.stats.faulted).toBe(1);
  });

  it('delay: answers correctly, late', async () => {
    reset();
    proxy.faults.next(1, { delayMs: 250 });
    const started = Date.now();
    expect(await rpc(proxy.url, 'eth_chainId')).toBe('0x1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(240);
  });

  it('latency makes parallel requests visible as maxInFlight', async () => {
    reset();
    proxy.setLatency(150);
    const answers = await Promise.all([1, 2, 3].map(() => rpc(proxy.url, 'eth_chainId')));
    expect(answers).toEqual(['0x1', '0x1', '0x1']);
    expect(proxy.stats.maxInFlight).toBe(3);
    expect(proxy.stats.roundTrips).toBe(3);
    proxy.setLatency(0);
  });

  it('close() ends a hanging request', async () => {
    const own = await startFaultProxy(anvil.url);
    own.faults.always('hang');
    const pending = post(own.url, call('eth_chainId'));
    await expect.poll(() => own.stats.roundTrips).toBe(1);
    await own.close();
    await expect(pending).rejects.toThrow();
  });
});
