import type { NetworkDef } from '../chains/registry.js';
import type { AccountListView } from '../lists/cache.js';
import type { ListStatus } from '../lists/service.js';
import { finding, SEVERITIES, suppress, type Evidence, type Finding } from './findings.js';
import { findLookalike } from '../lists/lookalike.js';
import type { Intent } from './policy.js';
import { score, type RiskLevel } from './scoring.js';
import { describeSolanaKind, isSolanaTargetTypeMismatch } from './solana/kind.js';
import type { ChainAnalysis, TargetKind, TargetType, VerdictBase } from './types.js';

/*
 * The context rules (docs/risk.md#intents, #lists, #suppression): what a request and an account's lists add to a chain analysis that is the
 * same for everyone (and cached as such). Pure: no I/O, no clock; the analysis itself is never modified.
 */

/** The request's context: where, what the caller says the target is, what the user is about to do. */
export interface EvaluationContext {
  network: NetworkDef;
  /** The target's address as the chain knows it (EIP-55 on EVM). */
  target: string;
  /** This account's lists (sanctions, deny, allow). */
  lists: AccountListView;
  /** risk-v2 / watchlists: the stated target type (→ `target_type_mismatch`). */
  targetType?: TargetType;
  /** Preflight: the user's intent (→ `transfer` and `approve` adjustments). */
  intent?: Intent;
}

/** The findings with the context applied, sorted by severity then code, and their score. */
export interface ContextualFindings {
  findings: Finding[];
  riskScore: number;
  riskLevel: RiskLevel;
  /** What this account's lists say about the target itself. */
  listStatus: ListStatus;
}

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

const rank = (f: Finding) => SEVERITIES.indexOf(f.severity);
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * The request's context on top of a (cached, list-free) chain analysis: target type mismatch, intent
 * adjustments, then this account's lists — sanctions and deny list (never suppressed), flagged
 * counterparties and 7702 delegates, lookalikes of allow-listed addresses, and an allow-listed target's
 * other findings suppressed. Then the score.
 */
export function applyContext(analysis: ChainAnalysis, ctx: EvaluationContext): ContextualFindings {
  const findings: Finding[] = analysis.findings.map((f) => ({ ...f }));
  findings.push(...targetTypeRules(analysis, ctx, findings), ...intentRules(analysis, ctx, findings));
  const listStatus = ctx.lists.status(ctx.network.chain, ctx.target);
  findings.push(...listRules(analysis, ctx, listStatus, findings));
  const out = suppressAllowListed(findings, listStatus);
  out.sort((a, b) => rank(b) - rank(a) || a.code.localeCompare(b.code));
  const { risk_score: riskScore, risk_level: riskLevel } = score(out);
  return { findings: out, riskScore, riskLevel, listStatus };
}

/** A `target_type_mismatch`: the target is not `expected`, for the reason `why` (may be empty). */
function mismatch(analysis: ChainAnalysis, ctx: EvaluationContext, expected: string, why: string): Finding {
  const { network, target } = ctx;
  const kind = analysis.facts.kind as TargetKind;
  const described = network.family === 'evm' ? EVM_KIND_LABEL[kind] : describeSolanaKind(kind);
  return finding('target_type_mismatch', `${target} is ${described}, not ${expected}${why}.`, {
    method: network.family === 'evm' ? 'eth_getCode' : 'getMultipleAccounts',
    ...analysis.dataAsOf,
    value: { kind, owner_program: analysis.facts.owner_program ?? null },
  });
}

const kindOf = (analysis: ChainAnalysis) => (analysis.facts.kind ?? null) as TargetKind | null;

/** risk-v2: the stated target type against the real kind (an EVM contract sent as a wallet: `is_contract` medium). */
function targetTypeRules(analysis: ChainAnalysis, ctx: EvaluationContext, findings: Finding[]): Finding[] {
  const kind = kindOf(analysis);
  const { targetType, network } = ctx;
  if (!targetType || !kind) return [];
  if (network.family === 'solana')
    return isSolanaTargetTypeMismatch(kind, targetType)
      ? [mismatch(analysis, ctx, `a ${targetType}`, '')]
      : [];
  if (targetType === 'wallet' && kind === 'contract') {
    for (const f of findings) if (f.code === 'is_contract') f.severity = 'medium';
    return [mismatch(analysis, ctx, 'a wallet', ': it runs code of its own')];
  }
  if (targetType === 'contract' && kind !== 'contract' && kind !== 'missing')
    return [mismatch(analysis, ctx, 'a contract', '')];
  return [];
}

/**
 * Preflight: a `transfer` to a never-used address is medium, and to a Solana mint or program a
 * mismatch; an `approve` to an EVM externally owned account is `approval_to_eoa`.
 */
function intentRules(analysis: ChainAnalysis, ctx: EvaluationContext, findings: Finding[]): Finding[] {
  const kind = kindOf(analysis);
  const { intent, network, target } = ctx;
  if (intent === 'transfer') {
    for (const f of findings)
      if (f.code === 'account_not_found' || f.code === 'fresh_address') {
        f.severity = 'medium';
        f.detail += ' Funds sent to an address nobody has used are often a typo or a poisoned copy.';
      }
    if (network.family === 'solana' && kind && NOT_A_RECIPIENT.has(kind))
      return [mismatch(analysis, ctx, 'a wallet', ': tokens or SOL sent to it are usually lost')];
  }
  if (intent === 'approve' && network.family === 'evm' && kind && EOA_KINDS.has(kind))
    return [
      finding(
        'approval_to_eoa',
        `${target} is an externally owned account (${kind === 'missing' ? 'never used' : 'no contract code of its own'}): ` +
          'an approval to it lets whoever holds its key move the approved tokens at any time. Legitimate ' +
          'spenders (routers, marketplaces) are contracts.',
        {
          method: 'eth_getCode',
          ...analysis.dataAsOf,
          value: { kind, code: analysis.facts.delegate ? 'EIP-7702 designator' : '0x' },
        },
      ),
    ];
  return [];
}

/**
 * This account's lists: the target sanctioned or deny-listed, flagged counterparties in its recent
 * transactions, a flagged EIP-7702 delegate (→ `eip7702_delegated` critical), an EVM lookalike of an
 * allow-listed address.
 */
function listRules(
  analysis: ChainAnalysis,
  ctx: EvaluationContext,
  status: ListStatus,
  findings: Finding[],
): Finding[] {
  const { network, target, lists } = ctx;
  const at: Pick<Evidence, 'slot' | 'block'> = analysis.dataAsOf;
  const added: Finding[] = [];
  if (status.sanctioned) {
    const s = status.sanctioned;
    added.push(
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
    added.push(
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
    added.push(
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
  const flaggedSpenders = (analysis.listInputs.approvalSpenders ?? [])
    .map((spender) => ({ spender, ...lists.flagged(network.chain, spender) }))
    .filter((s) => s.sanctioned || s.denied);
  if (flaggedSpenders.length)
    added.push(
      finding(
        'risky_approval',
        `${target} has outstanding approvals to flagged spenders: ` +
          flaggedSpenders
            .slice(0, 5)
            .map(
              (s) =>
                `${s.spender} (${s.sanctioned ? `sanctioned: ${s.sanctioned.source}` : `your deny list, entry ${s.denied!.id}`})`,
            )
            .join('; ') +
          '. Revoke them: a flagged spender can move the approved tokens at any time.',
        {
          method: 'eth_getLogs,eth_call',
          ...at,
          value: flaggedSpenders.map((s) => ({
            spender: s.spender,
            sanctioned: s.sanctioned,
            deny_list_entry: s.denied?.id ?? null,
            approvals: (analysis.approvals?.approvals ?? []).filter(
              (a) => a.spender.toLowerCase() === s.spender.toLowerCase(),
            ),
          })),
        },
        { severity: 'critical' },
      ),
    );
  const owner = analysis.listInputs.owner;
  if (owner) {
    const o = lists.flagged(network.chain, owner);
    if (o.sanctioned || o.denied)
      added.push(
        finding(
          'owner_flagged',
          `${target}'s owner ${owner} is ${o.sanctioned ? `sanctioned (${o.sanctioned.source}, ${o.sanctioned.name})` : `on your organisation's deny list (entry ${o.denied!.id})`}: ` +
            'whatever the token lets its owner do, that address can do.',
          {
            method: 'eth_call',
            ...at,
            value: { owner, sanctioned: o.sanctioned, deny_list_entry: o.denied?.id ?? null },
          },
        ),
      );
  }
  if (network.family === 'evm') {
    const imitated = findLookalike(target, lists.allowed(network.chain));
    if (imitated)
      added.push(
        finding(
          'lookalike_address',
          `${target} starts and ends like ${imitated}, which your organisation allow-lists, but is a different ` +
            'address: the pattern of address poisoning. Compare every character before sending.',
          { method: 'org_allow_list', ...at, value: { target, imitates: imitated } },
        ),
      );
    // A token whose owner imitates an address you trust: the owner's powers may be taken for yours.
    const ownerImitates = owner ? findLookalike(owner, lists.allowed(network.chain)) : undefined;
    if (owner && ownerImitates)
      added.push(
        finding(
          'lookalike_address',
          `${target}'s owner ${owner} starts and ends like ${ownerImitates}, which your organisation allow-lists, ` +
            'but is a different address: whoever holds it controls this token, not you.',
          { method: 'org_allow_list', ...at, value: { owner, imitates: ownerImitates } },
        ),
      );
  }
  return added;
}

/** An allow-listed (and not deny-listed) target: every finding suppressed but the lists' own verdicts. */
function suppressAllowListed(findings: Finding[], status: ListStatus): Finding[] {
  const allowed = status.allowed;
  if (!allowed || status.denied) return findings;
  const reason = `allow-listed by your organisation${allowed.label ? ` as "${allowed.label}"` : ''} (entry ${allowed.id})`;
  return findings.map((f) => (NEVER_SUPPRESSED.has(f.code) ? f : suppress(f, reason)));
}

/** A verdict's common part: the (cached or fresh) analysis with the context's findings and score. */
export function verdictBase(
  network: NetworkDef,
  target: string,
  { analysis, cached }: { analysis: ChainAnalysis; cached: boolean },
  judged: ContextualFindings,
  engineVersion: string,
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
    engineVersion,
  };
}
