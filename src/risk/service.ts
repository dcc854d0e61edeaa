import type { Redis } from 'ioredis';
import { inferChainFromAddress, parseAddress } from '../chains/addresses.js';
import type { ChainProviders } from '../chains/providers.js';
import { clip, networkLabel, type NetworkDef } from '../chains/registry.js';
import type { ImpactService } from '../impact/service.js';
import type { AccountListView, ListsCache } from '../lists/cache.js';
import type { ListStatus } from '../lists/service.js';
import type { Config } from '../platform/config.js';
import { AppError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { Logger } from '../platform/logger.js';
import { analyzeEvmAccount } from './evm/account.js';
import { finding, SEVERITIES, suppress, type Evidence, type Finding } from './findings.js';
import { mergeKnownWalletImplementations, type KnownWalletImplementations } from './known/evm.js';
import { SOLANA_KNOWN, type SolanaKnownRegistry } from './known/solana.js';
import { findLookalike } from './lookalike.js';
import { decide, INTENTS, type Decision, type FailMode, type Intent } from './policy.js';
import { score, type RiskLevel } from './scoring.js';
import { describeSolanaKind, isSolanaTargetTypeMismatch } from './solana/kind.js';
import { analyzeSolanaProgram } from './solana/program.js';
import { analyzeSolanaToken, type SolanaTokenAnalysis } from './solana/token.js';
import { analyzeSolanaWallet, incompleteFinding } from './solana/wallet.js';
import { TARGET_TYPES, type ChainAnalysis, type TargetKind, type TargetType } from './types.js';

/** Stated in every risk-v2 answer; part of the cache key, so a new engine never serves an old verdict. */
export const ENGINE_VERSION = '2.0.0';

/** What a chain analysis is of: a risk-v2 `target_type`, or `auto` (preflight: whatever the target is). */
type Subject = TargetType | 'auto';

/** Budget class of an analysis: a preflight's short deadline, or the full one of risk-v2 / scan. */
type Mode = 'preflight' | 'full';

export type RiskSettings = Config['risk'];

export interface RiskServiceDeps {
  providers: ChainProviders;
  redis: Redis;
  redisKeyPrefix: string;
  lists: ListsCache;
  impact: ImpactService;
  logger: Logger;
  settings: RiskSettings;
  solanaKnown?: SolanaKnownRegistry;
  walletImplementations?: KnownWalletImplementations;
}

export interface FindingView {
  code: string;
  severity: Finding['severity'];
  title: string;
  detail: string;
  evidence: Evidence;
  suppressed: boolean;
  suppressed_reason?: string;
}

export interface AssessmentBody {
  assessment_id: string;
  target: string;
  chain: string;
  network: string;
  target_type: TargetType;
  risk_score: number;
  risk_level: RiskLevel;
  complete: boolean;
  findings: FindingView[];
  facts: Record<string, unknown>;
  data_as_of: { slot?: number; block?: number };
  assessed_at: string;
  cached: boolean;
  engine_version: string;
}

export interface ScanBody {
  scan_id: string;
  mint: string;
  network: string;
  token_program: SolanaTokenAnalysis['tokenProgram'];
  risk_score: number;
  risk_level: RiskLevel;
  complete: boolean;
  token: SolanaTokenAnalysis['token'];
  holders: SolanaTokenAnalysis['holders'];
  known: SolanaTokenAnalysis['known'];
  findings: FindingView[];
  data_as_of: { slot?: number };
  scanned_at: string;
  cached: boolean;
}

export interface PreflightBody {
  decision: Decision;
  target: string;
  intent: Intent;
  chain: string;
  network: string;
  risk_level: RiskLevel;
  risk_score: number;
  complete: boolean;
  reasons: {
    code: string;
    severity: Finding['severity'];
    title: string;
    detail: string;
    evidence: Evidence;
  }[];
  policy: { name: string; fail_mode: FailMode; deadline_ms: number; allowlisted: boolean };
  checked_at: string;
  cached: boolean;
}

interface Analysed {
  analysis: ChainAnalysis;
  cached: boolean;
}

/** Where a target type exists: `contract` is EVM's, `program` and `token` are Solana's. */
const FAMILIES_OF: Record<TargetType, readonly NetworkDef['family'][]> = {
  wallet: ['solana', 'evm'],
  contract: ['evm'],
  program: ['solana'],
  token: ['solana'],
};

/** EVM kinds without contract code of their own: externally owned accounts. */
const EOA_KINDS: ReadonlySet<TargetKind> = new Set(['wallet', 'missing', 'delegated_wallet']);
/** Solana kinds a transfer should not be sent to: funds sent there are usually lost. */
const NOT_A_RECIPIENT: ReadonlySet<TargetKind> = new Set(['token', 'program']);
/** EVM kinds in words (the `target_type_mismatch` detail). */
const EVM_KIND_LABEL: Record<TargetKind, string> = {
  wallet: 'an externally owned account (no code)',
  missing: 'an unused address',
  delegated_wallet: 'an externally owned account delegated by EIP-7702',
  contract: 'a contract',
  token: 'a token',
  token_account: 'a token account',
  program: 'a program',
  account: 'an account',
};
/** Left standing on an allow-listed target: the lists' own verdicts. */
const NEVER_SUPPRESSED = new Set(['sanctioned_address', 'org_denylisted']);
/** How long this process reuses an analysis read from (or written to) Redis, and how many it keeps. */
const LOCAL_TTL_MS = 1000;
const LOCAL_MAX = 5000;
/** Time kept back from a preflight's deadline to apply lists, score and answer. */
const PREFLIGHT_RESERVE_MS = 100;

const rank = (f: Finding) => SEVERITIES.indexOf(f.severity);
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * The risk engine behind risk-v2, scan/token and shield preflight. A chain analysis (list-free, the same
 * for every account) is cached in Redis per (network, subject, target) with a TTL by its level and shared
 * by identical concurrent requests; each caller's lists (sanctions, deny, allow) and the request's
 * context (target type, intent) are applied on top, per request, from memory.
 */
export class RiskService {
  private readonly flights = new Map<string, Promise<ChainAnalysis>>();
  /** A second or less of what Redis holds, in this process: a hot target costs no Redis read or parse. */
  private readonly local = new Map<string, { analysis: ChainAnalysis; until: number }>();
  private readonly solanaKnown: SolanaKnownRegistry;
  private readonly walletImplementations: KnownWalletImplementations;
  private readonly cachePrefix: string;

  constructor(private readonly deps: RiskServiceDeps) {
    this.solanaKnown = deps.solanaKnown ?? SOLANA_KNOWN;
    this.walletImplementations = deps.walletImplementations ?? mergeKnownWalletImplementations();
    this.cachePrefix =
      `${deps.redisKeyPrefix}risk:${ENGINE_VERSION}:` +
      `${this.solanaKnown.version}:${this.walletImplementations.version}:`;
  }

  /** POST /api/web3/risk-v2. */
  async assess(
    accountId: string,
    input: { target: string; chain: string; network?: string | undefined; target_type: string },
  ): Promise<AssessmentBody> {
    const network = this.deps.providers.resolve(input.chain, input.network);
    const targetType = oneOf(TARGET_TYPES, input.target_type, 'unsupported_target_type', 'target_type');
    if (!FAMILIES_OF[targetType].includes(network.family))
      throw new AppError(
        'unsupported_target_type',
        `target_type "${targetType}" does not exist on ${networkLabel(network)}: use ` +
          `${network.family === 'evm' ? '`wallet` or `contract`' : '`wallet`, `program` or `token`'}.`,
        { errors: [{ path: 'target_type', message: `not a target type of ${network.chain}` }] },
      );
    const target = parseAddress(network, input.target);
    const [{ analysis, cached }, lists] = await Promise.all([
      this.analysed(network, target, targetType, 'full'),
      this.deps.lists.view(accountId),
    ]);
    const verdict = applyContext(analysis, { network, target, targetType, lists });
    this.count('assessments', verdict.findings);
    return {
      assessment_id: newId('asm'),
      target,
      chain: network.chain,
      network: network.network,
      target_type: targetType,
      risk_score: verdict.risk_score,
      risk_level: verdict.risk_level,
      complete: analysis.complete,
      findings: verdict.findings.map(findingView),
      facts: analysis.facts,
      data_as_of: analysis.dataAsOf,
      assessed_at: new Date().toISOString(),
      cached,
      engine_version: ENGINE_VERSION,
    };
  }

  /** POST /api/v1/scan/token. */
  async scanToken(
    accountId: string,
    input: { mint: string; network?: string | undefined },
  ): Promise<ScanBody> {
    const network = this.deps.providers.resolve('solana', input.network ?? 'mainnet');
    const mint = parseAddress(network, input.mint, 'mint');
    const [{ analysis, cached }, lists] = await Promise.all([
      this.analysed(network, mint, 'token', 'full'),
      this.deps.lists.view(accountId),
    ]);
    if (analysis.kind === 'missing')
      throw new AppError(
        'not_found',
        `No account exists at ${mint} on ${networkLabel(network)} (slot ${analysis.dataAsOf.slot}): there is no mint here.`,
      );
    if (!isTokenAnalysis(analysis))
      throw new AppError(
        'not_a_mint',
        `${mint} is ${describeSolanaKind(analysis.kind)} owned by ${String(analysis.facts.owner_program)}, ` +
          `not an SPL Token or Token-2022 mint (slot ${analysis.dataAsOf.slot}).`,
      );
    const verdict = applyContext(analysis, { network, target: mint, lists });
    this.count('token_scans', verdict.findings);
    return {
      scan_id: newId('scn'),
      mint,
      network: network.network,
      token_program: analysis.tokenProgram,
      risk_score: verdict.risk_score,
      risk_level: verdict.risk_level,
      complete: analysis.complete,
      token: analysis.token,
      holders: analysis.holders,
      known: analysis.known,
      findings: verdict.findings.map(findingView),
      data_as_of: analysis.dataAsOf,
      scanned_at: new Date().toISOString(),
      cached,
    };
  }

  /** POST /api/v1/shield/preflight: always answers within the preflight deadline. */
  async preflight(
    accountId: string,
    input: { target: string; intent: string; chain?: string | undefined; network?: string | undefined },
  ): Promise<PreflightBody> {
    const started = Date.now();
    const intent = oneOf(INTENTS, input.intent, 'unsupported_intent', 'intent');
    const {
      deadline_ms: deadlineMs,
      fail_mode: failMode,
      policy_name: policyName,
    } = this.deps.settings.preflight;
    let network: NetworkDef;
    let target: string;
    if (input.chain === undefined && input.network === undefined) {
      const inferred = inferChainFromAddress(input.target);
      network = this.deps.providers.resolve(inferred.network.chain, inferred.network.network);
      target = inferred.address;
    } else {
      network = this.deps.providers.resolve(input.chain, input.network);
      target = parseAddress(network, input.target);
    }
    const lists = await this.deps.lists.view(accountId);
    const budget = Math.max(0, deadlineMs - PREFLIGHT_RESERVE_MS - (Date.now() - started));
    const { analysis, cached } = await this.analysed(network, target, 'auto', 'preflight', budget).catch(
      (err: unknown) => {
        if (!(err instanceof AppError) || err.code !== 'provider_unavailable') throw err;
        return { analysis: unreadAnalysis(network, err), cached: false };
      },
    );
    const verdict = applyContext(analysis, { network, target, intent, lists });
    const { status } = verdict;
    const allowlisted = status.allowed !== null && status.denied === null;
    const decision = decide({
      level: verdict.risk_level,
      complete: analysis.complete,
      allowlisted,
      sanctioned: status.sanctioned !== null,
      failMode,
    });
    this.count('preflights', verdict.findings);
    if (decision === 'block') this.deps.impact.count('preflights_blocked');
    if (decision === 'warn') this.deps.impact.count('preflights_warned');
    return {
      decision,
      target,
      intent,
      chain: network.chain,
      network: network.network,
      risk_level: verdict.risk_level,
      risk_score: verdict.risk_score,
      complete: analysis.complete,
      reasons: verdict.findings
        .filter((f) => !f.suppressed && (f.severity !== 'info' || f.code === 'check_incomplete'))
        .map((f) => ({
          code: f.code,
          severity: f.severity,
          title: f.title,
          detail: f.detail,
          evidence: f.evidence,
        })),
      policy: { name: policyName, fail_mode: failMode, deadline_ms: deadlineMs, allowlisted },
      checked_at: new Date().toISOString(),
      cached,
    };
  }

  private count(metric: 'assessments' | 'token_scans' | 'preflights', findings: readonly Finding[]): void {
    this.deps.impact.count(metric);
    this.deps.impact.count(
      'high_risk_findings',
      findings.filter((f) => !f.suppressed && (f.severity === 'high' || f.severity === 'critical')).length,
    );
  }

  /**
   * The chain analysis of `target`: from the cache, else computed once for every identical request in
   * flight in this process, then cached when complete. Full mode: past `risk.deadline_ms`, or when the
   * target's account itself could not be read, → `503 provider_unavailable`. Preflight mode: whatever
   * finished within `budgetMs`; what did not is `check_incomplete`.
   */
  private async analysed(
    network: NetworkDef,
    target: string,
    subject: Subject,
    mode: Mode,
    budgetMs?: number,
  ): Promise<Analysed> {
    const key = `${this.cachePrefix}${network.caip2}:${subject}:${target}`;
    const near = this.local.get(key);
    if (near && near.until > Date.now()) return { analysis: near.analysis, cached: true };
    const hit = await this.cacheGet(key);
    if (hit) {
      this.keepLocal(key, hit, LOCAL_TTL_MS);
      return { analysis: hit, cached: true };
    }

    const flightKey = `${key}|${mode}`;
    let flight = this.flights.get(flightKey);
    if (!flight) {
      const ms = mode === 'full' ? this.deps.settings.deadline_ms : (budgetMs ?? 0);
      flight = this.analyse(network, target, subject, ms, mode);
      this.flights.set(flightKey, flight);
      const done = () => this.flights.delete(flightKey);
      flight.then((analysis) => {
        done();
        this.cacheSet(key, analysis);
      }, done);
    }
    const analysis = await flight;
    if (mode === 'full' && analysis.facts.exists === null) {
      const why = analysis.findings.find((f) => f.code === 'check_incomplete');
      throw new AppError(
        'provider_unavailable',
        `The ${networkLabel(network)} node provider did not answer for ${target}` +
          (why ? `: ${why.detail}` : '.'),
      );
    }
    return { analysis, cached: false };
  }

  /** Runs the analyzers of `subject` with an abort signal at `ms`, and a hard stop just after it. */
  private async analyse(
    network: NetworkDef,
    target: string,
    subject: Subject,
    ms: number,
    mode: Mode,
  ): Promise<ChainAnalysis> {
    const signal = AbortSignal.timeout(Math.max(1, ms));
    const work = this.run(network, target, subject, signal);
    let timer: NodeJS.Timeout | undefined;
    const hardStop = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new AppError(
              'provider_unavailable',
              `The ${networkLabel(network)} analysis of ${target} did not finish within ${ms} ms.`,
            ),
          ),
        ms + (mode === 'preflight' ? PREFLIGHT_RESERVE_MS / 2 : 250),
      );
    });
    try {
      return await Promise.race([work, hardStop]);
    } finally {
      clearTimeout(timer);
      work.catch(() => undefined);
    }
  }

  private async run(
    network: NetworkDef,
    target: string,
    subject: Subject,
    signal: AbortSignal,
  ): Promise<ChainAnalysis> {
    const opts = { network, signal };
    if (network.family === 'evm') {
      return analyzeEvmAccount(this.deps.providers.evm(network), target, {
        ...opts,
        knownWalletImplementations: this.walletImplementations,
      });
    }
    const rpc = this.deps.providers.solana(network);
    const wallet = () =>
      analyzeSolanaWallet(rpc, target, { ...opts, recentTxLimit: this.deps.settings.recent_transactions });
    const token = async (): Promise<ChainAnalysis> => {
      const result = await analyzeSolanaToken(rpc, target, { ...opts, known: this.solanaKnown });
      if (result.status === 'mint') return result;
      if (result.status === 'not_found') return missingAccount(target, result.dataAsOf.slot);
      return {
        kind: result.kind,
        findings: [],
        facts: { exists: true, kind: result.kind, owner_program: result.ownerProgram },
        complete: true,
        dataAsOf: result.dataAsOf,
        listInputs: {},
      };
    };
    switch (subject) {
      case 'wallet':
        return wallet();
      case 'program':
        return analyzeSolanaProgram(rpc, target, opts);
      case 'token':
        return token();
      case 'contract':
        throw new Error('contract is not a Solana target type'); // refused before (FAMILIES_OF)
      case 'auto': {
        // What the wallet read finds decides whether the token or program analysis adds to it.
        const base = await wallet();
        if (base.kind === 'token') return merge(base, await token());
        if (base.kind === 'program') return merge(base, await analyzeSolanaProgram(rpc, target, opts));
        return base;
      }
    }
  }

  private async cacheGet(key: string): Promise<ChainAnalysis | undefined> {
    try {
      const raw = await this.deps.redis.get(key);
      return raw ? (JSON.parse(raw) as ChainAnalysis) : undefined;
    } catch (err) {
      this.deps.logger.warn({ err: { message: (err as Error).message } }, 'risk cache read failed');
      return undefined;
    }
  }

  private keepLocal(key: string, analysis: ChainAnalysis, ms: number): void {
    if (this.local.size >= LOCAL_MAX) this.local.clear();
    this.local.set(key, { analysis, until: Date.now() + ms });
  }

  /** Complete analyses only, for the TTL of their level (an unfinished check is not a verdict to keep). */
  private cacheSet(key: string, analysis: ChainAnalysis): void {
    if (!analysis.complete) return;
    const ttl = this.deps.settings.cache_ttl_s[score(analysis.findings).risk_level];
    if (ttl <= 0) return;
    this.keepLocal(key, analysis, Math.min(LOCAL_TTL_MS, ttl * 1000));
    this.deps.redis
      .set(key, JSON.stringify(analysis), 'EX', ttl)
      .catch((err: Error) =>
        this.deps.logger.warn({ err: { message: err.message } }, 'risk cache write failed'),
      );
  }
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

/** A token-subject read that found no account (risk-v2 `token` → account_not_found; scan/token → 404). */
function missingAccount(target: string, slot: number): ChainAnalysis {
  return {
    kind: 'missing',
    findings: [
      finding('account_not_found', `No account exists at ${target} (slot ${slot}).`, {
        method: 'getMultipleAccounts',
        slot,
        value: null,
      }),
    ],
    facts: { exists: false, kind: 'missing' },
    complete: true,
    dataAsOf: { slot },
    listInputs: {},
  };
}

/** A preflight whose chain read failed outright (EVM reads are one batch): everything unknown. */
function unreadAnalysis(network: NetworkDef, err: AppError): ChainAnalysis {
  const method = network.family === 'evm' ? 'eth_getCode' : 'getMultipleAccounts';
  return {
    kind: 'account',
    findings: [incompleteFinding(method, 'the target account', err, undefined)],
    facts: { exists: null, kind: null },
    complete: false,
    dataAsOf: {},
    listInputs: {},
  };
}

/** The wallet read of a Solana target plus the analysis of what it turned out to be (token, program). */
function merge(base: ChainAnalysis, specific: ChainAnalysis): ChainAnalysis {
  const slots = [base.dataAsOf.slot, specific.dataAsOf.slot].filter((s): s is number => s !== undefined);
  return {
    kind: specific.kind,
    findings: [...base.findings, ...specific.findings.filter((f) => f.code !== 'account_not_found')],
    facts: { ...base.facts, ...specific.facts },
    complete: base.complete && specific.complete,
    dataAsOf: slots.length ? { slot: Math.max(...slots) } : {},
    listInputs: base.listInputs,
  };
}

interface Context {
  network: NetworkDef;
  target: string;
  lists: AccountListView;
  targetType?: TargetType;
  intent?: Intent;
}

/**
 * The request's context on top of a (cached, list-free) chain analysis: target type mismatch, intent
 * adjustments (RISK.md), then this account's lists — sanctions and deny list (never suppressed), flagged
 * counterparties and 7702 delegates, lookalikes of allow-listed addresses, and an allow-listed target's
 * other findings suppressed. Then the score. Pure: the analysis itself is never modified.
 */
function applyContext(
  analysis: ChainAnalysis,
  ctx: Context,
): { findings: Finding[]; risk_score: number; risk_level: RiskLevel; status: ListStatus } {
  const { network, target, lists } = ctx;
  const at: Pick<Evidence, 'slot' | 'block'> = analysis.dataAsOf;
  const accountMethod = network.family === 'evm' ? 'eth_getCode' : 'getMultipleAccounts';
  const kind = (analysis.facts.kind ?? null) as TargetKind | null;
  const findings: Finding[] = analysis.findings.map((f) => ({ ...f }));
  const describeKind = (k: TargetKind) =>
    network.family === 'evm' ? EVM_KIND_LABEL[k] : describeSolanaKind(k);
  const mismatch = (expected: string, why: string) =>
    finding('target_type_mismatch', `${target} is ${describeKind(kind!)}, not ${expected}${why}.`, {
      method: accountMethod,
      ...at,
      value: { kind, owner_program: analysis.facts.owner_program ?? null },
    });

  // Target type (risk-v2).
  if (ctx.targetType && kind) {
    if (network.family === 'solana' && isSolanaTargetTypeMismatch(kind, ctx.targetType)) {
      findings.push(mismatch(`a ${ctx.targetType}`, ''));
    } else if (network.family === 'evm') {
      if (ctx.targetType === 'wallet' && kind === 'contract') {
        for (const f of findings) if (f.code === 'is_contract') f.severity = 'medium';
        findings.push(mismatch('a wallet', ': it runs code of its own'));
      } else if (ctx.targetType === 'contract' && kind !== 'contract' && kind !== 'missing') {
        findings.push(mismatch('a contract', ''));
      }
    }
  }

  // Intent (preflight).
  if (ctx.intent === 'transfer') {
    for (const f of findings)
      if (f.code === 'account_not_found' || f.code === 'fresh_address') {
        f.severity = 'medium';
        f.detail += ' Funds sent to an address nobody has used are often a typo or a poisoned copy.';
      }
    if (network.family === 'solana' && kind && NOT_A_RECIPIENT.has(kind))
      findings.push(mismatch('a wallet', ': tokens or SOL sent to it are usually lost'));
  }
  if (ctx.intent === 'approve' && network.family === 'evm' && kind && EOA_KINDS.has(kind)) {
    findings.push(
      finding(
        'approval_to_eoa',
        `${target} is an externally owned account (${kind === 'missing' ? 'never used' : 'no contract code of its own'}): ` +
          'an approval to it lets whoever holds its key move the approved tokens at any time. Legitimate ' +
          'spenders (routers, marketplaces) are contracts.',
        {
          method: 'eth_getCode',
          ...at,
          value: { kind, code: analysis.facts.delegate ? 'EIP-7702 designator' : '0x' },
        },
      ),
    );
  }

  // This account's lists.
  const status = lists.status(network.chain, target);
  if (status.sanctioned) {
    const s = status.sanctioned;
    findings.push(
      finding(
        'sanctioned_address',
        `${target} is listed by ${s.source} (as of ${s.list_as_of}) as a ${s.currency} address of ${s.name}` +
          `${s.uid ? ` (uid ${s.uid})` : ''}.`,
        { method: 'sanctions_list', ...at, value: s },
      ),
    );
  }
  if (status.denied) {
    const d = status.denied;
    findings.push(
      finding(
        'org_denylisted',
        `${target} is on your organisation's deny list${d.label ? ` as "${d.label}"` : ''}` +
          `${d.reason ? `: ${d.reason}` : ''} (entry ${d.id}).`,
        { method: 'org_deny_list', ...at, value: d },
      ),
    );
  }
  const flagged = (analysis.listInputs.counterparties ?? [])
    .map((c) => ({ ...c, ...lists.flagged(network.chain, c.address) }))
    .filter((c) => c.sanctioned || c.denied);
  if (flagged.length > 0) {
    const first = flagged[0]!;
    findings.push(
      finding(
        'interacted_with_flagged',
        `${plural(flagged.length, 'address', 'addresses')} in the most recent transactions ` +
          `${flagged.length === 1 ? 'is' : 'are'} flagged: ` +
          flagged
            .slice(0, 5)
            .map(
              (c) =>
                `${c.address} (${c.sanctioned ? `sanctioned: ${c.sanctioned.source}` : 'your deny list'}, transaction ${c.signature})`,
            )
            .join('; ') +
          '.',
        {
          method: 'getTransaction',
          slot: first.slot,
          value: flagged.map((c) => ({
            address: c.address,
            signature: c.signature,
            slot: c.slot,
            sanctioned: c.sanctioned,
            deny_list_entry: c.denied?.id ?? null,
          })),
        },
      ),
    );
  }
  const delegate = analysis.listInputs.delegate;
  if (delegate) {
    const d = lists.flagged(network.chain, delegate);
    if (d.sanctioned || d.denied)
      for (const f of findings)
        if (f.code === 'eip7702_delegated') {
          f.severity = 'critical';
          f.detail += ` The delegate is ${d.sanctioned ? `sanctioned (${d.sanctioned.source}, ${d.sanctioned.name})` : `on your organisation's deny list (entry ${d.denied!.id})`}.`;
          f.evidence = {
            ...f.evidence,
            value: {
              code: f.evidence.value,
              delegate,
              sanctioned: d.sanctioned,
              deny_list_entry: d.denied?.id ?? null,
            },
          };
        }
  }
  if (network.family === 'evm') {
    const imitated = findLookalike(target, lists.allowed(network.chain));
    if (imitated)
      findings.push(
        finding(
          'lookalike_address',
          `${target} starts and ends like ${imitated}, which your organisation allow-lists, but is a different ` +
            'address: the pattern of address poisoning. Compare every character before sending.',
          { method: 'org_allow_list', ...at, value: { target, imitates: imitated } },
        ),
      );
  }

  const allowed = status.allowed;
  const out =
    allowed && !status.denied
      ? findings.map((f) =>
          NEVER_SUPPRESSED.has(f.code)
            ? f
            : suppress(
                f,
                `allow-listed by your organisation${allowed.label ? ` as "${allowed.label}"` : ''} (entry ${allowed.id})`,
              ),
        )
      : findings;
  out.sort((a, b) => rank(b) - rank(a) || a.code.localeCompare(b.code));
  return { findings: out, ...score(out), status };
}

function findingView(f: Finding): FindingView {
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
