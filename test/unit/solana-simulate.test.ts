import { getNonceDecoder, getTransferSolInstruction } from '@solana-program/system';
import { getTokenDecoder } from '@solana-program/token';
import {
  AuthorityType,
  getApproveInstruction,
  getCreateAssociatedTokenIdempotentInstruction,
  getSetAuthorityInstruction,
  getTransferInstruction,
} from '@solana-program/token-2022';
import {
  getAddressDecoder,
  getBase58Decoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  lamports,
  type Address,
  type KeyPairSigner,
} from '@solana/kit';
import { FailedTransactionMetadata } from 'litesvm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SolanaTestChain, SYSTEM_PROGRAM, TOKEN_PROGRAM } from '../support/solana/chain.js';
import { startSolanaFacade, type SolanaFacade } from '../support/solana/facade.js';
import { associatedTokenAddress, createMint, mintToOwners } from '../support/solana/token.js';
import {
  ADDRESS_LOOKUP_TABLE_PROGRAM,
  buildDurableNonceTransaction,
  buildWireTransaction,
  createLookupTable,
  createNonceAccount,
  readNonce,
  type NonceAccount,
} from '../support/solana/wire.js';

/*
 * simulateTransaction on the Solana facade, fed real wire transactions as a wallet receives them (kit-built,
 * unsigned unless said otherwise), answered from LiteSVM the way an Agave node answers.
 */

interface RpcResponse<T = unknown> {
  jsonrpc: '2.0';
  id: number | null;
  result?: T;
  error?: { code: number; message: string; data?: unknown };
}
interface EncodedAccountJson {
  data: [string, string];
  executable: boolean;
  lamports: number;
  owner: string;
  rentEpoch: number;
  space: number;
}
interface SimulationValue {
  err: unknown;
  logs: string[];
  accounts: (EncodedAccountJson | null)[] | null;
  unitsConsumed: number;
  returnData: { programId: string; data: [string, 'base64'] } | null;
  innerInstructions: { index: number; instructions: Record<string, unknown>[] }[] | null;
  replacementBlockhash: { blockhash: string; lastValidBlockHeight: number } | null;
}
interface Simulation {
  context: { slot: number; apiVersion: string };
  value: SimulationValue;
}

const SOL = 1_000_000_000n;
const FEE = 5000n;
/** A well-formed blockhash no node has seen. */
const UNKNOWN_BLOCKHASH = '4uQeVj5tqViQh7yWWGStvkEG1Zmhx6uasJtWCJziofM';

let chain: SolanaTestChain;
let facade: SolanaFacade;
let alice: KeyPairSigner;
let mallory: KeyPairSigner;
let recipients: Address[];
let mint: Address;
let aliceTokens: Address;
let table: Address;
let nonce: NonceAccount;
let nextId = 1;

async function rpcRaw<T>(method: string, params: unknown[] = []): Promise<RpcResponse<T>> {
  const res = await fetch(facade.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as RpcResponse<T>;
}

async function rpc<T>(method: string, params: unknown[] = []): Promise<T> {
  const body = await rpcRaw<T>(method, params);
  if (body.error) throw new Error(`${method}: ${body.error.code} ${body.error.message}`);
  return body.result as T;
}

const simulate = (tx: string, config: Record<string, unknown> = {}) =>
  rpc<Simulation>('simulateTransaction', [tx, { encoding: 'base64', ...config }]);

const latestBlockhash = async () =>
  (await rpc<{ value: { blockhash: string } }>('getLatestBlockhash')).value.blockhash;

const balance = async (a: Address) => BigInt((await rpc<{ value: number }>('getBalance', [a])).value);

const accountBytes = (account: EncodedAccountJson | null | undefined): Uint8Array => {
  if (!account) throw new Error('account missing');
  expect(account.data[1]).toBe('base64');
  return new Uint8Array(Buffer.from(account.data[0], 'base64'));
};

const solTransfer = (from: KeyPairSigner, to: Address, amount: bigint) =>
  getTransferSolInstruction({ source: from, destination: to, amount: lamports(amount) });

beforeAll(async () => {
  chain = await SolanaTestChain.create();
  alice = await chain.signer('simulate:alice');
  mallory = await chain.signer('simulate:mallory');
  recipients = await Promise.all(
    ['bob', 'carol', 'dave'].map(async (n) => (await chain.signer(`simulate:${n}`)).address),
  );
  await chain.send([
    solTransfer(chain.payer, alice.address, 10n * SOL),
    solTransfer(chain.payer, recipients[0] as Address, SOL),
  ]);
  const mintAuthority = await chain.signer('simulate:mint-authority');
  mint = await createMint(chain, {
    name: 'simulate-usd',
    program: 'token',
    decimals: 6,
    mintAuthority,
    freezeAuthority: null,
  });
  const [held] = await mintToOwners(chain, {
    kind: 'token',
    mint,
    mintAuthority,
    holdings: [{ owner: alice.address, amount: 1_000_000_000n }],
  });
  if (!held) throw new Error('alice holds no token account');
  aliceTokens = held.tokenAccount;
  table = await createLookupTable(chain, alice, recipients);
  nonce = await createNonceAccount(chain, { name: 'simulate:alice', authority: alice.address });
  facade = await startSolanaFacade(chain.svm, chain.ledger);
}, 60_000);

afterAll(async () => {
  await facade?.close();
});

describe('simulateTransaction on the Solana facade', () => {
  it('simulates an unsigned legacy SOL transfer with replaceRecentBlockhash: post balances, replacement blockhash, no state change', async () => {
    const bob = recipients[0] as Address;
    const tx = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [solTransfer(alice, bob, 2n * SOL)],
      blockhash: UNKNOWN_BLOCKHASH,
      version: 'legacy',
    });
    const decoded = getTransactionDecoder().decode(Buffer.from(tx, 'base64'));
    expect(Object.values(decoded.signatures)).toEqual([null]); // unsigned, as a wallet receives it
    expect(getCompiledTransactionMessageDecoder().decode(decoded.messageBytes).version).toBe('legacy');

    const [aliceBefore, bobBefore, ledgerBefore] = [
      await balance(alice.address),
      await balance(bob),
      chain.ledger.size,
    ];
    const callsBefore = facade.stats.callCount('simulateTransaction');
    const sim = await simulate(tx, {
      sigVerify: false,
      replaceRecentBlockhash: true,
      commitment: 'confirmed',
      accounts: { addresses: [alice.address, bob, recipients[2]], encoding: 'base64' },
    });

    expect(sim.context.slot).toBe(Number(chain.slot));
    expect(sim.context.apiVersion).toBeTypeOf('string');
    expect(sim.value.err).toBeNull();
    expect(sim.value.logs).toEqual([
      `Program ${SYSTEM_PROGRAM} invoke [1]`,
      `Program ${SYSTEM_PROGRAM} success`,
    ]);
    expect(sim.value.unitsConsumed).toBeGreaterThan(0);
    expect(sim.value.returnData).toBeNull();
    expect(sim.value.innerInstructions).toBeNull();
    expect(sim.value.replacementBlockhash).toEqual({
      blockhash: chain.svm.latestBlockhash(),
      lastValidBlockHeight: Number(chain.slot + 150n),
    });
    const [aliceAfter, bobAfter, untouched] = sim.value.accounts ?? [];
    expect(BigInt(aliceAfter?.lamports ?? 0)).toBe(aliceBefore - 2n * SOL - FEE);
    expect(BigInt(bobAfter?.lamports ?? 0)).toBe(bobBefore + 2n * SOL);
    expect(bobAfter).toMatchObject({
      owner: SYSTEM_PROGRAM,
      executable: false,
      space: 0,
      data: ['', 'base64'],
    });
    expect(untouched).toBeNull(); // dave does not exist, and the transfer does not touch him

    // A simulation: nothing changed, and the facade counted the call.
    expect(await balance(alice.address)).toBe(aliceBefore);
    expect(await balance(bob)).toBe(bobBefore);
    expect(chain.ledger.size).toBe(ledgerBefore);
    expect(facade.stats.callCount('simulateTransaction')).toBe(callsBefore + 1);

    // LiteSVM's checks are back as they were: a send still verifies signatures and blockhashes.
    const svmUnsigned = getTransactionDecoder().decode(Buffer.from(tx, 'base64'));
    expect(() => chain.svm.sendTransaction(svmUnsigned)).toThrow(/missing signatures/);
    chain.svm.withSigverify(false);
    try {
      const refused = chain.svm.simulateTransaction(svmUnsigned);
      expect(refused).toBeInstanceOf(FailedTransactionMetadata);
      expect((refused as FailedTransactionMetadata).toString()).toContain('BlockhashNotFound');
    } finally {
      chain.svm.withSigverify(true);
    }
  });

  it("sets LiteSVM's checks per call and puts back whatever they were, even when they were off", async () => {
    const bob = recipients[0] as Address;
    const stale = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [solTransfer(alice, bob, SOL)],
      blockhash: UNKNOWN_BLOCKHASH,
      version: 'legacy',
    });
    const svmTx = getTransactionDecoder().decode(Buffer.from(stale, 'base64'));
    chain.svm.withSigverify(false).withBlockhashCheck(false);
    try {
      // Checked for the call, as a node checks it...
      expect((await simulate(stale)).value.err).toBe('BlockhashNotFound');
      // ...and left off afterwards: LiteSVM runs the unsigned, stale transaction as it was told to.
      const direct = chain.svm.simulateTransaction(svmTx);
      expect(direct).not.toBeInstanceOf(FailedTransactionMetadata);
    } finally {
      chain.svm.withSigverify(true).withBlockhashCheck(true);
    }
  });

  it('simulates an SPL Token Approve and a SetAuthority(AccountOwner) with innerInstructions, and parses the CPIs of an ATA creation', async () => {
    const blockhash = await latestBlockhash();
    const approve = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [
        getApproveInstruction(
          { source: aliceTokens, delegate: mallory.address, owner: alice, amount: 500_000_000n },
          { programAddress: TOKEN_PROGRAM },
        ),
      ],
      blockhash,
      version: 0,
    });
    const approved = await simulate(approve, {
      innerInstructions: true,
      accounts: { addresses: [aliceTokens], encoding: 'base64' },
    });
    expect(approved.value.err).toBeNull();
    expect(approved.value.replacementBlockhash).toBeNull();
    expect(approved.value.innerInstructions).toEqual([]); // Approve calls no other program
    expect(approved.value.logs).toContain(`Program ${TOKEN_PROGRAM} success`);
    const delegated = getTokenDecoder().decode(accountBytes(approved.value.accounts?.[0]));
    expect(delegated.delegate).toEqual({ __option: 'Some', value: mallory.address });
    expect(delegated.delegatedAmount).toBe(500_000_000n);
    // ...only in the simulation.
    const [stored] = (
      await rpc<{ value: EncodedAccountJson[] }>('getMultipleAccounts', [
        [aliceTokens],
        { encoding: 'base64' },
      ])
    ).value;
    expect(getTokenDecoder().decode(accountBytes(stored)).delegate.__option).toBe('None');

    const takeover = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [
        getSetAuthorityInstruction(
          {
            owned: aliceTokens,
            owner: alice,
            authorityType: AuthorityType.AccountOwner,
            newAuthority: mallory.address,
          },
          { programAddress: TOKEN_PROGRAM },
        ),
      ],
      blockhash,
      version: 'legacy',
    });
    const taken = await simulate(takeover, {
      innerInstructions: true,
      accounts: { addresses: [aliceTokens], encoding: 'base64+zstd' },
    });
    expect(taken.value.err).toBeNull();
    expect(taken.value.innerInstructions).toEqual([]);
    expect(taken.value.logs[0]).toBe(`Program ${TOKEN_PROGRAM} invoke [1]`);
    expect(taken.value.accounts?.[0]?.data[1]).toBe('base64+zstd');
    expect(taken.value.accounts?.[0]?.space).toBe(165);

    // The ATA program's CPIs come back the way a node renders them: jsonParsed for System and SPL Token.
    const malloryAta = await associatedTokenAddress('token', mint, mallory.address);
    const createAta = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [
        getCreateAssociatedTokenIdempotentInstruction({
          payer: alice,
          ata: malloryAta,
          owner: mallory.address,
          mint,
          tokenProgram: TOKEN_PROGRAM,
        }),
      ],
      blockhash,
      version: 0,
    });
    const created = await simulate(createAta, { innerInstructions: true });
    expect(created.value.err).toBeNull();
    const inner = created.value.innerInstructions ?? [];
    expect(inner).toHaveLength(1);
    expect(inner[0]?.index).toBe(0);
    const parsed = (inner[0]?.instructions ?? []).map((ix) => [
      ix.program,
      (ix.parsed as { type: string }).type,
      ix.stackHeight,
    ]);
    expect(parsed).toEqual([
      ['spl-token', 'getAccountDataSize', 2],
      ['system', 'createAccount', 2],
      ['spl-token', 'initializeImmutableOwner', 2],
      ['spl-token', 'initializeAccount3', 2],
    ]);
    expect(inner[0]?.instructions[1]).toMatchObject({
      programId: SYSTEM_PROGRAM,
      parsed: { info: { source: alice.address, newAccount: malloryAta, owner: TOKEN_PROGRAM, space: 165 } },
    });
    expect(inner[0]?.instructions[3]).toMatchObject({
      programId: TOKEN_PROGRAM,
      parsed: { info: { account: malloryAta, mint, owner: mallory.address } },
    });
    expect(inner[0]?.instructions[0]).toMatchObject({
      parsed: { info: { mint, extensionTypes: ['immutableOwner'] } },
    });
  });

  it('simulates a v0 transaction whose accounts come from an address lookup table, served like any account', async () => {
    const [stored] = (
      await rpc<{ value: EncodedAccountJson[] }>('getMultipleAccounts', [[table], { encoding: 'base64' }])
    ).value;
    expect(stored?.owner).toBe(ADDRESS_LOOKUP_TABLE_PROGRAM);
    const tableData = accountBytes(stored);
    const listed = Array.from({ length: (tableData.length - 56) / 32 }, (_, i) =>
      getAddressDecoder().decode(tableData.slice(56 + i * 32, 88 + i * 32)),
    );
    expect(listed).toEqual(recipients);
    const info = await rpc<{ value: EncodedAccountJson | null }>('getAccountInfo', [
      table,
      { encoding: 'base64' },
    ]);
    expect(info.value?.owner).toBe(ADDRESS_LOOKUP_TABLE_PROGRAM);

    const [bob, carol, dave] = recipients as [Address, Address, Address];
    const tx = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [
        solTransfer(alice, bob, SOL),
        solTransfer(alice, carol, SOL),
        solTransfer(alice, dave, SOL),
      ],
      blockhash: await latestBlockhash(),
      version: 0,
      lookupTables: { [table]: recipients },
    });
    const message = getCompiledTransactionMessageDecoder().decode(
      getTransactionDecoder().decode(Buffer.from(tx, 'base64')).messageBytes,
    );
    expect(message.version).toBe(0);
    expect(message.staticAccounts).not.toContain(carol);
    const lookups = 'addressTableLookups' in message ? (message.addressTableLookups ?? []) : [];
    expect(
      lookups.map((l) => [l.lookupTableAddress, [...l.writableIndexes].sort(), l.readonlyIndexes]),
    ).toEqual([[table, [0, 1, 2], []]]);

    const sim = await simulate(tx, {
      innerInstructions: true,
      accounts: { addresses: [carol, dave, alice.address], encoding: 'base64' },
    });
    expect(sim.value.err).toBeNull();
    expect(sim.value.accounts?.map((a) => a?.lamports)).toEqual([
      Number(SOL),
      Number(SOL),
      Number((await balance(alice.address)) - 3n * SOL - FEE),
    ]);
    expect(sim.value.innerInstructions).toEqual([]);

    // The account list a node counts includes the loaded addresses: alice and the System program + 3 loaded.
    const tooMany = await rpcRaw('simulateTransaction', [
      tx,
      { encoding: 'base64', accounts: { addresses: Array(6).fill(carol), encoding: 'base64' } },
    ]);
    expect(tooMany.error).toEqual({ code: -32602, message: 'Too many accounts provided; max 5' });

    // A table that does not exist is refused while sanitizing, as a node does.
    const ghostTable = (await chain.signer('simulate:ghost-table')).address;
    const ghost = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [solTransfer(alice, carol, SOL)],
      blockhash: await latestBlockhash(),
      version: 0,
      lookupTables: { [ghostTable]: [carol] },
    });
    expect((await rpcRaw('simulateTransaction', [ghost, { encoding: 'base64' }])).error).toEqual({
      code: -32602,
      message: "invalid transaction: Transaction loads an address table account that doesn't exist",
    });
  });

  it('answers BlockhashNotFound for an unknown blockhash without replaceRecentBlockhash, but honours a blockhash it handed out', async () => {
    const bob = recipients[0] as Address;
    const stale = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [solTransfer(alice, bob, SOL)],
      blockhash: UNKNOWN_BLOCKHASH,
      version: 'legacy',
    });
    const sim = await simulate(stale, {
      accounts: { addresses: [bob], encoding: 'base64' },
      innerInstructions: true,
    });
    expect(sim.value).toEqual({
      err: 'BlockhashNotFound',
      logs: [],
      accounts: [null],
      unitsConsumed: 0,
      returnData: null,
      innerInstructions: null,
      replacementBlockhash: null,
    });

    // LiteSVM forgets a blockhash at the next transaction; a node keeps it valid for 150 blocks.
    const handedOut = await latestBlockhash();
    await chain.send([solTransfer(chain.payer, bob, 1n)]);
    expect(chain.svm.latestBlockhash()).not.toBe(handedOut);
    const recent = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [solTransfer(alice, bob, SOL)],
      blockhash: handedOut,
      version: 'legacy',
    });
    expect((await simulate(recent)).value.err).toBeNull();
    chain.advanceSlots(151n);
    expect((await simulate(recent)).value.err).toBe('BlockhashNotFound');
  });

  it('simulates a durable-nonce transaction (AdvanceNonceAccount first) without replacing its blockhash', async () => {
    const bob = recipients[0] as Address;
    expect(nonce.nonce).toBe(readNonce(chain, nonce.address));
    const tx = await buildDurableNonceTransaction({
      feePayer: alice.address,
      nonceAccount: nonce.address,
      nonceAuthority: alice.address,
      nonce: nonce.nonce,
      instructions: [solTransfer(alice, bob, SOL)],
      version: 0,
    });
    const message = getCompiledTransactionMessageDecoder().decode(
      getTransactionDecoder().decode(Buffer.from(tx, 'base64')).messageBytes,
    );
    expect(message.lifetimeToken).toBe(nonce.nonce);
    const first = 'instructions' in message ? message.instructions[0] : undefined;
    expect(message.staticAccounts[first?.programAddressIndex ?? -1]).toBe(SYSTEM_PROGRAM);
    expect([...(first?.data ?? [])]).toEqual([4, 0, 0, 0]); // AdvanceNonceAccount

    const sim = await simulate(tx, { accounts: { addresses: [nonce.address, bob], encoding: 'base64' } });
    expect(sim.value.err).toBeNull();
    expect(sim.value.replacementBlockhash).toBeNull();
    const advanced = getNonceDecoder().decode(accountBytes(sim.value.accounts?.[0]));
    expect(advanced.blockhash).not.toBe(nonce.nonce);
    expect(advanced.authority).toBe(alice.address);
    expect(readNonce(chain, nonce.address)).toBe(nonce.nonce); // not advanced for real

    // A nonce value that is not the account's is just an unknown blockhash.
    const wrongNonce = await buildDurableNonceTransaction({
      feePayer: alice.address,
      nonceAccount: nonce.address,
      nonceAuthority: alice.address,
      nonce: UNKNOWN_BLOCKHASH,
      instructions: [solTransfer(alice, bob, SOL)],
      version: 'legacy',
    });
    expect((await simulate(wrongNonce)).value.err).toBe('BlockhashNotFound');
  });

  it("reports a failing instruction as the node's InstructionError, with no accounts", async () => {
    const bobTokens = await associatedTokenAddress('token', mint, recipients[0] as Address);
    const overdraw = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [
        getCreateAssociatedTokenIdempotentInstruction({
          payer: alice,
          ata: bobTokens,
          owner: recipients[0] as Address,
          mint,
          tokenProgram: TOKEN_PROGRAM,
        }),
        getTransferInstruction(
          { source: aliceTokens, destination: bobTokens, authority: alice, amount: 2_000_000_000n },
          { programAddress: TOKEN_PROGRAM },
        ),
      ],
      blockhash: await latestBlockhash(),
      version: 0,
    });
    const sim = await simulate(overdraw, {
      innerInstructions: true,
      accounts: { addresses: [aliceTokens, bobTokens], encoding: 'base64' },
    });
    expect(sim.value.err).toEqual({ InstructionError: [1, { Custom: 1 }] }); // SPL Token InsufficientFunds
    expect(sim.value.logs).toContain('Program log: Error: insufficient funds');
    expect(sim.value.accounts).toEqual([null, null]);
    expect(sim.value.innerInstructions?.map((i) => i.index)).toEqual([0]);

    const tooMuchSol = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [solTransfer(alice, recipients[0] as Address, 1_000n * SOL)],
      blockhash: await latestBlockhash(),
      version: 'legacy',
    });
    expect((await simulate(tooMuchSol)).value.err).toEqual({ InstructionError: [0, { Custom: 1 }] });

    const nobody = await chain.signer('simulate:nobody');
    const unfunded = await buildWireTransaction({
      feePayer: nobody.address,
      instructions: [solTransfer(nobody, alice.address, 1n)],
      blockhash: await latestBlockhash(),
      version: 'legacy',
    });
    expect((await simulate(unfunded)).value.err).toBe('AccountNotFound');
  });

  it('verifies signatures only when asked: -32003 for an unsigned transaction, a signed one passes', async () => {
    const bob = recipients[0] as Address;
    const args = {
      feePayer: alice.address,
      instructions: [solTransfer(alice, bob, SOL)],
      blockhash: await latestBlockhash(),
      version: 'legacy' as const,
    };
    const unsigned = await buildWireTransaction(args);
    expect(
      (await rpcRaw('simulateTransaction', [unsigned, { encoding: 'base64', sigVerify: true }])).error,
    ).toEqual({
      code: -32003,
      message: 'Transaction signature verification failure',
    });
    const signed = await buildWireTransaction({ ...args, signers: [alice] });
    expect(
      Object.values(getTransactionDecoder().decode(Buffer.from(signed, 'base64')).signatures)[0],
    ).not.toBeNull();
    expect((await simulate(signed, { sigVerify: true })).value.err).toBeNull();
    // base58, the default encoding when none is given.
    const base58 = getBase58Decoder().decode(Buffer.from(signed, 'base64'));
    expect((await rpc<Simulation>('simulateTransaction', [base58])).value.err).toBeNull();
  });

  it('answers malformed input and bad options with -32602 (or the node’s own codes), never a crash', async () => {
    const valid = await buildWireTransaction({
      feePayer: alice.address,
      instructions: [solTransfer(alice, recipients[0] as Address, SOL)],
      blockhash: await latestBlockhash(),
      version: 'legacy',
    });
    const truncated = Buffer.from(Buffer.from(valid, 'base64').subarray(0, 100)).toString('base64');
    const cases: [unknown[], number, RegExp][] = [
      [
        ['!!!not base64!!!', { encoding: 'base64' }],
        -32602,
        /^invalid base64 encoding: InvalidByte\(0, 33\)$/,
      ],
      [
        [truncated, { encoding: 'base64' }],
        -32602,
        /^failed to deserialize .*VersionedTransaction: io error/,
      ],
      [['AAAA', { encoding: 'base64' }], -32602, /^failed to deserialize .*VersionedTransaction/],
      [['0OIl', {}], -32602, /^invalid base58 encoding: InvalidCharacter/],
      [
        [valid, { encoding: 'base64', sigVerify: true, replaceRecentBlockhash: true }],
        -32602,
        /^sigVerify may not be used with replaceRecentBlockhash$/,
      ],
      [[valid, { encoding: 'json' }], -32602, /^unsupported encoding: json/],
      [
        [valid, { encoding: 'base64', accounts: { addresses: [alice.address], encoding: 'jsonParsed' } }],
        -32602,
        /jsonParsed is not supported/,
      ],
      [
        [valid, { encoding: 'base64', accounts: { addresses: ['not-an-address'] } }],
        -32602,
        /^Invalid param/,
      ],
      [
        [valid, { encoding: 'base64', minContextSlot: Number(chain.slot) + 1000 }],
        -32016,
        /^Minimum context slot has not been reached$/,
      ],
      [[42], -32602, /^Invalid params/],
      [['A'.repeat(2000), { encoding: 'base64' }], -32602, /too large/],
    ];
    for (const [params, code, message] of cases) {
      const body = await rpcRaw('simulateTransaction', params);
      expect(body.result, JSON.stringify(params).slice(0, 80)).toBeUndefined();
      expect(body.error?.code, JSON.stringify(params).slice(0, 80)).toBe(code);
      expect(body.error?.message).toMatch(message);
    }
    // An account list change in a batch next to a simulation: each call answered on its own.
    const res = await fetch(facade.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'simulateTransaction', params: ['%%%', { encoding: 'base64' }] },
        { jsonrpc: '2.0', id: 2, method: 'simulateTransaction', params: [valid, { encoding: 'base64' }] },
      ]),
    });
    const [bad, good] = (await res.json()) as [RpcResponse, RpcResponse<Simulation>];
    expect(bad.error?.code).toBe(-32602);
    expect(good.result?.value.err).toBeNull();
  });
});
