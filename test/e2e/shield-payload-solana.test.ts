import {
  address,
  createNoopSigner,
  lamports,
  type Address,
  type Instruction,
  type KeyPairSigner,
} from '@solana/kit';
import { getAssignInstruction, getTransferSolInstruction } from '@solana-program/system';
import {
  AuthorityType,
  getApproveInstruction,
  getCloseAccountInstruction,
  getSetAuthorityInstruction,
  getTransferInstruction,
} from '@solana-program/token';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Preflight } from '../../src/risk/preflight-schemas.js';
import {
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import { startFaultProxy } from '../support/rpc-fault-proxy.js';
import { prepareEnv, type RunningService, type TestEnv } from '../support/service.js';
import type { SolanaFacade } from '../support/solana/facade.js';
import { buildSolanaWorld, type SolanaWorld } from '../support/solana/fixtures.js';
import { createExtraTokenAccount, createMint, mintToOwners } from '../support/solana/token.js';
import {
  buildDurableNonceTransaction,
  buildWireTransaction,
  createLookupTable,
  createNonceAccount,
  readNonce,
} from '../support/solana/wire.js';

/*
 * Shield preflight with a Solana transaction (docs/risk.md#before-the-user-signs): real wire transactions
 * (legacy and v0, built with @solana/kit, unsigned as a wallet receives them) simulated through the
 * service's own provider client by the LiteSVM facade's simulateTransaction. Each Solana row of the
 * issue's decision table, with its codes and the simulation fields.
 */

const SOL = 1_000_000_000n;
/** Any 32 bytes: the service asks the node to replace the blockhash (except for a durable nonce). */
const ANY_BLOCKHASH = '11111111111111111111111111111111';

describe('shield preflight payloads on Solana (LiteSVM simulateTransaction)', () => {
  let world: SolanaWorld;
  let facade: SolanaFacade;
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let svc: RunningService;
  let acme: Customer;
  let user: KeyPairSigner;
  let attacker: Address;
  let friend: Address;
  let mint: Address;
  let ata: Address;
  let empty: Address;
  const HELD = 5_000_000n;

  const post = (body: unknown) =>
    fetch(`${svc.baseUrl}/api/v1/shield/preflight`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': acme.key.key },
      body: JSON.stringify(body),
    });
  const preflight = async (body: Record<string, unknown>): Promise<Preflight> =>
    expectJson<Preflight>(
      await post({ chain: 'solana', network: 'mainnet', from: user.address, ...body }),
      200,
    );
  const wire = (instructions: Instruction[], version: 'legacy' | 0 = 'legacy') =>
    buildWireTransaction({ feePayer: user.address, instructions, blockhash: ANY_BLOCKHASH, version });
  const me = () => createNoopSigner(user.address);
  const codes = (p: Preflight) => p.reasons.map((r) => `${r.code}:${r.severity}`).sort();
  const reason = (p: Preflight, code: string) => {
    const found = p.reasons.filter((r) => r.code === code);
    expect(found, `${code} in ${JSON.stringify(codes(p))}`).toHaveLength(1);
    return found[0]!;
  };

  beforeAll(async () => {
    world = await buildSolanaWorld();
    const chain = world.chain;
    user = await chain.signer('payload:user');
    attacker = (await chain.signer('payload:attacker')).address;
    friend = (await chain.signer('payload:friend')).address;
    chain.svm.airdrop(user.address, lamports(10n * SOL));
    chain.svm.airdrop(friend, lamports(2n * SOL));
    const authority = await chain.signer('payload:mint-authority');
    mint = await createMint(chain, {
      name: 'payload:mint',
      program: 'token',
      decimals: 6,
      mintAuthority: authority,
      freezeAuthority: null,
    });
    const held = await mintToOwners(chain, {
      kind: 'token',
      mint,
      mintAuthority: authority,
      holdings: [{ owner: user.address, amount: HELD }],
    });
    ata = held[0]!.tokenAccount;
    empty = await createExtraTokenAccount(chain, {
      name: 'payload:empty',
      mint,
      owner: user.address,
      mintAuthority: authority,
      amount: 0n,
    });
    facade = await world.startFacade();
    testEnv = await prepareEnv({ RISKWATCH_RPC_SOLANA_MAINNET: facade.url, RISKWATCH_RPC_RATE_PER_S: '0' });
    db = await openAccounts(testEnv.env);
    acme = await db.customer('acme');
    svc = await startServiceRetrying(testEnv.env);
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await db?.close();
    await testEnv?.dropDatabase();
    await facade?.close();
  });

  it("SetAuthority(AccountOwner) of from's token account to another key: block (authority_transfer critical)", async () => {
    const ix = getSetAuthorityInstruction({
      owned: ata,
      owner: me(),
      authorityType: AuthorityType.AccountOwner,
      newAuthority: attacker,
    });
    const p = await preflight({ intent: 'sign', transaction: await wire([ix]) });
    expect(p.decision).toBe('block');
    expect(p.target).toBeNull();
    expect(reason(p, 'authority_transfer')).toMatchObject({
      severity: 'critical',
      subject: { role: 'authority', address: attacker },
    });
    expect(p.simulation).toMatchObject({
      status: 'success',
      method: 'simulateTransaction',
      slot: expect.any(Number) as unknown,
      authority_changes: [
        { account: ata, authority_type: 'account_owner', from: user.address, to: attacker },
      ],
    });
    // The user only pays the fee, which is not an asset change.
    expect(p.simulation!.asset_changes).toEqual([]);
  });

  it('SetAuthority(CloseAccount) to another key, and System Assign of the wallet: block', async () => {
    const close = getSetAuthorityInstruction({
      owned: ata,
      owner: me(),
      authorityType: AuthorityType.CloseAccount,
      newAuthority: attacker,
    });
    const p = await preflight({ intent: 'sign', transaction: await wire([close], 0) });
    expect(p.decision).toBe('block');
    expect(p.simulation!.authority_changes).toEqual([
      { account: ata, authority_type: 'close_account', from: user.address, to: attacker },
    ]);

    const assign = getAssignInstruction({ account: me(), programAddress: attacker });
    const a = await preflight({ intent: 'sign', transaction: await wire([assign]) });
    expect(a.decision).toBe('block');
    expect(reason(a, 'authority_transfer').severity).toBe('critical');
    expect(a.simulation!.authority_changes).toEqual([
      {
        account: user.address,
        authority_type: 'program_owner',
        from: '11111111111111111111111111111111',
        to: attacker,
      },
    ]);
  });

  it('an Approve covering the whole balance: warn (unlimited_approval), the delegate in approvals', async () => {
    const ix = getApproveInstruction({ source: ata, delegate: friend, owner: me(), amount: HELD });
    const p = await preflight({ intent: 'approve', transaction: await wire([ix]) });
    expect(['warn', 'block']).toContain(p.decision);
    expect(reason(p, 'unlimited_approval').severity).toBe('high');
    expect(p.simulation!.approvals).toEqual([
      {
        owner: user.address,
        asset: { type: 'spl', address: mint },
        spender: friend,
        amount: HELD.toString(),
        covers_balance: true,
        all: false,
        expires_at: null,
        source: 'transaction',
      },
    ]);
  });

  it('a durable-nonce transaction: warn (durable_nonce), simulated without replacing its nonce', async () => {
    const nonce = await createNonceAccount(world.chain, { name: 'payload:nonce', authority: user.address });
    const tx = await buildDurableNonceTransaction({
      feePayer: user.address,
      instructions: [getTransferSolInstruction({ source: me(), destination: friend, amount: 1000n })],
      version: 'legacy',
      nonceAccount: nonce.address,
      nonceAuthority: user.address,
      nonce: readNonce(world.chain, nonce.address),
    });
    const p = await preflight({ intent: 'transfer', transaction: tx });
    expect(p.decision).toBe('warn');
    expect(reason(p, 'durable_nonce').severity).toBe('medium');
    expect(p.simulation!.status).toBe('success');
  });

  it('a token account closed with its rent to another key: warn (close_to_other)', async () => {
    const ix = getCloseAccountInstruction({ account: empty, destination: attacker, owner: me() });
    const p = await preflight({ intent: 'sign', transaction: await wire([ix]) });
    expect(['warn', 'block']).toContain(p.decision);
    expect(reason(p, 'close_to_other').severity).toBe('medium');
  });

  it('a plain SOL transfer to a used wallet: allow, with the exact change of from (fee excluded); v0 through a lookup table too', async () => {
    const ix = getTransferSolInstruction({ source: me(), destination: friend, amount: SOL / 4n });
    const p = await preflight({ intent: 'transfer', transaction: await wire([ix]) });
    expect(p.decision).toBe('allow');
    expect(p.simulation!.asset_changes).toEqual([
      { owner: user.address, asset: { type: 'native' }, amount: (-SOL / 4n).toString() },
      { owner: friend, asset: { type: 'native' }, amount: (SOL / 4n).toString() },
    ]);

    const table = await createLookupTable(world.chain, await world.chain.signer('payload:alt-authority'), [
      friend,
    ]);
    const v0 = await buildWireTransaction({
      feePayer: user.address,
      instructions: [ix],
      blockhash: ANY_BLOCKHASH,
      version: 0,
      lookupTables: { [table]: [friend] },
    });
    const viaTable = await preflight({ intent: 'transfer', transaction: v0, target: friend });
    expect(viaTable.decision).toBe('allow');
    expect(viaTable.target).toBe(friend);
    expect(viaTable.simulation!.asset_changes[1]).toEqual({
      owner: friend,
      asset: { type: 'native' },
      amount: (SOL / 4n).toString(),
    });

    // The same payment asked about as a mere signature: SOL leaves and nothing comes back.
    const asSign = await preflight({ intent: 'sign', transaction: await wire([ix]) });
    expect(reason(asSign, 'outflow_without_inflow').severity).toBe('high');
  });

  it('a priority fee is not an asset change: the exact transfer, and a whole-balance token send still warns', async () => {
    // ComputeBudget SetComputeUnitPrice (instruction 3, u64 micro-lamports per unit), no unit limit.
    const data = new Uint8Array(9);
    data[0] = 3;
    new DataView(data.buffer).setBigUint64(1, 1_000_000n, true);
    const price: Instruction = {
      programAddress: address('ComputeBudget111111111111111111111111111111'),
      data,
    };
    const pay = getTransferSolInstruction({ source: me(), destination: friend, amount: 12_345n });
    const p = await preflight({ intent: 'transfer', transaction: await wire([price, pay]) });
    expect(p.simulation!.asset_changes[0]).toEqual({
      owner: user.address,
      asset: { type: 'native' },
      amount: '-12345',
    });
    expect(p.decision).toBe('allow');

    const friendAta = await createExtraTokenAccount(world.chain, {
      name: 'payload:friend-account',
      mint,
      owner: friend,
      mintAuthority: await world.chain.signer('payload:mint-authority'),
      amount: 0n,
    });
    const all = getTransferInstruction({
      source: ata,
      destination: friendAta,
      authority: me(),
      amount: HELD,
    });
    const drained = await preflight({ intent: 'sign', transaction: await wire([price, all]) });
    expect(reason(drained, 'outflow_without_inflow').severity).toBe('high');
    expect(drained.simulation!.asset_changes.filter((c) => c.owner === user.address)).toEqual([
      { owner: user.address, asset: { type: 'spl', address: mint }, amount: (-HELD).toString() },
    ]);
  });

  it('paying a deny-listed wallet: block (counterparty_flagged)', async () => {
    const res = await fetch(`${svc.baseUrl}/api/v1/lists/deny/entries`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': acme.key.key },
      body: JSON.stringify({ target: attacker, chain: 'solana', label: 'drainer' }),
    });
    expect(res.status).toBe(201);
    const ix = getTransferSolInstruction({ source: me(), destination: attacker, amount: SOL / 100n });
    const p = await preflight({ intent: 'transfer', transaction: await wire([ix]) });
    expect(p.decision).toBe('block');
    expect(reason(p, 'counterparty_flagged').subject).toEqual({ role: 'recipient', address: attacker });
    // The rent of a closed token account is paid to it too.
    const close = getCloseAccountInstruction({ account: empty, destination: attacker, owner: me() });
    const closed = await preflight({ intent: 'sign', transaction: await wire([close]) });
    expect(closed.decision).toBe('block');
    expect(reason(closed, 'counterparty_flagged').subject).toEqual({ role: 'recipient', address: attacker });
  });

  it('lookup tables the provider cannot read: 200, unavailable, complete false, at least warn (never a 503)', async () => {
    const proxy = await startFaultProxy(facade.url);
    const flaky = await startServiceRetrying({
      ...testEnv.env,
      REDIS_KEY_PREFIX: `${testEnv.env.REDIS_KEY_PREFIX}flaky:`,
      RISKWATCH_RPC_SOLANA_MAINNET: proxy.url,
      RISKWATCH_RPC_RETRIES: '0',
    });
    try {
      const table = await createLookupTable(world.chain, await world.chain.signer('payload:alt-2'), [friend]);
      const v0 = await buildWireTransaction({
        feePayer: user.address,
        instructions: [getTransferSolInstruction({ source: me(), destination: friend, amount: 1000n })],
        blockhash: ANY_BLOCKHASH,
        version: 0,
        lookupTables: { [table]: [friend] },
      });
      proxy.faults.forMethod('getMultipleAccounts', { status: 500 });
      const res = await fetch(`${flaky.baseUrl}/api/v1/shield/preflight`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': acme.key.key },
        body: JSON.stringify({ chain: 'solana', intent: 'transfer', from: user.address, transaction: v0 }),
      });
      const p = await expectJson<Preflight>(res, 200);
      expect(p.simulation).toMatchObject({ status: 'unavailable', method: 'decode' });
      expect(p.complete).toBe(false);
      expect(p.decision).toBe('warn');
    } finally {
      await flaky.stop();
      await proxy.close();
    }
  });

  it('bad input: a truncated message, bad base64, from not a signer, target not an account key: 400', async () => {
    const good = await wire([getTransferSolInstruction({ source: me(), destination: friend, amount: 1n })]);
    const truncated = Buffer.from(good, 'base64').subarray(0, 90).toString('base64');
    for (const [body, path] of [
      [{ transaction: truncated }, 'transaction'],
      [{ transaction: '%%%not base64' }, 'transaction'],
      [{ transaction: good, from: friend }, 'from'],
      [{ transaction: good, target: attacker }, 'target'],
      [{ transaction: { to: friend } }, 'transaction'],
    ] as const) {
      const problem = await expectProblem(
        await post({ chain: 'solana', intent: 'sign', from: user.address, ...body }),
        400,
        'invalid_request',
      );
      expect(JSON.stringify(problem.errors), JSON.stringify(problem)).toContain(path);
    }
    // Without chain or network, a transaction string is a Solana one.
    const inferred = await expectJson<Preflight>(
      await post({ intent: 'transfer', from: user.address, transaction: good }),
      200,
    );
    expect(inferred.chain).toBe('solana');
  });
});
