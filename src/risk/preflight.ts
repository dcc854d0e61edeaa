import type { Hex } from 'viem';
import { inferChainFromAddress, parseAddress } from '../chains/addresses.js';
import type { ChainProviders } from '../chains/providers.js';
import type { NetworkDef } from '../chains/registry.js';
import type { ListsCache } from '../lists/cache.js';
import { AppError, invalidRequest } from '../platform/errors.js';
import type { CachedAnalysis } from './analysis-cache.js';
import { PREFLIGHT_RESERVE_MS, unreadAnalysis } from './chain-analysis.js';
import { applyContext } from './context.js';
import { SEVERITIES, type Finding } from './findings.js';
import type { KnownWalletImplementations } from './known/evm.js';
import { inspectPayload } from './payload/inspect.js';
import { parsePayload, payloadFieldsOf, type PayloadFields } from './payload/request.js';
import type { Payload, SignatureInfo, Simulation } from './payload/types.js';
import { decide, type Decision, type FailMode, type Intent } from './policy.js';
import { score } from './scoring.js';
import type { RiskSettings } from './settings.js';
import type { TargetKind, VerdictBase } from './types.js';

/*
 * Shield preflight (docs/risk.md#preflight-policy, #before-the-user-signs): the target as whatever it is,
 * and with a payload what the payload does, judged within `risk.preflight.deadline_ms`. The risk service
 * (service.ts) checks the intent and hands each preflight here, with its cached chain analysis as
 * `analyze`; the payload's own inspection is payload/inspect.ts's.
 */

/** A shield preflight as asked: a target, a payload (transaction, typed data, message) from `from`, or both. */
export interface PreflightRequest extends PayloadFields {
  target?: string | undefined;
  chain?: string | undefined;
  network?: string | undefined;
  intent: string;
}

/**
 * The target as whatever it is, before the user acts with `intent` (shield preflight); with a payload,
 * also what the payload does (`simulation`, `signature`) and its counterparties' findings. A payload
 * preflight may have no target (a message, a Solana transaction without one): `target` is then null.
 */
export interface PreflightVerdict extends Omit<VerdictBase, 'target' | 'targetKind'> {
  kind: 'preflight';
  target: string | null;
  targetKind: TargetKind | null;
  intent: Intent;
  decision: Decision;
  policy: { name: string; failMode: FailMode; deadlineMs: number; allowlisted: boolean };
  /** Present when a payload was sent. */
  simulation?: Simulation;
  signature?: SignatureInfo | null;
}

export interface PreflightDeps {
  providers: ChainProviders;
  lists: ListsCache;
  settings: RiskSettings['preflight'];
  walletImplementations: KnownWalletImplementations;
  engineVersion: string;
  /** The engine's chain analysis of an address (cache first) within `budgetMs`, EVM reads pinned to `block`. */
  analyze: (
    network: NetworkDef,
    address: string,
    budgetMs: number,
    block?: bigint,
  ) => Promise<CachedAnalysis>;
}

export class Preflights {
  constructor(private readonly deps: PreflightDeps) {}

  /**
   * Shield preflight: the target as whatever it is, and with a payload what the payload does, within
   * `risk.preflight.deadline_ms` (docs/risk.md#decision). Checks that did not finish are
   * `check_incomplete` and the decision is at least the fail mode.
   */
  async evaluate(accountId: string, request: PreflightRequest, intent: Intent): Promise<PreflightVerdict> {
    const started = Date.now();
    const { deadline_ms: deadlineMs, fail_mode: failMode, policy_name: name } = this.deps.settings;
    const withPayload = payloadFieldsOf(request).length > 0;
    if (!withPayload && request.target === undefined)
      throw invalidRequest(
        'A preflight needs a target, or a payload (transaction, typed_data, message) with from.',
        [{ path: 'target', message: 'required without a payload' }],
      );
    const network = this.preflightNetwork(request);
    const payload = parsePayload(request, network.family);
    let from: string | null = null;
    if (payload) {
      if (request.from === undefined)
        throw invalidRequest('from (the user who signs) is required with a payload.', [
          { path: 'from', message: 'required with transaction, typed_data or message' },
        ]);
      from = parseAddress(network, request.from, 'from');
      if (payload.kind === 'evm_transaction') {
        if (payload.tx.from !== '0x' && payload.tx.from.toLowerCase() !== from.toLowerCase())
          throw invalidRequest(`transaction.from ${payload.tx.from} is not from (${from}).`, [
            { path: 'transaction.from', message: 'must equal from' },
          ]);
        payload.tx.from = from as Hex;
      }
    }
    const target = this.preflightTarget(network, request.target, payload);
    const lists = await this.deps.lists.view(accountId);
    const budget = Math.max(0, deadlineMs - PREFLIGHT_RESERVE_MS - (Date.now() - started));
    const deadlineAt = Date.now() + budget;
    const analyzeTarget = target
      ? this.deps.analyze(network, target, budget).catch((err: unknown): CachedAnalysis => {
          if (!(err instanceof AppError) || err.code !== 'provider_unavailable') throw err;
          return { analysis: unreadAnalysis(network, err), cached: false };
        })
      : Promise.resolve(null);
    const inspected = payload
      ? inspectPayload(payload, {
          network,
          from: from!,
          intent,
          lists,
          target,
          deadlineAt,
          signal: AbortSignal.timeout(Math.max(1, budget)),
          evm: () => this.deps.providers.evm(network),
          solana: () => this.deps.providers.solana(network),
          analyze: (address, ms, block) => this.deps.analyze(network, address, ms, block),
          walletImplementations: this.deps.walletImplementations,
        })
      : Promise.resolve(null);
    const [fetched, payloadResult] = await Promise.all([analyzeTarget, inspected]);

    const judged = fetched
      ? applyContext(fetched.analysis, { network, target: target!, intent, lists })
      : { findings: [], listStatus: { sanctioned: null, denied: null, allowed: null } };
    const { allowed, denied, sanctioned } = judged.listStatus;
    const allowlisted = allowed !== null && denied === null;
    let findings = judged.findings.map((f) =>
      payloadResult ? { ...f, subject: { role: 'target' as const, address: target } } : f,
    );
    if (
      payloadResult &&
      fetched &&
      (fetched.analysis.kind === 'contract' || fetched.analysis.kind === 'program')
    )
      findings = findings.map(calledContractFinding);
    findings = [...findings, ...(payloadResult?.findings ?? [])];
    findings.sort((a, b) => rank(b) - rank(a) || a.code.localeCompare(b.code));
    const { risk_score: riskScore, risk_level: riskLevel } = score(findings);
    const complete = (fetched?.analysis.complete ?? true) && (payloadResult?.complete ?? true);
    const decision = decide({
      level: riskLevel,
      complete,
      // With a payload the allow list suppresses the target's own findings only (applyContext did).
      allowlisted: allowlisted && !payloadResult,
      sanctioned: sanctioned !== null || (payloadResult?.flagged ?? false),
      failMode,
    });
    return {
      kind: 'preflight',
      target,
      network,
      targetKind: fetched?.analysis.kind ?? null,
      riskScore,
      riskLevel,
      complete,
      findings,
      facts: fetched?.analysis.facts ?? {},
      dataAsOf: fetched?.analysis.dataAsOf ?? payloadDataAsOf(payloadResult?.simulation),
      evaluatedAt: new Date(),
      cached: fetched?.cached ?? false,
      engineVersion: this.deps.engineVersion,
      intent,
      decision,
      policy: { name, failMode, deadlineMs, allowlisted },
      ...(payloadResult ? { simulation: payloadResult.simulation, signature: payloadResult.signature } : {}),
    };
  }

  /**
   * Where a preflight runs: `chain`/`network` when given; else the payload's own chain (a Solana wire
   * transaction, a transaction's `chainId`, typed data's `domain.chainId`); else the target's or `from`'s
   * address format.
   */
  private preflightNetwork(request: PreflightRequest): NetworkDef {
    if (request.chain !== undefined || request.network !== undefined)
      return this.deps.providers.resolve(request.chain, request.network);
    if (typeof request.transaction === 'string') return this.deps.providers.resolve('solana', 'mainnet');
    const declared =
      typeof request.transaction === 'object' && request.transaction.chainId
        ? BigInt(request.transaction.chainId)
        : declaredTypedDataChain(request.typed_data);
    if (declared !== null) return this.deps.providers.resolve(`eip155:${declared}`, undefined);
    const address = request.target ?? request.from;
    const field = request.target !== undefined ? 'target' : 'from';
    if (address === undefined)
      throw invalidRequest('Say which chain: chain/network, or a target or from address.', [
        { path: 'chain', message: 'required when nothing else names the chain' },
      ]);
    const inferred = inferChainFromAddress(address, field);
    return this.deps.providers.resolve(inferred.network.chain, inferred.network.network);
  }

  /**
   * The preflight's target: the given one (checked against the payload: a transaction's `to`, typed
   * data's `verifyingContract`), or the one the payload names, or null.
   */
  private preflightTarget(
    network: NetworkDef,
    given: string | undefined,
    payload: Payload | null,
  ): string | null {
    const target = given === undefined ? null : parseAddress(network, given, 'target');
    if (!payload) return target;
    let derived: string | null = null;
    let what = '';
    if (payload.kind === 'evm_transaction') [derived, what] = [payload.tx.to, "the transaction's to"];
    if (payload.kind === 'typed_data' && typeof payload.typed.domain.verifyingContract === 'string')
      [derived, what] = [
        parseAddress(network, payload.typed.domain.verifyingContract, 'typed_data.domain.verifyingContract'),
        "the typed data's verifyingContract",
      ];
    if (target === null) return derived;
    if (derived !== null && derived.toLowerCase() !== target.toLowerCase())
      throw invalidRequest(`target ${target} is not ${what} (${derived}).`, [
        { path: 'target', message: `must equal ${what}` },
      ]);
    if (derived === null && (payload.kind === 'evm_transaction' || payload.kind === 'typed_data'))
      throw invalidRequest(`target ${target} is not named by the payload.`, [
        { path: 'target', message: `must equal ${what || "the payload's contract"}` },
      ]);
    return target;
  }
}

const rank = (f: Finding) => SEVERITIES.indexOf(f.severity);

/**
 * What an ERC-20's owner could do (docs/risk.md#erc-20-tokens): the token's trustworthiness, not what a
 * payload that calls it does — an exact approve of a mintable token risks no more than the amount.
 */
const TOKEN_CAPABILITY_CODES: ReadonlySet<string> = new Set([
  'mint_authority_enabled',
  'freeze_authority_enabled',
  'pausable',
  'burn_from_any',
  'fee_modifiable',
  'transfer_limits',
  'trading_switch',
]);

/**
 * A payload preflight's called contract keeps its findings, but below high — and a token's capabilities
 * whatever their level — they do not weigh: what the payload does decides (an exact approve of a token
 * behind an EIP-1967 proxy, or of a mintable one, is not a warning).
 */
function calledContractFinding(f: Finding): Finding {
  const capability = TOKEN_CAPABILITY_CODES.has(f.code);
  if (f.suppressed || f.severity === 'info' || (rank(f) >= SEVERITIES.indexOf('high') && !capability))
    return f;
  return {
    ...f,
    severity: 'info',
    loweredFrom: f.severity,
    detail: capability
      ? `${f.detail} (${f.severity} on its own; what a token's owner could do does not weigh on a payload preflight: what the payload does decides.)`
      : `${f.detail} (${f.severity} on its own; the called contract's findings below high do not weigh on a payload preflight.)`,
  };
}

/** The chain position of a preflight without a target: the simulated block or slot. */
function payloadDataAsOf(simulation: Simulation | undefined): { slot?: number; block?: number } {
  if (simulation?.block !== undefined) return { block: simulation.block };
  if (simulation?.slot !== undefined) return { slot: simulation.slot };
  return {};
}

/** `domain.chainId` of typed data as sent (object or JSON string), when it reads as an integer. */
function declaredTypedDataChain(typed: PayloadFields['typed_data']): bigint | null {
  let value: unknown = typed;
  if (typeof typed === 'string') {
    try {
      value = JSON.parse(typed);
    } catch {
      return null;
    }
  }
  const chainId = (value as { domain?: { chainId?: unknown } } | undefined)?.domain?.chainId;
  if (typeof chainId !== 'number' && typeof chainId !== 'string' && typeof chainId !== 'bigint') return null;
  try {
    const n = BigInt(chainId);
    return n > 0n ? n : null;
  } catch {
    return null;
  }
}
