import { randomBytes } from 'node:crypto';
import { getAddressDecoder } from '@solana/kit';
import { afterEach, describe, expect, it } from 'vitest';
import { AppError } from '../../src/platform/errors.js';
import { JsonRpcStub, type MethodHandler } from '../support/jsonrpc-stub.js';
import { testSolanaRpc } from '../support/rpc-clients.js';

const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const randomAddress = (): string => getAddressDecoder().decode(randomBytes(32));

const stubs: JsonRpcStub[] = [];
afterEach(async () => {
  await Promise.all(stubs.splice(0).map((s) => s.close()));
});

async function setup(methods: Record<string, MethodHandler> = {}) {
  const stub = await JsonRpcStub.start(methods);
  stubs.push(stub);
  return { stub, solana: testSolanaRpc(stub.url(), { deadlineMs: 3000, timeoutMs: 2000 }) };
}

/** The bytes a fake account at `address` holds: deterministic, so answers can be checked. */
const dataOf = (address: string) => Buffer.from(`data:${address}`);

const rawAccount = (address: string, lamports: number | bigint = 1_000_000) => ({
  owner: TOKEN_PROGRAM,
  lamports,
  executable: false,
  data: [dataOf(address).toString('base64'), 'base64'],
  space: dataOf(address).length,
  rentEpoch: 18446744073709551615n,
});

describe('SolanaRpc.getMultipleAccounts', () => {
  it('reads 250 accounts as one HTTP request holding three calls of ≤ 100 keys, in order', async () => {
    const addresses = Array.from({ length: 250 }, randomAddress);
    const { stub, solana } = await setup({
      getMultipleAccounts: (params: [string[], unknown]) => ({
        context: { slot: 5000 + params[0].length },
        value: params[0].map((a) => (addresses.indexOf(a) % 3 === 0 ? null : rawAccount(a))),
      }),
    });
    const { slot, accounts } = await solana.getMultipleAccounts(addresses);

    expect(stub.requests).toHaveLength(1);
    expect(stub.requests[0]!.batch).toBe(true);
    const calls = stub.requests[0]!.calls;
    expect(calls.map((c) => c.method)).toEqual([
      'getMultipleAccounts',
      'getMultipleAccounts',
      'getMultipleAccounts',
    ]);
    expect(calls.map((c) => (c.params as [string[]])[0].length)).toEqual([100, 100, 50]);
    expect(calls.flatMap((c) => (c.params as [string[]])[0])).toEqual(addresses);
    for (const c of calls)
      expect((c.params as unknown[])[1]).toEqual({ encoding: 'base64', commitment: 'confirmed' });

    expect(slot).toBe(5050);
    expect(accounts).toHaveLength(250);
    accounts.forEach((account, i) => {
      if (i % 3 === 0) return expect(account).toBeNull();
      expect(account).toEqual({
        owner: TOKEN_PROGRAM,
        lamports: 1_000_000n,
        executable: false,
        data: new Uint8Array(dataOf(addresses[i]!)),
        space: dataOf(addresses[i]!).length,
      });
    });
  });

  it('asks nothing for no addresses', async () => {
    const { stub, solana } = await setup();
    await expect(solana.getMultipleAccounts([])).resolves.toEqual({ slot: 0, accounts: [] });
    expect(stub.requests).toHaveLength(0);
  });

  it('reports a result of the wrong shape (jsonParsed data, short answer) as provider_unavailable', async () => {
    const address = randomAddress();
    const { solana, stub } = await setup({
      getMultipleAccounts: () => ({
        context: { slot: 1 },
        value: [{ ...rawAccount(address), data: { parsed: {}, program: 'spl-token' } }],
      }),
    });
    const err = await solana.getMultipleAccounts([address]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('provider_unavailable');

    stub.methods.getMultipleAccounts = () => ({ context: { slot: 1 }, value: [] });
    const short = await solana.getMultipleAccounts([randomAddress()]).catch((e: unknown) => e);
    expect((short as AppError).message).toMatch(/different number of accounts/);
  });
});

describe('SolanaRpc reads', () => {
  it('getBalance and getAccountInfo keep u64 values exact', async () => {
    const address = randomAddress();
    const { solana, stub } = await setup({
      getBalance: () => ({ context: { slot: 9 }, value: 18446744073709551615n }),
      getAccountInfo: () => ({ context: { slot: 10 }, value: rawAccount(address, 9007199254740993n) }),
    });
    const [balance, info] = await Promise.all([solana.getBalance(address), solana.getAccountInfo(address)]);
    expect(balance).toEqual({ slot: 9, lamports: 18446744073709551615n });
    expect(info.slot).toBe(10);
    expect(info.account?.lamports).toBe(9007199254740993n);
    expect(stub.requests).toHaveLength(1);
    expect(stub.calls[1]!.params).toEqual([address, { commitment: 'confirmed', encoding: 'base64' }]);
  });

  it('getAccountInfo answers null for a missing account; getSlot passes the commitment', async () => {
    const { solana, stub } = await setup({
      getAccountInfo: () => ({ context: { slot: 3 }, value: null }),
      getSlot: () => 77,
    });
    await expect(solana.getAccountInfo(randomAddress())).resolves.toEqual({ slot: 3, account: null });
    await expect(solana.getSlot({ commitment: 'finalized' })).resolves.toBe(77);
    expect(stub.calls.at(-1)!.params).toEqual([{ commitment: 'finalized' }]);
  });

  it('getTokenLargestAccounts and getTokenAccountsByOwner (base64, by program)', async () => {
    const owner = randomAddress();
    const tokenAccount = randomAddress();
    const { solana, stub } = await setup({
      getTokenLargestAccounts: () => ({
        context: { slot: 11 },
        value: [{ address: tokenAccount, amount: '123456789012345678901', decimals: 6, uiAmount: 1.2 }],
      }),
      getTokenAccountsByOwner: () => ({
        context: { slot: 12 },
        value: [{ pubkey: tokenAccount, account: rawAccount(tokenAccount) }],
      }),
    });
    const largest = await solana.getTokenLargestAccounts(randomAddress());
    expect(largest).toEqual({
      slot: 11,
      accounts: [{ address: tokenAccount, amount: 123456789012345678901n, decimals: 6 }],
    });
    const owned = await solana.getTokenAccountsByOwner(owner, TOKEN_PROGRAM);
    expect(owned.slot).toBe(12);
    expect(owned.accounts[0]!.pubkey).toBe(tokenAccount);
    expect(owned.accounts[0]!.account.data).toEqual(new Uint8Array(dataOf(tokenAccount)));
    expect(stub.calls.at(-1)!.params).toEqual([
      owner,
      { programId: TOKEN_PROGRAM },
      { commitment: 'confirmed', encoding: 'base64' },
    ]);
  });

  it('getSignaturesForAddress passes the page limit; getTransaction lists static and loaded keys', async () => {
    const keys = [randomAddress(), randomAddress()];
    const loaded = [randomAddress(), randomAddress()];
    const { solana, stub } = await setup({
      getSignaturesForAddress: () => [
        {
          signature: 'sig1',
          slot: 20,
          err: null,
          memo: null,
          blockTime: 1700000000,
          confirmationStatus: 'finalized',
        },
        { signature: 'sig2', slot: 19, err: { InstructionError: [0, 'Custom'] }, blockTime: null },
      ],
      getTransaction: (params: [string]) =>
        params[0] === 'missing'
          ? null
          : {
              slot: 20,
              blockTime: 1700000000,
              version: 0,
              meta: { err: null, loadedAddresses: { writable: [loaded[0]], readonly: [loaded[1]] } },
              transaction: { signatures: ['sig1'], message: { accountKeys: keys } },
            },
    });
    const signatures = await solana.getSignaturesForAddress(keys[0]!, { limit: 20 });
    expect(stub.calls[0]!.params).toEqual([keys[0], { commitment: 'confirmed', limit: 20 }]);
    expect(signatures).toEqual([
      {
        signature: 'sig1',
        slot: 20,
        err: null,
        memo: null,
        blockTime: 1700000000,
        confirmationStatus: 'finalized',
      },
      {
        signature: 'sig2',
        slot: 19,
        err: { InstructionError: [0, 'Custom'] },
        memo: null,
        blockTime: null,
        confirmationStatus: null,
      },
    ]);
    await expect(solana.getSignaturesForAddress(keys[0]!, { limit: 1001 })).rejects.toThrow(RangeError);

    const tx = await solana.getTransaction('sig1');
    expect(tx).toMatchObject({ slot: 20, version: 0, err: null, accountKeys: [...keys, ...loaded] });
    expect(stub.calls.at(-1)!.params).toEqual([
      'sig1',
      { encoding: 'json', maxSupportedTransactionVersion: 0, commitment: 'confirmed' },
    ]);
    await expect(solana.getTransaction('missing')).resolves.toBeNull();
  });
});
