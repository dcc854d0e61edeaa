import { describe, expect, it } from 'vitest';
import { CATALOG, finding, suppress, type FindingCode, type Severity } from '../../src/risk/findings.js';
import { decide } from '../../src/risk/policy.js';
import { score } from '../../src/risk/scoring.js';

const f = (code: FindingCode, severity?: Severity) =>
  finding(code, 'detail', { method: 'getAccountInfo', slot: 1, value: null }, severity ? { severity } : {});

describe('score (docs/risk.md#scoring)', () => {
  it('is 0 and low with no findings', () => {
    expect(score([])).toEqual({ risk_score: 0, risk_level: 'low' });
  });

  it('combines weights as 1 − Π(1 − w)', () => {
    // high 0.5 and medium 0.25: 1 − 0.5 × 0.75 = 0.625
    expect(score([f('mint_authority_enabled'), f('transfer_fee')])).toEqual({
      risk_score: 63,
      risk_level: 'high',
    });
    expect(score([f('permanent_delegate')])).toEqual({ risk_score: 90, risk_level: 'critical' });
    expect(score([f('new_account')])).toEqual({ risk_score: 10, risk_level: 'low' });
  });

  it('raises the level to medium at 40 and to high at 70', () => {
    // two mediums: 1 − 0.75² = 0.4375 → 44 → medium (already medium)
    expect(score([f('transfer_fee'), f('zero_supply')])).toEqual({ risk_score: 44, risk_level: 'medium' });
    // five lows: 1 − 0.9⁵ = 0.40951 → 41 → raised from low to medium
    const lows = Array.from({ length: 5 }, () => f('new_account'));
    expect(score(lows)).toEqual({ risk_score: 41, risk_level: 'medium' });
    // three highs: 1 − 0.5³ = 0.875 → 88 → high
    expect(score([f('transfer_hook'), f('pausable'), f('non_transferable')])).toEqual({
      risk_score: 88,
      risk_level: 'high',
    });
    // four mediums + one low: 1 − 0.75⁴ × 0.9 = 0.715 → 72 → raised to high
    const mixed = [
      f('transfer_fee'),
      f('zero_supply'),
      f('mint_close_authority'),
      f('token_delegate_set'),
      f('new_account'),
    ];
    expect(score(mixed)).toEqual({ risk_score: 72, risk_level: 'high' });
  });

  it('ignores suppressed findings and info severities', () => {
    expect(
      score([suppress(f('mint_authority_enabled'), 'expected for USDC'), f('check_incomplete')]),
    ).toEqual({
      risk_score: 0,
      risk_level: 'low',
    });
  });

  it('honours a severity set where the finding is raised', () => {
    expect(score([f('account_not_found', 'medium')])).toEqual({ risk_score: 25, risk_level: 'medium' });
  });

  it('has a title and a known severity for every catalog code', () => {
    for (const [code, entry] of Object.entries(CATALOG)) {
      expect(entry.title.length, code).toBeGreaterThan(3);
      expect(['info', 'low', 'medium', 'high', 'critical']).toContain(entry.severity);
    }
  });
});

describe('decide (preflight policy)', () => {
  const base = { complete: true, allowlisted: false, sanctioned: false, failMode: 'warn' as const };
  it('maps levels to decisions', () => {
    expect(decide({ ...base, level: 'critical' })).toBe('block');
    expect(decide({ ...base, level: 'high' })).toBe('warn');
    expect(decide({ ...base, level: 'medium' })).toBe('warn');
    expect(decide({ ...base, level: 'low' })).toBe('allow');
  });
  it('allows allow-listed targets unless sanctioned', () => {
    expect(decide({ ...base, level: 'critical', allowlisted: true })).toBe('allow');
    expect(decide({ ...base, level: 'low', allowlisted: true, sanctioned: true })).toBe('block');
  });
  it('never turns an incomplete check into a silent allow', () => {
    expect(decide({ ...base, level: 'low', complete: false })).toBe('warn');
    expect(decide({ ...base, level: 'low', complete: false, failMode: 'block' })).toBe('block');
    expect(decide({ ...base, level: 'critical', complete: false, failMode: 'allow' })).toBe('block');
    expect(decide({ ...base, level: 'low', complete: false, failMode: 'allow' })).toBe('allow');
  });
});
