import type { NetworkDef } from '../chains/registry.js';
import type { WalletApprovalsView } from './schemas.js';
import type { Finding } from './findings.js';
import type { RiskLevel } from './scoring.js';

export { TARGET_TYPES, type TargetType } from './target-types.js';

/** What the chain says it is. `missing`: no account / never used. */
export type TargetKind =
  'wallet' | 'token' | 'token_account' | 'program' | 'contract' | 'delegated_wallet' | 'account' | 'missing';

/**
 * Addresses the chain analysis found whose meaning depends on an account's lists (sanctions, deny, allow).
 * The analysis itself is list-free so it can be cached and shared by every account; the risk service
 * applies each caller's lists on top (docs/risk.md#caching).
 */
export interface ListInputs {
  /**
   * Solana wallet: account keys of its most recent transactions (→ `interacted_with_flagged`), each with
   * the newest transaction it appears in (the evidence).
   */
  counterparties?: Counterparty[];
  /** EVM: the EIP-7702 delegate (→ `eip7702_delegated` critical when listed). */
  delegate?: string;
  /** EVM token: its live owner (→ `owner_flagged` when listed). */
  owner?: string;
  /** EVM wallet: the spenders of its outstanding approvals (→ `risky_approval` critical when listed). */
  approvalSpenders?: string[];
}

export interface Counterparty {
  address: string;
  signature: string;
  slot: number;
}

/**
 * One analyzer's verdict on chain state alone: findings with evidence (RPC method + slot/block + raw
 * value), observed `facts` (`null` = unknown, never conflated with `false`), and whether every sub-check
 * finished. Deterministic: same chain state → same result.
 */
export interface ChainAnalysis {
  kind: TargetKind;
  findings: Finding[];
  facts: Record<string, unknown>;
  /** False when a sub-check did not finish; each such check also appears as a `check_incomplete` finding. */
  complete: boolean;
  dataAsOf: { slot?: number; block?: number };
  listInputs: ListInputs;
  /** EVM wallet (risk-v2 `wallet`): its outstanding approvals; null when they could not be read. */
  approvals?: WalletApprovalsView | null;
}

export interface AnalyzeOptions {
  network: NetworkDef;
  /** Abort when the caller's deadline passes (preflight); sub-checks that did not finish → incomplete. */
  signal?: AbortSignal;
}

/** What every verdict holds. */
export interface VerdictBase {
  /** The address as the chain knows it (EIP-55 on EVM). */
  target: string;
  network: NetworkDef;
  /** What the chain says the target is (`facts.kind` is null when its account could not be read). */
  targetKind: TargetKind;
  riskScore: number;
  riskLevel: RiskLevel;
  /** False when a check did not finish (each such check is a `check_incomplete` finding). */
  complete: boolean;
  /** The findings with this account's lists and the request's context applied, by severity then code. */
  findings: Finding[];
  /** Observed values, snake_case keys; `null` means unknown (never false). */
  facts: Record<string, unknown>;
  dataAsOf: { slot?: number; block?: number };
  evaluatedAt: Date;
  /** The chain analysis came from the cache (TTL by level). */
  cached: boolean;
  engineVersion: string;
}
