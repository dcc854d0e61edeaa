import { invalidRequest } from '../platform/errors.js';
import { DECISIONS } from '../risk/policy.js';
import { RISK_LEVELS } from '../risk/scoring.js';
import type { FindingBody } from '../risk/schemas.js';
import type { ResultRow, ScreeningRow } from './repository.js';
import type { ResultBody, ScreeningBody } from './schemas.js';

const iso = (t: Date | string | null): string | null => (t === null ? null : new Date(t).toISOString());

/** `counts` as stored (`level:high`, `decision:warn`, `incomplete`) → the API's shape, every key shown. */
function countsOf(stored: Record<string, number>): ScreeningBody['counts'] {
  const by = <K extends string>(prefix: string, keys: readonly K[]) =>
    Object.fromEntries(keys.map((k) => [k, stored[`${prefix}${k}`] ?? 0])) as Record<K, number>;
  return {
    by_level: by('level:', RISK_LEVELS),
    by_decision: by('decision:', DECISIONS),
    incomplete: stored.incomplete ?? 0,
  };
}

/** A screening; `counts` are the stored final ones, or `live` counts while it runs. */
export function presentScreening(s: ScreeningRow, live?: Record<string, number>): ScreeningBody {
  const valid = s.total - s.invalid;
  return {
    id: s.id,
    status: s.status,
    depth: s.depth,
    total: s.total,
    invalid: s.invalid,
    processed: s.processed,
    progress: valid === 0 ? 1 : Math.round((s.processed / valid) * 10_000) / 10_000,
    counts: countsOf(live ?? s.counts),
    created_by: s.created_by,
    created_at: iso(s.created_at)!,
    started_at: iso(s.started_at),
    completed_at: iso(s.completed_at),
  };
}

export function presentResult(r: ResultRow): ResultBody {
  return {
    index: r.seq,
    target: r.target,
    chain: r.chain,
    network: r.network,
    label: r.label,
    status: r.status,
    risk_level: r.level as ResultBody['risk_level'],
    risk_score: r.score,
    decision: r.decision as ResultBody['decision'],
    complete: r.complete,
    findings: r.findings as FindingBody[] | null,
    error: r.error,
  };
}

/** The `screening.completed` event's data: the screening as it finished. */
export function presentCompletedEvent(s: ScreeningRow) {
  return { screening: presentScreening(s) };
}

// ---- CSV --------------------------------------------------------------------------------------------

const CSV_COLUMNS = [
  'index',
  'target',
  'chain',
  'network',
  'label',
  'status',
  'risk_level',
  'risk_score',
  'decision',
  'complete',
  'findings',
  'error_code',
  'error_message',
] as const;

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote or line break. A cell a spreadsheet would
 * run as a formula (=, +, -, @, tab, CR first) is prefixed with `'` (OWASP CSV injection).
 */
function cell(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return '';
  let s = String(value);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export const csvHeader = (): string => `${CSV_COLUMNS.join(',')}\r\n`;

/** A result as one CSV line; `findings` is the codes of its unsuppressed findings, space-separated. */
export function csvLine(r: ResultRow): string {
  const findings = (r.findings as FindingBody[] | null)
    ?.filter((f) => !f.suppressed)
    .map((f) => f.code)
    .join(' ');
  return (
    [
      r.seq,
      r.target,
      r.chain,
      r.network,
      r.label,
      r.status,
      r.level,
      r.score,
      r.decision,
      r.complete,
      findings,
      r.error?.code,
      r.error?.message,
    ]
      .map(cell)
      .join(',') + '\r\n'
  );
}

// ---- the results cursor -----------------------------------------------------------------------------

/** The results cursor: the last index shown, as opaque base64url. */
export const encodeSeqCursor = (seq: number): string => Buffer.from(`seq:${seq}`).toString('base64url');

export function decodeSeqCursor(cursor: string): number {
  const m = /^seq:(\d{1,9})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m || Buffer.from(`seq:${m[1]}`).toString('base64url') !== cursor)
    throw invalidRequest('The cursor is not valid for this query.', [
      { path: 'query.cursor', message: 'not a cursor returned by this endpoint' },
    ]);
  return Number(m[1]);
}
