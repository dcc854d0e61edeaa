import { clip } from '../chains/registry.js';
import { AppError } from '../platform/errors.js';
import type { RiskLevel } from './scoring.js';

export const INTENTS = ['sign', 'approve', 'transfer', 'interact'] as const;
export type Intent = (typeof INTENTS)[number];
export const FAIL_MODES = ['warn', 'block', 'allow'] as const;
export type FailMode = (typeof FAIL_MODES)[number];
/** Preflight decisions, from the most lenient to the strictest. */
export const DECISIONS = ['allow', 'warn', 'block'] as const;
export type Decision = (typeof DECISIONS)[number];

const stricter = (a: Decision, b: Decision) => (DECISIONS.indexOf(a) >= DECISIONS.indexOf(b) ? a : b);

/**
 * Preflight decision (docs/risk.md#decision): `block` for a critical level, `warn` for high or
 * medium, `allow` for low. An allow-listed target is `allow` unless sanctioned (the organisation's own
 * decision; sanctions are a local check, always complete). When chain checks did not finish, the decision is at least the fail mode — never a silent `allow` unless the operator chose
 * `allow` as the fail mode (and `complete: false` still says so).
 */
export function decide(input: {
  level: RiskLevel;
  complete: boolean;
  allowlisted: boolean;
  sanctioned: boolean;
  failMode: FailMode;
}): Decision {
  if (input.sanctioned) return 'block';
  if (input.allowlisted) return 'allow';
  const decision: Decision = input.level === 'critical' ? 'block' : input.level === 'low' ? 'allow' : 'warn';
  return input.complete ? decision : stricter(decision, input.failMode);
}

/** `value` if it is one of `allowed`, else a 400 with `code` naming the field and the allowed values. */
export function oneOf<T extends string>(
  allowed: readonly T[],
  value: string,
  code: 'unsupported_target_type' | 'unsupported_intent',
  path: string,
): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new AppError(code, `${path} "${clip(value)}" is not supported: use one of ${allowed.join(', ')}.`, {
    errors: [{ path, message: `expected one of ${allowed.join(', ')}` }],
  });
}
