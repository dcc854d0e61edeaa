import { describe, expect, it } from 'vitest';
import {
  diffAlerts,
  type AlertDraft,
  type AlertThresholds,
  type ChainPosition,
  type CurrentObservation,
  type PreviousObservation,
  type Verdict,
} from '../../src/watchlists/diff.js';
import {
  stateHash,
  type EvmEvidence,
  type EvmWatchedState,
  type MintState,
  type ProgramState,
  type SolanaEvidence,
  type SolanaWatchedState,
  type TokenAccountState,
  type WatchedState,
} from '../../src/watchlists/state.js';

/*
 * The alert diff is pure: every case here is a (previous snapshot, current state, verdicts) made by hand,
 * and the expectation is the exact list of alert types with their severities.
 */

const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const TOKEN_2022 = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
const LOADER_V3 = 'BPFLoaderUpgradeab1e11111111111111111111111';
const SYSTEM = '11111111111111111111111111111111';
const A = 'AuthA111111111111111111111111111111111111111';
const B = 'AuthB111111111111111111111111111111111111111';
const ENTRY = 'entry-1';

const mint = (over: Partial<MintState> = {}): SolanaWatchedState => ({
  family: 'solana',
  kind: 'mint',
  exists: true,
  owner_program: TOKEN_2022,
  lamports: '1461600',
  executable: false,
  mint: {
    token_program: 'token-2022',
    decimals: 6,
    supply: '1000000',
    mint_authority: A,
    freeze_authority: null,
    extensions: [],
    permanent_delegate: null,
    transfer_hook_program: null,
    transfer_hook_authority: null,
    transfer_fee_authority: null,
    transfer_fee_bps: null,
    pausable_authority: null,
    paused: null,
    mint_close_authority: null,
    metadata_pointer_authority: null,
    metadata_address: null,
    metadata_update_authority: null,
    default_account_state: null,
    ...over,
  },
});

const tokenAccount = (over: Partial<TokenAccountState> = {}): SolanaWatchedState => ({
  family: 'solana',
  kind: 'token_account',
  exists: true,
  owner_program: TOKEN_PROGRAM,
  lamports: '2039280',
  executable: false,
  token_account: {
    token_program: 'spl-token',
    mint: A,
    owner: B,
    amount: '1000',
    delegate: null,
    delegated_amount: '0',
    state: 'initialized',
    close_authority: null,
    ...over,
  },
});

const program = (over: Partial<ProgramState> = {}): SolanaWatchedState => ({
  family: 'solana',
  kind: 'program',
  exists: true,
  owner_program: LOADER_V3,
  lamports: '1141440',
  executable: true,
  program: {
    loader: 'bpf-upgradeable',
    programdata_address: B,
    upgrade_authority: A,
    last_deploy_slot: 100,
    ...over,
  },
});

const wallet = (lamports: string): SolanaWatchedState => ({
  family: 'solana',
  kind: 'system_account',
  exists: true,
  owner_program: SYSTEM,
  lamports,
  executable: false,
  data_len: 0,
  data_hash: null,
});

const MISSING_SOLANA: SolanaWatchedState = {
  family: 'solana',
  kind: 'missing',
  exists: false,
  owner_program: null,
  lamports: '0',
  executable: false,
  data_len: 0,
  data_hash: null,
};

const IMPL = '0x1111111111111111111111111111111111111111';
const OTHER = '0x2222222222222222222222222222222222222222';
const evm = (over: Partial<EvmWatchedState> = {}): EvmWatchedState => ({
  family: 'evm',
  kind: 'wallet',
  exists: true,
  nonce: 1,
  balance: '1000000000000000000',
  code_hash: '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
  code_size: 0,
  delegate: null,
  implementation: null,
  admin: null,
  ...over,
});

const before = (state: WatchedState, at: ChainPosition, verdict?: Verdict): PreviousObservation => ({
  ...at,
  state,
  hash: stateHash(state),
  verdict,
});

/** previous → current for one entry; positions default to slot/block 10 → 20 by family. */
function diff(
  from: WatchedState | null,
  to: WatchedState,
  opts: {
    thresholds?: AlertThresholds;
    verdicts?: [Verdict | undefined, Verdict | undefined];
    at?: [number, number];
    evidence?: SolanaEvidence | EvmEvidence;
    entryId?: string;
  } = {},
): AlertDraft[] {
  const [was, is] = opts.at ?? [10, 20];
  const pos = (n: number): ChainPosition => (to.family === 'solana' ? { slot: n } : { block: n });
  const current: CurrentObservation = {
    ...pos(is),
    state: to,
    evidence: opts.evidence,
    verdict: opts.verdicts?.[1],
  };
  return diffAlerts({
    entryId: opts.entryId ?? ENTRY,
    previous: from ? before(from, pos(was), opts.verdicts?.[0]) : null,
    current,
    thresholds: opts.thresholds,
  });
}

const kinds = (alerts: AlertDraft[]) => alerts.map((a) => [a.type, a.severity]);

const verdict = (
  level: Verdict['level'],
  findings: Verdict['findings'] = [],
  extra: Partial<Verdict> = {},
) => ({
  level,
  score: { low: 0, medium: 25, high: 50, critical: 90 }[level],
  findings,
  ...extra,
});

describe('diffAlerts: baseline and unchanged', () => {
  it('raises nothing on the first scan (the baseline), whatever the state', () => {
    expect(diff(null, mint({ permanent_delegate: B }))).toEqual([]);
    expect(diff(null, evm({ delegate: OTHER }), { verdicts: [undefined, verdict('critical')] })).toEqual([]);
  });

  it('raises nothing when nothing changed, even at a later slot', () => {
    for (const s of [mint(), tokenAccount(), program(), wallet('5'), MISSING_SOLANA, evm()])
      expect(diff(s, s)).toEqual([]);
  });

  it('refuses to compare a Solana snapshot with an EVM state', () => {
    expect(() => diff(mint(), evm())).toThrow(/solana snapshot against a evm state/);
  });
});

describe('diffAlerts: Solana authorities and settings', () => {
  it('mint authority changed: one authority_changed (high), previous and current values, evidence', () => {
    const evidence: SolanaEvidence = {
      method: 'getMultipleAccounts',
      slot: 20,
      raw: {
        account: { owner: TOKEN_2022, lamports: '1461600', executable: false, data: 'AAAA', data_len: 3 },
      },
    };
    const alerts = diff(mint(), mint({ mint_authority: B }), { evidence });
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      type: 'authority_changed',
      severity: 'high',
      previous: { mint_authority: A },
      current: { mint_authority: B },
      evidence: { method: 'getMultipleAccounts', slot: 20, raw: evidence.raw.account },
    });
    expect(alerts[0]!.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it('without the read evidence, the raw value is the new field value', () => {
    const [alert] = diff(mint(), mint({ freeze_authority: B }));
    expect(alert!.evidence).toEqual({
      method: 'getMultipleAccounts',
      slot: 20,
      raw: { freeze_authority: B },
    });
  });

  it('revoking an authority is low; a permanent delegate appearing is critical', () => {
    expect(kinds(diff(mint(), mint({ mint_authority: null })))).toEqual([['authority_changed', 'low']]);
    expect(kinds(diff(mint(), mint({ permanent_delegate: B })))).toEqual([['authority_changed', 'critical']]);
  });

  it('Token-2022 settings: fee raised high / lowered low, paused high / resumed low, default frozen high', () => {
    const fee = (bps: number) => mint({ transfer_fee_authority: A, transfer_fee_bps: bps });
    expect(kinds(diff(fee(50), fee(500)))).toEqual([['authority_changed', 'high']]);
    expect(kinds(diff(fee(500), fee(50)))).toEqual([['authority_changed', 'low']]);
    const paused = (p: boolean) => mint({ pausable_authority: A, paused: p });
    expect(kinds(diff(paused(false), paused(true)))).toEqual([['authority_changed', 'high']]);
    expect(kinds(diff(paused(true), paused(false)))).toEqual([['authority_changed', 'low']]);
    const frozen = diff(
      mint({ default_account_state: 'initialized' }),
      mint({ default_account_state: 'frozen' }),
    );
    expect(kinds(frozen)).toEqual([['authority_changed', 'high']]);
  });

  it('a transfer-hook program replaced is implementation_changed; metadata update authority is an authority', () => {
    const hook = (p: string) => mint({ transfer_hook_program: p, transfer_hook_authority: A });
    expect(kinds(diff(hook(A), hook(B)))).toEqual([['implementation_changed', 'high']]);
    const alerts = diff(mint({ metadata_update_authority: A }), mint({ metadata_update_authority: B }));
    expect(alerts.map((a) => a.current)).toEqual([{ metadata_update_authority: B }]);
  });

  it('several fields at once: one alert each, in a fixed order, with distinct fingerprints', () => {
    const alerts = diff(mint(), mint({ mint_authority: null, freeze_authority: B, supply: '5' }));
    expect(alerts.map((a) => a.current)).toEqual([{ mint_authority: null }, { freeze_authority: B }]);
    expect(new Set(alerts.map((a) => a.fingerprint)).size).toBe(2);
  });

  it('supply and extension list changes write a snapshot but raise nothing', () => {
    expect(diff(mint(), mint({ supply: '2' }))).toEqual([]);
    expect(stateHash(mint())).not.toBe(stateHash(mint({ supply: '2' })));
  });

  it('program: upgrade authority (authority_changed, ProgramData evidence) and a redeploy (implementation_changed)', () => {
    const raw = { owner: LOADER_V3, lamports: '1', executable: false, data: 'AwAAAA==', data_len: 45 };
    const evidence: SolanaEvidence = {
      method: 'getMultipleAccounts',
      slot: 20,
      raw: { account: null, program_data: { ...raw, address: B, slot: 21 } },
    };
    const [alert] = diff(program(), program({ upgrade_authority: B }), { evidence });
    expect(alert).toMatchObject({ type: 'authority_changed', evidence: { raw: { address: B, slot: 21 } } });
    expect(kinds(diff(program(), program({ upgrade_authority: null })))).toEqual([
      ['authority_changed', 'low'],
    ]);
    expect(kinds(diff(program(), program({ last_deploy_slot: 200 })))).toEqual([
      ['implementation_changed', 'high'],
    ]);
  });
});

describe('diffAlerts: token accounts', () => {
  it('a delegate set: token_delegate_added (high), once', () => {
    const alerts = diff(tokenAccount(), tokenAccount({ delegate: B, delegated_amount: '10' }));
    expect(kinds(alerts)).toEqual([['token_delegate_added', 'high']]);
    expect(alerts[0]!.current).toEqual({ delegate: B, delegated_amount: '10' });
  });

  it('another delegate, or a larger allowance, is a new delegation; a smaller one or a revoke is not', () => {
    const d = (delegate: string | null, amount: string) =>
      tokenAccount({ delegate, delegated_amount: amount });
    expect(kinds(diff(d(A, '10'), d(B, '10')))).toEqual([['token_delegate_added', 'high']]);
    expect(kinds(diff(d(A, '10'), d(A, '50')))).toEqual([['token_delegate_added', 'high']]);
    expect(diff(d(A, '50'), d(A, '10'))).toEqual([]);
    expect(diff(d(A, '50'), d(null, '0'))).toEqual([]);
  });

  it('frozen (high), thawed (low), a new owner (high)', () => {
    expect(kinds(diff(tokenAccount(), tokenAccount({ state: 'frozen' })))).toEqual([
      ['authority_changed', 'high'],
    ]);
    expect(kinds(diff(tokenAccount({ state: 'frozen' }), tokenAccount()))).toEqual([
      ['authority_changed', 'low'],
    ]);
    expect(kinds(diff(tokenAccount(), tokenAccount({ owner: A })))).toEqual([['authority_changed', 'high']]);
  });
});

describe('diffAlerts: existence', () => {
  it('closed (high) and created (medium): only that alert, whatever else changed', () => {
    expect(kinds(diff(mint({ permanent_delegate: B }), MISSING_SOLANA))).toEqual([
      ['account_closed', 'high'],
    ]);
    expect(kinds(diff(MISSING_SOLANA, mint({ permanent_delegate: B })))).toEqual([
      ['account_created', 'medium'],
    ]);
    const [created] = diff(MISSING_SOLANA, wallet('7'));
    expect(created).toMatchObject({
      previous: { exists: false, kind: 'missing' },
      current: { exists: true, kind: 'system_account', lamports: '7' },
    });
    expect(diff(MISSING_SOLANA, MISSING_SOLANA)).toEqual([]);
  });

  it('another kind of account at the address (closed and re-created in between): account_created, high', () => {
    expect(kinds(diff(mint(), tokenAccount()))).toEqual([['account_created', 'high']]);
    expect(kinds(diff(wallet('5'), { ...wallet('5'), owner_program: TOKEN_PROGRAM }))).toEqual([
      ['account_created', 'high'],
    ]);
  });

  it('EVM: an address that gets funded is created; emptied with nonce 0 and no code, closed', () => {
    const fresh = evm({ exists: false, kind: 'missing', nonce: 0, balance: '0' });
    expect(kinds(diff(fresh, evm({ nonce: 0 })))).toEqual([['account_created', 'medium']]);
    expect(kinds(diff(evm({ nonce: 0 }), fresh))).toEqual([['account_closed', 'high']]);
  });
});

describe('diffAlerts: balances and thresholds', () => {
  it('no threshold: a balance change raises nothing', () => {
    expect(diff(wallet('1000'), wallet('1'))).toEqual([]);
  });

  it('an absolute minimum per asset', () => {
    const t = { balance_change: { min_lamports: '500' } };
    expect(diff(wallet('1000'), wallet('600'), { thresholds: t })).toEqual([]);
    const alerts = diff(wallet('1000'), wallet('500'), { thresholds: t });
    expect(alerts.map((a) => [a.type, a.severity, a.previous, a.current])).toEqual([
      ['balance_changed', 'medium', { lamports: '1000' }, { lamports: '500', delta: '-500' }],
    ]);
    // The wei minimum does not apply to lamports.
    expect(diff(wallet('1000'), wallet('1'), { thresholds: { balance_change: { min_wei: '1' } } })).toEqual(
      [],
    );
  });

  it('a percentage of the previous balance (fractions exact), any move from 0', () => {
    const t = { balance_change: { percent: 12.5 } };
    expect(diff(wallet('1000'), wallet('1124'), { thresholds: t })).toEqual([]);
    expect(kinds(diff(wallet('1000'), wallet('1125'), { thresholds: t }))).toEqual([
      ['balance_changed', 'medium'],
    ]);
    const empty = { ...wallet('0') };
    expect(kinds(diff(empty, wallet('1'), { thresholds: t }))).toEqual([['balance_changed', 'medium']]);
  });

  it('token account amounts use min_token_raw; wei uses min_wei', () => {
    const t = { balance_change: { min_token_raw: '100', min_wei: '10' } };
    const alerts = diff(tokenAccount(), tokenAccount({ amount: '1100' }), { thresholds: t });
    expect(alerts.map((a) => a.current)).toEqual([{ amount: '1100', delta: '100' }]);
    const wei = diff(evm({ balance: '100' }), evm({ balance: '90' }), { thresholds: t });
    expect(wei.map((a) => [a.type, a.current, a.evidence.method])).toEqual([
      ['balance_changed', { balance: '90', delta: '-10' }, 'eth_getBalance'],
    ]);
  });
});

describe('diffAlerts: EVM delegation, proxy and code', () => {
  const delegated = (delegate: string | null) =>
    evm({
      delegate,
      kind: delegate ? 'delegated_wallet' : 'wallet',
      code_hash: `0x${delegate ?? ''}`,
      code_size: 23,
    });

  it('EIP-7702 delegation set: critical for an unknown delegate, medium for a known one, high without a verdict', () => {
    const unknown = verdict('high', [{ code: 'eip7702_delegated', severity: 'high' }]);
    const known = verdict('low', [{ code: 'eip7702_delegated', severity: 'info' }]);
    expect(kinds(diff(evm(), delegated(IMPL)))).toEqual([['delegation_changed', 'high']]);
    const set = diff(evm(), delegated(IMPL), { verdicts: [undefined, unknown] });
    expect(kinds(set)).toEqual([['delegation_changed', 'critical']]);
    expect(set[0]).toMatchObject({ previous: { delegate: null }, current: { delegate: IMPL } });
    expect(kinds(diff(evm(), delegated(IMPL), { verdicts: [undefined, known] }))).toEqual([
      ['delegation_changed', 'medium'],
    ]);
  });

  it('delegation changed (once, not also as a code change) and removed (low)', () => {
    expect(kinds(diff(delegated(IMPL), delegated(OTHER)))).toEqual([['delegation_changed', 'high']]);
    expect(kinds(diff(delegated(IMPL), delegated(null)))).toEqual([['delegation_changed', 'low']]);
  });

  it('EIP-1967 implementation changed (high, storage evidence), cleared (medium); admin changed', () => {
    const proxy = (implementation: string | null, admin = IMPL) =>
      evm({ kind: 'contract', code_hash: '0xabc', code_size: 100, implementation, admin });
    const slot = '0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc';
    const evidence: EvmEvidence = {
      method: 'eth_getCode,eth_getTransactionCount,eth_getBalance,eth_getStorageAt',
      block: 20,
      raw: {
        code: null,
        code_hash: '0xabc',
        code_size: 100,
        nonce: '0x1',
        balance: '0x0',
        storage: { [slot]: '0x22' },
      },
    };
    const [changed] = diff(proxy(IMPL), proxy(OTHER), { evidence });
    expect(changed).toMatchObject({
      type: 'implementation_changed',
      severity: 'high',
      previous: { implementation: IMPL },
      current: { implementation: OTHER },
      evidence: { method: 'eth_getStorageAt', block: 20, raw: { slot, value: '0x22' } },
    });
    expect(kinds(diff(proxy(IMPL), proxy(null)))).toEqual([['implementation_changed', 'medium']]);
    expect(kinds(diff(proxy(IMPL), proxy(IMPL, OTHER)))).toEqual([['authority_changed', 'high']]);
  });

  it("a contract's code replaced (no delegation): implementation_changed; a nonce bump alone: nothing", () => {
    const contract = (hash: string) => evm({ kind: 'contract', code_hash: hash, code_size: 10 });
    expect(kinds(diff(contract('0x01'), contract('0x02')))).toEqual([['implementation_changed', 'high']]);
    expect(diff(evm({ nonce: 1 }), evm({ nonce: 2 }))).toEqual([]);
  });
});

describe('diffAlerts: verdicts', () => {
  it('level rising: the new level as severity; falling: low', () => {
    const up = diff(mint(), mint(), { verdicts: [verdict('low'), verdict('high')] });
    expect(up.map((a) => [a.type, a.severity, a.previous, a.current])).toEqual([
      ['level_changed', 'high', { level: 'low', score: 0 }, { level: 'high', score: 50 }],
    ]);
    expect(kinds(diff(mint(), mint(), { verdicts: [verdict('critical'), verdict('medium')] }))).toEqual([
      ['level_changed', 'low'],
    ]);
  });

  it('no verdict on either side: no verdict alert', () => {
    expect(diff(mint(), mint(), { verdicts: [undefined, verdict('critical')] })).toEqual([]);
    expect(diff(mint(), mint(), { verdicts: [verdict('low'), undefined] })).toEqual([]);
  });

  it('findings added (their severity, their own evidence) and removed (info)', () => {
    const ev = { method: 'getMultipleAccounts', slot: 19, value: { mint_authority: A } };
    const was = verdict('medium', [{ code: 'transfer_fee', severity: 'medium' }]);
    const is = verdict('medium', [{ code: 'mint_authority_enabled', severity: 'high', evidence: ev }]);
    const alerts = diff(mint(), mint(), { verdicts: [was, is] });
    expect(alerts.map((a) => [a.type, a.severity, a.previous, a.current])).toEqual([
      ['finding_added', 'high', null, { code: 'mint_authority_enabled', severity: 'high' }],
      ['finding_removed', 'info', { code: 'transfer_fee', severity: 'medium' }, null],
    ]);
    expect(alerts[0]!.evidence).toEqual({
      method: 'getMultipleAccounts',
      slot: 19,
      raw: { mint_authority: A },
    });
  });

  it('a finding that got more severe is added again; less severe is not', () => {
    const fee = (severity: 'medium' | 'high') => verdict(severity, [{ code: 'transfer_fee', severity }]);
    const up = diff(mint(), mint(), { verdicts: [fee('medium'), fee('high')] });
    expect(up.map((a) => [a.type, a.previous])).toEqual([
      ['level_changed', { level: 'medium', score: 25 }],
      ['finding_added', { code: 'transfer_fee', severity: 'medium' }],
    ]);
    expect(kinds(diff(mint(), mint(), { verdicts: [fee('high'), fee('medium')] }))).toEqual([
      ['level_changed', 'low'],
    ]);
  });

  it('an incomplete verdict removes no finding and lowers no level; check_incomplete never alerts', () => {
    const full = verdict('high', [{ code: 'mint_authority_enabled', severity: 'high' }]);
    const partial = verdict('low', [{ code: 'check_incomplete', severity: 'info' }], { complete: false });
    expect(diff(mint(), mint(), { verdicts: [full, partial] })).toEqual([]);
    // The caller keeps the last complete verdict as the previous one: the next complete scan compares clean.
    expect(diff(mint(), mint(), { verdicts: [full, { ...full, at: 'later' }] })).toEqual([]);
    // What an incomplete verdict did see still alerts when it is new.
    const seen = verdict('critical', [{ code: 'permanent_delegate', severity: 'critical' }], {
      complete: false,
    });
    expect(kinds(diff(mint(), mint(), { verdicts: [full, seen] }))).toEqual([
      ['level_changed', 'critical'],
      ['finding_added', 'critical'],
    ]);
  });
});

describe('diffAlerts: fingerprints', () => {
  const a = mint({ mint_authority: A });
  const b = mint({ mint_authority: B });

  it('re-running the same step gives the same fingerprints, also when re-read at a later slot', () => {
    const first = diff(a, b, { at: [10, 20] });
    expect(diff(a, b, { at: [10, 20] })).toEqual(first);
    expect(diff(a, b, { at: [10, 25] }).map((x) => x.fingerprint)).toEqual(first.map((x) => x.fingerprint));
  });

  it('flip-flop A→B→A→B: every real change has its own fingerprint', () => {
    const steps = [diff(a, b, { at: [10, 20] }), diff(b, a, { at: [20, 30] }), diff(a, b, { at: [30, 40] })];
    const prints = steps.map((s) => {
      expect(s).toHaveLength(1);
      return s[0]!.fingerprint;
    });
    expect(new Set(prints).size).toBe(3);
    // The third step is the first one's change again (A→B) from another snapshot: still a new alert.
    expect(steps[2]![0]!.current).toEqual(steps[0]![0]!.current);
    // And each step, re-run, gives the same fingerprint.
    expect(diff(b, a, { at: [20, 30] })[0]!.fingerprint).toBe(prints[1]);
    expect(diff(a, b, { at: [30, 40] })[0]!.fingerprint).toBe(prints[2]);
  });

  it('a verdict flipping while the state stays the same: one fingerprint per change, named by `at`', () => {
    const low = (at: string) => verdict('low', [], { at });
    const high = (at: string) => verdict('high', [], { at });
    const step = (from: Verdict, to: Verdict) => diff(a, a, { verdicts: [from, to] })[0]!.fingerprint;
    const prints = [step(low('t1'), high('t2')), step(high('t2'), low('t3')), step(low('t3'), high('t4'))];
    expect(new Set(prints).size).toBe(3);
    expect(step(low('t3'), high('t5'))).toBe(prints[2]);
  });

  it('differs per entry and per type, and is hex sha256', () => {
    const one = diff(a, b)[0]!.fingerprint;
    expect(diff(a, b, { entryId: 'entry-2' })[0]!.fingerprint).not.toBe(one);
    expect(one).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('stateHash', () => {
  it('is the same for the same state whatever the key order, and changes with any value', () => {
    const s = wallet('5');
    const reordered = Object.fromEntries(Object.entries(s).reverse()) as WatchedState;
    expect(stateHash(reordered)).toBe(stateHash(s));
    expect(stateHash(wallet('6'))).not.toBe(stateHash(s));
    expect(stateHash(s)).toMatch(/^[0-9a-f]{64}$/);
  });
});
