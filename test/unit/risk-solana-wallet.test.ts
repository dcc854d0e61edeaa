import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_NETWORKS } from '../../src/chains/registry.js';
import type { SolanaRpc } from '../../src/chains/solana.js';
import type { Finding } from '../../src/risk/findings.js';
import {
  classifySolanaAccount,
  isSolanaTargetTypeMismatch,
  SYSTEM_PROGRAM,
  TOKEN_PROGRAM,
} from '../../src/risk/solana/kind.js';
import { analyzeSolanaProgram, NO_AUTHORITY, programDataAddress } from '../../src/risk/solana/program.js';
import { analyzeSolanaWallet, formatSol, type WalletTokenAccount } from '../../src/risk/solana/wallet.js';
import type { ChainAnalysis } from '../../src/risk/types.js';
import type { SolanaFacade } from '../support/solana/facade.js';
import { MEMO_PROGRAM } from '../support/solana/program.js';
import { testSolanaRpc } from '../support/rpc-clients.js';
import { buildSolanaWorld, type SolanaWorld, type WalletFixture } from '../support/solana/fixtures.js';

/*
 * The Solana wallet and program analyzers against the real LiteSVM world, over HTTP JSON-RPC through the
 * facade, with the JsonRpcClient + SolanaRpc the service builds: what they conclude is what the bytes say.
 */

const MAINNET = BUILT_IN_NETWORKS.find((n) => n.chain === 'solana' && n.network === 'mainnet')!;
const opts = { network: MAINNET };

let world: SolanaWorld;
let facade: SolanaFacade;

beforeAll(async () => {
  world = await buildSolanaWorld();
  facade = await world.startFacade();
}, 60_000);

afterAll(async () => {
  await facade?.close();
});

afterEach(async () => {
  facade.faults.clear();
  facade.setLatency(0);
  await facade.idle();
});

/** A fresh client per call site: no circuit or in-flight state carried between tests. */
function solanaRpc(tuning: { deadlineMs?: number; retries?: number } = {}): SolanaRpc {
  return testSolanaRpc(facade.url, {
    deadlineMs: tuning.deadlineMs ?? 5000,
    timeoutMs: 4000,
    retries: tuning.retries ?? 1,
    concurrency: 16,
    batchMax: 100,
    circuitFailures: 50,
  });
}

const codes = (a: ChainAnalysis) =>
  a.findings
    .filter((f) => !f.suppressed)
    .map((f) => f.code)
    .sort();
const one = (a: ChainAnalysis, code: Finding['code']): Finding => {
  const found = a.findings.filter((f) => f.code === code);
  expect(found, `${code} in ${JSON.stringify(codes(a))}`).toHaveLength(1);
  return found[0]!;
};
function expectEvidence(a: ChainAnalysis): void {
  for (const f of a.findings) {
    expect(f.evidence.method, f.code).toMatch(/^get[A-Z]\w+$/);
    expect(f.evidence.slot, `${f.code} slot`).toEqual(expect.any(Number));
  }
}

describe('analyzeSolanaWallet over the LiteSVM world', () => {
  const walletNames = [
    'oldWallet',
    'newWallet',
    'delegatedWallet',
    'delegatedWallet2022',
    'frozenWallet',
    'counterpartyWallet',
    'plainWallet',
  ] as const;

  it.each(walletNames)('%s: exactly the fixture’s expected findings, with evidence', async (name) => {
    const fixture: WalletFixture = world.fixtures.wallets[name];
    const a = await analyzeSolanaWallet(solanaRpc(), fixture.address, opts);
    const expected = fixture.expect.findings.filter((c) => c !== 'interacted_with_flagged').sort();
    expect(codes(a)).toEqual(expected);
    expect(a.complete).toBe(true);
    expect(a.kind).toBe('wallet');
    expect(a.dataAsOf.slot).toBe(Number(world.chain.slot));
    expectEvidence(a);
    expect(a.facts).toMatchObject({
      exists: true,
      kind: 'wallet',
      owner_program: SYSTEM_PROGRAM,
      activity_count: expect.any(Number) as unknown,
      activity_count_capped: false,
      token_accounts: fixture.tokenAccounts.length,
    });
    expect(a.facts.balance).toBe(formatSol(BigInt(a.facts.balance_raw as string)));
    const firstSeen = Date.parse(a.facts.first_seen_at as string);
    expect(Math.round((Date.now() - firstSeen) / 86_400_000)).toBe(Math.round(fixture.oldestTransactionDays));
  });

  it('plainWallet: no findings; balance and balance_raw exact', async () => {
    const { address } = world.fixtures.wallets.plainWallet;
    const a = await analyzeSolanaWallet(solanaRpc(), address, opts);
    expect(a.findings).toEqual([]);
    const lamports = world.svm.getBalance(address)!;
    expect(a.facts.balance_raw).toBe(lamports.toString());
    expect(a.facts.balance).toBe(formatSol(lamports));
    expect(a.facts).toMatchObject({ balance: '10', balance_raw: '10000000000' }); // funded 10 SOL, never spent
  });

  it('newWallet: new_account states the page cap; a full page is not "new" and says why', async () => {
    const { address } = world.fixtures.wallets.newWallet;
    const a = await analyzeSolanaWallet(solanaRpc(), address, opts);
    const f = one(a, 'new_account');
    expect(f.severity).toBe('low');
    expect(f.evidence).toMatchObject({
      method: 'getSignaturesForAddress',
      value: { page_limit: 1000, page_full: false, signatures_in_page: 2, threshold_days: 7 },
    });
    expect(f.detail).toMatch(/limit 1000/);

    const capped = await analyzeSolanaWallet(solanaRpc(), address, { ...opts, signaturesPageLimit: 1 });
    expect(codes(capped)).toEqual([]);
    expect(capped.facts).toMatchObject({
      activity_count: 1,
      activity_count_capped: true,
      first_seen_at: null,
      history_page_limit: 1,
    });
    expect(capped.facts.first_seen_note).toMatch(/full/);

    // The only clock: ten days on, the same chain state is no longer new.
    const later = new Date(Date.now() + 10 * 86_400_000);
    expect(codes(await analyzeSolanaWallet(solanaRpc(), address, { ...opts, now: later }))).toEqual([]);
  });

  it.each(['delegatedWallet', 'delegatedWallet2022'] as const)(
    '%s: token_delegate_set lists account, mint, delegate and allowance',
    async (name) => {
      const fixture = world.fixtures.wallets[name];
      const a = await analyzeSolanaWallet(solanaRpc(), fixture.address, opts);
      const f = one(a, 'token_delegate_set');
      expect(f.severity).toBe('medium');
      expect(f.evidence.method).toBe('getTokenAccountsByOwner');
      const [held] = fixture.tokenAccounts;
      const expected: WalletTokenAccount = {
        token_account: held!.address,
        program: held!.program,
        mint: held!.mint,
        amount: (1_000n * 10n ** 6n).toString(),
        delegate: world.actors.delegateSpender,
        delegated_amount: (500n * 10n ** 6n).toString(),
        frozen: false,
      };
      expect(f.evidence.value).toEqual([expected]);
      expect(a.facts.delegated_token_accounts).toEqual([expected]);
      expect(f.detail).toContain(world.actors.delegateSpender);
    },
  );

  it('frozenWallet: frozen_token_accounts (info) lists the frozen account', async () => {
    const fixture = world.fixtures.wallets.frozenWallet;
    const a = await analyzeSolanaWallet(solanaRpc(), fixture.address, opts);
    const f = one(a, 'frozen_token_accounts');
    expect(f.severity).toBe('info');
    expect(f.evidence.value).toMatchObject([
      {
        token_account: fixture.tokenAccounts[0]!.address,
        mint: fixture.tokenAccounts[0]!.mint,
        frozen: true,
      },
    ]);
  });

  it('counterpartyWallet: recent account keys go to listInputs (no list applied here)', async () => {
    const { address } = world.fixtures.wallets.counterpartyWallet;
    const a = await analyzeSolanaWallet(solanaRpc(), address, opts);
    const counterparties = (a.listInputs.counterparties ?? []).map((c) => c.address);
    expect(counterparties).toContain(world.actors.flaggedCounterparty);
    expect(counterparties).not.toContain(address);
    expect(counterparties).not.toContain(SYSTEM_PROGRAM);
    expect(new Set(counterparties).size).toBe(counterparties.length);
    expect(a.findings.map((f) => f.code)).not.toContain('interacted_with_flagged');
    expect(a.facts.recent_transactions_checked).toBe(a.facts.activity_count);

    // Only the most recent N transactions are read: N = 1 is the transfer to the flagged address.
    facade.stats.reset();
    const latest = await analyzeSolanaWallet(solanaRpc(), address, { ...opts, recentTxLimit: 1 });
    expect(facade.stats.callCount('getTransaction')).toBe(1);
    expect(latest.listInputs.counterparties?.map((c) => c.address)).toContain(
      world.actors.flaggedCounterparty,
    );
  });

  it('missing: account_not_found (low), exists false, balance 0', async () => {
    const a = await analyzeSolanaWallet(solanaRpc(), world.fixtures.missing.address, opts);
    expect(codes(a)).toEqual(world.fixtures.missing.expect.findings);
    const f = one(a, 'account_not_found');
    expect(f.severity).toBe('low');
    expect(f.evidence).toMatchObject({ method: 'getMultipleAccounts', value: { account: null } });
    expect(a.kind).toBe('missing');
    expect(a.complete).toBe(true);
    expect(a.facts).toMatchObject({
      exists: false,
      kind: 'missing',
      owner_program: null,
      balance: '0',
      balance_raw: '0',
      activity_count: 0,
      first_seen_at: null,
    });
    expectEvidence(a);
  });

  it('tokenAccount and program sent as wallets: their kind, for target_type_mismatch', async () => {
    const token = await analyzeSolanaWallet(solanaRpc(), world.fixtures.tokenAccount.address, opts);
    expect(token.kind).toBe('token_account');
    expect(token.facts).toMatchObject({ exists: true, kind: 'token_account', owner_program: TOKEN_PROGRAM });
    expect(isSolanaTargetTypeMismatch(token.kind, 'wallet')).toBe(true);

    const program = await analyzeSolanaWallet(solanaRpc(), world.fixtures.program.address, opts);
    expect(program.kind).toBe('program');
    expect(isSolanaTargetTypeMismatch(program.kind, 'wallet')).toBe(true);
    expect(isSolanaTargetTypeMismatch(program.kind, 'program')).toBe(false);
  });

  it('two sequential round trips: state batch ∥ signatures, then one batch of transactions', async () => {
    const { address } = world.fixtures.wallets.counterpartyWallet;
    const rpc = solanaRpc();
    facade.stats.reset();
    facade.setLatency(50);
    const a = await analyzeSolanaWallet(rpc, address, opts);
    expect(a.complete).toBe(true);
    expect(facade.stats.sequentialRoundTrips()).toBeLessThanOrEqual(2);
    expect(facade.stats.roundTrips).toBe(3);
    const trips = facade.stats.log.map((t) => [...t.methods].sort().join(','));
    expect(trips).toContain('getMultipleAccounts,getTokenAccountsByOwner,getTokenAccountsByOwner');
    expect(trips).toContain('getSignaturesForAddress');
    expect(facade.stats.callCount('getTransaction')).toBe(a.facts.activity_count);
  });

  it('a failing getSignaturesForAddress: check_incomplete names it, complete false, token findings kept', async () => {
    facade.faults.always({ kind: 'http500' }, { method: 'getSignaturesForAddress' });
    facade.stats.reset();
    const fixture = world.fixtures.wallets.delegatedWallet;
    const a = await analyzeSolanaWallet(solanaRpc(), fixture.address, opts);
    expect(a.complete).toBe(false);
    expect(codes(a)).toEqual(['check_incomplete', 'token_delegate_set']);
    const f = one(a, 'check_incomplete');
    expect(f.severity).toBe('info');
    expect(f.evidence.method).toBe('getSignaturesForAddress');
    expect(f.detail).toMatch(/getSignaturesForAddress/);
    expect(f.evidence.value).toMatchObject({ error: { code: 'provider_unavailable' } });
    expect(a.facts).toMatchObject({
      exists: true,
      kind: 'wallet',
      activity_count: null,
      first_seen_at: null,
    });
    expect(facade.stats.callCount('getTransaction')).toBe(0);
    expectEvidence(a);
  });

  it('a failing getTransaction batch: counterparties incomplete, the rest reported', async () => {
    facade.faults.always({ kind: 'http500' }, { method: 'getTransaction' });
    const a = await analyzeSolanaWallet(solanaRpc(), world.fixtures.wallets.newWallet.address, opts);
    expect(a.complete).toBe(false);
    expect(codes(a)).toEqual(['check_incomplete', 'new_account']);
    const f = one(a, 'check_incomplete');
    expect(f.evidence.method).toBe('getTransaction');
    expect(f.detail).toMatch(/2 recent transactions/);
    expect(f.evidence.value).toMatchObject({ signatures: expect.any(Array) as unknown });
    expect(a.listInputs.counterparties).toEqual([]);
    expect(a.facts).toMatchObject({ activity_count: 2, recent_transactions_checked: 0 });
  });

  it('the caller’s deadline passed (aborted signal): incomplete, never a verdict', async () => {
    const a = await analyzeSolanaWallet(solanaRpc(), world.fixtures.wallets.delegatedWallet.address, {
      ...opts,
      signal: AbortSignal.abort(),
    });
    expect(a.complete).toBe(false);
    expect(codes(a)).toEqual(Array(4).fill('check_incomplete'));
    expect(a.findings[0]!.detail).toMatch(/abandoned/);
  });

  it('provider down: every sub-check incomplete, nothing concluded, kind unknown in facts', async () => {
    facade.faults.always({ kind: 'http500' });
    const a = await analyzeSolanaWallet(solanaRpc({ retries: 0 }), world.fixtures.missing.address, opts);
    expect(a.complete).toBe(false);
    expect(codes(a)).toEqual(Array(4).fill('check_incomplete'));
    expect(a.findings.map((f) => f.evidence.method).sort()).toEqual([
      'getMultipleAccounts',
      'getSignaturesForAddress',
      'getTokenAccountsByOwner',
      'getTokenAccountsByOwner',
    ]);
    expect(a.facts).toMatchObject({ exists: null, kind: null, balance: null, token_accounts: null });
    expect(isSolanaTargetTypeMismatch(a.facts.kind as null, 'wallet')).toBe(false);
  });
});

describe('analyzeSolanaProgram over the LiteSVM world', () => {
  it('the upgradeable program: program_upgradeable with its authority, ProgramData facts', async () => {
    const fixture = world.fixtures.program;
    expect(await programDataAddress(fixture.address)).toBe(fixture.programData);
    facade.stats.reset();
    const a = await analyzeSolanaProgram(solanaRpc(), fixture.address, opts);
    expect(facade.stats.roundTrips).toBe(1);
    expect(a.kind).toBe('program');
    expect(a.complete).toBe(true);
    expect(codes(a)).toEqual(['program_upgradeable']);
    const f = one(a, 'program_upgradeable');
    expect(f.severity).toBe('medium');
    expect(f.evidence).toMatchObject({
      method: 'getAccountInfo',
      value: { upgrade_authority: fixture.upgradeAuthority, programdata_address: fixture.programData },
    });
    expect(a.facts).toMatchObject({
      exists: true,
      kind: 'program',
      executable: true,
      loader: 'bpf-upgradeable',
      upgrade_authority: fixture.upgradeAuthority,
      programdata_address: fixture.programData,
      last_deploy_slot: expect.any(Number) as unknown,
    });
    expectEvidence(a);
  });

  it('no upgrade authority is an explicit "none": loader-v2 (SPL Memo), loader-v3 made immutable (SPL Token)', async () => {
    const memo = await analyzeSolanaProgram(solanaRpc(), MEMO_PROGRAM, opts);
    expect(memo.findings).toEqual([]);
    expect(memo.facts).toMatchObject({
      kind: 'program',
      loader: 'bpf-loader-v2',
      upgrade_authority: NO_AUTHORITY,
      programdata_address: null,
    });
    // LiteSVM deploys its SPL Token under the upgradeable loader with the authority removed.
    const token = await analyzeSolanaProgram(solanaRpc(), TOKEN_PROGRAM, opts);
    expect(token.findings).toEqual([]);
    expect(token.facts).toMatchObject({
      loader: 'bpf-upgradeable',
      upgrade_authority: NO_AUTHORITY,
      programdata_address: await programDataAddress(TOKEN_PROGRAM),
      last_deploy_slot: expect.any(Number) as unknown,
    });
  });

  it('not a program: its kind, no program facts; missing: account_not_found', async () => {
    const wallet = await analyzeSolanaProgram(solanaRpc(), world.fixtures.wallets.plainWallet.address, opts);
    expect(wallet.kind).toBe('wallet');
    expect(wallet.findings).toEqual([]);
    expect(wallet.facts).toMatchObject({ executable: false, loader: null, upgrade_authority: null });
    expect(isSolanaTargetTypeMismatch(wallet.kind, 'program')).toBe(true);

    const missing = await analyzeSolanaProgram(solanaRpc(), world.fixtures.missing.address, opts);
    expect(missing.kind).toBe('missing');
    expect(codes(missing)).toEqual(['account_not_found']);
    expect(missing.facts.exists).toBe(false);
  });

  it('provider down: upgrade authority unknown (null, not "none"), check_incomplete', async () => {
    // The ProgramData read shares the program account's batch: the fault takes both down.
    facade.faults.always({ kind: 'http500' }, { method: 'getAccountInfo' });
    const a = await analyzeSolanaProgram(solanaRpc({ retries: 0 }), world.fixtures.program.address, opts);
    expect(a.complete).toBe(false);
    expect(codes(a)).toEqual(['check_incomplete']);
    expect(one(a, 'check_incomplete').evidence.method).toBe('getMultipleAccounts');
    expect(a.facts).toMatchObject({ exists: null, executable: null, upgrade_authority: null });
  });
});

describe('classifySolanaAccount', () => {
  it('tells mints, token accounts (with Token-2022 extensions too), programs and loader accounts apart', async () => {
    const m = world.fixtures.mints;
    const transferFeeHolder = m.transferFeeLow.holders[0]!.tokenAccount; // carries TransferFeeAmount
    const addresses = [
      m.cleanToken.address,
      m.permanentDelegate.address,
      m.token2022MetadataMutable.address,
      transferFeeHolder,
      world.fixtures.tokenAccount.address,
      world.fixtures.program.address,
      world.fixtures.program.programData,
      world.fixtures.wallets.plainWallet.address,
      world.fixtures.missing.address,
    ];
    const { accounts } = await solanaRpc().getMultipleAccounts(addresses);
    const kinds = accounts.map((a) => classifySolanaAccount(a));
    expect(kinds.map((k) => k.kind)).toEqual([
      'token',
      'token',
      'token',
      'token_account',
      'token_account',
      'program',
      'account',
      'wallet',
      'missing',
    ]);
    expect(kinds.map((k) => k.tokenProgram)).toEqual([
      'token',
      'token-2022',
      'token-2022',
      'token-2022',
      'token',
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(kinds[3]!.class).toBe('token_account');
    expect(accounts[3]!.data.length).toBeGreaterThan(165);
    expect(kinds[6]).toMatchObject({ class: 'loader_account', loader: 'bpf-upgradeable' });
  });

  it('target_type_mismatch only for a known, existing, different kind', () => {
    expect(isSolanaTargetTypeMismatch('token', 'token')).toBe(false);
    expect(isSolanaTargetTypeMismatch('wallet', 'token')).toBe(true);
    expect(isSolanaTargetTypeMismatch('missing', 'wallet')).toBe(false);
    expect(isSolanaTargetTypeMismatch(null, 'program')).toBe(false);
    expect(isSolanaTargetTypeMismatch('account', 'wallet')).toBe(true);
  });

  it('formatSol is exact', () => {
    expect(formatSol(0n)).toBe('0');
    expect(formatSol(1_500_000_000n)).toBe('1.5');
    expect(formatSol(1n)).toBe('0.000000001');
    expect(formatSol(18446744073709551615n)).toBe('18446744073.709551615');
  });
});
