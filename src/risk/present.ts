import type { ImpactMetric, ImpactService } from '../impact/service.js';
import { newId } from '../platform/ids.js';
import type { Finding } from './findings.js';
import type { Asset, SignatureInfo, Simulation } from './payload/types.js';
import type { Preflight, PreflightReason, SignatureBody, SimulationBody } from './preflight-schemas.js';
import type { WalletApprovalsView } from './evm/wallet-approvals.js';
import type { ApprovalsAnswer, Assessment, FindingBody, TokenScan } from './schemas.js';
import type { PreflightVerdict, TargetVerdict, TokenVerdict, Verdict } from './service.js';

/*
 * Verdicts (service.ts, domain objects) as the HTTP bodies schemas.ts describes: snake_case, ISO times,
 * a fresh id per answer; and what each answer adds to the public impact counters.
 */

/** A finding as answered: `suppressed_reason` only on a suppressed one. */
export function presentFinding(f: Finding): FindingBody {
  return f.suppressed
    ? { ...f }
    : {
        code: f.code,
        severity: f.severity,
        title: f.title,
        detail: f.detail,
        evidence: f.evidence,
        suppressed: false,
      };
}

/** POST /api/web3/risk-v2. */
export function presentAssessment(v: TargetVerdict | TokenVerdict): Assessment {
  return {
    assessment_id: newId('asm'),
    target: v.target,
    chain: v.network.chain,
    network: v.network.network,
    target_type: v.targetType,
    risk_score: v.riskScore,
    risk_level: v.riskLevel,
    complete: v.complete,
    findings: v.findings.map(presentFinding),
    facts: v.facts,
    data_as_of: v.dataAsOf,
    assessed_at: v.evaluatedAt.toISOString(),
    cached: v.cached,
    engine_version: v.engineVersion,
    ...(v.kind === 'target' && v.approvals !== undefined ? { approvals: v.approvals } : {}),
  };
}

/** GET /api/v1/approvals: the wallet's approvals and the findings about them. */
export function presentApprovals(v: TargetVerdict & { approvals: WalletApprovalsView }): ApprovalsAnswer {
  return {
    target: v.target,
    chain: v.network.chain,
    network: v.network.network,
    ...v.approvals,
    findings: v.findings
      .filter(
        (f) =>
          f.code === 'risky_approval' ||
          (f.code === 'check_incomplete' && f.evidence.method === 'eth_getLogs'),
      )
      .map(presentFinding),
    data_as_of: v.dataAsOf,
    checked_at: v.evaluatedAt.toISOString(),
    cached: v.cached,
  };
}

/** POST /api/v1/scan/token. */
export function presentTokenScan(v: TokenVerdict): TokenScan {
  return {
    scan_id: newId('scn'),
    mint: v.target,
    chain: v.network.chain,
    network: v.network.network,
    token_program: v.tokenProgram,
    risk_score: v.riskScore,
    risk_level: v.riskLevel,
    complete: v.complete,
    token: v.token,
    holders: v.holders,
    known: v.known,
    findings: v.findings.map(presentFinding),
    data_as_of: v.dataAsOf,
    scanned_at: v.evaluatedAt.toISOString(),
    cached: v.cached,
  };
}

/**
 * The findings behind a preflight decision: the unsuppressed ones that weigh, any unfinished check, and a
 * payload's called-contract findings that were lowered so as not to weigh (shown, as info).
 */
const isReason = (f: Finding) =>
  !f.suppressed && (f.severity !== 'info' || f.code === 'check_incomplete' || f.loweredFrom !== undefined);

const presentAsset = (a: Asset): SimulationBody['approvals'][number]['asset'] => ({
  type: a.type,
  ...(a.address !== undefined ? { address: a.address } : {}),
  ...(a.tokenId !== undefined ? { token_id: a.tokenId.toString() } : {}),
  ...(a.symbol !== undefined ? { symbol: a.symbol } : {}),
  ...(a.decimals !== undefined ? { decimals: a.decimals } : {}),
});

/** A payload's simulation (or, for a signature, what it grants) as answered: amounts as decimal strings. */
export function presentSimulation(s: Simulation): SimulationBody {
  return {
    status: s.status,
    method: s.method,
    ...(s.block !== undefined ? { block: s.block } : {}),
    ...(s.slot !== undefined ? { slot: s.slot } : {}),
    ...(s.error !== undefined ? { error: s.error } : {}),
    asset_changes: s.assetChanges.map((c) => ({
      owner: c.owner,
      asset: presentAsset(c.asset),
      amount: c.amount.toString(),
    })),
    approvals: s.approvals.map((a) => ({
      owner: a.owner,
      asset: presentAsset(a.asset),
      spender: a.spender,
      amount: a.unlimited ? 'unlimited' : a.amount.toString(),
      covers_balance: a.coversBalance,
      all: a.all,
      expires_at: a.expiresAt?.toISOString() ?? null,
      source: a.source,
    })),
    authority_changes: s.authorityChanges.map((c) => ({
      account: c.account,
      authority_type: c.authorityType,
      from: c.from,
      to: c.to,
    })),
  };
}

export function presentSignature(s: SignatureInfo): SignatureBody {
  return {
    standard: s.standard,
    kind: s.kind,
    chain_id: s.chainId,
    verifying_contract: s.verifyingContract,
    deadline: s.deadline?.toISOString() ?? null,
  };
}

/** POST /api/v1/shield/preflight. */
export function presentPreflight(v: PreflightVerdict): Preflight {
  return {
    decision: v.decision,
    target: v.target,
    intent: v.intent,
    chain: v.network.chain,
    network: v.network.network,
    risk_level: v.riskLevel,
    risk_score: v.riskScore,
    complete: v.complete,
    reasons: v.findings.filter(isReason).map((f): PreflightReason => ({
      code: f.code,
      severity: f.severity,
      title: f.title,
      detail: f.detail,
      evidence: f.evidence,
      ...(f.subject ? { subject: f.subject } : {}),
    })),
    ...(v.simulation ? { simulation: presentSimulation(v.simulation) } : {}),
    ...(v.signature !== undefined ? { signature: v.signature ? presentSignature(v.signature) : null } : {}),
    policy: {
      name: v.policy.name,
      fail_mode: v.policy.failMode,
      deadline_ms: v.policy.deadlineMs,
      allowlisted: v.policy.allowlisted,
    },
    checked_at: v.evaluatedAt.toISOString(),
    cached: v.cached,
  };
}

/**
 * The impact counters of one answered request: the endpoint's own, its unsuppressed high and critical
 * findings, and a preflight's block or warn. Counted by the routes, not by `evaluate`: a watchlist
 * worker's evaluation is not a user's assessment.
 */
export function countAnswered(
  impact: Pick<ImpactService, 'count'>,
  metric: Extract<ImpactMetric, 'assessments' | 'token_scans' | 'preflights'>,
  verdict: Verdict,
): void {
  impact.count(metric);
  impact.count(
    'high_risk_findings',
    verdict.findings.filter((f) => !f.suppressed && (f.severity === 'high' || f.severity === 'critical'))
      .length,
  );
  if (verdict.kind !== 'preflight') return;
  if (verdict.decision === 'block') impact.count('preflights_blocked');
  if (verdict.decision === 'warn') impact.count('preflights_warned');
}
