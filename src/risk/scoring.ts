import { SEVERITIES, type Finding, type Severity } from './findings.js';

/** A verdict's level: a severity, `info` excepted (nothing found is `low`). */
export const RISK_LEVELS = ['low', 'medium', 'high', 'critical'] as const satisfies readonly Severity[];
export type RiskLevel = (typeof RISK_LEVELS)[number];

const WEIGHT: Record<Severity, number> = { critical: 0.9, high: 0.5, medium: 0.25, low: 0.1, info: 0 };
const rank = (s: Severity) => SEVERITIES.indexOf(s);

/**
 * Scoring (docs/risk.md#scoring): `risk_score = round(100 × (1 − Π(1 − wᵢ)))` over unsuppressed findings; `risk_level` is
 * the highest unsuppressed severity (`low` when nothing is above low), raised to `high` at a score ≥ 70
 * and to `medium` at ≥ 40. Deterministic: same findings, same verdict.
 */
export function score(findings: readonly Finding[]): { risk_score: number; risk_level: RiskLevel } {
  const active = findings.filter((f) => !f.suppressed);
  const keep = active.reduce((acc, f) => acc * (1 - WEIGHT[f.severity]), 1);
  const risk_score = Math.round(100 * (1 - keep));
  let level: RiskLevel = 'low';
  for (const f of active) if (f.severity !== 'info' && rank(f.severity) > rank(level)) level = f.severity;
  if (risk_score >= 70 && rank(level) < rank('high')) level = 'high';
  else if (risk_score >= 40 && rank(level) < rank('medium')) level = 'medium';
  return { risk_score, risk_level: level };
}
