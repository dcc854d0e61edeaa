import { describe, expect, it } from 'vitest';
import {
  alertThresholds,
  approvalAlerts,
  approvalsCursor,
  chunkWrite,
  compareStates,
  followsApprovals,
  raiseAlerts,
  storedVerdict,
  targetTypeOf,
  toAnalyse,
  type PreviousSnapshot,
  type ScannedEntry,
} from '../../src/watchlists/judge.js';
import {
  stateHash,
  type EvmStateRead,
  type EvmWatchedState,
  type SolanaWatchedState,
} from '../../src/watchlists/state.js';
import type { ApprovalsSince } from '../../src/risk/approvals-since.js';
import type { TargetVerdict } from '../../src/risk/service.js';

/*
 * The tick's judging (src/watchlists/judge.ts) without a database or a node: which entries changed, which
 * are analysed, the alerts of a change against the last snapshot, and the rows a chunk writes.
 */

const IMPL = '0x1111111111111111111111111111111111111111';
const OTHER = '0x2222222222222222222222222222222222222222';
const evm = (over: Partial<EvmWatchedState> = {}): EvmWatchedState => ({
  family: 'evm',
  kind: 'contract',
  exists: true,
  nonce: 1,
  balance: '0',
  code_hash: '0xaaaa',
  code_size: 100,
  delegate: null,
  implementation: IMPL,
  admin: null,
  ...over,
});
const read = (state: EvmWatchedState, block = 20): EvmStateRead => ({
  address: '0x3333333333333333333333333333333333333333',
  state,
  block,
  evidence: {
    method: 'eth_getCode,eth_getTransactionCount,eth_getBalance,eth_getStorageAt',
    block,
    raw: { code: null, code_hash: '0xaaaa', code_size: 100, nonce: '0x1', balance: '0x0', storage: {} },
  },
});
const entry = (id: string, over: Partial<ScannedEntry> = {}): ScannedEntry => ({
  id,
  account_id: 'acct_1',
  watchlist_id: 'wl_1',
  chain: 'ethereum',
  network: 'eip155:1',
  target: '0x3333333333333333333333333333333333333333',
  target_type: null,
  state_hash: null,
  snapshot_id: null,
  verdict: null,
  approvals_cursor_block: null,
  ...over,
});

describe('compareStates and toAnalyse', () => {
  const same = evm();
  const moved = evm({ implementation: OTHER });
  const entries = [
    entry('wle_new'), // never read: its first read is the baseline
    entry('wle_same', { state_hash: stateHash(same), snapshot_id: 'snp_1' }),
    entry('wle_moved', { state_hash: stateHash(same), snapshot_id: 'snp_1' }),
  ];
  const outcomes = compareStates(entries, [read(same), read(same), read(moved)]);

  it('marks an entry changed when its state hash differs from the stored one (a baseline counts)', () => {
    expect(outcomes.map((o) => [o.entry.id, o.changed])).toEqual([
      ['wle_new', true],
      ['wle_same', false],
      ['wle_moved', true],
    ]);
    expect(outcomes[2]!.hash).toBe(stateHash(moved));
  });

  it('a tick analyses real changes only; a deep scan or a rescan analyses every entry', () => {
    expect(toAnalyse('tick', outcomes).map((o) => o.entry.id)).toEqual(['wle_moved']);
    expect(toAnalyse('deep', outcomes)).toHaveLength(3);
    expect(toAnalyse('rescan', outcomes)).toHaveLength(3);
  });
});

describe('raiseAlerts', () => {
  const snapshot: PreviousSnapshot = {
    id: 'snp_1',
    state: evm(),
    hash: stateHash(evm()),
    read_at_height: '10',
  };
  const snapshots = new Map([[snapshot.id, snapshot]]);

  it('raises implementation_changed against the last snapshot, and nothing for a baseline', () => {
    const outcomes = compareStates(
      [entry('wle_new'), entry('wle_moved', { state_hash: snapshot.hash, snapshot_id: 'snp_1' })],
      [read(evm({ implementation: OTHER })), read(evm({ implementation: OTHER }))],
    );
    raiseAlerts(outcomes, snapshots, {});
    expect(outcomes[0]!.alerts).toEqual([]);
    expect(outcomes[1]!.alerts.map((a) => [a.type, a.current])).toEqual([
      ['implementation_changed', { implementation: OTHER }],
    ]);
  });

  it('keeps a balance move under the list threshold out of the alerts', () => {
    const wallet = (balance: string) => evm({ kind: 'wallet', code_size: 0, implementation: null, balance });
    const last: PreviousSnapshot = { id: 'snp_w', state: wallet('1000'), hash: 'h', read_at_height: 10 };
    const judge = (to: string, pct: number) => {
      const [o] = compareStates(
        [entry('wle_w', { state_hash: 'h', snapshot_id: 'snp_w' })],
        [read(wallet(to))],
      );
      raiseAlerts([o!], new Map([['snp_w', last]]), alertThresholds({ balance_change_pct: pct }));
      return o!.alerts.map((a) => a.type);
    };
    expect(judge('1050', 10)).toEqual([]);
    expect(judge('1200', 10)).toEqual(['balance_changed']);
  });
});

describe('stored verdicts, target types, thresholds', () => {
  it('keeps the findings not suppressed, with level, score and time', () => {
    const v = {
      riskLevel: 'high',
      riskScore: 70,
      complete: true,
      evaluatedAt: new Date('2026-11-27T00:00:00.000Z'),
      findings: [
        { code: 'upgradeable_proxy', severity: 'medium', evidence: { slot: 1 }, suppressed: false },
        { code: 'fresh_address', severity: 'low', evidence: {}, suppressed: true },
      ],
    } as unknown as TargetVerdict;
    expect(storedVerdict(v)).toEqual({
      level: 'high',
      score: 70,
      complete: true,
      at: '2026-11-27T00:00:00.000Z',
      findings: [{ code: 'upgradeable_proxy', severity: 'medium', evidence: { slot: 1 } }],
    });
  });

  it('names the target type a state shows', () => {
    const solana = (kind: SolanaWatchedState['kind']) => ({ family: 'solana', kind }) as SolanaWatchedState;
    expect(targetTypeOf(evm())).toBe('contract');
    expect(targetTypeOf(evm({ kind: 'wallet' }))).toBe('wallet');
    expect(targetTypeOf(solana('mint'))).toBe('token');
    expect(targetTypeOf(solana('program'))).toBe('program');
    expect(targetTypeOf(solana('system_account'))).toBe('wallet');
  });

  it('turns the API thresholds into the diff’s, and none into none', () => {
    expect(alertThresholds({ balance_change_pct: 25 })).toEqual({ balance_change: { percent: 25 } });
    expect(alertThresholds({})).toEqual({});
    expect(alertThresholds(null)).toEqual({});
  });
});

describe('chunkWrite', () => {
  it('writes a snapshot per changed entry, no change time for a baseline, and the scan depth', () => {
    const snapshot: PreviousSnapshot = {
      id: 'snp_1',
      state: evm(),
      hash: stateHash(evm()),
      read_at_height: 10,
    };
    const outcomes = compareStates(
      [
        entry('wle_new'),
        entry('wle_same', { state_hash: snapshot.hash, snapshot_id: 'snp_1' }),
        entry('wle_moved', { state_hash: snapshot.hash, snapshot_id: 'snp_1' }),
      ],
      [read(evm()), read(evm()), read(evm({ implementation: OTHER }), 21)],
    );
    raiseAlerts(outcomes, new Map([['snp_1', snapshot]]), {});
    let n = 0;
    const now = new Date('2026-11-27T12:00:00.000Z');
    const w = chunkWrite(
      { watchlist_id: 'wl_1', scan_id: 'tick-wl_1-1', mode: 'tick' },
      outcomes,
      now,
      (p) => `${p}_${++n}`,
    );
    expect(w.snapshots.map((s) => [s.entry_id, s.read_at_height])).toEqual([
      ['wle_new', 20],
      ['wle_moved', 21],
    ]);
    expect(w.alerts.map((a) => [a.entry_id, a.type, a.watchlist_id, a.network])).toEqual([
      ['wle_moved', 'implementation_changed', 'wl_1', 'eip155:1'],
    ]);
    const byId = new Map(w.updates.map((u) => [u.id, u]));
    expect(byId.get('wle_new')).toMatchObject({ changed_at: null, deep: false });
    expect(byId.get('wle_new')!.snapshot_id).toBe(w.snapshots[0]!.id);
    expect(byId.get('wle_same')).toMatchObject({ snapshot_id: null, changed_at: null, deep: false });
    expect(byId.get('wle_moved')).toMatchObject({ changed_at: now.toISOString(), deep: false });
    const deep = chunkWrite(
      { watchlist_id: 'wl_1', scan_id: 'deep-wl_1-1', mode: 'deep' },
      outcomes,
      now,
      (p) => p,
    );
    expect(deep.updates.every((u) => u.deep)).toBe(true);
  });
});

describe('approvals (a deep scan of an EVM wallet)', () => {
  const wallet = evm({ kind: 'wallet', code_size: 0, implementation: null });
  const SPENDER = '0x4444444444444444444444444444444444444444';
  type Granted = ApprovalsSince['approvals'][number];
  const approval = (over: Partial<Granted> = {}): Granted => ({
    owner: '0x3333333333333333333333333333333333333333',
    asset: {
      type: 'erc20',
      address: '0x5555555555555555555555555555555555555555',
      symbol: 'TKN',
      decimals: 18,
    },
    spender: SPENDER,
    amount: 'unlimited',
    covers_balance: true,
    all: false,
    expires_at: null,
    source: 'transaction',
    kind: 'erc20',
    granted_at_block: 130,
    granted_tx: `0x${'ab'.repeat(32)}`,
    confirmed: true,
    spender_kind: 'eoa',
    spender_name: null,
    risky: true,
    severity: 'high',
    flagged: false,
    ...over,
  });
  const limited = approval({
    spender: '0x000000000000000000000000000000000000c0de',
    amount: '1000',
    spender_kind: null,
    risky: false,
    severity: 'low',
  });
  const since: ApprovalsSince = { toBlock: 140n, complete: true, approvals: [approval(), limited] };
  const followed = entry('wle_w', { approvals_cursor_block: '120' });

  it('follows EVM wallets on a deep scan or a rescan, never on a tick, nor contracts or Solana', () => {
    const [o] = compareStates([entry('wle_w')], [read(wallet)]);
    expect(followsApprovals('deep', o!)).toBe(true);
    expect(followsApprovals('rescan', o!)).toBe(true);
    expect(followsApprovals('tick', o!)).toBe(false);
    const [contract] = compareStates([entry('wle_c')], [read(evm())]);
    expect(followsApprovals('deep', contract!)).toBe(false);
    // the stated target type decides over the state
    const [stated] = compareStates([entry('wle_s', { target_type: 'contract' })], [read(wallet)]);
    expect(followsApprovals('deep', stated!)).toBe(false);
    const [asWallet] = compareStates([entry('wle_s', { target_type: 'wallet' })], [read(evm())]);
    expect(followsApprovals('deep', asWallet!)).toBe(true);
    const solana = { family: 'solana', kind: 'system_account' } as SolanaWatchedState;
    const [sol] = compareStates([entry('wle_sol')], [{ ...read(wallet), state: solana } as never]);
    expect(followsApprovals('deep', sol!)).toBe(false);
  });

  it('reads the stored cursor as a block number; none is null', () => {
    expect(approvalsCursor(followed)).toBe(120n);
    expect(approvalsCursor(entry('wle_w', { approvals_cursor_block: 7 }))).toBe(7n);
    expect(approvalsCursor(entry('wle_w'))).toBeNull();
  });

  it('drafts one approval_granted per new approval: its severity, no previous, the approval as current', () => {
    const drafts = approvalAlerts(followed, since);
    expect(drafts.map((d) => [d.type, d.severity, d.previous])).toEqual([
      ['approval_granted', 'high', null],
      ['approval_granted', 'low', null],
    ]);
    const view: Partial<Granted> = approval();
    delete view.severity;
    delete view.flagged;
    expect(drafts[0]!.current).toEqual(view);
    expect(drafts[0]!.evidence).toEqual({
      method: 'eth_getLogs,eth_call',
      block: 130,
      raw: {
        granted_tx: view.granted_tx,
        confirmed: true,
        spender_flagged: false,
        window: { from_block: 121, to_block: 140 },
      },
    });
    // The same grant read again (a retried chunk, a window re-read) has the same fingerprint; another
    // grant of the same spender (a later transaction) another.
    expect(approvalAlerts(entry('wle_w', { approvals_cursor_block: '100' }), since)[0]!.fingerprint).toBe(
      drafts[0]!.fingerprint,
    );
    const again = approval({ granted_at_block: 150, granted_tx: `0x${'cd'.repeat(32)}` });
    const later = approvalAlerts(followed, { ...since, approvals: [again] });
    expect(new Set([...drafts, ...later].map((d) => d.fingerprint)).size).toBe(3);
    expect(
      approvalAlerts(followed, { ...since, approvals: [approval({ flagged: true })] })[0]!.evidence,
    ).toMatchObject({ raw: { spender_flagged: true } });
  });

  it('raises them beside the state changes, and on a baseline of the state too; writes the next cursor', () => {
    const snapshot: PreviousSnapshot = {
      id: 'snp_w',
      state: wallet,
      hash: stateHash(wallet),
      read_at_height: 9,
    };
    const moved = evm({ ...wallet, implementation: OTHER });
    const outcomes = compareStates(
      [
        entry('wle_new', { approvals_cursor_block: '120' }),
        entry('wle_moved', {
          state_hash: snapshot.hash,
          snapshot_id: 'snp_w',
          approvals_cursor_block: '120',
        }),
        entry('wle_unread', {
          state_hash: snapshot.hash,
          snapshot_id: 'snp_w',
          approvals_cursor_block: '90',
        }),
      ],
      [read(wallet), read(moved), read(wallet)],
    );
    outcomes[0]!.approvals = since;
    outcomes[1]!.approvals = { toBlock: 140n, complete: true, approvals: [limited] };
    raiseAlerts(outcomes, new Map([['snp_w', snapshot]]), {});
    expect(outcomes.map((o) => o.alerts.map((a) => a.type))).toEqual([
      ['approval_granted', 'approval_granted'],
      ['implementation_changed', 'approval_granted'],
      [],
    ]);
    const w = chunkWrite(
      { watchlist_id: 'wl_1', scan_id: 'deep-wl_1-1', mode: 'deep' },
      outcomes,
      new Date('2026-11-27T12:00:00.000Z'),
      (p) => p,
    );
    expect(
      w.alerts.filter((a) => a.type === 'approval_granted').map((a) => [a.entry_id, a.severity]),
    ).toEqual([
      ['wle_new', 'high'],
      ['wle_new', 'low'],
      ['wle_moved', 'low'],
    ]);
    // A cursor only where the approvals were read; null keeps the stored one (a failed read, a tick).
    expect(w.updates.map((u) => [u.id, u.approvals_cursor_block])).toEqual([
      ['wle_new', '140'],
      ['wle_moved', '140'],
      ['wle_unread', null],
    ]);
  });
});
