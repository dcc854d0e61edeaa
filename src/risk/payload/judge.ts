import type { NetworkDef } from '../../chains/registry.js';
import type { AccountListView } from '../../lists/cache.js';
import { applyContext } from '../context.js';
import { finding, suppress, type Evidence, type Finding, type FindingSubject } from '../findings.js';
import type { KnownWalletImplementations } from '../known/evm.js';
import { KNOWN_SPENDERS_VERSION, knownSpender } from '../known/spenders.js';
import type { Intent } from '../policy.js';
import type { ChainAnalysis, TargetKind } from '../types.js';
import type {
  Approval,
  Asset,
  AuthorityType,
  PayloadCounterparty,
  SignatureInfo,
  Simulation,
} from './types.js';

/*
 * The payload rules (docs/risk.md#payload-findings): what a simulated transaction or a decoded signature
 * grants, judged with each counterparty's own chain analysis and this account's lists. Pure: the
 * analyses come in, findings go out.
 */

export interface JudgedCounterparty extends PayloadCounterparty {
  /** The engine's analysis of the address (cached like any target's); null when it could not be read. */
  analysis: ChainAnalysis | null;
}

export interface PayloadJudgement {
  network: NetworkDef;
  from: string;
  intent: Intent;
  lists: AccountListView;
  simulation: Simulation;
  signature: SignatureInfo | null;
  counterparties: JudgedCounterparty[];
  walletImplementations: KnownWalletImplementations;
  /** The chain id the payload declares (transaction `chainId`, typed-data `domain.chainId`), if any. */
  declaredChainId: bigint | null;
  /** A signature that gives without anything coming back (EIP-3009 transfer, a Seaport order paying nobody). */
  givesWithoutReturn: boolean;
}

export interface JudgedPayload {
  findings: Finding[];
  /** Some counterparty is sanctioned or on the deny list (→ block, whatever else holds). */
  flagged: boolean;
}

const EOA_KINDS: ReadonlySet<TargetKind> = new Set(['wallet', 'missing', 'delegated_wallet']);
/** The lists' own verdicts on a counterparty, replaced by `counterparty_flagged`. */
const LIST_CODES = new Set(['sanctioned_address', 'org_denylisted']);
/** The intent whose rules a counterparty of this role is judged by. */
const ROLE_INTENT: Record<PayloadCounterparty['role'], Intent> = {
  spender: 'approve',
  operator: 'approve',
  recipient: 'transfer',
  authority: 'interact',
};

const describeAsset = (a: Asset) =>
  a.type === 'native'
    ? 'the native asset'
    : `${a.symbol ?? a.type.toUpperCase()} ${a.address}${a.tokenId !== undefined ? ` #${a.tokenId}` : ''}`;
const describeAmount = (a: Approval) => (a.unlimited ? 'an unlimited amount' : `${a.amount} (raw units)`);
const tagged = (f: Finding, subject: FindingSubject): Finding => ({ ...f, subject });

export function judgePayload(input: PayloadJudgement): JudgedPayload {
  const { network, lists, simulation } = input;
  const out: Finding[] = [];
  let flagged = false;
  const approvalsTo = (address: string) =>
    simulation.approvals.filter((a) => a.spender.toLowerCase() === address.toLowerCase());

  // Each counterparty: the engine's findings under its role's intent, the lists, known spenders.
  for (const c of input.counterparties) {
    const subject: FindingSubject = { role: c.role, address: c.address };
    const status = lists.status(network.chain, c.address);
    if (status.sanctioned || status.denied) {
      flagged = true;
      const why = status.sanctioned
        ? `sanctioned: listed by ${status.sanctioned.source} as a ${status.sanctioned.currency} address of ${status.sanctioned.name}`
        : `on your organisation's deny list${status.denied!.label ? ` as "${status.denied!.label}"` : ''} (entry ${status.denied!.id})`;
      out.push(
        tagged(
          finding(
            'counterparty_flagged',
            `This payload makes ${c.address} its ${c.role}, and that address is ${why}.`,
            {
              ...c.evidence,
              value: {
                role: c.role,
                address: c.address,
                payload: c.evidence.value,
                sanctioned: status.sanctioned,
                deny_list_entry: status.denied?.id ?? null,
              },
            },
          ),
          subject,
        ),
      );
    }
    if (!c.analysis) continue;
    const judged = applyContext(c.analysis, {
      network,
      target: c.address,
      intent: ROLE_INTENT[c.role],
      lists,
    });
    const known = knownSpender(network, c.address);
    const deployed = c.analysis.kind === 'contract';
    const grants = approvalsTo(c.address);
    const wide = grants.some((a) => a.unlimited || a.coversBalance === true || a.all);
    for (const f of judged.findings) {
      if (LIST_CODES.has(f.code)) continue;
      let own: Finding = f;
      if (f.code === 'approval_to_eoa' && wide && !f.suppressed) {
        own = {
          ...f,
          severity: 'critical',
          detail: `${f.detail} The approval is unlimited, covers the balance or is over a whole collection.`,
        };
      }
      if (known && deployed && !own.suppressed)
        own = suppress(
          own,
          `known spender: ${known.name} (${known.source}; registry ${KNOWN_SPENDERS_VERSION})`,
        );
      out.push(tagged(own, subject));
    }
  }

  // What is granted, approval by approval.
  for (const a of simulation.approvals) {
    if (a.owner.toLowerCase() !== input.from.toLowerCase()) continue;
    const c = input.counterparties.find((x) => x.address.toLowerCase() === a.spender.toLowerCase());
    // A transfer authorization's "spender" is its recipient: tagged with the counterparty's own role.
    const subject: FindingSubject = { role: c?.role ?? (a.all ? 'operator' : 'spender'), address: a.spender };
    const status = lists.status(network.chain, a.spender);
    if (status.sanctioned || status.denied) continue; // counterparty_flagged says it
    const kind = c?.analysis?.kind ?? null;
    const eoa = kind !== null && EOA_KINDS.has(kind);
    const known = knownSpender(network, a.spender);
    const knownHere = known && kind === 'contract';
    const allowed = status.allowed ? `allow-listed by your organisation (entry ${status.allowed.id})` : null;
    const evidence: Evidence = {
      method: simulation.method === 'signature' ? 'eth_signTypedData_v4' : simulation.method,
      ...(simulation.block !== undefined ? { block: simulation.block } : {}),
      value: approvalValue(a),
    };
    const judged = (f: Finding): Finding => {
      const t = tagged(f, subject);
      if (allowed) return suppress(t, allowed);
      if (knownHere)
        return {
          ...t,
          severity: 'info',
          detail: `${t.detail} ${a.spender} is ${known.name} (source: ${known.source}): a well-known spender.`,
        };
      return t;
    };
    if (a.all && !eoa) {
      out.push(
        judged(
          finding(
            'approval_for_all',
            `${a.spender} becomes an operator of every ${describeAsset(a.asset)} token ${a.owner} holds, now and later: it can move ` +
              'the whole collection without asking again.',
            evidence,
          ),
        ),
      );
    } else if (!a.all && (a.unlimited || a.coversBalance === true)) {
      out.push(
        judged(
          finding(
            'unlimited_approval',
            `${a.spender} may spend ${a.unlimited ? 'an unlimited amount' : `${a.amount} (raw units), at least the whole balance,`} of ` +
              `${describeAsset(a.asset)} from ${a.owner}${a.expiresAt ? ` until ${a.expiresAt.toISOString()}` : ', with no end date'}.`,
            evidence,
          ),
        ),
      );
    }
    if (a.source === 'signature' && !a.unlimited && a.coversBalance !== true && !a.all)
      out.push(
        judged(
          finding(
            'permit_signature',
            `This signature lets ${a.spender} take ${describeAmount(a)} of ${describeAsset(a.asset)} from ${a.owner} without a ` +
              'transaction of yours: it costs no gas and most wallets show no warning.',
            evidence,
          ),
        ),
      );
  }

  // Authority handed over: the wallet's code (EIP-7702) or, on Solana, its accounts.
  const same = (a: string | null, b: string) =>
    a !== null && (network.family === 'evm' ? a.toLowerCase() === b.toLowerCase() : a === b);
  for (const change of simulation.authorityChanges) {
    // From's own account, or an account whose authority from holds, going to another key.
    if (!change.to || same(change.to, input.from)) continue;
    if (!same(change.account, input.from) && !same(change.from, input.from)) continue;
    const subject: FindingSubject = { role: 'authority', address: change.to };
    const evidence: Evidence = {
      method: simulation.method,
      ...(simulation.block !== undefined ? { block: simulation.block } : {}),
      ...(simulation.slot !== undefined ? { slot: simulation.slot } : {}),
      value: {
        account: change.account,
        authority_type: change.authorityType,
        from: change.from,
        to: change.to,
      },
    };
    if (change.authorityType === 'code_delegation') {
      const known = input.walletImplementations.lookup(change.to, network.chainId);
      if (known) continue; // a smart-account upgrade to an audited implementation
      out.push(
        tagged(
          finding(
            'authority_transfer',
            `This transaction's EIP-7702 authorization makes ${change.account} run the code of ${change.to}, which is not a known ` +
              'wallet implementation: every call to the account will run that code, which can move everything it holds.',
            evidence,
          ),
          subject,
        ),
      );
      continue;
    }
    const what: Record<AuthorityType, string> = {
      account_owner: `ownership of token account ${change.account}`,
      close_account: `the close authority of token account ${change.account}`,
      mint_tokens: `the mint authority of ${change.account}`,
      freeze_account: `the freeze authority of ${change.account}`,
      upgrade_authority: `the upgrade authority of program data ${change.account}`,
      program_owner: `the wallet ${change.account} itself (System Assign: its owner program becomes ${change.to})`,
      code_delegation: `the code of ${change.account}`,
    };
    // Mint and freeze authorities govern a token, not the user's own funds: high rather than critical.
    const severity =
      change.authorityType === 'mint_tokens' || change.authorityType === 'freeze_account'
        ? 'high'
        : 'critical';
    out.push(
      tagged(
        finding(
          'authority_transfer',
          `This transaction hands ${what[change.authorityType]} from ${change.from ?? input.from} to ${change.to}: that key then ` +
            'controls it, not you.',
          evidence,
          { severity },
        ),
        subject,
      ),
    );
  }

  // Assets leave and nothing comes back.
  if (input.intent !== 'transfer') {
    const mine = simulation.assetChanges.filter((x) => x.owner.toLowerCase() === input.from.toLowerCase());
    const lost = mine.filter((x) => x.amount < 0n);
    const gained = mine.filter((x) => x.amount > 0n);
    if (
      (simulation.status === 'success' && lost.length > 0 && gained.length === 0) ||
      input.givesWithoutReturn
    )
      out.push(
        tagged(
          finding(
            'outflow_without_inflow',
            input.givesWithoutReturn
              ? `This signature gives away ${simulation.approvals.map((a) => describeAsset(a.asset)).join(', ')} and pays ${input.from} nothing in return.`
              : `${input.from} loses ${lost.map((x) => `${-x.amount} of ${describeAsset(x.asset)}`).join(', ')} and receives nothing.`,
            {
              method: simulation.method,
              ...(simulation.block !== undefined ? { block: simulation.block } : {}),
              ...(simulation.slot !== undefined ? { slot: simulation.slot } : {}),
              value: lost.map((x) => ({
                asset: x.asset.address ?? x.asset.type,
                amount: x.amount.toString(),
              })),
            },
          ),
          { role: 'transaction', address: null },
        ),
      );
  }

  if (simulation.status === 'reverted')
    out.push(
      tagged(
        finding(
          'simulation_reverted',
          `The transaction fails when simulated: ${simulation.error ?? 'reverted'}. Signing it spends gas for nothing, or the state it expects is not there.`,
          {
            method: simulation.method,
            ...(simulation.block !== undefined ? { block: simulation.block } : {}),
            ...(simulation.slot !== undefined ? { slot: simulation.slot } : {}),
            value: simulation.error ?? null,
          },
        ),
        { role: 'transaction', address: null },
      ),
    );

  const declared = input.declaredChainId;
  if (declared !== null && network.chainId !== undefined && declared !== BigInt(network.chainId)) {
    const what = input.signature ? 'typed data' : 'transaction';
    out.push(
      tagged(
        finding(
          'chain_mismatch',
          `The ${what} is for chain id ${declared}, but this preflight is for ${network.chain}/${network.network} ` +
            `(chain id ${network.chainId}): what is checked here is not where it would run.`,
          {
            method: input.signature ? 'eth_signTypedData_v4' : 'eth_sendTransaction',
            value: { declared_chain_id: declared.toString(), network_chain_id: network.chainId },
          },
        ),
        {
          role: input.signature ? 'signature' : 'transaction',
          address: input.signature?.verifyingContract ?? null,
        },
      ),
    );
  }
  return { findings: out, flagged };
}

/** An approval as evidence (amounts as decimal strings). */
function approvalValue(a: Approval): Record<string, unknown> {
  return {
    owner: a.owner,
    asset: a.asset.address ?? a.asset.type,
    spender: a.spender,
    amount: a.unlimited ? 'unlimited' : a.amount.toString(),
    raw_amount: a.amount.toString(),
    covers_balance: a.coversBalance,
    all: a.all,
    expires_at: a.expiresAt?.toISOString() ?? null,
    source: a.source,
  };
}
