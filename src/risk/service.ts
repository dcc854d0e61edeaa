/*
 * The risk feature's domain API: `evaluate(accountId, target, options) → Verdict`, called by the three
 * endpoints (risk-v2, scan/token, shield/preflight, through present.ts) and by the watchlist workers.
 *
 * The options say what the caller knows, and the verdict is a discriminated union (`kind`) of what came
 * out of it:
 *   - `{ targetType }` (risk-v2, watchlists): the target judged as that type → a `TargetVerdict`, or a
 *     `TokenVerdict` when it is a Solana mint asked for as `token` (the same fields plus the mint's
 *     token details: program, supply, authorities, extensions, holders, registry context);
 *   - `{ intent }` (preflight): the target as whatever it is, before the user acts, within the preflight
 *     deadline → a `PreflightVerdict` (plus the decision and the policy it was made under).
 * `scanToken` is `evaluate` as `token` that insists on a mint (404 `not_found` / 422 `not_a_mint`
 * otherwise), so a scan needs no type test of its own.
 *
 * Verdicts are domain objects: camelCase, `evaluatedAt` a Date, findings as the catalog raises them; the
 * snake_case HTTP bodies are present.ts's. No impact counting here either: the routes count what users
 * asked for, and a worker's evaluation is not one of those.
 */
import type { Redis } from 'ioredis';
import { inferChainFromAddress, parseAddress } from '../chains/addresses.js';
import type { ChainProviders } from '../chains/providers.js';
import { clip, networkLabel, type NetworkDef } from '../chains/registry.js';
import type { ListsCache } from '../lists/cache.js';
import type { Hex } from 'viem';
import { AppError, invalidRequest } from '../platform/errors.js';
import type { Logger } from '../platform/logger.js';
import { AnalysisCache, type CachedAnalysis } from './analysis-cache.js';
import {
  ChainAnalyzer,
  PREFLIGHT_RESERVE_MS,
  unreadAnalysis,
  type Mode,
  type Subject,
} from './chain-analysis.js';
import { applyContext, type ContextualFindings } from './context.js';
import { SEVERITIES, type Finding } from './findings.js';
import { mergeKnownWalletImplementations, type KnownWalletImplementations } from './known/evm.js';
import { inspectPayload } from './payload/inspect.js';
import { parsePayload, payloadFieldsOf, type PayloadFields } from './payload/request.js';
import type { Payload, SignatureInfo, Simulation } from './payload/types.js';
import { SOLANA_KNOWN, type SolanaKnownRegistry } from './known/solana.js';
import { decide, INTENTS, type Decision, type FailMode, type Intent } from './policy.js';
import { score, type RiskLevel } from './scoring.js';
import type { RiskSettings } from './settings.js';
import { describeSolanaKind } from './solana/kind.js';
import type { SolanaTokenAnalysis } from './solana/token/index.js';
import { TARGET_TYPES, type ChainAnalysis, type TargetKind, type TargetType } from './types.js';

/** Stated in every risk-v2 answer; part of the cache key, so a new engine never serves an old verdict. */
export const ENGINE_VERSION = '2.0.0';

export interface RiskServiceDeps {
  providers: ChainProviders;
  redis: Redis;
  redisKeyPrefix: string;
  lists: ListsCache;
  logger: Logger;
  settings: RiskSettings;
  solanaKnown?: SolanaKnownRegistry;
  walletImplementations?: KnownWalletImplementations;
}

/** The target as the caller has it: checked, normalised and resolved by `evaluate`. */
export interface TargetRef {
  /** Solana base58, or EVM `0x` + 40 hex (mixed case must pass EIP-55). */
  address: string;
  /** Chain name or CAIP-2 id. A preflight with neither `chain` nor `network` infers them from the address. */
  chain?: string | undefined;
  /** Network name, alias or CAIP-2 id (default `mainnet`). */
  network?: string | undefined;
  /** The request field the address came from, named by `invalid_address` (default `target`). */
  field?: string;
}

/** `fresh`: skip the analysis cache (the watchlist scanner, when an entry's state just changed). */
export type EvaluateOptions = { targetType: string; fresh?: boolean } | { intent: string };

/** A shield preflight as asked: a target, a payload (transaction, typed data, message) from `from`, or both. */
export interface PreflightRequest extends PayloadFields {
  target?: string | undefined;
  chain?: string | undefined;
  network?: string | undefined;
  intent: string;
}

/** What every verdict holds. */
interface VerdictBase {
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

/** The target judged as the stated type (risk-v2, watchlists). */
export interface TargetVerdict extends VerdictBase {
  kind: 'target';
  targetType: TargetType;
}

/**
 * A Solana mint judged as a `token`: the target verdict plus what the mint says, as the token analyzer
 * reads it (and the cache keeps it: u64 amounts as decimal strings).
 */
export interface TokenVerdict extends VerdictBase {
  kind: 'token';
  targetType: 'token';
  tokenProgram: SolanaTokenAnalysis['tokenProgram'];
  token: SolanaTokenAnalysis['token'];
  /** null when the holder check did not finish (then `complete` is false). */
  holders: SolanaTokenAnalysis['holders'];
  known: SolanaTokenAnalysis['known'];
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

export type Verdict = TargetVerdict | TokenVerdict | PreflightVerdict;

/** Where a target type exists: `contract` is EVM's, `program` and `token` are Solana's. */
const FAMILIES_OF: Record<TargetType, readonly NetworkDef['family'][]> = {
  wallet: ['solana', 'evm'],
  contract: ['evm'],
  program: ['solana'],
  token: ['solana'],
};

/**
 * The risk engine. A chain analysis (list-free, the same for every account) comes from the analysis
 * cache or the chain analyzer; each caller's lists (sanctions, deny, allow) and the request's context
 * (target type, intent) are applied on top, per call, from memory (context.ts).
 */
export class RiskService {
  private readonly analyzer: ChainAnalyzer;
  private readonly cache: AnalysisCache;
  private readonly walletImplementations: KnownWalletImplementations;

  constructor(private readonly deps: RiskServiceDeps) {
    const solanaKnown = deps.solanaKnown ?? SOLANA_KNOWN;
    const walletImplementations = deps.walletImplementations ?? mergeKnownWalletImplementations();
    this.walletImplementations = walletImplementations;
    this.analyzer = new ChainAnalyzer({
      providers: deps.providers,
      recentTransactions: deps.settings.recent_transactions,
      solanaKnown,
      walletImplementations,
    });
    this.cache = new AnalysisCache({
      redis: deps.redis,
      keyPrefix:
        `${deps.redisKeyPrefix}risk:${ENGINE_VERSION}:` +
        `${solanaKnown.version}:${walletImplementations.version}:`,
      ttlSeconds: deps.settings.cache_ttl_s,
      logger: deps.logger,
    });
  }

  /**
   * The verdict on `target` for `accountId` (see the top of this module). Full evaluations past
   * `risk.deadline_ms`, or whose target account could not be read, → `503 provider_unavailable`; a
   * preflight always answers within its deadline, with what did not finish as `check_incomplete`.
   */
  evaluate(
    accountId: string,
    target: TargetRef,
    options: { targetType: string; fresh?: boolean },
  ): Promise<TargetVerdict | TokenVerdict>;
  evaluate(accountId: string, target: TargetRef, options: { intent: string }): Promise<PreflightVerdict>;
  evaluate(accountId: string, target: TargetRef, options: EvaluateOptions): Promise<Verdict> {
    return 'intent' in options
      ? this.preflight(accountId, { ...target, target: target.address, intent: options.intent })
      : this.evaluateAsType(accountId, target, options.targetType, options.fresh);
  }

  /** `evaluate` as a `token` that must be a mint: no account → 404 `not_found`, another account → 422 `not_a_mint`. */
  async scanToken(
    accountId: string,
    mint: { address: string; network?: string | undefined },
  ): Promise<TokenVerdict> {
    const verdict = await this.evaluate(
      accountId,
      { chain: 'solana', network: mint.network ?? 'mainnet', address: mint.address, field: 'mint' },
      { targetType: 'token' },
    );
    if (verdict.kind === 'token') return verdict;
    if (verdict.targetKind === 'missing')
      throw new AppError(
        'not_found',
        `No account exists at ${verdict.target} on ${networkLabel(verdict.network)} ` +
          `(slot ${verdict.dataAsOf.slot}): there is no mint here.`,
      );
    throw new AppError(
      'not_a_mint',
      `${verdict.target} is ${describeSolanaKind(verdict.targetKind)} owned by ${String(verdict.facts.owner_program)}, ` +
        `not an SPL Token or Token-2022 mint (slot ${verdict.dataAsOf.slot}).`,
    );
  }

  private async evaluateAsType(
    accountId: string,
    ref: TargetRef,
    type: string,
    fresh = false,
  ): Promise<TargetVerdict | TokenVerdict> {
    const network = this.deps.providers.resolve(ref.chain, ref.network);
    const targetType = oneOf(TARGET_TYPES, type, 'unsupported_target_type', 'target_type');
    if (!FAMILIES_OF[targetType].includes(network.family))
      throw new AppError(
        'unsupported_target_type',
        `target_type "${targetType}" does not exist on ${networkLabel(network)}: use ` +
          `${network.family === 'evm' ? '`wallet` or `contract`' : '`wallet`, `program` or `token`'}.`,
        { errors: [{ path: 'target_type', message: `not a target type of ${network.chain}` }] },
      );
    const target = parseAddress(network, ref.address, ref.field);
    const [fetched, lists] = await Promise.all([
      this.chainAnalysis(network, target, targetType, 'full', 0, fresh),
      this.deps.lists.view(accountId),
    ]);
    const judged = applyContext(fetched.analysis, { network, target, targetType, lists });
    const base = verdictBase(network, target, fetched, judged);
    const { analysis } = fetched;
    return isTokenAnalysis(analysis)
      ? {
          ...base,
          kind: 'token',
          targetType: 'token',
          tokenProgram: analysis.tokenProgram,
          token: analysis.token,
          holders: analysis.holders,
          known: analysis.known,
        }
      : { ...base, kind: 'target', targetType };
  }

  /**
   * Shield preflight: the target as whatever it is, and with a payload what the payload does, within
   * `risk.preflight.deadline_ms` (docs/risk.md#decision). Checks that did not finish are
   * `check_incomplete` and the decision is at least the fail mode.
   */
  async preflight(accountId: string, request: PreflightRequest): Promise<PreflightVerdict> {
    const started = Date.now();
    const intent = oneOf(INTENTS, request.intent, 'unsupported_intent', 'intent');
    const { deadline_ms: deadlineMs, fail_mode: failMode, policy_name: name } = this.deps.settings.preflight;
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
      ? this.chainAnalysis(network, target, 'auto', 'preflight', budget).catch(
          (err: unknown): CachedAnalysis => {
            if (!(err instanceof AppError) || err.code !== 'provider_unavailable') throw err;
            return { analysis: unreadAnalysis(network, err), cached: false };
          },
        )
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
          analyze: (address, ms, block) =>
            this.chainAnalysis(network, address, 'auto', 'preflight', ms, false, block),
          walletImplementations: this.walletImplementations,
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
      engineVersion: ENGINE_VERSION,
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

  /**
   * The chain analysis of `target` as `subject`, cached or computed within the mode's deadline: full
   * mode uses `risk.deadline_ms` and refuses (`503 provider_unavailable`) a target whose own account
   * could not be read; preflight mode uses `budgetMs`.
   */
  private async chainAnalysis(
    network: NetworkDef,
    target: string,
    subject: Subject,
    mode: Mode,
    budgetMs = 0,
    fresh = false,
    block?: bigint,
  ): Promise<CachedAnalysis> {
    const fetched = await this.cache.getOrAnalyze(
      network,
      subject,
      target,
      mode,
      () =>
        this.analyzer.analyzeWithin(
          network,
          target,
          subject,
          mode === 'full' ? this.deps.settings.deadline_ms : budgetMs,
          mode,
          block,
        ),
      fresh,
    );
    const { analysis } = fetched;
    if (!fetched.cached && mode === 'full' && analysis.facts.exists === null) {
      const why = analysis.findings.find((f) => f.code === 'check_incomplete');
      throw new AppError(
        'provider_unavailable',
        `The ${networkLabel(network)} node provider did not answer for ${target}` +
          (why ? `: ${why.detail}` : '.'),
      );
    }
    return fetched;
  }
}

function verdictBase(
  network: NetworkDef,
  target: string,
  { analysis, cached }: CachedAnalysis,
  judged: ContextualFindings,
): VerdictBase {
  return {
    target,
    network,
    targetKind: analysis.kind,
    riskScore: judged.riskScore,
    riskLevel: judged.riskLevel,
    complete: analysis.complete,
    findings: judged.findings,
    facts: analysis.facts,
    dataAsOf: analysis.dataAsOf,
    evaluatedAt: new Date(),
    cached,
    engineVersion: ENGINE_VERSION,
  };
}

/** `value` if it is one of `allowed`, else a 400 with `code` naming the field and the allowed values. */
function oneOf<T extends string>(
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

const isTokenAnalysis = (a: ChainAnalysis): a is SolanaTokenAnalysis =>
  (a as Partial<SolanaTokenAnalysis>).status === 'mint';

const rank = (f: Finding) => SEVERITIES.indexOf(f.severity);

/**
 * A payload preflight's called contract keeps its findings, but below high they do not weigh: what the
 * payload does decides (an exact approve of a token behind an EIP-1967 proxy is not a warning).
 */
function calledContractFinding(f: Finding): Finding {
  if (f.suppressed || f.severity === 'info' || rank(f) >= SEVERITIES.indexOf('high')) return f;
  return {
    ...f,
    severity: 'info',
    loweredFrom: f.severity,
    detail: `${f.detail} (${f.severity} on its own; the called contract's findings below high do not weigh on a payload preflight.)`,
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
