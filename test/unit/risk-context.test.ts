import { getAddress } from 'viem';
import { describe, expect, it } from 'vitest';
import { BUILT_IN_NETWORKS, type NetworkDef } from '../../src/chains/registry.js';
import type { AccountListView } from '../../src/lists/cache.js';
import type { ListStatus } from '../../src/lists/service.js';
import { applyContext, type EvaluationContext } from '../../src/risk/context.js';
import { finding, type Finding, type FindingCode, type Severity } from '../../src/risk/findings.js';
import { LookalikeIndex } from '../../src/lists/lookalike.js';
import { score } from '../../src/risk/scoring.js';
import type { ChainAnalysis, ListInputs, TargetKind } from '../../src/risk/types.js';

const network = (chain: string): NetworkDef =>
  BUILT_IN_NETWORKS.find((n) => n.chain === chain && n.network === 'mainnet')!;
const SOLANA = network('solana');
const ETHEREUM = network('ethereum');

const SOL_TARGET = '9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin';
const SOL_PEER = 'CuieVDEDtLo7FypA9SbLM9saXFdb1dsshEkyErMqkRQq';
const EVM_TARGET = getAddress(`0x1234${'a'.repeat(32)}abcd`);
const EVM_DELEGATE = getAddress(`0x5555${'c'.repeat(36)}`);
const SLOT = 1000;
const BLOCK = 77;

type Entry = NonNullable<ListStatus['denied']>;
type Sanction = NonNullable<ListStatus['sanctioned']>;

const entry = (list: 'deny' | 'allow', target: string, label: string | null): Entry => ({
  id: `${list}_1`,
  list,
  target,
  chain: null,
  label,
  reason: list === 'deny' ? 'phishing' : null,
  created_at: '2025-01-01T00:00:00.000Z',
  created_by: 'api_key:key_1',
});
const sanction = (name: string): Sanction => ({
  source: 'OFAC SDN',
  currency: 'XBT',
  name,
  uid: '123',
  list_as_of: '2025-01-01',
});

/** An account's lists, by address: what ListsCache answers from memory, without the database. */
function lists(
  by: {
    sanctioned?: Record<string, Sanction>;
    denied?: Record<string, Entry>;
    allowed?: Record<string, Entry>;
  } = {},
): AccountListView {
  const trusted = new LookalikeIndex();
  for (const address of Object.keys(by.allowed ?? {})) trusted.add(address, [null]);
  const flagged = (_chain: string, address: string) => ({
    sanctioned: by.sanctioned?.[address] ?? null,
    denied: by.denied?.[address] ?? null,
  });
  return {
    status: (chain, target) => ({ ...flagged(chain, target), allowed: by.allowed?.[target] ?? null }),
    flagged,
    allowed: (chain) => trusted.on(chain),
  };
}

const solanaFinding = (code: FindingCode, severity?: Severity) =>
  finding(code, `${code} seen.`, { method: 'getMultipleAccounts', slot: SLOT, value: null }, { severity });
const evmFinding = (code: FindingCode, severity?: Severity, value: unknown = '0x') =>
  finding(code, `${code} seen.`, { method: 'eth_getCode', block: BLOCK, value }, { severity });

/** A list-free chain analysis as the analyzers return it (and the cache keeps it). */
function analysis(
  net: NetworkDef,
  kind: TargetKind,
  findings: Finding[] = [],
  extra: { facts?: Record<string, unknown>; listInputs?: ListInputs } = {},
): ChainAnalysis {
  return {
    kind,
    findings,
    facts: { exists: kind !== 'missing', kind, ...extra.facts },
    complete: true,
    dataAsOf: net.family === 'evm' ? { block: BLOCK } : { slot: SLOT },
    listInputs: extra.listInputs ?? {},
  };
}

const ctx = (net: NetworkDef, target: string, rest: Partial<EvaluationContext> = {}): EvaluationContext => ({
  network: net,
  target,
  lists: lists(),
  ...rest,
});

const codes = (findings: readonly Finding[]) => findings.map((f) => [f.code, f.severity, f.suppressed]);
const only = (findings: readonly Finding[], code: FindingCode): Finding => {
  const found = findings.filter((f) => f.code === code);
  expect(found, JSON.stringify(codes(findings))).toHaveLength(1);
  return found[0]!;
};

describe('applyContext: intent (preflight)', () => {
  it('makes a transfer to a never-used address medium, on Solana and EVM', () => {
    const solana = applyContext(analysis(SOLANA, 'missing', [solanaFinding('account_not_found')]), {
      ...ctx(SOLANA, SOL_TARGET),
      intent: 'transfer',
    });
    const notFound = only(solana.findings, 'account_not_found');
    expect(notFound.severity).toBe('medium');
    expect(notFound.detail).toBe(
      'account_not_found seen. Funds sent to an address nobody has used are often a typo or a poisoned copy.',
    );
    expect(solana.riskLevel).toBe('medium');

    const evm = applyContext(analysis(ETHEREUM, 'missing', [evmFinding('fresh_address')]), {
      ...ctx(ETHEREUM, EVM_TARGET),
      intent: 'transfer',
    });
    expect(only(evm.findings, 'fresh_address').severity).toBe('medium');
  });

  it('leaves a never-used address low for other intents', () => {
    for (const intent of ['sign', 'interact', 'approve'] as const) {
      const v = applyContext(analysis(SOLANA, 'missing', [solanaFinding('account_not_found')]), {
        ...ctx(SOLANA, SOL_TARGET),
        intent,
      });
      expect(codes(v.findings), intent).toEqual([['account_not_found', 'low', false]]);
    }
  });

  it('flags a transfer to a Solana mint or program as target_type_mismatch', () => {
    for (const kind of ['token', 'program'] as const) {
      const v = applyContext(analysis(SOLANA, kind, [], { facts: { owner_program: 'Owner111' } }), {
        ...ctx(SOLANA, SOL_TARGET),
        intent: 'transfer',
      });
      const mismatch = only(v.findings, 'target_type_mismatch');
      expect(mismatch.severity).toBe('medium');
      expect(mismatch.detail).toMatch(/, not a wallet: tokens or SOL sent to it are usually lost\.$/);
      expect(mismatch.evidence).toEqual({
        method: 'getMultipleAccounts',
        slot: SLOT,
        value: { kind, owner_program: 'Owner111' },
      });
    }
    const wallet = applyContext(analysis(SOLANA, 'wallet'), {
      ...ctx(SOLANA, SOL_TARGET),
      intent: 'transfer',
    });
    expect(wallet.findings).toEqual([]);
  });

  it('flags an approval to an EVM externally owned account (used, unused or 7702-delegated)', () => {
    const cases: [TargetKind, string, string][] = [
      ['wallet', 'no contract code of its own', '0x'],
      ['missing', 'never used', '0x'],
      ['delegated_wallet', 'no contract code of its own', 'EIP-7702 designator'],
    ];
    for (const [kind, why, code] of cases) {
      const facts = kind === 'delegated_wallet' ? { delegate: EVM_DELEGATE } : { delegate: null };
      const v = applyContext(analysis(ETHEREUM, kind, [], { facts }), {
        ...ctx(ETHEREUM, EVM_TARGET),
        intent: 'approve',
      });
      const eoa = only(v.findings, 'approval_to_eoa');
      expect(eoa.severity).toBe('high');
      expect(eoa.detail).toContain(`is an externally owned account (${why})`);
      expect(eoa.evidence).toEqual({ method: 'eth_getCode', block: BLOCK, value: { kind, code } });
    }
  });

  it('does not flag an approval to a contract, nor on Solana', () => {
    const contract = applyContext(analysis(ETHEREUM, 'contract', [evmFinding('is_contract')]), {
      ...ctx(ETHEREUM, EVM_TARGET),
      intent: 'approve',
    });
    expect(codes(contract.findings)).toEqual([['is_contract', 'info', false]]);
    const solana = applyContext(analysis(SOLANA, 'wallet'), {
      ...ctx(SOLANA, SOL_TARGET),
      intent: 'approve',
    });
    expect(solana.findings).toEqual([]);
  });
});

describe('applyContext: target type (risk-v2)', () => {
  it('flags a Solana account that is not the stated type, but not a missing or unread one', () => {
    const program = applyContext(analysis(SOLANA, 'program'), {
      ...ctx(SOLANA, SOL_TARGET),
      targetType: 'wallet',
    });
    expect(only(program.findings, 'target_type_mismatch').detail).toBe(
      `${SOL_TARGET} is an executable program, not a wallet.`,
    );
    const token = applyContext(analysis(SOLANA, 'token'), {
      ...ctx(SOLANA, SOL_TARGET),
      targetType: 'token',
    });
    expect(token.findings).toEqual([]);
    const missing = applyContext(analysis(SOLANA, 'missing', [solanaFinding('account_not_found')]), {
      ...ctx(SOLANA, SOL_TARGET),
      targetType: 'program',
    });
    expect(codes(missing.findings)).toEqual([['account_not_found', 'low', false]]);
    const unread = analysis(SOLANA, 'account', [], { facts: { exists: null, kind: null } });
    expect(applyContext(unread, { ...ctx(SOLANA, SOL_TARGET), targetType: 'wallet' }).findings).toEqual([]);
  });

  it('makes an EVM contract sent as a wallet a medium is_contract plus a mismatch', () => {
    const v = applyContext(analysis(ETHEREUM, 'contract', [evmFinding('is_contract')]), {
      ...ctx(ETHEREUM, EVM_TARGET),
      targetType: 'wallet',
    });
    expect(codes(v.findings)).toEqual([
      ['is_contract', 'medium', false],
      ['target_type_mismatch', 'medium', false],
    ]);
    expect(only(v.findings, 'target_type_mismatch').detail).toBe(
      `${EVM_TARGET} is a contract, not a wallet: it runs code of its own.`,
    );
    expect(v).toMatchObject({ riskScore: 44, riskLevel: 'medium' });
  });

  it('flags an EVM account without code sent as a contract, unless it was never used', () => {
    const wallet = applyContext(analysis(ETHEREUM, 'wallet'), {
      ...ctx(ETHEREUM, EVM_TARGET),
      targetType: 'contract',
    });
    expect(only(wallet.findings, 'target_type_mismatch').detail).toBe(
      `${EVM_TARGET} is an externally owned account (no code), not a contract.`,
    );
    const missing = applyContext(analysis(ETHEREUM, 'missing', [evmFinding('fresh_address')]), {
      ...ctx(ETHEREUM, EVM_TARGET),
      targetType: 'contract',
    });
    expect(codes(missing.findings)).toEqual([['fresh_address', 'low', false]]);
  });
});

describe("applyContext: the account's lists", () => {
  const allowEntry = entry('allow', EVM_TARGET, 'treasury');

  it('suppresses an allow-listed target’s findings, with the reason', () => {
    const v = applyContext(
      analysis(ETHEREUM, 'contract', [evmFinding('is_contract'), evmFinding('upgradeable_proxy')]),
      {
        ...ctx(ETHEREUM, EVM_TARGET),
        targetType: 'wallet',
        lists: lists({ allowed: { [EVM_TARGET]: allowEntry } }),
      },
    );
    expect(v.findings.map((f) => f.suppressed)).toEqual([true, true, true]);
    for (const f of v.findings)
      expect(f.suppressed_reason).toBe('allow-listed by your organisation as "treasury" (entry allow_1)');
    expect(v).toMatchObject({ riskScore: 0, riskLevel: 'low' });
    expect(v.listStatus.allowed).toEqual(allowEntry);
  });

  it('never suppresses sanctions or the deny list', () => {
    const sanctioned = applyContext(analysis(ETHEREUM, 'wallet', [evmFinding('upgradeable_proxy')]), {
      ...ctx(ETHEREUM, EVM_TARGET),
      lists: lists({
        allowed: { [EVM_TARGET]: allowEntry },
        sanctioned: { [EVM_TARGET]: sanction('Lazarus') },
      }),
    });
    expect(codes(sanctioned.findings)).toEqual([
      ['sanctioned_address', 'critical', false],
      ['upgradeable_proxy', 'medium', true],
    ]);
    expect(only(sanctioned.findings, 'sanctioned_address')).toMatchObject({
      detail: `${EVM_TARGET} is listed by OFAC SDN (as of 2025-01-01) as a XBT address of Lazarus (uid 123).`,
      evidence: { method: 'sanctions_list', block: BLOCK, value: sanction('Lazarus') },
    });
    expect(sanctioned).toMatchObject({ riskScore: 90, riskLevel: 'critical' });

    // Denied and allowed at once: the deny list wins, nothing is suppressed.
    const denied = applyContext(analysis(ETHEREUM, 'wallet', [evmFinding('upgradeable_proxy')]), {
      ...ctx(ETHEREUM, EVM_TARGET),
      lists: lists({
        allowed: { [EVM_TARGET]: allowEntry },
        denied: { [EVM_TARGET]: entry('deny', EVM_TARGET, 'scam') },
      }),
    });
    expect(codes(denied.findings)).toEqual([
      ['org_denylisted', 'critical', false],
      ['upgradeable_proxy', 'medium', false],
    ]);
    expect(only(denied.findings, 'org_denylisted').detail).toBe(
      `${EVM_TARGET} is on your organisation's deny list as "scam": phishing (entry deny_1).`,
    );
  });

  it('flags recent counterparties that are sanctioned or deny-listed', () => {
    const peers = [
      { address: SOL_PEER, signature: 'sig1', slot: 990 },
      { address: 'Innocent1111111111111111111111111111111111', signature: 'sig2', slot: 980 },
    ];
    const clean = applyContext(
      analysis(SOLANA, 'wallet', [], { listInputs: { counterparties: peers } }),
      ctx(SOLANA, SOL_TARGET),
    );
    expect(clean.findings).toEqual([]);

    const v = applyContext(analysis(SOLANA, 'wallet', [], { listInputs: { counterparties: peers } }), {
      ...ctx(SOLANA, SOL_TARGET),
      lists: lists({ denied: { [SOL_PEER]: entry('deny', SOL_PEER, null) } }),
    });
    const flagged = only(v.findings, 'interacted_with_flagged');
    expect(flagged.severity).toBe('high');
    expect(flagged.detail).toBe(
      `1 address in the most recent transactions is flagged: ${SOL_PEER} (your deny list, transaction sig1).`,
    );
    expect(flagged.evidence).toEqual({
      method: 'getTransaction',
      slot: 990,
      value: [
        { address: SOL_PEER, signature: 'sig1', slot: 990, sanctioned: null, deny_list_entry: 'deny_1' },
      ],
    });
    expect(v).toMatchObject({ riskScore: 50, riskLevel: 'high' });
  });

  it('makes a 7702 delegation to a flagged delegate critical', () => {
    const delegated = () =>
      analysis(ETHEREUM, 'delegated_wallet', [evmFinding('eip7702_delegated', undefined, '0xef0100')], {
        facts: { delegate: EVM_DELEGATE },
        listInputs: { delegate: EVM_DELEGATE },
      });
    const unlisted = applyContext(delegated(), ctx(ETHEREUM, EVM_TARGET));
    expect(codes(unlisted.findings)).toEqual([['eip7702_delegated', 'high', false]]);

    const v = applyContext(delegated(), {
      ...ctx(ETHEREUM, EVM_TARGET),
      lists: lists({ sanctioned: { [EVM_DELEGATE]: sanction('Drainer') } }),
    });
    const f = only(v.findings, 'eip7702_delegated');
    expect(f.severity).toBe('critical');
    expect(f.detail).toBe('eip7702_delegated seen. The delegate is sanctioned (OFAC SDN, Drainer).');
    expect(f.evidence).toEqual({
      method: 'eth_getCode',
      block: BLOCK,
      value: {
        code: '0xef0100',
        delegate: EVM_DELEGATE,
        sanctioned: sanction('Drainer'),
        deny_list_entry: null,
      },
    });
    expect(v).toMatchObject({ riskScore: 90, riskLevel: 'critical' });
  });

  it('flags an EVM address that starts and ends like an allow-listed one', () => {
    const trusted = getAddress(`0x1234${'b'.repeat(32)}abcd`);
    const v = applyContext(analysis(ETHEREUM, 'wallet'), {
      ...ctx(ETHEREUM, EVM_TARGET),
      lists: lists({ allowed: { [trusted]: entry('allow', trusted, null) } }),
    });
    const lookalike = only(v.findings, 'lookalike_address');
    expect(lookalike.severity).toBe('high');
    expect(lookalike.evidence).toEqual({
      method: 'org_allow_list',
      block: BLOCK,
      value: { target: EVM_TARGET, imitates: trusted },
    });
    // The trusted address itself is the real thing, not a lookalike.
    const real = applyContext(analysis(ETHEREUM, 'wallet'), {
      ...ctx(ETHEREUM, trusted),
      lists: lists({ allowed: { [trusted]: entry('allow', trusted, null) } }),
    });
    expect(real.findings).toEqual([]);
  });
});

describe('applyContext: scoring on top', () => {
  it('sorts by severity then code and scores the result (docs/risk.md#scoring)', () => {
    const chain = analysis(SOLANA, 'missing', [
      solanaFinding('check_incomplete'),
      solanaFinding('new_account'),
      solanaFinding('account_not_found'),
    ]);
    const v = applyContext(chain, {
      ...ctx(SOLANA, SOL_TARGET),
      intent: 'transfer',
      lists: lists({ sanctioned: { [SOL_TARGET]: sanction('Mixer') } }),
    });
    expect(codes(v.findings)).toEqual([
      ['sanctioned_address', 'critical', false],
      ['account_not_found', 'medium', false],
      ['new_account', 'low', false],
      ['check_incomplete', 'info', false],
    ]);
    // 1 − 0.1 × 0.75 × 0.9 = 0.9325
    expect(v).toMatchObject({ riskScore: 93, riskLevel: 'critical' });
    const { risk_score, risk_level } = score(v.findings);
    expect([v.riskScore, v.riskLevel]).toEqual([risk_score, risk_level]);
  });

  it('never modifies the (cached, shared) analysis', () => {
    const chain = analysis(ETHEREUM, 'contract', [evmFinding('is_contract')]);
    const before = structuredClone(chain);
    applyContext(chain, {
      ...ctx(ETHEREUM, EVM_TARGET),
      targetType: 'wallet',
      lists: lists({ allowed: { [EVM_TARGET]: entry('allow', EVM_TARGET, null) } }),
    });
    applyContext(chain, { ...ctx(ETHEREUM, EVM_TARGET), intent: 'transfer' });
    expect(chain).toEqual(before);
  });
});
