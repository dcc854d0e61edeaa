import { formatEther, getAddress, keccak256, size, toHex, type Address, type Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvmRpc } from '../../src/chains/evm.js';
import { BUILT_IN_NETWORKS } from '../../src/chains/registry.js';
import { AppError } from '../../src/platform/errors.js';
import { analyzeEvmAccount, designatedDelegate, EIP1967_SLOTS } from '../../src/risk/evm/account.js';
import { CATALOG, type Finding, type FindingCode, type Severity } from '../../src/risk/findings.js';
import {
  BUILT_IN_WALLET_IMPLEMENTATIONS,
  mergeKnownWalletImplementations,
  type KnownWalletImplementations,
} from '../../src/risk/known/evm.js';
import { findLookalike } from '../../src/lists/lookalike.js';
import type { ChainAnalysis } from '../../src/risk/types.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import { EIP1967_ADMIN_SLOT, EIP1967_IMPLEMENTATION_SLOT } from '../support/evm/bytecode.js';
import { buildEvmWorld, lookalikeOf, type EvmFixture, type EvmWorld } from '../support/evm/fixtures.js';
import { testEvmRpc } from '../support/rpc-clients.js';
import { startFaultProxy, type FaultProxy } from '../support/rpc-fault-proxy.js';

const ETHEREUM = BUILT_IN_NETWORKS.find((n) => n.chain === 'ethereum' && n.network === 'mainnet')!;
const BASE = BUILT_IN_NETWORKS.find((n) => n.chain === 'base' && n.network === 'mainnet')!;
const ZERO_WORD: Hex = `0x${'0'.repeat(64)}`;
const word = (a: string): Hex => `0x${a.slice(2).toLowerCase().padStart(64, '0')}`;

/** A fresh client (own circuit breaker, nothing in flight) for one URL. */
const evmClient = testEvmRpc;

async function anvilRpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

let anvil: RunningAnvil;
let world: EvmWorld;
let proxy: FaultProxy;
let rpc: EvmRpc;
/** The built-in registry plus the fixture's wallet implementation, as an operator would configure it. */
let known: KnownWalletImplementations;

beforeAll(async () => {
  anvil = await startAnvil();
  world = await buildEvmWorld(anvil.url);
  proxy = await startFaultProxy(anvil.url);
  rpc = evmClient(proxy.url);
  known = mergeKnownWalletImplementations(BUILT_IN_WALLET_IMPLEMENTATIONS, [
    { address: world.fixtures.walletImplementation.address, name: 'Test wallet implementation' },
  ]);
});

afterAll(async () => {
  await proxy?.close();
  await anvil?.stop();
});

const analyze = (address: string, client = rpc, extra: { deadlineMs?: number; signal?: AbortSignal } = {}) =>
  analyzeEvmAccount(client, address, { network: ETHEREUM, knownWalletImplementations: known, ...extra });

/** The facts a fixture must produce, computed from the catalogue (not from the analyzer). */
function expectedFacts(f: EvmFixture, kind: ChainAnalysis['kind']): Record<string, unknown> {
  return {
    exists: !f.fresh,
    kind,
    nonce: f.nonce,
    balance: formatEther(f.balance),
    balance_raw: f.balance.toString(),
    code_size: (f.code.length - 2) / 2,
    code_hash: keccak256(f.code),
    delegate: f.delegate ?? null,
    proxy: f.proxy ? { implementation: f.proxy.implementation, admin: f.proxy.admin, beacon: null } : null,
  };
}

function expectFinding(code: FindingCode, severity: Severity, evidence: Record<string, unknown>): Finding {
  return {
    code,
    severity,
    title: CATALOG[code].title,
    detail: expect.any(String) as string,
    evidence: expect.objectContaining(evidence) as Finding['evidence'],
    suppressed: false,
  };
}

describe('analyzeEvmAccount against the anvil world', () => {
  const block = () => Number(world.blockNumber);

  it('fundedEoa: a wallet that exists, with no findings', async () => {
    const f = world.fixtures.fundedEoa;
    const a = await analyze(f.address);
    expect(a).toEqual({
      kind: 'wallet',
      findings: [],
      facts: expectedFacts(f, 'wallet'),
      complete: true,
      dataAsOf: { block: block() },
      listInputs: {},
    });
    expect(a.facts.exists).toBe(true);
    expect(a.facts.balance).not.toContain('e'); // a decimal string, never exponent notation
    expect(BigInt(a.facts.balance_raw as string)).toBe(f.balance);
  });

  it('freshAddress: missing, fresh_address (low) with the nonce/balance/code read', async () => {
    const f = world.fixtures.freshAddress;
    const a = await analyze(f.address);
    expect(a).toEqual({
      kind: 'missing',
      findings: [
        expectFinding('fresh_address', 'low', {
          method: 'eth_getTransactionCount,eth_getBalance,eth_getCode',
          block: block(),
          value: { nonce: '0x0', balance: '0x0', code: '0x' },
        }),
      ],
      facts: expectedFacts(f, 'missing'),
      complete: true,
      dataAsOf: { block: block() },
      listInputs: {},
    });
    expect(a.facts).toMatchObject({ exists: false, balance: '0', balance_raw: '0', code_size: 0 });
  });

  it('plainContract: contract, is_contract info, no proxy', async () => {
    const f = world.fixtures.plainContract;
    const a = await analyze(f.address);
    expect(a).toEqual({
      kind: 'contract',
      findings: [
        expectFinding('is_contract', 'info', {
          method: 'eth_getCode',
          block: block(),
          value: { code_size: size(f.code), code_hash: keccak256(f.code) },
        }),
      ],
      facts: expectedFacts(f, 'contract'),
      complete: true,
      dataAsOf: { block: block() },
      listInputs: {},
    });
  });

  it("proxy: is_contract + upgradeable_proxy, implementation and admin are the fixture's", async () => {
    const f = world.fixtures.proxy;
    const a = await analyze(f.address);
    expect(f.proxy).toBeDefined();
    expect(a).toEqual({
      kind: 'contract',
      findings: [
        expectFinding('is_contract', 'info', { method: 'eth_getCode', block: block() }),
        expectFinding('upgradeable_proxy', 'medium', {
          method: 'eth_getStorageAt',
          block: block(),
          value: {
            implementation: { slot: EIP1967_IMPLEMENTATION_SLOT, value: word(f.proxy!.implementation) },
            admin: { slot: EIP1967_ADMIN_SLOT, value: word(f.proxy!.admin) },
            beacon: { slot: EIP1967_SLOTS.beacon, value: ZERO_WORD },
          },
        }),
      ],
      facts: expectedFacts(f, 'contract'),
      complete: true,
      dataAsOf: { block: block() },
      listInputs: {},
    });
    expect(a.facts.proxy).toEqual({
      implementation: world.fixtures.proxyImplementation.address,
      admin: world.fixtures.deployer.address,
      beacon: null,
    });
  });

  it('delegatedWallet (delegate is a known wallet implementation): eip7702_delegated info', async () => {
    const f = world.fixtures.delegatedWallet;
    const a = await analyze(f.address);
    expect(a).toEqual({
      kind: 'delegated_wallet',
      findings: [
        expectFinding('eip7702_delegated', 'info', { method: 'eth_getCode', block: block(), value: f.code }),
      ],
      facts: expectedFacts(f, 'delegated_wallet'),
      complete: true,
      dataAsOf: { block: block() },
      listInputs: { delegate: world.fixtures.walletImplementation.address },
    });
    expect(a.findings[0]!.detail).toContain('Test wallet implementation');
  });

  it('delegatedWallet with the built-in registry only: the same delegation is high', async () => {
    const f = world.fixtures.delegatedWallet;
    const a = await analyzeEvmAccount(rpc, f.address, {
      network: ETHEREUM,
      knownWalletImplementations: mergeKnownWalletImplementations(),
    });
    expect(a.findings.map((x) => [x.code, x.severity])).toEqual([['eip7702_delegated', 'high']]);
  });

  it('delegatedToMalicious: eip7702_delegated high, the delegate (EIP-55) handed to the list check', async () => {
    const f = world.fixtures.delegatedToMalicious;
    const a = await analyze(f.address);
    const delegate = world.fixtures.maliciousDelegate.address;
    expect(delegate).toBe(getAddress(delegate.toLowerCase()));
    expect(a).toEqual({
      kind: 'delegated_wallet',
      findings: [
        expectFinding('eip7702_delegated', 'high', { method: 'eth_getCode', block: block(), value: f.code }),
      ],
      facts: expectedFacts(f, 'delegated_wallet'),
      complete: true,
      dataAsOf: { block: block() },
      listInputs: { delegate },
    });
    expect(a.facts).toMatchObject({ exists: true, nonce: 1, balance: '0', delegate });
    expect(a.findings[0]!.detail).toContain(delegate);
  });

  it('every fixture: evidence has method + block on every finding, the same block as dataAsOf', async () => {
    const all = Object.values(world.fixtures);
    const results = await Promise.all(all.map((f) => analyze(f.address)));
    for (const [i, a] of results.entries()) {
      expect(a.dataAsOf.block, all[i]!.name).toBe(block());
      for (const x of a.findings) {
        expect(x.evidence.method, `${all[i]!.name}/${x.code}`).toMatch(/^eth_/);
        expect(x.evidence.block, `${all[i]!.name}/${x.code}`).toBe(block());
        expect(x.evidence.value).toBeDefined();
      }
    }
    // The list-only fixtures are plain wallets: their findings come from lists, not from chain state.
    for (const name of ['sanctioned', 'denylisted', 'allowlisted', 'lookalike'] as const) {
      expect(results[all.findIndex((f) => f.name === name)]).toMatchObject({ kind: 'wallet', findings: [] });
    }
  });

  it('is deterministic: the same state gives the same analysis', async () => {
    const address = world.fixtures.proxy.address;
    expect(await analyze(address)).toEqual(await analyze(address));
  });

  it('accepts lower-case input and answers in EIP-55; a bad checksum is invalid_address', async () => {
    const f = world.fixtures.delegatedToMalicious;
    const a = await analyze(f.address.toLowerCase());
    expect(a.listInputs.delegate).toBe(world.fixtures.maliciousDelegate.address);
    const mixed = f.address.slice(2);
    const flipped = `0x${mixed.replace(/[a-f]/, (c) => c.toUpperCase())}`;
    if (flipped !== f.address) {
      await expect(analyze(flipped)).rejects.toMatchObject({ code: 'invalid_address' });
    }
  });
});

describe('analyzeEvmAccount: round trips', () => {
  it('a cold analysis is 2 round trips: eth_blockNumber, then one pinned batch', async () => {
    const client = evmClient(proxy.url);
    proxy.faults.clear();
    proxy.resetStats();
    await analyze(world.fixtures.proxy.address, client);
    expect(proxy.stats.roundTrips).toBe(2);
    expect({ ...proxy.stats.calls }).toEqual({
      eth_blockNumber: 1,
      eth_getCode: 1,
      eth_getBalance: 1,
      eth_getTransactionCount: 1,
      eth_getStorageAt: 3,
    });
  });

  it('stays at 2 round trips for a missing address and for a delegated wallet', async () => {
    for (const f of [world.fixtures.freshAddress, world.fixtures.delegatedWallet]) {
      const client = evmClient(proxy.url);
      proxy.resetStats();
      await analyze(f.address, client);
      expect(proxy.stats.roundTrips, f.name).toBe(2);
      expect(proxy.stats.totalCalls, f.name).toBe(7);
    }
  });
});

describe('analyzeEvmAccount: provider failures', () => {
  let faulty: FaultProxy;
  beforeAll(async () => {
    faulty = await startFaultProxy(anvil.url);
  });
  afterAll(async () => {
    await faulty?.close();
  });
  const reset = () => {
    faulty.faults.clear();
    faulty.resetStats();
  };

  const rejection = async (p: Promise<unknown>): Promise<AppError> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  };

  it('HTTP 500 on every request: provider_unavailable is thrown (nothing to analyze)', async () => {
    reset();
    faulty.faults.always({ status: 500 });
    const err = await rejection(analyze(world.fixtures.fundedEoa.address, evmClient(faulty.url)));
    expect(err.code).toBe('provider_unavailable');
    expect(err.message).toMatch(/ethereum\/mainnet/);
    expect(faulty.stats.forwarded).toBe(0);
  });

  it('500 on the batch only (after a good eth_blockNumber): provider_unavailable', async () => {
    reset();
    faulty.faults.forMethod('eth_getCode', { status: 500 });
    const err = await rejection(analyze(world.fixtures.proxy.address, evmClient(faulty.url)));
    expect(err.code).toBe('provider_unavailable');
    expect(faulty.stats.calls.eth_blockNumber).toBe(1);
  });

  it('a JSON-RPC error answer (e.g. header not found) is provider_unavailable too', async () => {
    reset();
    faulty.faults.next(1, {
      status: 200,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32000, message: 'header not found' },
      }),
    });
    const err = await rejection(analyze(world.fixtures.fundedEoa.address, evmClient(faulty.url)));
    expect(err.code).toBe('provider_unavailable');
    expect(err.message).toContain('header not found');
  });

  it('a hanging provider with a 300 ms deadline: provider_unavailable within the deadline + slack', async () => {
    reset();
    faulty.faults.always('hang');
    const started = Date.now();
    const err = await rejection(
      analyze(world.fixtures.fundedEoa.address, evmClient(faulty.url), { deadlineMs: 300 }),
    );
    const elapsed = Date.now() - started;
    expect(err.code).toBe('provider_unavailable');
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(300 + 400);
  });

  it('the deadline covers both round trips (a slow first answer leaves less for the batch)', async () => {
    reset();
    faulty.faults.next(1, { delayMs: 250 }); // eth_blockNumber answers late…
    faulty.faults.forMethod('eth_getCode', 'hang'); // …and the batch never does
    const started = Date.now();
    const err = await rejection(
      analyze(world.fixtures.fundedEoa.address, evmClient(faulty.url), { deadlineMs: 400 }),
    );
    expect(err.code).toBe('provider_unavailable');
    expect(Date.now() - started).toBeLessThan(400 + 400);
  });

  it("a caller's abort signal (preflight deadline) ends it as provider_unavailable", async () => {
    reset();
    faulty.faults.always('hang');
    const started = Date.now();
    const err = await rejection(
      analyze(world.fixtures.fundedEoa.address, evmClient(faulty.url), { signal: AbortSignal.timeout(300) }),
    );
    expect(err.code).toBe('provider_unavailable');
    expect(Date.now() - started).toBeLessThan(300 + 400);
  });

  it('recovers once the provider does', async () => {
    reset();
    const a = await analyze(world.fixtures.fundedEoa.address, evmClient(faulty.url));
    expect(a.kind).toBe('wallet');
  });
});

describe('analyzeEvmAccount: states the world has no fixture for (set with anvil cheat codes)', () => {
  const address = (label: string): Address =>
    getAddress(`0x${keccak256(toHex(`risk-evm:${label}`)).slice(-40)}`);
  const setCode = (a: Address, code: Hex) => anvilRpc(anvil.url, 'anvil_setCode', [a, code]);
  const setSlot = (a: Address, slot: Hex, value: Hex) =>
    anvilRpc(anvil.url, 'anvil_setStorageAt', [a, slot, value]);

  it('a beacon proxy (only the beacon slot set): upgradeable_proxy with the beacon', async () => {
    const a = address('beacon-proxy');
    const beacon = world.fixtures.plainContract.address;
    await setCode(a, world.fixtures.plainContract.code);
    await setSlot(a, EIP1967_SLOTS.beacon, word(beacon));
    const r = await analyze(a);
    expect(r.kind).toBe('contract');
    expect(r.findings.map((x) => [x.code, x.severity])).toEqual([
      ['is_contract', 'info'],
      ['upgradeable_proxy', 'medium'],
    ]);
    expect(r.facts.proxy).toEqual({ implementation: null, admin: null, beacon });
    expect(r.findings[1]!.evidence.value).toMatchObject({
      beacon: { slot: EIP1967_SLOTS.beacon, value: word(beacon) },
    });
  });

  it('only the admin slot set: a fact, but no upgradeable_proxy', async () => {
    const a = address('admin-only');
    await setCode(a, world.fixtures.plainContract.code);
    await setSlot(a, EIP1967_SLOTS.admin, word(world.fixtures.deployer.address));
    const r = await analyze(a);
    expect(r.findings.map((x) => x.code)).toEqual(['is_contract']);
    expect(r.facts.proxy).toEqual({
      implementation: null,
      admin: world.fixtures.deployer.address,
      beacon: null,
    });
  });

  it('a delegated wallet whose storage holds an implementation (7702 proxy): proxy fact, no proxy finding', async () => {
    const a = address('7702-proxy-wallet');
    const impl = world.fixtures.proxyImplementation.address;
    await setCode(a, `0xef0100${world.fixtures.walletImplementation.address.slice(2).toLowerCase()}`);
    await setSlot(a, EIP1967_SLOTS.implementation, word(impl));
    const r = await analyze(a);
    expect(r.kind).toBe('delegated_wallet');
    expect(r.findings.map((x) => [x.code, x.severity])).toEqual([['eip7702_delegated', 'info']]);
    expect(r.facts.proxy).toEqual({ implementation: impl, admin: null, beacon: null });
  });

  it('a wallet with ether but nonce 0 exists and is not fresh', async () => {
    const a = address('funded-only');
    await anvilRpc(anvil.url, 'anvil_setBalance', [a, '0x1']);
    const r = await analyze(a);
    expect(r).toMatchObject({ kind: 'wallet', findings: [] });
    expect(r.facts).toMatchObject({
      exists: true,
      nonce: 0,
      balance: '0.000000000000000001',
      balance_raw: '1',
    });
  });
});

describe('designatedDelegate', () => {
  it('reads 0xef0100 ‖ 20 bytes only', () => {
    const d = world.fixtures.maliciousDelegate.address;
    expect(designatedDelegate(`0xef0100${d.slice(2).toLowerCase()}`)).toBe(d);
    expect(designatedDelegate('0x')).toBeNull();
    expect(designatedDelegate(`0xef0100${d.slice(2).toLowerCase()}00`)).toBeNull();
    expect(designatedDelegate(`0xef0000${d.slice(2).toLowerCase()}`)).toBeNull();
    expect(designatedDelegate(world.fixtures.plainContract.code)).toBeNull();
  });
});

describe('known EIP-7702 wallet implementations', () => {
  it('built-in entries are EIP-55, unique, sourced, and scoped to the chains their source covers', () => {
    const { entries, version } = BUILT_IN_WALLET_IMPLEMENTATIONS;
    expect(version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(new Set(entries.map((e) => e.address.toLowerCase())).size).toBe(entries.length);
    for (const e of entries) {
      expect(e.address).toBe(getAddress(e.address.toLowerCase()));
      expect(e.source).toMatch(/^https:\/\//);
      expect(e.chainIds).toEqual([1]);
    }
  });

  it('lookup honours chain scope; configuration extends, overrides and changes the version', () => {
    const metamask = '0x63c0c19a282a1b52b07dd5a65b58948a07dae32b';
    const builtIn = mergeKnownWalletImplementations();
    expect(builtIn.version).toBe(BUILT_IN_WALLET_IMPLEMENTATIONS.version);
    expect(builtIn.lookup(metamask, ETHEREUM.chainId)?.name).toMatch(/MetaMask/);
    expect(builtIn.lookup(metamask.toUpperCase().replace('0X', '0x'), 1)).toBeDefined();
    expect(builtIn.lookup(metamask, BASE.chainId)).toBeUndefined();
    expect(builtIn.lookup(metamask, undefined)).toBeUndefined();

    const merged = mergeKnownWalletImplementations(BUILT_IN_WALLET_IMPLEMENTATIONS, [
      { address: metamask, name: 'MetaMask (checked on Base)', chainIds: [8453, 1, 8453] },
      { address: world.fixtures.walletImplementation.address, name: 'Ours', source: 'ops ticket 42' },
    ]);
    expect(merged.version).toMatch(
      new RegExp(`^${BUILT_IN_WALLET_IMPLEMENTATIONS.version}\\+config\\.[0-9a-f]{12}$`),
    );
    expect(merged.entries).toHaveLength(BUILT_IN_WALLET_IMPLEMENTATIONS.entries.length + 1);
    expect(merged.lookup(metamask, BASE.chainId)).toMatchObject({
      chainIds: [1, 8453],
      source: 'configuration',
    });
    expect(merged.lookup(world.fixtures.walletImplementation.address, 56)).toMatchObject({
      name: 'Ours',
      source: 'ops ticket 42',
    });
    // Same configuration → same version; another → another.
    expect(mergeKnownWalletImplementations(undefined, [{ address: metamask, name: 'x' }]).version).toBe(
      mergeKnownWalletImplementations(undefined, [{ address: metamask, name: 'x' }]).version,
    );
    expect(mergeKnownWalletImplementations(undefined, [{ address: metamask, name: 'y' }]).version).not.toBe(
      mergeKnownWalletImplementations(undefined, [{ address: metamask, name: 'x' }]).version,
    );
    // Configuration only.
    const only = mergeKnownWalletImplementations({ version: 'none', entries: [] }, []);
    expect(only.entries).toEqual([]);
    expect(only.lookup(metamask, 1)).toBeUndefined();
  });

  it('rejects a bad configured entry, naming it', () => {
    const good = world.fixtures.walletImplementation.address;
    const badChecksum = `0x${good.slice(2).replace(/[a-f]/, (c) => c.toUpperCase())}`;
    expect(() => mergeKnownWalletImplementations(undefined, [{ address: '0x1234', name: 'x' }])).toThrow(
      /#0 is invalid: address/,
    );
    if (badChecksum !== good) {
      expect(() =>
        mergeKnownWalletImplementations(undefined, [
          { address: good, name: 'ok' },
          { address: badChecksum, name: 'typo' },
        ]),
      ).toThrow(/#1 is invalid: address/);
    }
    expect(() => mergeKnownWalletImplementations(undefined, [{ address: good, name: '' }])).toThrow(/name/);
    expect(() =>
      mergeKnownWalletImplementations(undefined, [{ address: good, name: 'x', chainIds: [0] }]),
    ).toThrow(/chainIds/);
  });
});

describe('findLookalike', () => {
  const trusted = '0x1234567890AbcdEF1234567890aBcdef12345678';
  const a = getAddress(trusted.toLowerCase());

  it("finds the anvil world's poisoning pair", () => {
    const { allowlisted, lookalike } = world.fixtures;
    expect(findLookalike(lookalike.address, [allowlisted.address])).toBe(allowlisted.address);
    expect(findLookalike(allowlisted.address, [allowlisted.address])).toBeNull();
    expect(findLookalike(world.fixtures.fundedEoa.address, [allowlisted.address])).toBeNull();
  });

  it('matches the first 4 and last 4 hex characters, case-insensitively, returning EIP-55', () => {
    const b = lookalikeOf(a);
    expect(findLookalike(b, [trusted])).toBe(a);
    expect(findLookalike(b.toLowerCase(), [trusted.toUpperCase().replace('0X', '0x')])).toBe(a);
    expect(findLookalike(`0x1234${'0'.repeat(32)}5678`, [a])).toBe(a);
  });

  it('needs both ends to match', () => {
    expect(findLookalike(`0x1234${'0'.repeat(32)}5679`, [a])).toBeNull(); // last differs
    expect(findLookalike(`0x1235${'0'.repeat(32)}5678`, [a])).toBeNull(); // first differs
    expect(findLookalike(`0x123${'0'.repeat(33)}5678`, [a])).toBeNull(); // only 3 leading
  });

  it('the same address (any case) is not a lookalike, even if another trusted one looks alike', () => {
    const twin = lookalikeOf(a, 'twin');
    expect(findLookalike(a.toLowerCase(), [a])).toBeNull();
    expect(findLookalike(a, [twin, a])).toBeNull();
  });

  it('the first match in list order wins; non-EVM entries and targets are ignored', () => {
    const first = lookalikeOf(a, 'first');
    const second = lookalikeOf(a, 'second');
    expect(findLookalike(a, ['EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', first, second])).toBe(first);
    expect(findLookalike(a, [second, first])).toBe(second);
    expect(findLookalike(a, [])).toBeNull();
    expect(findLookalike('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', [a])).toBeNull();
    expect(findLookalike('0x1234', [a])).toBeNull();
    expect(findLookalike(` ${lookalikeOf(a)} `, [` ${a} `])).toBe(a);
  });
});
