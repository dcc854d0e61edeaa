import { describe, expect, it } from 'vitest';
import { BUILT_IN_NETWORKS } from '../../src/chains/registry.js';
import type { ImpactMetric } from '../../src/impact/service.js';
import { finding, suppress, type FindingCode, type Severity } from '../../src/risk/findings.js';
import {
  countAnswered,
  presentAssessment,
  presentFinding,
  presentPreflight,
  presentTokenScan,
} from '../../src/risk/present.js';
import { preflightSchema } from '../../src/risk/preflight-schemas.js';
import { assessmentSchema, scanSchema } from '../../src/risk/schemas.js';
import type { PreflightVerdict, TargetVerdict, TokenVerdict } from '../../src/risk/service.js';

const SOLANA = BUILT_IN_NETWORKS.find((n) => n.chain === 'solana' && n.network === 'mainnet')!;
const ETHEREUM = BUILT_IN_NETWORKS.find((n) => n.chain === 'ethereum' && n.network === 'mainnet')!;
const AT = new Date('2025-06-01T12:00:00.000Z');

const f = (code: FindingCode, severity?: Severity) =>
  finding(code, `${code} seen.`, { method: 'getMultipleAccounts', slot: 5, value: { raw: 1 } }, { severity });

const base = {
  riskScore: 50,
  riskLevel: 'high' as const,
  complete: true,
  facts: { exists: true, kind: 'token' },
  evaluatedAt: AT,
  cached: true,
  engineVersion: '2.1.0',
};

const tokenVerdict: TokenVerdict = {
  ...base,
  kind: 'token',
  targetType: 'token',
  target: 'So11111111111111111111111111111111111111112',
  network: SOLANA,
  targetKind: 'token',
  findings: [f('mint_authority_enabled'), suppress(f('freeze_authority_enabled'), 'expected for wSOL')],
  dataAsOf: { slot: 5 },
  tokenProgram: 'spl-token',
  token: {
    decimals: 9,
    supply: '1',
    supply_raw: '1000000000',
    mint_authority: 'Auth1111111111111111111111111111111111111111',
    freeze_authority: null,
    metadata: null,
    extensions: [],
  },
  holders: null,
  known: null,
};

const preflightVerdict = (
  findings = [f('check_incomplete'), f('frozen_token_accounts')],
): PreflightVerdict => ({
  ...base,
  kind: 'preflight',
  target: '0x0000000000000000000000000000000000000001',
  network: ETHEREUM,
  targetKind: 'wallet',
  findings,
  dataAsOf: { block: 7 },
  intent: 'transfer',
  decision: 'block',
  policy: { name: 'default', failMode: 'warn', deadlineMs: 1500, allowlisted: false },
});

/** The body holds exactly what its schema describes (parsing strips unknown keys). */
const expectExactly = (schema: { parse(v: unknown): unknown }, body: unknown) =>
  expect(schema.parse(body)).toEqual(body);

describe('presenting verdicts as the documented bodies', () => {
  it('answers risk-v2 in snake_case, for a target verdict and a token verdict alike', () => {
    const target: TargetVerdict = {
      ...tokenVerdict,
      kind: 'target',
      targetType: 'wallet',
      targetKind: 'wallet',
    };
    for (const v of [target, tokenVerdict]) {
      const body = presentAssessment(v);
      expectExactly(assessmentSchema, body);
      expect(body).toMatchObject({
        target: v.target,
        chain: 'solana',
        network: 'mainnet',
        target_type: v.targetType,
        risk_score: 50,
        risk_level: 'high',
        assessed_at: '2025-06-01T12:00:00.000Z',
        cached: true,
        engine_version: '2.1.0',
        data_as_of: { slot: 5 },
        facts: v.facts,
      });
      expect(body.assessment_id).toMatch(/^asm_/);
    }
  });

  it('answers scan/token with the token details', () => {
    const body = presentTokenScan(tokenVerdict);
    expectExactly(scanSchema, body);
    expect(body).toMatchObject({
      mint: tokenVerdict.target,
      network: 'mainnet',
      token_program: 'spl-token',
      token: tokenVerdict.token,
      holders: null,
      known: null,
      scanned_at: '2025-06-01T12:00:00.000Z',
    });
    expect(body.scan_id).toMatch(/^scn_/);
  });

  it('shows suppressed_reason only on suppressed findings', () => {
    const [active, suppressed] = tokenVerdict.findings.map(presentFinding);
    expect(active).not.toHaveProperty('suppressed_reason');
    expect(suppressed).toMatchObject({ suppressed: true, suppressed_reason: 'expected for wSOL' });
  });

  it('gives a preflight its decision, policy and reasons (unsuppressed, info only for unfinished checks)', () => {
    const v = preflightVerdict([
      f('check_incomplete'),
      f('frozen_token_accounts'),
      suppress(f('mint_authority_enabled'), 'allow-listed'),
      f('fresh_address', 'medium'),
    ]);
    const body = presentPreflight(v);
    expectExactly(preflightSchema, body);
    expect(body).toMatchObject({
      decision: 'block',
      intent: 'transfer',
      chain: 'ethereum',
      network: 'mainnet',
      policy: { name: 'default', fail_mode: 'warn', deadline_ms: 1500, allowlisted: false },
      checked_at: '2025-06-01T12:00:00.000Z',
    });
    expect(body.reasons.map((r) => r.code)).toEqual(['check_incomplete', 'fresh_address']);
    expect(body.reasons[1]).toEqual({
      code: 'fresh_address',
      severity: 'medium',
      title: 'Address has never been used',
      detail: 'fresh_address seen.',
      evidence: { method: 'getMultipleAccounts', slot: 5, value: { raw: 1 } },
    });
  });
});

describe('countAnswered (public impact counters)', () => {
  const tally = () => {
    const counts: [ImpactMetric, number][] = [];
    return { counts, impact: { count: (metric: ImpactMetric, n = 1) => void counts.push([metric, n]) } };
  };

  it('counts the answer and its unsuppressed high and critical findings', () => {
    const { counts, impact } = tally();
    countAnswered(impact, 'token_scans', {
      ...tokenVerdict,
      findings: [...tokenVerdict.findings, f('permanent_delegate'), f('transfer_fee')],
    });
    expect(counts).toEqual([
      ['token_scans', 1],
      ['high_risk_findings', 2],
    ]);
  });

  it('counts a preflight block or warn, and nothing more for an allow', () => {
    for (const [decision, extra] of [
      ['block', [['preflights_blocked', 1]]],
      ['warn', [['preflights_warned', 1]]],
      ['allow', []],
    ] as const) {
      const { counts, impact } = tally();
      countAnswered(impact, 'preflights', { ...preflightVerdict(), decision });
      expect(counts, decision).toEqual([['preflights', 1], ['high_risk_findings', 0], ...extra]);
    }
  });
});
