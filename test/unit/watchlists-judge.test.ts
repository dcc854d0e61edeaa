import { describe, expect, it } from 'vitest';
import {
  alertThresholds,
  chunkWrite,
  compareStates,
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
