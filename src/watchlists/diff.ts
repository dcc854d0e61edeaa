import { createHash } from 'node:crypto';
import type { Hex } from 'viem';
import { canonicalJson } from '../chains/jsonrpc-wire.js';
import { EIP1967_SLOTS } from '../risk/evm/account.js';
import { SEVERITIES, type Evidence, type FindingCode, type Severity } from '../risk/findings.js';
import { RISK_LEVELS, type RiskLevel } from '../risk/scoring.js';
import type {
  EvmEvidence,
  EvmWatchedState,
  Json,
  MintState,
  ProgramState,
  SolanaEvidence,
  SolanaWatchedState,
  TokenAccountState,
  WatchedState,
} from './state.js';
import type { AlertType } from '../events/schemas.js';

/*
 * The alerts of one watchlist scan, from (previous snapshot, current state, previous verdict, current
 * verdict) alone: pure and deterministic, so a retried scan drafts the same alerts with the same
 * fingerprints, and the caller's unique index on the fingerprint drops the repeats.
 *
 * Severities:
 * - level_changed: rising → the new level; falling → low.
 * - finding_added: the finding's own severity (also when a finding already there got more severe);
 *   finding_removed: info.
 * - authority_changed (an authority, or a setting only an authority changes: transfer fee, pause, default
 *   account state, a token account frozen or thawed, its owner): high; a permanent delegate set →
 *   critical; an authority revoked, a fee lowered, an unpause, a thaw → low.
 * - delegation_changed (EIP-7702): set or changed → critical, but medium when the current verdict calls the
 *   delegate a known wallet implementation (its `eip7702_delegated` is info) and high with no verdict to
 *   tell; removed → low.
 * - implementation_changed (the EIP-1967 implementation, a contract's code replaced, a Solana program
 *   redeployed, a transfer-hook program replaced): high; cleared → medium.
 * - token_delegate_added (a delegate set or changed, or its allowance raised): high.
 * - balance_changed (lamports, wei, a token account's amount; only past the watchlist's threshold): medium.
 * - account_closed: high. account_created: medium; high when the address now holds another kind of
 *   account, or one of another owner, than before (closed and re-created between two scans).
 */

/**
 * A risk verdict. `findings`: the unsuppressed ones (a risk `Finding` fits). `complete: false` (a check did
 * not finish) never makes a finding look removed or the level look lower; keep the last complete verdict as
 * the previous one. `at` names the verdict (when, or which analysis, made it): a verdict flipping back and
 * forth while the state stays the same then still alerts once per real change.
 */
export interface Verdict {
  level: RiskLevel;
  score: number;
  findings: readonly { code: FindingCode; severity: Severity; evidence?: Evidence }[];
  complete?: boolean;
  at?: string;
}

/** Where a state was read: a Solana slot or an EVM block. */
export type ChainPosition = { slot: number; block?: undefined } | { block: number; slot?: undefined };

/** The stored snapshot. Where it was read tells its flips apart (A→B→A→B is two changes to B). */
export type PreviousObservation = ChainPosition & { state: WatchedState; hash: string; verdict?: Verdict };

/** This scan's read (a `SolanaStateRead` / `EvmStateRead` fits) and its verdict, when there is one. */
export type CurrentObservation = ChainPosition & {
  state: WatchedState;
  evidence?: SolanaEvidence | EvmEvidence;
  verdict?: Verdict;
};

/** Without a balance threshold, balances change the snapshot only. */
export interface AlertThresholds {
  balance_change?: {
    /** Alert when the balance moved by at least this percentage of the previous one (any move from 0)… */
    percent?: number;
    /** …or by at least this many base units (decimal strings), per asset. */
    min_lamports?: string;
    min_wei?: string;
    min_token_raw?: string;
  };
}

export interface AlertEvidence {
  method: string;
  slot?: number;
  block?: number;
  raw: unknown;
}

type JsonObject = { [key: string]: Json };

export interface AlertDraft {
  type: AlertType;
  severity: Severity;
  previous: JsonObject | null;
  current: JsonObject | null;
  evidence: AlertEvidence;
  /** sha256 hex of (entry, type, new value, the previous observation): equal for the same change only. */
  fingerprint: string;
}

export interface DiffInput {
  entryId: string;
  previous: PreviousObservation | null;
  current: CurrentObservation;
  thresholds?: AlertThresholds;
}

type Draft = Omit<AlertDraft, 'fingerprint'> & { fromVerdict?: boolean };
type Ev = (fields: Json) => AlertEvidence;

const draft = (
  type: AlertType,
  severity: Severity,
  previous: JsonObject | null,
  current: JsonObject | null,
  evidence: AlertEvidence,
): Draft => ({ type, severity, previous, current, evidence });

/** The alerts of one scan; none for an entry's first scan (its baseline). */
export function diffAlerts(input: DiffInput): AlertDraft[] {
  const { entryId, previous, current } = input;
  if (!previous) return [];
  if (previous.state.family !== current.state.family)
    throw new Error(
      `entry ${entryId}: a ${previous.state.family} snapshot against a ${current.state.family} state`,
    );
  const drafts = [
    ...stateChanges(previous.state, current, input.thresholds ?? {}),
    ...verdictChanges(previous.verdict, current).map((d) => ({ ...d, fromVerdict: true })),
  ];
  // A state change is told apart by the snapshot it departs from; a verdict change also by the verdict.
  const since = { hash: previous.hash, slot: previous.slot ?? null, block: previous.block ?? null };
  return drafts.map(({ fromVerdict, ...d }) => {
    const from = fromVerdict ? { ...since, verdict: previous.verdict?.at ?? null } : since;
    const key = canonicalJson({ entry: entryId, type: d.type, value: d.current, since: from });
    return { ...d, fingerprint: createHash('sha256').update(key).digest('hex') };
  });
}

// ---- state ---------------------------------------------------------------------------------------------

/** How a changed field alerts: its type, and the severity of a move from `from` to `to`. */
type Rule = { type: AlertType; severity(from: Json, to: Json): Severity };
const rule = (type: AlertType, severity: Rule['severity']): Rule => ({ type, severity });

const authority = rule('authority_changed', (_, to) => (to === null ? 'low' : 'high'));
const criticalAuthority = rule('authority_changed', (_, to) => (to === null ? 'low' : 'critical'));
const raisedIsWorse = rule('authority_changed', (from, to) => (Number(to) > Number(from) ? 'high' : 'low'));
const worseWhen = (bad: Json) => rule('authority_changed', (_, to) => (to === bad ? 'high' : 'low'));
const implementation = rule('implementation_changed', (_, to) => (to === null ? 'medium' : 'high'));

/*
 * Every field of each decoded state (a few to a line), so that a new field has to say whether and how it
 * alerts (null: it changes the snapshot only).
 */
const MINT_RULES: Record<keyof MintState, Rule | null> = {
  ...{ token_program: null, decimals: null, supply: null, extensions: null },
  ...{ mint_authority: authority, freeze_authority: authority, permanent_delegate: criticalAuthority },
  ...{ transfer_hook_program: implementation, transfer_hook_authority: authority },
  ...{ transfer_fee_authority: authority, transfer_fee_bps: raisedIsWorse },
  ...{ pausable_authority: authority, paused: worseWhen(true), mint_close_authority: authority },
  ...{ metadata_pointer_authority: authority, metadata_address: authority },
  ...{ metadata_update_authority: authority, default_account_state: worseWhen('frozen') },
};
// amount: balance_changed by threshold; delegate and its allowance: token_delegate_added.
const TOKEN_ACCOUNT_RULES: Record<keyof TokenAccountState, Rule | null> = {
  ...{ token_program: null, mint: null, amount: null, delegate: null, delegated_amount: null },
  ...{ owner: authority, state: worseWhen('frozen'), close_authority: authority },
};
const PROGRAM_RULES: Record<keyof ProgramState, Rule | null> = {
  ...{ loader: null, programdata_address: implementation },
  ...{ upgrade_authority: authority, last_deploy_slot: implementation },
};

function stateChanges(before: WatchedState, now: CurrentObservation, thresholds: AlertThresholds): Draft[] {
  const after = now.state;
  const existence = (type: AlertType, severity: Severity) => [
    draft(type, severity, summary(before), summary(after), existenceEvidence(now)),
  ];
  if (before.exists && !after.exists) return existence('account_closed', 'high');
  if (!before.exists && after.exists) return existence('account_created', 'medium');
  if (!after.exists) return [];
  if (before.family === 'solana' && after.family === 'solana')
    return solanaChanges(before, after, now, thresholds);
  if (before.family === 'evm' && after.family === 'evm') return evmChanges(before, after, now, thresholds);
  return [];
}

function solanaChanges(
  before: SolanaWatchedState,
  after: SolanaWatchedState,
  now: CurrentObservation,
  thresholds: AlertThresholds,
): Draft[] {
  const raw = now.evidence && 'slot' in now.evidence ? now.evidence.raw : undefined;
  const at = position(now);
  const read =
    (part: unknown): Ev =>
    (fields) => ({ method: 'getMultipleAccounts', ...at, raw: part ?? fields });
  const [account, programData] = [read(raw?.account), read(raw?.program_data)];
  // Another kind or owner at the same address: the account was closed and re-created in between.
  if (before.kind !== after.kind || before.owner_program !== after.owner_program)
    return [draft('account_created', 'high', summary(before), summary(after), account(summary(after)))];
  const t = thresholds.balance_change ?? {};
  const out = balanceChange('lamports', before.lamports, after.lamports, t.min_lamports, t.percent, account);
  if (before.kind === 'mint' && after.kind === 'mint')
    out.push(...fieldChanges(MINT_RULES, before.mint, after.mint, account));
  if (before.kind === 'program' && after.kind === 'program')
    out.push(...fieldChanges(PROGRAM_RULES, before.program, after.program, programData));
  if (before.kind === 'token_account' && after.kind === 'token_account') {
    const [was, is] = [before.token_account, after.token_account];
    out.push(...fieldChanges(TOKEN_ACCOUNT_RULES, was, is, account));
    const allowance = (a: TokenAccountState) => ({
      delegate: a.delegate,
      delegated_amount: a.delegated_amount,
    });
    const raised = is.delegate === was.delegate && BigInt(is.delegated_amount) > BigInt(was.delegated_amount);
    if (is.delegate !== null && (is.delegate !== was.delegate || raised))
      out.push(draft('token_delegate_added', 'high', allowance(was), allowance(is), account(allowance(is))));
    out.push(...balanceChange('amount', was.amount, is.amount, t.min_token_raw, t.percent, account));
  }
  return out;
}

function evmChanges(
  before: EvmWatchedState,
  after: EvmWatchedState,
  now: CurrentObservation,
  thresholds: AlertThresholds,
): Draft[] {
  const raw = now.evidence && 'block' in now.evidence ? now.evidence.raw : undefined;
  const at = position(now);
  const read =
    (method: string, pick: (r: EvmEvidence['raw']) => Json): Ev =>
    (fields) => ({ method, ...at, raw: raw ? pick(raw) : fields });
  const code = read('eth_getCode', (r) => r.code ?? { code_hash: r.code_hash, code_size: r.code_size });
  const word = (slot: Hex) => read('eth_getStorageAt', (r) => ({ slot, value: r.storage[slot] ?? null }));
  const out: Draft[] = [];
  if (before.delegate !== after.delegate) {
    const severity = after.delegate === null ? 'low' : delegateSeverity(now.verdict);
    const current = { delegate: after.delegate };
    out.push(draft('delegation_changed', severity, { delegate: before.delegate }, current, code(current)));
  } else if (!after.delegate) {
    // Code replaced outside a delegation (a CREATE2 redeploy, code deployed at a funded address).
    out.push(...fieldChanges({ code_hash: implementation }, before, after, code));
  }
  out.push(...fieldChanges({ implementation }, before, after, word(EIP1967_SLOTS.implementation)));
  out.push(...fieldChanges({ admin: authority }, before, after, word(EIP1967_SLOTS.admin)));
  const t = thresholds.balance_change ?? {};
  const balance = read('eth_getBalance', (r) => r.balance);
  return [...out, ...balanceChange('balance', before.balance, after.balance, t.min_wei, t.percent, balance)];
}

/** A 7702 delegate is as bad as the verdict says: a known implementation gets an info `eip7702_delegated`. */
function delegateSeverity(verdict: Verdict | undefined): Severity {
  if (!verdict) return 'high';
  const known = verdict.findings.find((f) => f.code === 'eip7702_delegated')?.severity === 'info';
  return known ? 'medium' : 'critical';
}

/** One draft per field that has a rule and whose value differs, in the rules' order. */
function fieldChanges<T extends object>(
  rules: { [K in keyof T]?: Rule | null },
  before: T,
  after: T,
  evidence: Ev,
): Draft[] {
  const out: Draft[] = [];
  for (const field of Object.keys(rules) as (keyof T & string)[]) {
    const rule = rules[field];
    const [from, to] = [before[field] as Json, after[field] as Json];
    if (!rule || canonicalJson(from) === canonicalJson(to)) continue;
    const current = { [field]: to };
    out.push(draft(rule.type, rule.severity(from, to), { [field]: from }, current, evidence(current)));
  }
  return out;
}

/** balance_changed when the move reaches the asset's minimum or the percentage (whichever are set). */
function balanceChange(
  field: string,
  from: string,
  to: string,
  min: string | undefined,
  percent: number | undefined,
  evidence: Ev,
): Draft[] {
  const [was, delta] = [BigInt(from), BigInt(to) - BigInt(from)];
  const moved = delta < 0n ? -delta : delta;
  // In basis points, so that a fractional percentage stays exact in bigint arithmetic.
  const byPercent = percent !== undefined && moved * 10_000n >= BigInt(Math.round(percent * 100)) * was;
  const byAmount = min !== undefined && moved >= BigInt(min);
  if (moved === 0n || (!byPercent && !byAmount)) return [];
  const current = { [field]: to, delta: delta.toString() };
  return [draft('balance_changed', 'medium', { [field]: from }, current, evidence(current))];
}

/** What an appearing or vanishing account was: enough to tell the two sides apart. */
function summary(s: WatchedState): JsonObject {
  const common = { exists: s.exists, kind: s.kind };
  return s.family === 'solana'
    ? { ...common, owner_program: s.owner_program, lamports: s.lamports }
    : { ...common, nonce: s.nonce, balance: s.balance, code_hash: s.code_hash };
}

function existenceEvidence(now: CurrentObservation): AlertEvidence {
  const at = position(now);
  if (now.evidence && 'slot' in now.evidence)
    return { method: now.evidence.method, ...at, raw: now.evidence.raw.account };
  if (now.evidence) {
    const { code, code_hash, nonce, balance } = now.evidence.raw;
    return { method: now.evidence.method, ...at, raw: { code: code ?? code_hash, nonce, balance } };
  }
  const method = now.state.family === 'solana' ? 'getMultipleAccounts' : EVM_EXISTENCE_METHODS;
  return { method, ...at, raw: summary(now.state) };
}

const EVM_EXISTENCE_METHODS = 'eth_getCode,eth_getTransactionCount,eth_getBalance';

function position(at: ChainPosition): ChainPosition {
  return at.slot !== undefined ? { slot: at.slot } : { block: at.block };
}

// ---- verdict -------------------------------------------------------------------------------------------

type VerdictFinding = Verdict['findings'][number];
const rank = (s: Severity) => SEVERITIES.indexOf(s);
/** A check that did not finish comes and goes with the provider: not a change of risk. */
const TRANSIENT: ReadonlySet<FindingCode> = new Set(['check_incomplete']);

function verdictChanges(before: Verdict | undefined, now: CurrentObservation): Draft[] {
  const after = now.verdict;
  if (!before || !after) return [];
  const complete = after.complete !== false;
  const at = position(now);
  const analysis = (raw: Json): AlertEvidence => ({ method: 'risk_analysis', ...at, raw });
  const out: Draft[] = [];
  const rising = RISK_LEVELS.indexOf(after.level) > RISK_LEVELS.indexOf(before.level);
  if (before.level !== after.level && (rising || complete)) {
    const current = { level: after.level, score: after.score };
    const evidence = analysis({ ...current, findings: after.findings.map((f) => f.code) });
    const previous = { level: before.level, score: before.score };
    out.push(draft('level_changed', rising ? after.level : 'low', previous, current, evidence));
  }
  const [was, is] = [strongest(before), strongest(after)];
  for (const [code, f] of is) {
    const old = was.get(code);
    if (old && rank(old.severity) >= rank(f.severity)) continue;
    const [previous, added] = [old ? { code, severity: old.severity } : null, { code, severity: f.severity }];
    out.push(draft('finding_added', f.severity, previous, added, findingEvidence(f, analysis)));
  }
  for (const [code, f] of was) {
    if (!complete || is.has(code)) continue;
    out.push(
      draft(
        'finding_removed',
        'info',
        { code, severity: f.severity },
        null,
        analysis({ code, removed: true }),
      ),
    );
  }
  return out;
}

/** Each code once, at its highest severity, in code order; transient codes left out. */
function strongest(verdict: Verdict): Map<FindingCode, VerdictFinding> {
  const out = new Map<FindingCode, VerdictFinding>();
  for (const f of [...verdict.findings].sort((a, b) => (a.code < b.code ? -1 : a.code > b.code ? 1 : 0))) {
    const seen = out.get(f.code);
    if (!TRANSIENT.has(f.code) && (!seen || rank(f.severity) > rank(seen.severity))) out.set(f.code, f);
  }
  return out;
}

/** The finding's own evidence when the verdict carries it. */
function findingEvidence(f: VerdictFinding, analysis: (raw: Json) => AlertEvidence): AlertEvidence {
  if (!f.evidence) return analysis({ code: f.code, severity: f.severity });
  const { method, slot, block, value } = f.evidence;
  const at = slot !== undefined ? { slot } : block !== undefined ? { block } : {};
  return { method, ...at, raw: value };
}
