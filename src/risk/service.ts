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
 *     deadline → a `PreflightVerdict` (plus the decision and the policy it was made under); `preflight()`
 *     also takes a payload (the transaction or signature itself). Its rules are preflight.ts's.
 * `scanToken` is `evaluate` as `token` that insists on a mint (404 `not_found` / 422 `not_a_mint`
 * otherwise), so a scan needs no type test of its own.
 *
 * Verdicts are domain objects: camelCase, `evaluatedAt` a Date, findings as the catalog raises them; the
 * snake_case HTTP bodies are present.ts's. No impact counting here either: the routes count what users
 * asked for, and a worker's evaluation is not one of those.
 */
import type { RedisClient } from '../platform/redis.js';
import type { Registry } from 'prom-client';
import { parseAddress } from '../chains/addresses.js';
import type { ChainProviders } from '../chains/providers.js';
import { networkLabel, type NetworkDef } from '../chains/registry.js';
import type { ListsCache } from '../lists/cache.js';
import { AppError } from '../platform/errors.js';
import type { Logger } from '../platform/logger.js';
import { AnalysisCache, type CachedAnalysis } from './analysis-cache.js';
import { ChainAnalyzer, type Mode, type Subject } from './chain-analysis.js';
import { applyContext, verdictBase } from './context.js';
import { mergeKnownWalletImplementations, type KnownWalletImplementations } from './known/evm.js';
import { mergeEvmTokenRegistry, type EvmTokenRegistry } from './known/evm-tokens.js';
import { analysisCacheCounts } from './metrics.js';
import type { EvmTokenAnalysis } from './evm/token/analyze.js';
import type { WalletApprovalsView } from './evm/wallet-approvals.js';
import { approvalsSince, type ApprovalsSince } from './approvals-since.js';
import { SOLANA_KNOWN, type SolanaKnownRegistry } from './known/solana.js';
import { INTENTS, oneOf } from './policy.js';
import type { RiskSettings } from './settings.js';
import { describeSolanaKind } from './solana/kind.js';
import type { SolanaTokenAnalysis } from './solana/token/index.js';
import { Preflights, type PreflightRequest, type PreflightVerdict } from './preflight.js';
import { Screener } from './screen.js';
import { TARGET_TYPES, type ChainAnalysis, type TargetType, type VerdictBase } from './types.js';

export type { PreflightRequest, PreflightVerdict } from './preflight.js';

/** Stated in every risk-v2 answer; part of the cache key, so a new engine never serves an old verdict. */
export const ENGINE_VERSION = '2.1.0';

export interface RiskServiceDeps {
  providers: ChainProviders;
  redis: RedisClient;
  redisKeyPrefix: string;
  lists: ListsCache;
  logger: Logger;
  settings: RiskSettings;
  solanaKnown?: SolanaKnownRegistry;
  walletImplementations?: KnownWalletImplementations;
  /** Routers and well-known ERC-20s; default: the built-in data with `risk.evm` on top. */
  evmTokens?: EvmTokenRegistry;
  /** prom-client registry for `riskwatch_risk_cache_requests_total`. */
  metrics?: Registry;
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

/**
 * `fresh`: skip the analysis cache (the watchlist scanner, when an entry's state just changed).
 * `approvals: false`: an EVM wallet without its approvals read from logs (the watchlist scanner, which
 * follows new approvals from a block cursor instead: `approvalsSince`).
 */
export type EvaluateOptions =
  { targetType: string; fresh?: boolean; approvals?: boolean } | { intent: string };

/** The target judged as the stated type (risk-v2, watchlists). */
export interface TargetVerdict extends VerdictBase {
  kind: 'target';
  targetType: TargetType;
  /** An EVM wallet's outstanding approvals (risk-v2); null when not read, absent elsewhere. */
  approvals?: WalletApprovalsView | null;
}

/**
 * A Solana mint or an ERC-20 judged as a `token`: the target verdict plus what the token says, as the
 * token analyzers read it (and the cache keeps it: amounts as decimal strings).
 */
export type TokenVerdict = VerdictBase & { kind: 'token'; targetType: 'token' } & (
    | {
        tokenProgram: SolanaTokenAnalysis['tokenProgram'];
        token: SolanaTokenAnalysis['token'];
        /** null when the holder check did not finish (then `complete` is false). */
        holders: SolanaTokenAnalysis['holders'];
        known: SolanaTokenAnalysis['known'];
      }
    | {
        tokenProgram: 'erc20';
        token: EvmTokenAnalysis['token'];
        /** Holders are not read on EVM chains (no index of balances on a node). */
        holders: null;
        known: EvmTokenAnalysis['known'];
      }
  );

export type Verdict = TargetVerdict | TokenVerdict | PreflightVerdict;

/** Where a target type exists: `contract` is EVM's, `program` and `token` are Solana's. */
const FAMILIES_OF: Record<TargetType, readonly NetworkDef['family'][]> = {
  wallet: ['solana', 'evm'],
  contract: ['evm'],
  program: ['solana'],
  token: ['solana', 'evm'],
};

/**
 * The risk engine. A chain analysis (list-free, the same for every account) comes from the analysis
 * cache or the chain analyzer; each caller's lists (sanctions, deny, allow) and the request's context
 * (target type, intent) are applied on top, per call, from memory (context.ts).
 */
export class RiskService {
  private readonly analyzer: ChainAnalyzer;
  private readonly cache: AnalysisCache;
  private readonly preflights: Preflights;
  /** Bulk screenings (screen.ts): targets resolved, read in batches, judged as a transfer. */
  readonly screener: Screener;
  private readonly walletImplementations: KnownWalletImplementations;

  constructor(private readonly deps: RiskServiceDeps) {
    const solanaKnown = deps.solanaKnown ?? SOLANA_KNOWN;
    const walletImplementations = deps.walletImplementations ?? mergeKnownWalletImplementations();
    this.walletImplementations = walletImplementations;
    const evmTokens =
      deps.evmTokens ?? mergeEvmTokenRegistry(deps.settings.evm.routers, deps.settings.evm.known_tokens);
    this.analyzer = new ChainAnalyzer({
      evmTokens,
      approvalsLookbackDays: deps.settings.evm.approvals_lookback_days,
      providers: deps.providers,
      recentTransactions: deps.settings.recent_transactions,
      solanaKnown,
      walletImplementations,
    });
    this.cache = new AnalysisCache({
      redis: deps.redis,
      keyPrefix:
        `${deps.redisKeyPrefix}risk:${ENGINE_VERSION}:` +
        `${solanaKnown.version}:${walletImplementations.version}:${evmTokens.version}:`,
      ttlSeconds: deps.settings.cache_ttl_s,
      logger: deps.logger,
      counts: deps.metrics ? analysisCacheCounts(deps.metrics) : undefined,
    });
    const failMode = deps.settings.preflight.fail_mode;
    this.screener = new Screener({ ...deps, walletImplementations, failMode, analyze: this.fullAnalysis });
    this.preflights = new Preflights({
      providers: deps.providers,
      lists: deps.lists,
      settings: deps.settings.preflight,
      walletImplementations,
      engineVersion: ENGINE_VERSION,
      analyze: (network, address, budgetMs, block) =>
        this.chainAnalysis(network, address, 'auto', 'preflight', budgetMs, false, block),
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
    options: { targetType: string; fresh?: boolean; approvals?: boolean },
  ): Promise<TargetVerdict | TokenVerdict>;
  evaluate(accountId: string, target: TargetRef, options: { intent: string }): Promise<PreflightVerdict>;
  evaluate(accountId: string, target: TargetRef, options: EvaluateOptions): Promise<Verdict> {
    return 'intent' in options
      ? this.preflight(accountId, { ...target, target: target.address, intent: options.intent })
      : this.evaluateAsType(
          accountId,
          target,
          options.targetType,
          options.fresh,
          options.approvals !== false,
        );
  }

  /**
   * `evaluate` as a `token` that must be one: no account (Solana) or no code (EVM) → 404 `not_found`,
   * anything else → 422 `not_a_mint`. Without `chain` the mint's format decides, as a preflight infers
   * it: base58 → solana, `0x…` → ethereum.
   */
  async scanToken(
    accountId: string,
    mint: { address: string; chain?: string | undefined; network?: string | undefined },
  ): Promise<TokenVerdict> {
    const chain = mint.chain ?? (/^0x/i.test(mint.address.trim()) ? 'ethereum' : 'solana');
    const verdict = await this.evaluate(
      accountId,
      { chain, network: mint.network ?? 'mainnet', address: mint.address, field: 'mint' },
      { targetType: 'token' },
    );
    if (verdict.kind === 'token') return verdict;
    if (verdict.network.family === 'evm') {
      const at = `on ${networkLabel(verdict.network)} (block ${verdict.dataAsOf.block})`;
      if (verdict.targetKind === 'wallet' || verdict.targetKind === 'missing')
        throw new AppError(
          'not_found',
          `No contract code exists at ${verdict.target} ${at}: there is no token here.`,
        );
      throw new AppError(
        'not_a_mint',
        `${verdict.target} ${at} is ${verdict.targetKind === 'delegated_wallet' ? 'an account delegated by EIP-7702' : 'a contract'} ` +
          'that does not answer as an ERC-20 (totalSupply and allowance).',
      );
    }
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
    approvals = true,
  ): Promise<TargetVerdict | TokenVerdict> {
    const network = this.deps.providers.resolve(ref.chain, ref.network);
    const targetType = oneOf(TARGET_TYPES, type, 'unsupported_target_type', 'target_type');
    if (!FAMILIES_OF[targetType].includes(network.family))
      throw new AppError(
        'unsupported_target_type',
        `target_type "${targetType}" does not exist on ${networkLabel(network)}: use ` +
          `${network.family === 'evm' ? '`wallet`, `contract` or `token`' : '`wallet`, `program` or `token`'}.`,
        { errors: [{ path: 'target_type', message: `not a target type of ${network.chain}` }] },
      );
    const target = parseAddress(network, ref.address, ref.field);
    const subject =
      targetType === 'wallet' && network.family === 'evm' && approvals ? 'wallet_approvals' : targetType;
    const [fetched, lists] = await Promise.all([
      this.chainAnalysis(network, target, subject, 'full', 0, fresh),
      this.deps.lists.view(accountId),
    ]);
    const judged = applyContext(fetched.analysis, { network, target, targetType, lists });
    const base = verdictBase(network, target, fetched, judged, ENGINE_VERSION);
    const { analysis } = fetched;
    if (targetType === 'token' && isEvmTokenAnalysis(analysis))
      return {
        ...base,
        kind: 'token',
        targetType: 'token',
        tokenProgram: 'erc20',
        token: analysis.token,
        holders: null,
        known: analysis.known,
      };
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
      : {
          ...base,
          kind: 'target',
          targetType,
          ...(analysis.approvals !== undefined ? { approvals: analysis.approvals } : {}),
        };
  }

  /**
   * An EVM wallet's outstanding approvals (GET /api/v1/approvals): its risk-v2 `wallet` verdict, which
   * carries them. Another chain → 400 `unsupported_chain`; approvals that could not be read at all →
   * 503 `provider_unavailable` (a partly read window answers, `complete: false`, its gaps named).
   */
  async walletApprovals(
    accountId: string,
    ref: TargetRef,
  ): Promise<TargetVerdict & { approvals: WalletApprovalsView }> {
    const network = this.deps.providers.resolve(ref.chain ?? 'ethereum', ref.network);
    if (network.family !== 'evm')
      throw new AppError(
        'unsupported_chain',
        `Approvals are read on EVM networks; ${networkLabel(network)} is not one (Solana delegates are in its risk-v2 wallet answer).`,
        { errors: [{ path: 'chain', message: 'expected an EVM chain' }] },
      );
    const verdict = await this.evaluateAsType(
      accountId,
      { ...ref, chain: network.chain, network: network.network },
      'wallet',
    );
    if (verdict.kind !== 'target' || !verdict.approvals) {
      const why = verdict.findings.find((f) => f.code === 'check_incomplete');
      throw new AppError(
        'provider_unavailable',
        `The approvals of ${verdict.target} on ${networkLabel(network)} could not be read` +
          (why ? `: ${why.detail}` : '.'),
      );
    }
    return { ...verdict, approvals: verdict.approvals };
  }

  /** New approvals of an EVM wallet after a block, for the watchlist scanner (approvals-since.ts). */
  approvalsSince(accountId: string, ref: TargetRef, afterBlock: bigint | null): Promise<ApprovalsSince> {
    const { providers, lists } = this.deps;
    return approvalsSince(
      { providers, lists, walletImplementations: this.walletImplementations },
      accountId,
      ref,
      afterBlock,
    );
  }

  /**
   * Shield preflight (preflight.ts): the intent checked here, the rest within the preflight deadline.
   */
  preflight(accountId: string, request: PreflightRequest): Promise<PreflightVerdict> {
    return this.preflights.evaluate(
      accountId,
      request,
      oneOf(INTENTS, request.intent, 'unsupported_intent', 'intent'),
    );
  }

  private readonly fullAnalysis = (network: NetworkDef, address: string) =>
    this.chainAnalysis(network, address, 'auto', 'full');

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

const isTokenAnalysis = (a: ChainAnalysis): a is SolanaTokenAnalysis =>
  (a as Partial<SolanaTokenAnalysis>).status === 'mint';
const isEvmTokenAnalysis = (a: ChainAnalysis): a is EvmTokenAnalysis =>
  (a as Partial<EvmTokenAnalysis>).status === 'erc20';
