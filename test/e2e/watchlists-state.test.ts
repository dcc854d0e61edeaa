import { AuthorityType, getCloseAccountInstruction } from '@solana-program/token-2022';
import {
  AccountRole,
  getAddressDecoder,
  getU32Encoder,
  type AccountMeta,
  type AccountSignerMeta,
} from '@solana/kit';
import { randomBytes } from 'node:crypto';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  keccak256,
  parseEther,
  type Address,
  type Chain,
  type Hex,
  type SignedAuthorizationList,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvmRpc } from '../../src/chains/evm.js';
import type { SolanaRpc } from '../../src/chains/solana.js';
import { diffAlerts, type AlertThresholds, type Verdict } from '../../src/watchlists/diff.js';
import {
  readEvmStates,
  readSolanaStates,
  stateHash,
  type EvmStateRead,
  type SolanaStateRead,
} from '../../src/watchlists/state.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import { EIP1967_IMPLEMENTATION_SLOT } from '../support/evm/bytecode.js';
import { buildEvmWorld, type EvmWorld } from '../support/evm/fixtures.js';
import { testEvmRpc, testSolanaRpc } from '../support/rpc-clients.js';
import { startFaultProxy, type FaultProxy } from '../support/rpc-fault-proxy.js';
import { BPF_LOADER_UPGRADEABLE, TOKEN_PROGRAM } from '../support/solana/chain.js';
import type { SolanaFacade } from '../support/solana/facade.js';
import { buildSolanaWorld, type SolanaWorld } from '../support/solana/fixtures.js';
import {
  approveDelegate,
  createExtraTokenAccount,
  setAuthority,
  transferSol,
} from '../support/solana/token.js';

/*
 * The watchlist tick's reads against real chain state — the LiteSVM world through the JSON-RPC facade, and
 * a fresh anvil — with the clients the service builds: the same state read twice hashes the same, and each
 * real change (made by a real transaction) gives another hash and exactly the one alert it should.
 */

/** previous read → current read, as the tick diffs them (the previous one as its stored snapshot). */
function alertsBetween(
  previous: SolanaStateRead | EvmStateRead,
  current: SolanaStateRead | EvmStateRead,
  opts: { thresholds?: AlertThresholds; verdict?: Verdict } = {},
) {
  const at = 'slot' in previous ? { slot: previous.slot } : { block: previous.block };
  return diffAlerts({
    entryId: `entry:${current.address}`,
    previous: { ...at, state: previous.state, hash: stateHash(previous.state) },
    current: { ...current, verdict: opts.verdict },
    thresholds: opts.thresholds,
  });
}

describe('readSolanaStates (LiteSVM facade)', () => {
  let world: SolanaWorld;
  let facade: SolanaFacade;
  let rpc: SolanaRpc;

  beforeAll(async () => {
    world = await buildSolanaWorld();
    facade = await world.startFacade();
    rpc = testSolanaRpc(facade.url);
  }, 60_000);

  afterAll(async () => {
    await facade?.close();
  });

  const readOne = async (address: string): Promise<SolanaStateRead> =>
    (await readSolanaStates(rpc, [address]))[0]!;

  it('decodes each kind of account from its bytes', async () => {
    const { mints, wallets, program, missing } = world.fixtures;
    const addresses = [
      mints.cleanToken.address,
      mints.transferHook.address,
      mints.permanentDelegate.address,
      mints.pausable.address,
      mints.transferFeeScheduled.address,
      mints.token2022MetadataMutable.address,
      mints.defaultFrozen.address,
      wallets.delegatedWallet.tokenAccounts[0]!.address,
      wallets.frozenWallet.tokenAccounts[0]!.address,
      program.address,
      wallets.plainWallet.address,
      missing.address,
    ];
    const reads = await readSolanaStates(rpc, addresses);
    const [
      clean,
      hook,
      delegate,
      pausable,
      fee,
      metadata,
      frozenDefault,
      delegated,
      frozen,
      prog,
      wallet,
      gone,
    ] = reads.map((r) => r.state);

    expect(clean).toMatchObject({
      kind: 'mint',
      exists: true,
      mint: { token_program: 'spl-token', mint_authority: null, freeze_authority: null, extensions: [] },
    });
    expect(hook).toMatchObject({
      mint: { token_program: 'token-2022', transfer_hook_program: program.address },
    });
    expect(delegate).toMatchObject({
      mint: { permanent_delegate: expect.any(String) as string, extensions: ['permanent_delegate'] },
    });
    expect(pausable).toMatchObject({
      mint: { paused: true, pausable_authority: expect.any(String) as string },
    });
    expect(fee).toMatchObject({
      mint: { transfer_fee_bps: 500, transfer_fee_authority: expect.any(String) as string },
    });
    expect(metadata).toMatchObject({
      mint: {
        metadata_update_authority: mints.token2022MetadataMutable.metadata!.updateAuthority,
        metadata_address: mints.token2022MetadataMutable.address,
      },
    });
    expect(frozenDefault).toMatchObject({ mint: { default_account_state: 'frozen' } });
    expect(delegated).toMatchObject({
      kind: 'token_account',
      token_account: { delegate: world.actors.delegateSpender, owner: wallets.delegatedWallet.address },
    });
    expect(frozen).toMatchObject({ token_account: { state: 'frozen' } });
    expect(prog).toMatchObject({
      kind: 'program',
      executable: true,
      program: {
        loader: 'bpf-upgradeable',
        programdata_address: program.programData,
        upgrade_authority: program.upgradeAuthority,
        last_deploy_slot: expect.any(Number) as number,
      },
    });
    expect(reads[9]!.evidence.raw.program_data).toMatchObject({ address: program.programData, data_len: 45 });
    expect(wallet).toMatchObject({ kind: 'system_account', data_hash: null });
    expect(gone).toMatchObject({ kind: 'missing', exists: false, owner_program: null });
    expect(reads[11]!.evidence.raw.account).toBeNull();
    for (const r of reads) expect(JSON.parse(JSON.stringify(r.state))).toEqual(r.state);
  });

  it('the same state read twice hashes the same and raises nothing', async () => {
    const addresses = [
      ...Object.values(world.fixtures.mints).map((m) => m.address),
      ...Object.values(world.fixtures.wallets).map((w) => w.address),
      world.fixtures.program.address,
      world.fixtures.tokenAccount.address,
      world.fixtures.missing.address,
    ];
    const [first, second] = [await readSolanaStates(rpc, addresses), await readSolanaStates(rpc, addresses)];
    expect(second.map((r) => stateHash(r.state))).toEqual(first.map((r) => stateHash(r.state)));
    first.forEach((r, i) => expect(alertsBetween(r, second[i]!)).toEqual([]));
  });

  it('reads 250 addresses in exactly 3 getMultipleAccounts calls', async () => {
    const random = () => getAddressDecoder().decode(randomBytes(32));
    const known = [
      ...world.actors.holders,
      ...Object.values(world.fixtures.mints).flatMap((m) => [
        m.address,
        ...m.holders.map((h) => h.tokenAccount),
      ]),
    ];
    const addresses = [...new Set(known)].slice(0, 200);
    while (addresses.length < 250) addresses.push(random());
    await facade.idle();
    facade.stats.reset();
    const reads = await readSolanaStates(rpc, addresses);
    expect(facade.stats.callCount('getMultipleAccounts')).toBe(3);
    expect(facade.stats.callCount()).toBe(3);
    expect(reads.map((r) => r.address)).toEqual(addresses);
    expect(reads.filter((r) => r.state.kind === 'missing').length).toBeGreaterThanOrEqual(50);
  });

  it('a program costs one more round, for its ProgramData', async () => {
    await facade.idle();
    facade.stats.reset();
    await readSolanaStates(rpc, [world.fixtures.program.address, world.fixtures.wallets.plainWallet.address]);
    expect(facade.stats.callCount('getMultipleAccounts')).toBe(2);
  });

  it('mint authority changed by SetAuthority: authority_changed, once', async () => {
    const { chain } = world;
    const mint = world.fixtures.mints.liveAuthorities;
    const before = await readOne(mint.address);
    const newAuthority = (await chain.signer('watch:new-mint-authority')).address;
    await setAuthority(chain, {
      kind: 'token',
      owned: mint.address,
      current: await chain.signer('mint-authority:live-authorities'),
      type: AuthorityType.MintTokens,
      newAuthority,
    });
    const after = await readOne(mint.address);
    expect(stateHash(after.state)).not.toBe(stateHash(before.state));
    const alerts = alertsBetween(before, after);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      type: 'authority_changed',
      severity: 'high',
      previous: { mint_authority: mint.mintAuthority },
      current: { mint_authority: newAuthority },
      evidence: { method: 'getMultipleAccounts', slot: after.slot, raw: { owner: TOKEN_PROGRAM } },
    });
    expect(after.slot).toBeGreaterThan(before.slot);
    expect(alertsBetween(after, await readOne(mint.address))).toEqual([]);
  });

  it('a delegate approved on a token account: token_delegate_added, once', async () => {
    const holding = world.fixtures.mints.cleanToken.holders[0]!;
    const owner = await world.chain.signer('holder-01');
    expect(owner.address).toBe(holding.owner);
    const spender = (await world.chain.signer('watch:spender')).address;
    const before = await readOne(holding.tokenAccount);
    await approveDelegate(world.chain, {
      kind: 'token',
      tokenAccount: holding.tokenAccount,
      owner,
      delegate: spender,
      amount: 7n,
    });
    const after = await readOne(holding.tokenAccount);
    expect(stateHash(after.state)).not.toBe(stateHash(before.state));
    const alerts = alertsBetween(before, after);
    expect(alerts.map((a) => [a.type, a.severity, a.current])).toEqual([
      ['token_delegate_added', 'high', { delegate: spender, delegated_amount: '7' }],
    ]);
    expect(alerts[0]!.evidence).toMatchObject({ method: 'getMultipleAccounts', slot: after.slot });
  });

  it('a token account closed: account_closed, once', async () => {
    const { chain } = world;
    const owner = await chain.signer('watch:closer');
    const account = await createExtraTokenAccount(chain, {
      name: 'watch-closed',
      mint: world.fixtures.mints.zeroSupply.address,
      owner: owner.address,
      mintAuthority: await chain.signer('mint-authority:zero-supply'),
      amount: 0n,
    });
    const before = await readOne(account);
    expect(before.state).toMatchObject({ kind: 'token_account', exists: true });
    await chain.send([
      getCloseAccountInstruction(
        { account, destination: chain.payer.address, owner },
        { programAddress: TOKEN_PROGRAM },
      ),
    ]);
    const after = await readOne(account);
    expect(after.state).toMatchObject({ kind: 'missing', exists: false });
    expect(kindsOf(alertsBetween(before, after))).toEqual([['account_closed', 'high']]);
  });

  it("a program's upgrade authority handed over: authority_changed with the ProgramData as evidence", async () => {
    const { chain } = world;
    const program = world.fixtures.program;
    const before = await readOne(program.address);
    const successor = (await chain.signer('watch:upgrade-successor')).address;
    const current = await chain.signer('program-upgrade-authority');
    const SET_AUTHORITY = 4; // UpgradeableLoaderInstruction::SetAuthority (bincode u32 tag)
    const accounts: (AccountMeta | AccountSignerMeta)[] = [
      { address: program.programData, role: AccountRole.WRITABLE },
      { address: current.address, role: AccountRole.READONLY_SIGNER, signer: current },
      { address: successor, role: AccountRole.READONLY },
    ];
    const data = getU32Encoder().encode(SET_AUTHORITY);
    await chain.send([{ programAddress: BPF_LOADER_UPGRADEABLE, accounts, data }]);
    const after = await readOne(program.address);
    expect(stateHash(after.state)).not.toBe(stateHash(before.state));
    const alerts = alertsBetween(before, after);
    expect(alerts.map((a) => [a.type, a.severity, a.previous, a.current])).toEqual([
      [
        'authority_changed',
        'high',
        { upgrade_authority: program.upgradeAuthority },
        { upgrade_authority: successor },
      ],
    ]);
    expect(alerts[0]!.evidence.raw).toMatchObject({
      address: program.programData,
      owner: BPF_LOADER_UPGRADEABLE,
    });
  });

  it('lamports moved: balance_changed only past the threshold', async () => {
    const wallet = world.fixtures.wallets.plainWallet.address;
    const before = await readOne(wallet);
    await transferSol(world.chain, {
      from: world.chain.payer,
      to: wallet,
      amount: 2_000_000n,
    });
    const after = await readOne(wallet);
    expect(stateHash(after.state)).not.toBe(stateHash(before.state));
    expect(alertsBetween(before, after)).toEqual([]);
    expect(
      alertsBetween(before, after, { thresholds: { balance_change: { min_lamports: '2000001' } } }),
    ).toEqual([]);
    const alerts = alertsBetween(before, after, {
      thresholds: { balance_change: { min_lamports: '2000000' } },
    });
    expect(alerts.map((a) => [a.type, a.current])).toEqual([
      [
        'balance_changed',
        { lamports: (BigInt(before.state.lamports) + 2_000_000n).toString(), delta: '2000000' },
      ],
    ]);
  });
});

describe('readEvmStates (anvil)', () => {
  let anvil: RunningAnvil;
  let world: EvmWorld;
  let proxy: FaultProxy;
  let rpc: EvmRpc;
  let chain: Chain;

  beforeAll(async () => {
    anvil = await startAnvil();
    world = await buildEvmWorld(anvil.url);
    proxy = await startFaultProxy(anvil.url);
    rpc = testEvmRpc(proxy.url);
    chain = defineChain({
      id: anvil.chainId,
      name: 'anvil (watchlists)',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [anvil.url] } },
    });
  }, 60_000);

  afterAll(async () => {
    await proxy?.close();
    await anvil?.stop();
  });

  const anvilRpc = async (method: string, params: unknown[]) => {
    const res = await fetch(anvil.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    expect(((await res.json()) as { error?: unknown }).error).toBeUndefined();
  };
  const readOne = async (address: string): Promise<EvmStateRead> => (await readEvmStates(rpc, [address]))[0]!;
  /** Send a transaction as a fixture account and wait for it to be mined. */
  const send = async (
    key: Hex,
    tx: { to: Address; value?: bigint; authorizationList?: SignedAuthorizationList },
  ): Promise<void> => {
    const account = privateKeyToAccount(key);
    const wallet = createWalletClient({ account, chain, transport: http(anvil.url) });
    const hash = await wallet.sendTransaction({ account, chain, ...tx });
    const client = createPublicClient({ chain, transport: http(anvil.url), pollingInterval: 20 });
    expect((await client.waitForTransactionReceipt({ hash })).status).toBe('success');
  };

  it('reads every fixture at one block, in one batch after the block number, and decodes it', async () => {
    const f = world.fixtures;
    const addresses = Object.values(f).map((x) => x.address);
    proxy.resetStats();
    const reads = await readEvmStates(rpc, addresses);
    // eth_blockNumber, then 5 calls per address in batches of the client's batchMax (50).
    expect(proxy.stats.totalCalls).toBe(1 + 5 * addresses.length);
    expect(proxy.stats.roundTrips).toBe(1 + Math.ceil((5 * addresses.length) / 50));
    expect(new Set(reads.map((r) => r.block)).size).toBe(1);
    const by = Object.fromEntries(Object.keys(f).map((name, i) => [name, reads[i]!.state]));
    expect(by.delegatedWallet).toMatchObject({
      kind: 'delegated_wallet',
      delegate: f.walletImplementation.address,
    });
    expect(by.proxy).toMatchObject({
      kind: 'contract',
      implementation: f.proxy.proxy!.implementation,
      admin: f.proxy.proxy!.admin,
    });
    expect(by.plainContract).toMatchObject({
      code_hash: keccak256(f.plainContract.code),
      implementation: null,
    });
    expect(by.freshAddress).toMatchObject({ kind: 'missing', exists: false, nonce: 0, balance: '0' });
    expect(by.fundedEoa).toMatchObject({
      kind: 'wallet',
      nonce: f.fundedEoa.nonce,
      balance: f.fundedEoa.balance.toString(),
    });
  });

  it('the same state read twice hashes the same and raises nothing', async () => {
    const addresses = Object.values(world.fixtures).map((x) => x.address);
    const [first, second] = [await readEvmStates(rpc, addresses), await readEvmStates(rpc, addresses)];
    expect(second.map((r) => stateHash(r.state))).toEqual(first.map((r) => stateHash(r.state)));
    first.forEach((r, i) => expect(alertsBetween(r, second[i]!)).toEqual([]));
  });

  it('an EOA re-delegated (EIP-7702) to an unknown contract: delegation_changed, critical, once', async () => {
    const { delegatedWallet, maliciousDelegate, deployer } = world.fixtures;
    const before = await readOne(delegatedWallet.address);
    const signer = createWalletClient({
      account: privateKeyToAccount(delegatedWallet.privateKey!),
      chain,
      transport: http(anvil.url),
    });
    const authorization = await signer.signAuthorization({ contractAddress: maliciousDelegate.address });
    await send(deployer.privateKey!, { to: delegatedWallet.address, authorizationList: [authorization] });
    const after = await readOne(delegatedWallet.address);
    expect(stateHash(after.state)).not.toBe(stateHash(before.state));
    const verdict: Verdict = {
      level: 'high',
      score: 50,
      findings: [{ code: 'eip7702_delegated', severity: 'high' }],
    };
    const alerts = alertsBetween(before, after, { verdict });
    expect(alerts.map((a) => [a.type, a.severity, a.previous, a.current])).toEqual([
      [
        'delegation_changed',
        'critical',
        { delegate: world.fixtures.walletImplementation.address },
        { delegate: maliciousDelegate.address },
      ],
    ]);
    expect(alerts[0]!.evidence).toEqual({
      method: 'eth_getCode',
      block: after.block,
      raw: `0xef0100${maliciousDelegate.address.slice(2).toLowerCase()}`,
    });
  });

  it("a proxy's EIP-1967 implementation replaced: implementation_changed, once", async () => {
    const { proxy: target, plainContract } = world.fixtures;
    const before = await readOne(target.address);
    const word = `0x${plainContract.address.slice(2).toLowerCase().padStart(64, '0')}`;
    await anvilRpc('anvil_setStorageAt', [target.address, EIP1967_IMPLEMENTATION_SLOT, word]);
    await anvilRpc('anvil_mine', ['0x1']);
    const after = await readOne(target.address);
    expect(stateHash(after.state)).not.toBe(stateHash(before.state));
    const alerts = alertsBetween(before, after);
    expect(alerts.map((a) => [a.type, a.severity, a.current])).toEqual([
      ['implementation_changed', 'high', { implementation: plainContract.address }],
    ]);
    expect(alerts[0]!.evidence).toEqual({
      method: 'eth_getStorageAt',
      block: after.block,
      raw: { slot: EIP1967_IMPLEMENTATION_SLOT, value: word },
    });
  });

  it('a fresh address funded: account_created (no balance_changed beside it)', async () => {
    const { freshAddress, deployer } = world.fixtures;
    const before = await readOne(freshAddress.address);
    await send(deployer.privateKey!, { to: freshAddress.address, value: parseEther('0.5') });
    const after = await readOne(freshAddress.address);
    const alerts = alertsBetween(before, after, { thresholds: { balance_change: { min_wei: '1' } } });
    expect(kindsOf(alerts)).toEqual([['account_created', 'medium']]);
    expect(alerts[0]!.current).toMatchObject({
      exists: true,
      kind: 'wallet',
      balance: parseEther('0.5').toString(),
    });
  });

  it('ether sent from a wallet: balance_changed past a percentage threshold, nothing for the nonce', async () => {
    const { fundedEoa, sanctioned } = world.fixtures;
    const before = await readOne(fundedEoa.address);
    await send(fundedEoa.privateKey!, { to: sanctioned.address, value: parseEther('100') });
    const after = await readOne(fundedEoa.address);
    expect(after.state).toMatchObject({ nonce: fundedEoa.nonce + 1 });
    expect(alertsBetween(before, after)).toEqual([]);
    const alerts = alertsBetween(before, after, { thresholds: { balance_change: { percent: 0.5 } } });
    expect(kindsOf(alerts)).toEqual([['balance_changed', 'medium']]);
    expect(alerts[0]!.evidence).toMatchObject({ method: 'eth_getBalance', block: after.block });
  });
});

function kindsOf(alerts: { type: string; severity: string }[]): [string, string][] {
  return alerts.map((a) => [a.type, a.severity]);
}
