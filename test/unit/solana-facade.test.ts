import { getMetadataAccountDataSerializer } from '@metaplex-foundation/mpl-token-metadata';
import {
  getMintDecoder as getSplMintDecoder,
  getTokenDecoder as getSplTokenDecoder,
  AccountState as SplAccountState,
} from '@solana-program/token';
import { AccountState, getMintDecoder, getTokenDecoder, type Extension } from '@solana-program/token-2022';
import {
  getAddressDecoder,
  getCompiledTransactionMessageDecoder,
  getOptionDecoder,
  getStructDecoder,
  getTransactionDecoder,
  getU32Decoder,
  getU64Decoder,
  getU8Decoder,
  isOffCurveAddress,
  some,
  none,
  type Address,
} from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from '../support/solana/chain.js';
import type { SolanaFacade } from '../support/solana/facade.js';
import {
  buildSolanaWorld,
  RAYDIUM_AMM_V4_AUTHORITY,
  USDC_EXPECTED_AUTHORITIES,
  USDC_MINT,
  type MintFixture,
  type SolanaWorld,
} from '../support/solana/fixtures.js';

/*
 * The Solana test support checked over plain HTTP JSON-RPC, decoding the raw base64 with the maintained
 * codecs the service is meant to use: a fixture is what the bytes say, not what the builder believes.
 */

interface RpcResponse<T = unknown> {
  jsonrpc: '2.0';
  id: number | null;
  result?: T;
  error?: { code: number; message: string };
}
interface EncodedAccountJson {
  data: [string, 'base64'];
  executable: boolean;
  lamports: number;
  owner: string;
  rentEpoch: number;
  space: number;
}
interface WithContext<T> {
  context: { slot: number; apiVersion: string };
  value: T;
}

let world: SolanaWorld;
let facade: SolanaFacade;
let nextId = 1;

const call = (method: string, params: unknown[] = []) => ({ jsonrpc: '2.0', id: nextId++, method, params });

function post(body: unknown, init: { signal?: AbortSignal; raw?: string } = {}): Promise<Response> {
  return fetch(facade.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: init.raw ?? JSON.stringify(body),
    signal: init.signal,
  });
}

async function rpcRaw<T>(method: string, params: unknown[] = []): Promise<RpcResponse<T>> {
  const res = await post(call(method, params));
  expect(res.status).toBe(200);
  return (await res.json()) as RpcResponse<T>;
}

async function rpc<T>(method: string, params: unknown[] = []): Promise<T> {
  const body = await rpcRaw<T>(method, params);
  if (body.error) throw new Error(`${method}: ${body.error.code} ${body.error.message}`);
  return body.result as T;
}

const B64 = { encoding: 'base64' };
const bytes = (account: EncodedAccountJson | null): Uint8Array => {
  if (!account) throw new Error('account missing');
  return new Uint8Array(Buffer.from(account.data[0], 'base64'));
};

async function accounts(addresses: Address[]): Promise<(EncodedAccountJson | null)[]> {
  return (await rpc<WithContext<(EncodedAccountJson | null)[]>>('getMultipleAccounts', [addresses, B64]))
    .value;
}

function extension<K extends Extension['__kind']>(
  data: Uint8Array,
  kind: K,
): Extract<Extension, { __kind: K }> | undefined {
  const mint = getMintDecoder().decode(data);
  const all = mint.extensions.__option === 'Some' ? mint.extensions.value : [];
  return all.find((e): e is Extract<Extension, { __kind: K }> => e.__kind === kind);
}

function present<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('expected a value');
  return value;
}

beforeAll(async () => {
  world = await buildSolanaWorld();
  facade = await world.startFacade();
}, 60_000);

afterAll(async () => {
  await facade?.close();
});

describe('Solana fixtures, read back through the facade', () => {
  it('Token-2022 mints carry the extensions the risk engine checks (docs/risk.md#solana-token), decoded from base64 by the Token-2022 codecs', async () => {
    const m = world.fixtures.mints;
    const names = [
      'permanentDelegate',
      'transferHook',
      'transferFeeLow',
      'transferFeeHigh',
      'transferFeeScheduled',
      'defaultFrozen',
      'nonTransferable',
      'pausable',
      'mintCloseAuthority',
      'confidentialTransfers',
      'token2022MetadataMutable',
      'token2022MetadataImmutable',
      'token2022Plain',
    ] as const;
    const fetched = await accounts(names.map((n) => m[n].address));
    const data = Object.fromEntries(
      names.map((name, i) => {
        expect(fetched[i]?.owner).toBe(TOKEN_2022_PROGRAM);
        return [name, bytes(fetched[i] ?? null)];
      }),
    ) as Record<(typeof names)[number], Uint8Array>;

    const base = getMintDecoder().decode(data.permanentDelegate);
    expect(base.mintAuthority).toEqual(none());
    expect(base.freezeAuthority).toEqual(none());
    expect(base.supply).toBe(m.permanentDelegate.supply);
    expect(base.supply).toBeGreaterThan(0n);

    expect(extension(data.permanentDelegate, 'PermanentDelegate')?.delegate).toBeDefined();
    expect(extension(data.transferHook, 'TransferHook')?.programId).toBe(world.fixtures.program.address);
    expect(extension(data.transferFeeLow, 'TransferFeeConfig')?.newerTransferFee.transferFeeBasisPoints).toBe(
      50,
    );
    expect(
      extension(data.transferFeeHigh, 'TransferFeeConfig')?.olderTransferFee.transferFeeBasisPoints,
    ).toBe(500);
    const scheduled = extension(data.transferFeeScheduled, 'TransferFeeConfig');
    expect(scheduled?.olderTransferFee.transferFeeBasisPoints).toBe(50);
    expect(scheduled?.newerTransferFee.transferFeeBasisPoints).toBe(500);
    expect(scheduled?.newerTransferFee.epoch).toBe(world.chain.epoch + 2n);
    const epochInfo = await rpc<{ epoch: number }>('getEpochInfo');
    expect(BigInt(epochInfo.epoch)).toBe(world.chain.epoch);

    expect(extension(data.defaultFrozen, 'DefaultAccountState')?.state).toBe(AccountState.Frozen);
    expect(getMintDecoder().decode(data.defaultFrozen).freezeAuthority.__option).toBe('Some');
    expect(extension(data.nonTransferable, 'NonTransferable')).toBeDefined();
    expect(extension(data.pausable, 'PausableConfig')?.paused).toBe(true);
    expect(extension(data.mintCloseAuthority, 'MintCloseAuthority')?.closeAuthority).toBeDefined();
    expect(extension(data.confidentialTransfers, 'ConfidentialTransferMint')?.autoApproveNewAccounts).toBe(
      true,
    );

    const mutable = extension(data.token2022MetadataMutable, 'TokenMetadata');
    expect(mutable?.symbol).toBe('MUTA');
    expect(mutable?.updateAuthority).toEqual(some(m.token2022MetadataMutable.metadata?.updateAuthority));
    expect(extension(data.token2022MetadataMutable, 'MetadataPointer')?.metadataAddress).toEqual(
      some(m.token2022MetadataMutable.address),
    );
    expect(extension(data.token2022MetadataImmutable, 'TokenMetadata')?.updateAuthority).toEqual(none());
    expect(getMintDecoder().decode(data.token2022Plain).extensions).toEqual(none());
  });

  it('SPL Token mints: authorities, zero supply, and USDC at its real address with the expected authorities', async () => {
    const m = world.fixtures.mints;
    const [clean, live, zero, usdc] = (
      await accounts([m.cleanToken.address, m.liveAuthorities.address, m.zeroSupply.address, USDC_MINT])
    ).map((a) => {
      expect(a?.owner).toBe(TOKEN_PROGRAM);
      expect(a?.space).toBe(82);
      return getSplMintDecoder().decode(bytes(a));
    });
    expect(clean?.mintAuthority).toEqual(none());
    expect(clean?.freezeAuthority).toEqual(none());
    expect(live?.mintAuthority).toEqual(some(m.liveAuthorities.mintAuthority));
    expect(live?.freezeAuthority).toEqual(some(m.liveAuthorities.freezeAuthority));
    expect(zero?.supply).toBe(0n);
    expect(zero?.mintAuthority.__option).toBe('Some');
    expect(usdc?.mintAuthority).toEqual(some(USDC_EXPECTED_AUTHORITIES.mintAuthority));
    expect(usdc?.freezeAuthority).toEqual(some(USDC_EXPECTED_AUTHORITIES.freezeAuthority));
    expect(usdc?.decimals).toBe(6);
    expect(usdc?.supply).toBe(m.usdc.supply);
    expect(m.usdc.address).toBe(USDC_MINT);
  });

  it('Metaplex metadata PDAs decode with mpl-token-metadata: mutable, immutable, and the copycat "USDC"', async () => {
    const m = world.fixtures.mints;
    const pdas = [m.liveAuthorities, m.cleanToken, m.copycatUsdc, m.usdc].map(
      (f) => f.metadata?.address ?? expect.fail(`${f.address} has no metadata`),
    );
    const raw = (await accounts(pdas)).map((a) => {
      expect(a?.owner).toBe('metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s');
      return bytes(a);
    });
    const decoded = raw.map((data) => getMetadataAccountDataSerializer().deserialize(data)[0]);
    const trim = (s: string | undefined) => s?.replace(/\0+$/, '');
    expect(decoded[0]?.isMutable).toBe(true);
    expect(decoded[0]?.mint).toBe(m.liveAuthorities.address);
    expect(decoded[1]?.isMutable).toBe(false);
    expect(trim(decoded[2]?.symbol)).toBe('USDC');
    expect(decoded[2]?.mint).not.toBe(USDC_MINT);
    // On chain the strings keep the program's NUL padding (this serializer strips it when decoding).
    expect(Buffer.from(raw[2] ?? []).includes(Buffer.from('USDC\0\0\0\0\0\0'))).toBe(true);
    expect(trim(decoded[3]?.symbol)).toBe('USDC');
    expect(decoded[3]?.mint).toBe(USDC_MINT);
  });

  it('getTokenLargestAccounts: the top 20 token accounts of a mint, largest first', async () => {
    const largest = async (f: MintFixture) =>
      (
        await rpc<
          WithContext<{ address: string; amount: string; decimals: number; uiAmountString: string }[]>
        >('getTokenLargestAccounts', [f.address])
      ).value;
    const { concentrated, spreadWithPool, zeroSupply } = world.fixtures.mints;

    const top = await largest(concentrated);
    expect(top).toHaveLength(11);
    expect(top[0]).toMatchObject({ amount: '300000000000', decimals: 6, uiAmountString: '300000' });
    expect(top[1]?.amount).toBe('250000000000');
    // The whale's two accounts: the analyzer must group by owner (55%) to see it.
    const whaleAccounts = concentrated.holders
      .filter((h) => h.owner === world.actors.whale)
      .map((h) => h.tokenAccount);
    expect([top[0]?.address, top[1]?.address].sort()).toEqual([...whaleAccounts].sort());

    const pool = await largest(spreadWithPool);
    expect(pool).toHaveLength(20);
    // The pool vault's owner is a PDA: its ATA exists only because the ATA program accepts off-curve owners.
    expect(isOffCurveAddress(RAYDIUM_AMM_V4_AUTHORITY)).toBe(true);
    const poolAccount = spreadWithPool.holders.find(
      (h) => h.owner === RAYDIUM_AMM_V4_AUTHORITY,
    )?.tokenAccount;
    expect(pool[0]?.address).toBe(poolAccount);
    const amounts = pool.map((p) => BigInt(p.amount));
    expect(amounts).toEqual([...amounts].sort((a, b) => (a === b ? 0 : a > b ? -1 : 1)));

    expect(await largest(zeroSupply)).toEqual([]);
    const notMint = await rpcRaw('getTokenLargestAccounts', [world.fixtures.wallets.plainWallet.address]);
    expect(notMint.error).toEqual({ code: -32602, message: 'Invalid param: not a Token mint' });
    const missing = await rpcRaw('getTokenLargestAccounts', [world.fixtures.missing.address]);
    expect(missing.error?.code).toBe(-32602);
  });

  it('getTokenAccountsByOwner: delegated accounts in both programs, and a frozen one', async () => {
    const { delegatedWallet, delegatedWallet2022, frozenWallet } = world.fixtures.wallets;
    const byOwner = async (owner: Address, filter: Record<string, string>) =>
      (
        await rpc<WithContext<{ pubkey: string; account: EncodedAccountJson }[]>>('getTokenAccountsByOwner', [
          owner,
          filter,
          B64,
        ])
      ).value;

    const spl = await byOwner(delegatedWallet.address, { programId: TOKEN_PROGRAM });
    expect(spl).toHaveLength(1);
    expect(getSplTokenDecoder().decode(bytes(spl[0]?.account ?? null)).delegate).toEqual(
      some(world.actors.delegateSpender),
    );
    expect(await byOwner(delegatedWallet.address, { programId: TOKEN_2022_PROGRAM })).toEqual([]);

    const t22 = await byOwner(delegatedWallet2022.address, { programId: TOKEN_2022_PROGRAM });
    expect(t22).toHaveLength(1);
    expect(getTokenDecoder().decode(bytes(t22[0]?.account ?? null)).delegate).toEqual(
      some(world.actors.delegateSpender),
    );

    const frozen = await byOwner(frozenWallet.address, {
      mint: world.fixtures.mints.liveAuthorities.address,
    });
    expect(frozen.map((f) => f.pubkey)).toEqual(frozenWallet.tokenAccounts.map((t) => t.address));
    expect(getSplTokenDecoder().decode(bytes(frozen[0]?.account ?? null)).state).toBe(SplAccountState.Frozen);
  });

  it('history: newest first with back-dated block times; getTransaction in json and base64', async () => {
    type Sig = { signature: string; slot: number; blockTime: number; err: null };
    const now = Date.now() / 1000;
    const days = (t: number) => (now - t) / 86_400;
    const { newWallet, oldWallet, counterpartyWallet } = world.fixtures.wallets;

    const fresh = await rpc<Sig[]>('getSignaturesForAddress', [newWallet.address, { limit: 1000 }]);
    expect(fresh).toHaveLength(2);
    const [newest, oldest] = [present(fresh[0]), present(fresh[1])];
    expect(newest.slot).toBeGreaterThan(oldest.slot);
    expect(days(oldest.blockTime)).toBeGreaterThan(1.9);
    expect(days(oldest.blockTime)).toBeLessThan(7);
    const old = await rpc<Sig[]>('getSignaturesForAddress', [oldWallet.address]);
    expect(days(present(old.at(-1)).blockTime)).toBeGreaterThan(399);
    expect(await rpc<Sig[]>('getSignaturesForAddress', [oldWallet.address, { limit: 1 }])).toEqual([old[0]]);

    const latest = present(
      (await rpc<Sig[]>('getSignaturesForAddress', [counterpartyWallet.address, { limit: 1 }]))[0],
    );
    type Tx = { slot: number; blockTime: number; transaction: unknown; meta: { err: null } };
    const json = await rpc<Tx>('getTransaction', [
      latest.signature,
      { encoding: 'json', maxSupportedTransactionVersion: 0 },
    ]);
    const message = (json.transaction as { message: { accountKeys: string[] } }).message;
    expect(message.accountKeys).toEqual(
      expect.arrayContaining([counterpartyWallet.address, world.actors.flaggedCounterparty]),
    );
    expect(json.slot).toBe(latest.slot);

    const b64 = await rpc<Tx>('getTransaction', [
      latest.signature,
      { encoding: 'base64', maxSupportedTransactionVersion: 0 },
    ]);
    const wire = Buffer.from((b64.transaction as [string, string])[0], 'base64');
    const compiled = getCompiledTransactionMessageDecoder().decode(
      getTransactionDecoder().decode(wire).messageBytes,
    );
    expect(compiled.staticAccounts).toEqual(message.accountKeys);

    const unversioned = await rpcRaw('getTransaction', [latest.signature, { encoding: 'json' }]);
    expect(unversioned.error?.code).toBe(-32015);
  });

  it('a program with its ProgramData and upgrade authority, a plain wallet, a missing account', async () => {
    const { program, wallets, missing } = world.fixtures;
    const [programAccount, programData, wallet, nothing] = await accounts([
      program.address,
      program.programData,
      wallets.plainWallet.address,
      missing.address,
    ]);
    expect(programAccount).toMatchObject({
      executable: true,
      owner: 'BPFLoaderUpgradeab1e11111111111111111111111',
    });
    const state = getStructDecoder([
      ['tag', getU32Decoder()],
      ['slot', getU64Decoder()],
      ['upgradeAuthority', getOptionDecoder(getAddressDecoder(), { prefix: getU8Decoder() })],
    ]).decode(bytes(programData ?? null));
    expect(state.tag).toBe(3); // UpgradeableLoaderState::ProgramData
    expect(state.upgradeAuthority).toEqual(some(program.upgradeAuthority));
    expect(wallet).toMatchObject({ owner: '11111111111111111111111111111111', executable: false, space: 0 });
    expect(wallet?.lamports).toBeGreaterThan(0);
    expect(nothing).toBeNull();
    const info = await rpc<WithContext<null>>('getAccountInfo', [missing.address, B64]);
    expect(info.value).toBeNull();
    expect(info.context.slot).toBeGreaterThan(0);
  });
});

describe('Solana facade behaviour', () => {
  it('answers with real RPC error shapes: jsonParsed refused, more than 100 keys, unknown method', async () => {
    const parsed = await rpcRaw('getAccountInfo', [USDC_MINT, { encoding: 'jsonParsed' }]);
    expect(parsed.error?.code).toBe(-32602);
    expect(parsed.error?.message).toContain('base64');
    const tooMany = await rpcRaw('getMultipleAccounts', [Array(101).fill(USDC_MINT), B64]);
    expect(tooMany.error).toEqual({ code: -32602, message: 'Too many inputs provided; max 100' });
    expect((await rpcRaw('getFoo')).error?.code).toBe(-32601);
    expect((await rpcRaw('getBalance', ['not-an-address'])).error?.code).toBe(-32602);
    const res = await post(undefined, { raw: '{"jsonrpc": "2.0", "method": ' });
    expect(((await res.json()) as RpcResponse).error?.code).toBe(-32700);
    // u64 values are bare JSON integers, as nodes write them.
    const text = await (await post(call('getAccountInfo', [USDC_MINT, B64]))).text();
    expect(text).toContain('"rentEpoch":18446744073709551615');
  });

  it('a JSON-RPC batch is one round trip; calls are counted per method', async () => {
    facade.stats.reset();
    const calls = [
      call('getSlot'),
      call('getBalance', [world.fixtures.wallets.plainWallet.address]),
      call('getAccountInfo', [USDC_MINT, B64]),
    ];
    const res = await post(calls);
    const answers = (await res.json()) as RpcResponse[];
    expect(answers.map((a) => a.id)).toEqual(calls.map((c) => c.id));
    expect(answers.every((a) => a.error === undefined)).toBe(true);
    expect(facade.stats.roundTrips).toBe(1);
    expect(facade.stats.callCount()).toBe(3);
    expect(facade.stats.calls).toEqual({ getSlot: 1, getBalance: 1, getAccountInfo: 1 });
  });

  it('with latency injected, sequential round trips are counted apart from parallel ones', async () => {
    facade.stats.reset();
    facade.setLatency(40);
    try {
      await rpc('getSlot');
      await rpc('getHealth');
      await Promise.all([rpc('getSlot'), rpc('getSlot'), rpc('getEpochInfo')]);
    } finally {
      facade.setLatency(0);
    }
    expect(facade.stats.roundTrips).toBe(5);
    expect(facade.stats.sequentialRoundTrips()).toBe(3);
    expect(facade.stats.maxInFlight).toBe(3);
    expect(facade.stats.inFlight).toBe(0);
  });

  it('fault: HTTP 429 with Retry-After for the next request only', async () => {
    facade.faults.next(1, { kind: 'http429', retryAfterSeconds: 2 });
    const limited = await post(call('getSlot'));
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    await limited.arrayBuffer();
    expect(typeof (await rpc<number>('getSlot'))).toBe('number');
  });

  it('fault: HTTP 500 scoped to one method, N times', async () => {
    facade.faults.next(2, { kind: 'http500' }, { method: 'getBalance' });
    const balance = () => post(call('getBalance', [world.fixtures.wallets.plainWallet.address]));
    expect((await post(call('getSlot'))).status).toBe(200);
    expect((await balance()).status).toBe(500);
    expect((await balance()).status).toBe(500);
    expect((await balance()).status).toBe(200);
  });

  it('fault: garbage bodies (HTML, truncated JSON) that claim to be JSON', async () => {
    facade.faults
      .next(1, { kind: 'garbage', variant: 'not-json' })
      .next(1, { kind: 'garbage', variant: 'truncated' });
    for (const expected of [/^<html>/, /^\{"jsonrpc":"2.0"/]) {
      const res = await post(call('getAccountInfo', [USDC_MINT, B64]));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json');
      const text = await res.text();
      expect(text).toMatch(expected);
      expect(() => JSON.parse(text) as unknown).toThrow();
    }
  });

  it('fault: a hanging request only ends by the client aborting; always/clear', async () => {
    facade.stats.reset();
    facade.faults.always({ kind: 'hang' }, { method: 'getSlot' });
    await expect(post(call('getSlot'), { signal: AbortSignal.timeout(150) })).rejects.toThrow(
      /abort|timeout/i,
    );
    await expect(post(call('getSlot'), { signal: AbortSignal.timeout(50) })).rejects.toThrow(
      /abort|timeout/i,
    );
    facade.faults.clear();
    expect(typeof (await rpc<number>('getSlot'))).toBe('number');
    await expect.poll(() => facade.stats.inFlight).toBe(0);
    expect(facade.stats.log.filter((r) => r.fault === 'hang')).toHaveLength(2);
  });

  it('fault: a delayed answer is still the right answer', async () => {
    facade.stats.reset();
    facade.faults.next(1, { kind: 'delay', ms: 120 });
    const balance = await rpc<WithContext<number>>('getBalance', [
      world.fixtures.wallets.plainWallet.address,
    ]);
    expect(balance.value).toBeGreaterThan(0);
    const [trip] = facade.stats.log;
    expect(trip?.fault).toBe('delay');
    expect((trip?.endedAt ?? 0) - (trip?.startedAt ?? 0)).toBeGreaterThanOrEqual(100);
  });

  it('GET /health answers ok like a node', async () => {
    const res = await fetch(`${facade.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok');
  });
});
