/*
 * What `riskwatch doctor` finds, and how it says so: one row per check (name, status, detail), printed as a
 * table or as JSON, and an exit code from the worst status.
 */

/** `ok`: as it should be; `info`: worth knowing, nothing to fix; `warn`: works, but fix it; `fail`: broken. */
export type Status = 'ok' | 'info' | 'warn' | 'fail';

export interface Finding {
  /** `postgres`, `redis:maxmemory-policy`, `provider:base/mainnet#0`, … */
  check: string;
  status: Status;
  detail: string;
}

const RANK: Record<Status, number> = { ok: 0, info: 0, warn: 1, fail: 2 };

/** The worst status of the findings: `fail`, `warn`, or `ok` (an `info` is no worse than `ok`). */
export function worst(findings: readonly Finding[]): Exclude<Status, 'info'> {
  const rank = Math.max(0, ...findings.map((f) => RANK[f.status]));
  return rank === 2 ? 'fail' : rank === 1 ? 'warn' : 'ok';
}

/** 0: everything ok (or info), 1: a warning at worst, 2: a failure. */
export const exitCodeOf = (findings: readonly Finding[]): number => RANK[worst(findings)];

export interface DoctorReport {
  status: Status;
  exit_code: number;
  /** When the checks ran (ISO 8601). */
  checked_at: string;
  /** Each check's own time limit. */
  timeout_ms: number;
  summary: Record<Status, number>;
  checks: Finding[];
}

export function buildReport(findings: readonly Finding[], timeoutMs: number, at: Date): DoctorReport {
  const summary: Record<Status, number> = { ok: 0, info: 0, warn: 0, fail: 0 };
  for (const f of findings) summary[f.status] += 1;
  return {
    status: worst(findings),
    exit_code: exitCodeOf(findings),
    checked_at: at.toISOString(),
    timeout_ms: timeoutMs,
    summary,
    checks: [...findings],
  };
}

/** Details are cut here in the table (the JSON document keeps them whole). */
const DETAIL_WIDTH = 100;

/** The report as a plain-text table (no colour: it is read in logs and CI output as often as on a terminal). */
export function renderTable(report: DoctorReport): string {
  const rows = report.checks.map((f) => [f.check, f.status, f.detail] as const);
  const checkWidth = Math.max('CHECK'.length, ...rows.map(([c]) => c.length));
  const statusWidth = 'STATUS'.length;
  const lines = [`${'CHECK'.padEnd(checkWidth)}  ${'STATUS'.padEnd(statusWidth)}  DETAIL`];
  const indent = ' '.repeat(checkWidth + statusWidth + 4);
  for (const [check, status, detail] of rows) {
    const [first = '', ...rest] = wrap(detail, DETAIL_WIDTH);
    lines.push(`${check.padEnd(checkWidth)}  ${status.padEnd(statusWidth)}  ${first}`);
    for (const line of rest) lines.push(`${indent}${line}`);
  }
  const { ok, info, warn, fail } = report.summary;
  lines.push(
    '',
    `result: ${report.status} (${ok} ok, ${info} info, ${warn} warn, ${fail} fail); exit code ${report.exit_code}`,
  );
  return lines.join('\n');
}

/** Words onto lines of at most `width` characters (a longer word gets a line of its own). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line || lines.length === 0) lines.push(line);
  return lines;
}
