import { createHash } from 'node:crypto';
import { canonicalJson } from '../chains/jsonrpc-wire.js';
import type { ScanMode } from '../jobs/queues.js';
import type { ApprovalsSince } from '../risk/approvals-since.js';
import type { TargetVerdict, TokenVerdict } from '../risk/service.js';
import { diffAlerts, type AlertDraft, type AlertThresholds, type Verdict } from './diff.js';
import { stateHash, type EvmStateRead, type SolanaStateRead, type WatchedState } from './state.js';
import type { AlertRow } from './views.js';

/*
 * The tick's judging, as pure functions (scan.ts runs them between its reads and its write): which entries
 * changed, which of them a scan analyses in full, the alerts of each change, and the rows one chunk writes.
 * Nothing here reads a clock, a provider or the database.
 */

/** The verdict an entry keeps: the last complete one (an incomplete one never looks like a removal). */
export type StoredVerdict = Verdict & { at: string };

/** An entry as a chunk reads it. */
export interface ScannedEntry {
  id: string;
  account_id: string;
  watchlist_id: string;
  chain: string;
  network: string;
  target: string;
  target_type: string | null;
  state_hash: string | null;
  snapshot_id: string | null;
  verdict: StoredVerdict | null;
  /** EVM wallets: the last block whose approvals a deep scan read (bigint; null: none read yet). */
  approvals_cursor_block: string | number | null;
}

/** An entry's last snapshot, as the diff compares it. */
export interface PreviousSnapshot {
  id: string;
  state: WatchedState;
  hash: string;
  read_at_height: string | number;
}

/** What one entry's scan produced, before it is written. */
export interface EntryOutcome {
  entry: ScannedEntry;
  read: SolanaStateRead | EvmStateRead;
  hash: string;
  changed: boolean;
  verdict?: StoredVerdict;
  /** `ok`, `incomplete`, or the error code of the full analysis (or of the approvals' read). */
  outcome: string;
  alerts: AlertDraft[];
  /** A deep scan of an EVM wallet: the approvals granted after its cursor, and the next cursor. */
  approvals?: ApprovalsSince;
}

/** Each entry beside its read: its state's hash, and whether it differs from the entry's last one. */
export function compareStates(
  entries: readonly ScannedEntry[],
  reads: readonly (SolanaStateRead | EvmStateRead)[],
): EntryOutcome[] {
  return entries.map((entry, i) => {
    const read = reads[i]!;
    const hash = stateHash(read.state);
    return { entry, read, hash, changed: hash !== entry.state_hash, outcome: 'ok', alerts: [] };
  });
}

/**
 * The outcomes a scan analyses in full: every one on a deep scan or a rescan; on a tick only real changes
 * (a new entry's first read is its baseline, judged by the next deep scan or a rescan: a 100,000-entry list
 * must not cost 100,000 analyses on its first tick).
 */
export function toAnalyse(mode: ScanMode, outcomes: readonly EntryOutcome[]): EntryOutcome[] {
  return outcomes.filter((o) => mode !== 'tick' || (o.changed && o.entry.state_hash !== null));
}

/**
 * The alerts of each outcome against its entry's last snapshot (none for a baseline), then those of the
 * approvals a deep scan found granted since the entry's cursor; set on the outcome.
 */
export function raiseAlerts(
  outcomes: readonly EntryOutcome[],
  snapshots: ReadonlyMap<string, PreviousSnapshot>,
  thresholds: AlertThresholds,
): void {
  for (const o of outcomes) {
    const granted = o.approvals ? approvalAlerts(o.entry, o.approvals) : [];
    const snapshot = o.entry.snapshot_id ? snapshots.get(o.entry.snapshot_id) : undefined;
    // the baseline raises nothing of the state (the approvals have a baseline of their own: the cursor)
    if (!snapshot || o.entry.state_hash === null) {
      o.alerts = granted;
      continue;
    }
    const height = Number(snapshot.read_at_height);
    const at = o.read.state.family === 'solana' ? { slot: height } : { block: height };
    const changes = diffAlerts({
      entryId: o.entry.id,
      previous: { ...at, state: snapshot.state, hash: snapshot.hash, verdict: o.entry.verdict ?? undefined },
      current: { ...o.read, verdict: o.verdict },
      thresholds,
    });
    o.alerts = [...changes, ...granted];
  }
}

// ---- approvals -----------------------------------------------------------------------------------------

/**
 * Whether a scan in `mode` follows the outcome's approvals: an EVM wallet (as stated, or as its state
 * shows) on a deep scan or a rescan, the full analyses of a whole list; a tick never does.
 */
export function followsApprovals(mode: ScanMode, o: EntryOutcome): boolean {
  const type = o.entry.target_type ?? targetTypeOf(o.read.state);
  return mode !== 'tick' && o.read.state.family === 'evm' && type === 'wallet';
}

/** The entry's approvals cursor as the risk service takes it (null: the first read, the head only). */
export function approvalsCursor(entry: ScannedEntry): bigint | null {
  return entry.approvals_cursor_block === null ? null : BigInt(entry.approvals_cursor_block);
}

/**
 * One `approval_granted` alert per approval granted after the entry's cursor and still outstanding, with
 * the severity the risk service gave it (critical to a flagged spender, high when risky, medium for
 * another unlimited or operator approval, low otherwise); `current` is the approval as
 * `GET /api/v1/approvals` shows it. The fingerprint names the grant (its token, spender, kind, block and
 * transaction), so a window read again (a retried chunk, a gap re-read, the reorg margin) alerts it once.
 */
export function approvalAlerts(entry: ScannedEntry, read: ApprovalsSince): AlertDraft[] {
  const cursor = approvalsCursor(entry);
  const window = { from_block: cursor === null ? null : Number(cursor + 1n), to_block: Number(read.toBlock) };
  return read.approvals.map(({ severity, flagged, ...view }) => {
    // What was granted where: not the amount (a partial spend lowers it) nor the symbol (a read that may
    // fail), so a window read again finds the same fingerprint.
    const grant = {
      token: view.asset.address ?? null,
      token_id: view.asset.token_id ?? null,
      spender: view.spender,
      kind: view.kind,
      block: view.granted_at_block,
      tx: view.granted_tx,
    };
    const key = canonicalJson({ entry: entry.id, type: 'approval_granted', value: grant });
    // `spender_flagged`: on a sanctions or deny list of the account (what makes it critical)
    const raw = { granted_tx: view.granted_tx, confirmed: view.confirmed, spender_flagged: flagged, window };
    return {
      type: 'approval_granted',
      severity,
      previous: null,
      current: view,
      evidence: { method: 'eth_getLogs,eth_call', block: view.granted_at_block, raw },
      fingerprint: createHash('sha256').update(key).digest('hex'),
    };
  });
}

/** The verdict an entry keeps of a full analysis: level, score, the findings not suppressed. */
export function storedVerdict(v: TargetVerdict | TokenVerdict): StoredVerdict {
  return {
    level: v.riskLevel,
    score: v.riskScore,
    findings: v.findings
      .filter((f) => !f.suppressed)
      .map((f) => ({ code: f.code, severity: f.severity, evidence: f.evidence })),
    complete: v.complete,
    at: v.evaluatedAt.toISOString(),
  };
}

/** The target type a state shows, for entries added without one. */
export function targetTypeOf(state: WatchedState): string {
  if (state.family === 'evm') return state.kind === 'contract' ? 'contract' : 'wallet';
  return state.kind === 'mint' ? 'token' : state.kind === 'program' ? 'program' : 'wallet';
}

/** A list's stored thresholds (`{ balance_change_pct }`, as the API takes them) → the diff's thresholds. */
export function alertThresholds(stored: Record<string, number> | null | undefined): AlertThresholds {
  const percent = stored?.balance_change_pct;
  return typeof percent === 'number' ? { balance_change: { percent } } : {};
}

/** The rows one chunk writes: snapshots of the changes, the alerts, every entry's scan columns. */
export interface ChunkWrite {
  snapshots: SnapshotDraft[];
  alerts: AlertRowDraft[];
  updates: EntryUpdate[];
}

export interface SnapshotDraft {
  id: string;
  account_id: string;
  entry_id: string;
  scan_id: string;
  state: WatchedState;
  hash: string;
  read_at_height: number;
  read_at: string;
  verdict: StoredVerdict | null;
}

/** An alert row as a chunk inserts it (`open`, updated when created). */
export type AlertRowDraft = Omit<AlertRow, 'status' | 'created_at' | 'updated_at'> & {
  account_id: string;
  fingerprint: string;
  scan_id: string;
  created_at: string;
};

export interface EntryUpdate {
  id: string;
  outcome: string;
  state_hash: string;
  /** The new snapshot's id (a changed state), else null: the entry keeps its last one. */
  snapshot_id: string | null;
  /** When its state changed (null: unchanged, or its baseline). */
  changed_at: string | null;
  risk_level: string | null;
  risk_score: number | null;
  verdict: StoredVerdict | null;
  /** Whether this scan was a full analysis of it (a deep scan or a rescan, or a tick that analysed it). */
  deep: boolean;
  /** The approvals' next cursor (a decimal block number); null: the entry keeps its cursor. */
  approvals_cursor_block: string | null;
}

/** What chunk `scanId` of list `watchlistId` writes for `outcomes`, ids made with `newId` at `now`. */
export function chunkWrite(
  job: { watchlist_id: string; scan_id: string; mode: ScanMode },
  outcomes: readonly EntryOutcome[],
  now: Date,
  newId: (prefix: string) => string,
): ChunkWrite {
  const at = now.toISOString();
  const changed = outcomes.filter((o) => o.changed);
  const snapshotIds = new Map(changed.map((o) => [o.entry.id, newId('snp')]));
  return {
    snapshots: changed.map((o) => ({
      id: snapshotIds.get(o.entry.id)!,
      account_id: o.entry.account_id,
      entry_id: o.entry.id,
      scan_id: job.scan_id,
      state: o.read.state,
      hash: o.hash,
      read_at_height: 'slot' in o.read ? o.read.slot : o.read.block,
      read_at: at,
      verdict: o.verdict ?? null,
    })),
    alerts: outcomes.flatMap((o) =>
      o.alerts.map((a) => ({
        id: newId('alr'),
        account_id: o.entry.account_id,
        watchlist_id: job.watchlist_id,
        entry_id: o.entry.id,
        target: o.entry.target,
        network: o.entry.network,
        type: a.type,
        severity: a.severity,
        previous: a.previous,
        current: a.current,
        evidence: a.evidence as unknown as Record<string, unknown>,
        fingerprint: a.fingerprint,
        scan_id: job.scan_id,
        created_at: at,
      })),
    ),
    updates: outcomes.map((o) => ({
      id: o.entry.id,
      outcome: o.outcome,
      state_hash: o.hash,
      snapshot_id: o.changed ? snapshotIds.get(o.entry.id)! : null,
      // the baseline is no change
      changed_at: o.changed && o.entry.state_hash !== null ? at : null,
      risk_level: o.verdict?.level ?? null,
      risk_score: o.verdict?.score ?? null,
      verdict: o.verdict ?? null,
      deep: job.mode !== 'tick' || o.verdict !== undefined,
      approvals_cursor_block: o.approvals ? o.approvals.toBlock.toString() : null,
    })),
  };
}
