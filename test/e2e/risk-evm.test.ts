import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  formatEther,
  getAddress,
  http,
  keccak256,
  toHex,
  type Address,
  type Hex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Severity } from '../../src/risk/findings.js';
import { INTENTS, type Intent } from '../../src/risk/policy.js';
import type { Preflight } from '../../src/risk/preflight-schemas.js';
import type { Assessment, FindingBody } from '../../src/risk/schemas.js';
import {
  bearer,
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import { EIP1967_ADMIN_SLOT, EIP1967_IMPLEMENTATION_SLOT } from '../support/evm/bytecode.js';
import { buildEvmWorld, type EvmWorld } from '../support/evm/fixtures.js';
import { testIdentityProvider } from '../support/jwt.js';
import {
  cliJson,
  eventually,
  freePort,
  prepareEnv,
  type RunningService,
  type TestEnv,
} from '../support/service.js';

// ---- helpers ------------------------------------------------------------------------------------------

/** Scoring (docs/risk.md#scoring): `round(100 × (1 − Π(1 − wᵢ)))` over the given (unsuppressed) severities. */
const WEIGHT: Record<Severity, number> = { critical: 0.9, high: 0.5, medium: 0.25, low: 0.1, info: 0 };
const expectedScore = (...severities: Severity[]) =>
  Math.round(100 * (1 - severities.reduce((keep, s) => keep * (1 - WEIGHT[s]), 1)));

/** `[code, severity, suppressed]` of every finding, in the answer's order. */
const summary = (findings: readonly FindingBody[]) =>
  findings.map((f) => [f.code, f.severity, f.suppressed] as const);

/** The one finding with `code` (fails when there is none or several). */
function only(findings: readonly FindingBody[], code: string): FindingBody {
  const matching = findings.filter((f) => f.code === code);
  expect(matching, `exactly one ${code} in ${JSON.stringify(summary(findings))}`).toHaveLength(1);
  return matching[0]!;
}

/** A storage word holding `address` in its low 20 bytes, as eth_getStorageAt returns it. */
const word = (address: string): Hex => `0x${address.slice(2).toLowerCase().padStart(64, '0')}`;
const ZERO_WORD: Hex = `0x${'0'.repeat(64)}`;

/** The EIP-55 address with the case of its first hex letter flipped: a checksum typo. */
function badChecksum(address: string): string {
  const i = address.slice(2).search(/[a-fA-F]/) + 2;
  const c = address[i]!;
  const flipped = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
  return address.slice(0, i) + flipped + address.slice(i + 1);
}

/**
 * Simple7702Account (eth-infinitism), one of the built-in known EIP-7702 wallet implementations on
 * Ethereum mainnet (src/risk/known/evm.ts). Anvil runs chain id 1, so a delegation to this address is a
 * delegation to a known implementation as far as the service can tell (no code is needed at the delegate
 * for eth_getCode to show the designator).
 */
const BUILT_IN_WALLET_IMPLEMENTATION = getAddress('0x4Cd241E8d1510e30b2076397afc7508Ae59C66c9');

/**
 * A real EIP-7702 set-code transaction on anvil: a new key (derived from `label`, never funded) signs an
 * authorization for `delegate`, and `sponsorKey` submits it. Returns the delegated EOA (EIP-55).
 */
async function delegateNewEoa(
  world: EvmWorld,
  sponsorKey: Hex,
  delegate: Address,
  label: string,
): Promise<Address> {
  const chain = defineChain({
    id: world.chainId,
    name: 'anvil (riskwatch e2e)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [world.url] } },
  });
  const transport = http(world.url, { retryCount: 0 });
  const authority = privateKeyToAccount(keccak256(toHex(`riskwatch:e2e:${label}`)));
  const sponsor = privateKeyToAccount(sponsorKey);
  const authorization = await createWalletClient({
    account: authority,
    chain,
    transport,
  }).signAuthorization({ account: authority, contractAddress: delegate });
  const hash = await createWalletClient({ account: sponsor, chain, transport }).sendTransaction({
    account: sponsor,
    chain,
    to: authority.address,
    authorizationList: [authorization],
  });
  const receipt = await createPublicClient({
    chain,
    transport,
    pollingInterval: 20,
  }).waitForTransactionReceipt({ hash, timeout: 10_000 });
  expect(receipt.status).toBe('success');
  return authority.address;
}

/**
 * EVM side of the risk engine over HTTP (risk-v2 and shield preflight, shapes in the OpenAPI; docs/risk.md
 * #any-target, #evm-wallet-and-contract, #preflight-policy, #caching): the built service against a real anvil chain
 * whose fixtures are made by real transactions (test/support/evm/fixtures.ts).
 */
describe('EVM risk: risk-v2 and shield preflight against anvil (built service over HTTP)', () => {
  let anvil: RunningAnvil;
  let world: EvmWorld;
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let svc: RunningService;
  /** Services whose ethereum/mainnet RPC URL is a closed port: fail mode `warn` (default) and `block`. */
  let deadWarn: RunningService;
  let deadBlock: RunningService;
  let acme: Customer;
  let globex: Customer;
  let tmp: string;
  const idp = testIdentityProvider();

  const f = (name: keyof EvmWorld['fixtures']) => world.fixtures[name].address;
  const tokenOf = (customer: Customer) =>
    idp.sign({ org_id: customer.account.org_id, sub: `analyst-of-${customer.account.org_id}` });
  const postJson = (url: string, headers: Record<string, string>, body: unknown) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  /** POST /api/web3/risk-v2 as a user of `customer` (JWT). */
  const riskV2 = (customer: Customer, body: Record<string, unknown>, service = svc) =>
    postJson(`${service.baseUrl}/api/web3/risk-v2`, bearer(tokenOf(customer)), body);
  const assess = async (
    customer: Customer,
    target: string,
    targetType: 'wallet' | 'contract' = 'wallet',
  ): Promise<Assessment> => {
    const body = { target, chain: 'ethereum', network: 'mainnet', target_type: targetType };
    const assessment = await expectJson<Assessment>(await riskV2(customer, body), 200);
    expectEvidence(assessment.findings);
    return assessment;
  };

  /** POST /api/v1/shield/preflight with `customer`'s API key. */
  const preflightRes = (customer: Customer, body: Record<string, unknown>, service = svc) =>
    postJson(`${service.baseUrl}/api/v1/shield/preflight`, { 'x-api-key': customer.key.key }, body);
  const preflight = async (
    customer: Customer,
    target: string,
    intent: Intent,
    extra: Record<string, unknown> = { chain: 'ethereum', network: 'mainnet' },
  ): Promise<Preflight> =>
    expectJson<Preflight>(await preflightRes(customer, { target, intent, ...extra }), 200);

  /** POST /api/v1/lists/{list}/entries → 201. */
  const listEntry = async (customer: Customer, list: 'deny' | 'allow', body: Record<string, unknown>) =>
    expectJson<{ id: string; target: string }>(
      await postJson(`${svc.baseUrl}/api/v1/lists/${list}/entries`, { 'x-api-key': customer.key.key }, body),
      201,
    );

  /**
   * docs/risk.md#principles, item 1: every finding names the method (or list) it was read with and the block it
   * reflects — at or after the world's setup block (later transactions may have mined more).
   */
  function expectEvidence(findings: readonly FindingBody[]): void {
    for (const finding of findings) {
      expect(finding.evidence.method, finding.code).toEqual(expect.stringMatching(/\S/));
      expect(finding.evidence.block, finding.code).toEqual(expect.any(Number));
      expect(finding.evidence.block!, finding.code).toBeGreaterThanOrEqual(Number(world.blockNumber));
    }
  }

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'rw-risk-evm-'));
    anvil = await startAnvil();
    world = await buildEvmWorld(anvil.url);
    testEnv = await prepareEnv({
      ...idp.env,
      RISKWATCH_RPC_ETHEREUM_MAINNET: anvil.url,
      // A local anvil has no rate limit; the default 20 calls/s would make later preflights wait for
      // tokens and run past their 1.5 s deadline (complete: false) on a busy machine.
      RISKWATCH_RPC_RATE_PER_S: '0',
    });
    db = await openAccounts(testEnv.env);
    [acme, globex] = await Promise.all([db.customer('acme'), db.customer('globex')]);

    // The same database (same customers), but a Redis prefix of their own: the main service's cached
    // analyses must not answer for them.
    const deadUrl = `http://127.0.0.1:${await freePort()}`;
    const dead = (prefix: string, extra: Record<string, string> = {}) => ({
      ...testEnv.env,
      REDIS_KEY_PREFIX: `${testEnv.env.REDIS_KEY_PREFIX}${prefix}:`,
      RISKWATCH_RPC_ETHEREUM_MAINNET: deadUrl,
      RISKWATCH_RPC_RETRIES: '0',
      ...extra,
    });
    [svc, deadWarn, deadBlock] = await Promise.all([
      startServiceRetrying(testEnv.env),
      startServiceRetrying(dead('deadwarn')),
      startServiceRetrying(dead('deadblock', { RISKWATCH_PREFLIGHT_FAIL_MODE: 'block' })),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([svc?.stop(), deadWarn?.stop(), deadBlock?.stop()]);
    await db?.close();
    await testEnv?.dropDatabase();
    await anvil?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('fundedEoa wallet: low, no unsuppressed findings, facts from the chain; the repeat is cached', async () => {
    const eoa = world.fixtures.fundedEoa;
    const first = await assess(acme, eoa.address);
    expect(first).toMatchObject({
      assessment_id: expect.stringMatching(/^asm_/) as unknown,
      target: eoa.address,
      chain: 'ethereum',
      network: 'mainnet',
      target_type: 'wallet',
      risk_score: 0,
      risk_level: 'low',
      complete: true,
      cached: false,
      engine_version: expect.any(String) as unknown,
    });
    expect(first.findings.filter((x) => !x.suppressed)).toEqual([]);
    expect(first.facts).toMatchObject({
      exists: true,
      kind: 'wallet',
      nonce: eoa.nonce,
      balance: formatEther(eoa.balance),
      balance_raw: eoa.balance.toString(),
      code_size: 0,
      delegate: null,
      proxy: null,
    });
    expect(eoa.nonce).toBeGreaterThan(0);
    expect(first.facts.balance).toMatch(/^\d+(\.\d+)?$/);
    expect(first.data_as_of.block).toBeGreaterThanOrEqual(Number(world.blockNumber));
    expect(Date.parse(first.assessed_at)).not.toBeNaN();

    const second = await assess(acme, eoa.address);
    expect(second.cached).toBe(true);
    expect(second.assessment_id).not.toBe(first.assessment_id);
    expect({ ...second, assessment_id: '', assessed_at: '', cached: false }).toEqual({
      ...first,
      assessment_id: '',
      assessed_at: '',
    });
  });

  it('freshAddress: fresh_address low in risk-v2; preflight transfer → medium, warn; sign → allow', async () => {
    const fresh = world.fixtures.freshAddress;
    expect(fresh.fresh).toBe(true);
    const a = await assess(acme, fresh.address);
    expect(summary(a.findings)).toEqual([['fresh_address', 'low', false]]);
    expect(a).toMatchObject({ risk_level: 'low', risk_score: expectedScore('low'), complete: true });
    expect(a.facts).toMatchObject({ exists: false, kind: 'missing', nonce: 0, balance: '0' });

    const transfer = await preflight(acme, fresh.address, 'transfer');
    expect(transfer).toMatchObject({
      decision: 'warn',
      target: fresh.address,
      intent: 'transfer',
      chain: 'ethereum',
      network: 'mainnet',
      risk_level: 'medium',
      risk_score: expectedScore('medium'),
      complete: true,
      policy: { name: 'default', fail_mode: 'warn', allowlisted: false },
    });
    expect(transfer.reasons.map((r) => [r.code, r.severity])).toEqual([['fresh_address', 'medium']]);

    const sign = await preflight(acme, fresh.address, 'sign');
    expect(sign).toMatchObject({ decision: 'allow', risk_level: 'low', complete: true });
    expect(sign.reasons.map((r) => [r.code, r.severity])).toEqual([['fresh_address', 'low']]);
  });

  it('plainContract: is_contract medium + target_type_mismatch as a wallet, info as a contract; an EOA as a contract is a mismatch', async () => {
    const contract = world.fixtures.plainContract;
    const asWallet = await assess(acme, contract.address, 'wallet');
    expect(summary(asWallet.findings)).toEqual([
      ['is_contract', 'medium', false],
      ['target_type_mismatch', 'medium', false],
    ]);
    expect(asWallet).toMatchObject({
      risk_level: 'medium',
      risk_score: expectedScore('medium', 'medium'),
    });
    expect(asWallet.facts).toMatchObject({
      exists: true,
      kind: 'contract',
      code_size: (contract.code.length - 2) / 2,
      code_hash: keccak256(contract.code),
      proxy: null,
    });
    expect(only(asWallet.findings, 'is_contract').evidence).toMatchObject({
      method: 'eth_getCode',
      value: { code_size: (contract.code.length - 2) / 2, code_hash: keccak256(contract.code) },
    });
    expect(only(asWallet.findings, 'target_type_mismatch').evidence).toMatchObject({
      method: 'eth_getCode',
      value: { kind: 'contract' },
    });

    const asContract = await assess(acme, contract.address, 'contract');
    expect(summary(asContract.findings)).toEqual([['is_contract', 'info', false]]);
    expect(asContract).toMatchObject({ risk_level: 'low', risk_score: 0, target_type: 'contract' });

    const eoaAsContract = await assess(acme, f('fundedEoa'), 'contract');
    expect(summary(eoaAsContract.findings)).toEqual([['target_type_mismatch', 'medium', false]]);
    expect(eoaAsContract.facts.kind).toBe('wallet');
    expect(only(eoaAsContract.findings, 'target_type_mismatch').evidence.value).toMatchObject({
      kind: 'wallet',
    });
  });

  it('proxy: upgradeable_proxy medium with the EIP-1967 slot values read by eth_getStorageAt', async () => {
    const proxy = world.fixtures.proxy;
    const { implementation, admin } = proxy.proxy!;
    const a = await assess(acme, proxy.address, 'contract');
    expect(summary(a.findings)).toEqual([
      ['upgradeable_proxy', 'medium', false],
      ['is_contract', 'info', false],
    ]);
    expect(a).toMatchObject({ risk_level: 'medium', risk_score: expectedScore('medium') });
    const finding = only(a.findings, 'upgradeable_proxy');
    expect(finding.evidence).toMatchObject({
      method: 'eth_getStorageAt',
      value: {
        implementation: { slot: EIP1967_IMPLEMENTATION_SLOT, value: word(implementation) },
        admin: { slot: EIP1967_ADMIN_SLOT, value: word(admin) },
        beacon: { value: ZERO_WORD },
      },
    });
    expect(finding.detail).toContain(implementation);
    expect(a.facts.proxy).toEqual({ implementation, admin, beacon: null });
  });

  it('EIP-7702: a known implementation is info, an unknown delegate high, a deny-listed delegate critical for that account only', async () => {
    // A real set-code transaction to a built-in known implementation: the service has no setting (yet)
    // through which an operator registers more implementations, such as the fixture's walletImplementation.
    const known = await delegateNewEoa(
      world,
      world.fixtures.deployer.privateKey!,
      BUILT_IN_WALLET_IMPLEMENTATION,
      'knownDelegated',
    );
    const knownDelegated = await assess(acme, known);
    expect(summary(knownDelegated.findings)).toEqual([['eip7702_delegated', 'info', false]]);
    expect(knownDelegated.risk_level).toBe('low');
    expect(knownDelegated.facts).toMatchObject({
      kind: 'delegated_wallet',
      delegate: BUILT_IN_WALLET_IMPLEMENTATION,
    });
    const info = only(knownDelegated.findings, 'eip7702_delegated');
    expect(info.detail).toContain('Simple7702Account');
    expect(info.evidence).toMatchObject({
      method: 'eth_getCode',
      value: `0xef0100${BUILT_IN_WALLET_IMPLEMENTATION.slice(2).toLowerCase()}`,
    });

    // delegatedWallet's delegate is the fixture's walletImplementation: not a known implementation for
    // this service, so the delegation is high like any unknown delegate.
    const delegatedWallet = world.fixtures.delegatedWallet;
    const wallet = await assess(acme, delegatedWallet.address);
    expect(summary(wallet.findings)).toEqual([['eip7702_delegated', 'high', false]]);
    expect(wallet.facts).toMatchObject({ kind: 'delegated_wallet', delegate: delegatedWallet.delegate });

    const victim = world.fixtures.delegatedToMalicious;
    const malicious = world.fixtures.maliciousDelegate.address;
    const before = await assess(acme, victim.address);
    expect(summary(before.findings)).toEqual([['eip7702_delegated', 'high', false]]);
    expect(before).toMatchObject({ risk_level: 'high', risk_score: expectedScore('high') });
    expect(only(before.findings, 'eip7702_delegated').evidence).toMatchObject({
      method: 'eth_getCode',
      value: victim.code,
    });
    expect(before.facts).toMatchObject({ kind: 'delegated_wallet', delegate: malicious, nonce: 1 });

    const entry = await listEntry(acme, 'deny', { target: malicious, label: 'drainer delegate' });
    const after = await assess(acme, victim.address);
    expect(summary(after.findings)).toEqual([['eip7702_delegated', 'critical', false]]);
    expect(after).toMatchObject({ risk_level: 'critical', risk_score: expectedScore('critical') });
    const critical = only(after.findings, 'eip7702_delegated');
    expect(critical.detail).toContain(entry.id);
    expect(critical.evidence).toMatchObject({
      method: 'eth_getCode',
      value: { code: victim.code, delegate: malicious, sanctioned: null, deny_list_entry: entry.id },
    });
    expect((await preflight(acme, victim.address, 'sign')).decision).toBe('block');

    // Another account's lists never leak: the same (cached) chain analysis is still high for globex.
    const other = await assess(globex, victim.address);
    expect(summary(other.findings)).toEqual([['eip7702_delegated', 'high', false]]);
    expect(other.cached).toBe(true);
    expect((await preflight(globex, victim.address, 'sign')).decision).toBe('warn');
  }, 60_000);

  it('sanctioned (imported from a CSV): sanctioned_address critical, block for every intent, even when allow-listed', async () => {
    const target = f('sanctioned');
    const file = join(tmp, 'sanctions.csv');
    writeFileSync(file, `address,currency,name,uid\n${target.toLowerCase()},ETH,"Test Mixer, Ltd",E2E-1\n`);
    expect(
      await cliJson(testEnv.env, [
        'lists',
        'import',
        '--format',
        'csv',
        '--source',
        'e2e-sanctions',
        '--as-of',
        '2026-11-01',
        file,
      ]),
    ).toMatchObject({ source: 'e2e-sanctions', list_as_of: '2026-11-01', total: 1, added: 1 });

    // The running service learns of the import within seconds (not after its 30 s cache age).
    const flagged = await eventually(async () => {
      const a = await assess(acme, target);
      return a.findings.some((x) => x.code === 'sanctioned_address') ? a : null;
    }, 5_000);
    expect(flagged, 'sanctioned_address within 5 s of the import').toBeTruthy();
    expect(summary(flagged!.findings)).toEqual([['sanctioned_address', 'critical', false]]);
    expect(flagged).toMatchObject({ risk_level: 'critical', risk_score: expectedScore('critical') });
    expect(only(flagged!.findings, 'sanctioned_address').evidence).toMatchObject({
      method: 'sanctions_list',
      value: {
        source: 'e2e-sanctions',
        currency: 'ETH',
        name: 'Test Mixer, Ltd',
        uid: 'E2E-1',
        list_as_of: '2026-11-01',
      },
    });
    // Sanctions are everyone's: globex sees it too.
    expect(summary((await assess(globex, target)).findings)).toEqual([
      ['sanctioned_address', 'critical', false],
    ]);

    for (const intent of INTENTS) {
      const p = await preflight(acme, target, intent);
      expect(p, intent).toMatchObject({ decision: 'block', risk_level: 'critical', complete: true });
      expect(p.reasons.map((r) => r.code)).toContain('sanctioned_address');
    }

    // An organisation cannot allow-list its way around sanctions.
    await listEntry(acme, 'allow', { target, label: 'our counterparty' });
    const allowed = await assess(acme, target);
    expect(only(allowed.findings, 'sanctioned_address')).toMatchObject({
      severity: 'critical',
      suppressed: false,
    });
    expect(allowed.risk_level).toBe('critical');
    for (const intent of INTENTS) {
      const p = await preflight(acme, target, intent);
      expect(p, intent).toMatchObject({
        decision: 'block',
        risk_level: 'critical',
        policy: { allowlisted: true },
      });
    }
  }, 60_000);

  it('denylisted: org_denylisted critical and block for the deny-listing account only', async () => {
    const target = f('denylisted');
    const entry = await listEntry(acme, 'deny', {
      target,
      chain: 'ethereum',
      label: 'scam payout',
      reason: 'reported by support',
    });
    const a = await assess(acme, target);
    expect(summary(a.findings)).toEqual([['org_denylisted', 'critical', false]]);
    expect(a).toMatchObject({ risk_level: 'critical', risk_score: expectedScore('critical') });
    const finding = only(a.findings, 'org_denylisted');
    expect(finding.evidence).toMatchObject({
      method: 'org_deny_list',
      value: { id: entry.id, label: 'scam payout', reason: 'reported by support' },
    });
    expect(finding.detail).toContain('scam payout');
    for (const intent of INTENTS)
      expect((await preflight(acme, target, intent)).decision, intent).toBe('block');

    const other = await assess(globex, target);
    expect(other.findings.filter((x) => !x.suppressed)).toEqual([]);
    expect(other.risk_level).toBe('low');
    const p = await preflight(globex, target, 'transfer');
    expect(p).toMatchObject({ decision: 'allow', risk_level: 'low', reasons: [] });
  });

  it('allow list: other findings suppressed with the reason (that account only)', async () => {
    const proxy = f('proxy');
    const entry = await listEntry(acme, 'allow', { target: proxy, chain: 'ethereum', label: 'our vault' });
    const a = await assess(acme, proxy, 'wallet');
    expect(summary(a.findings)).toEqual([
      ['is_contract', 'medium', true],
      ['target_type_mismatch', 'medium', true],
      ['upgradeable_proxy', 'medium', true],
    ]);
    for (const finding of a.findings) {
      expect(finding.suppressed_reason, finding.code).toContain('allow-listed');
      expect(finding.suppressed_reason, finding.code).toContain('our vault');
      expect(finding.suppressed_reason, finding.code).toContain(entry.id);
    }
    expect(a).toMatchObject({ risk_level: 'low', risk_score: 0 });
    expect(await preflight(acme, proxy, 'interact')).toMatchObject({
      decision: 'allow',
      reasons: [],
      policy: { allowlisted: true },
    });

    const other = await assess(globex, proxy, 'wallet');
    expect(other.findings.every((x) => !x.suppressed)).toBe(true);
    expect(other).toMatchObject({
      risk_level: 'medium',
      risk_score: expectedScore('medium', 'medium', 'medium'),
    });
    expect((await preflight(globex, proxy, 'interact')).decision).toBe('warn');
  });

  it('allowlisted → allow (policy.allowlisted); its lookalike → lookalike_address high naming it, warn', async () => {
    const trusted = f('allowlisted');
    const lookalike = f('lookalike');
    expect(lookalike.slice(0, 6).toLowerCase()).toBe(trusted.slice(0, 6).toLowerCase());
    expect(lookalike.slice(-4).toLowerCase()).toBe(trusted.slice(-4).toLowerCase());
    await listEntry(acme, 'allow', { target: trusted, label: 'payroll' });

    for (const intent of INTENTS) {
      const p = await preflight(acme, trusted, intent);
      expect(p, intent).toMatchObject({
        decision: 'allow',
        risk_level: 'low',
        policy: { allowlisted: true },
      });
    }

    const a = await assess(acme, lookalike);
    expect(summary(a.findings)).toEqual([['lookalike_address', 'high', false]]);
    expect(a).toMatchObject({ risk_level: 'high', risk_score: expectedScore('high') });
    const finding = only(a.findings, 'lookalike_address');
    expect(finding.evidence).toMatchObject({
      method: 'org_allow_list',
      value: { target: lookalike, imitates: trusted },
    });
    expect(finding.detail).toContain(trusted);

    const p = await preflight(acme, lookalike, 'transfer');
    expect(p).toMatchObject({ decision: 'warn', risk_level: 'high', policy: { allowlisted: false } });
    expect(p.reasons.map((r) => [r.code, r.severity])).toEqual([['lookalike_address', 'high']]);

    // Only the account that trusts the original sees the imitation.
    const other = await preflight(globex, lookalike, 'transfer');
    expect(other).toMatchObject({ decision: 'allow', reasons: [], policy: { allowlisted: false } });
  });

  it('preflight approve: approval_to_eoa high (warn) for an EOA spender, nothing for a contract', async () => {
    const eoa = await preflight(acme, f('fundedEoa'), 'approve');
    expect(eoa).toMatchObject({ decision: 'warn', risk_level: 'high', risk_score: expectedScore('high') });
    expect(eoa.reasons.map((r) => [r.code, r.severity])).toEqual([['approval_to_eoa', 'high']]);
    expect(eoa.reasons[0]!.evidence).toMatchObject({
      method: 'eth_getCode',
      block: expect.any(Number) as unknown,
    });

    const contract = await preflight(acme, f('plainContract'), 'approve');
    expect(contract).toMatchObject({ decision: 'allow', risk_level: 'low', reasons: [] });

    // The same EOA for any other intent is fine.
    expect((await preflight(acme, f('fundedEoa'), 'transfer')).decision).toBe('allow');
  });

  it('input rules: chain inference, address forms, unsupported chain/type/intent, credentials', async () => {
    const target = f('fundedEoa');

    const inferred = await preflight(acme, target, 'sign', {});
    expect(inferred).toMatchObject({ chain: 'ethereum', network: 'mainnet', target, decision: 'allow' });

    const lower = await preflight(acme, target.toLowerCase(), 'sign', {});
    expect(lower.target).toBe(target);
    const lowerAssessment = await assess(acme, target.toLowerCase());
    expect(lowerAssessment.target).toBe(target);

    const typo = badChecksum(target);
    expect(typo.toLowerCase()).toBe(target.toLowerCase());
    const typoProblem = await expectProblem(
      await preflightRes(acme, { target: typo, intent: 'sign' }),
      400,
      'invalid_address',
    );
    expect(typoProblem.errors).toEqual([{ path: 'target', message: 'EIP-55 checksum mismatch' }]);
    await expectProblem(
      await riskV2(acme, { target: typo, chain: 'ethereum', network: 'mainnet', target_type: 'wallet' }),
      400,
      'invalid_address',
    );

    const unconfigured = await expectProblem(
      await preflightRes(acme, { target, intent: 'sign', chain: 'base', network: 'mainnet' }),
      400,
      'unsupported_chain',
    );
    expect(unconfigured.detail).toContain('ethereum');
    await expectProblem(
      await riskV2(acme, { target, chain: 'base', network: 'mainnet', target_type: 'wallet' }),
      400,
      'unsupported_chain',
    );

    await expectProblem(
      await riskV2(acme, { target, chain: 'ethereum', network: 'mainnet', target_type: 'program' }),
      400,
      'unsupported_target_type',
    );
    // `token` exists on EVM too (ERC-20s, test/e2e/risk-evm-token.test.ts): `stake` exists nowhere.
    await expectProblem(
      await riskV2(acme, { target, chain: 'ethereum', network: 'mainnet', target_type: 'stake' }),
      400,
      'unsupported_target_type',
    );
    await expectProblem(
      await preflightRes(acme, { target, intent: 'steal', chain: 'ethereum' }),
      400,
      'unsupported_intent',
    );

    const noJwt = await postJson(
      `${svc.baseUrl}/api/web3/risk-v2`,
      {},
      {
        target,
        chain: 'ethereum',
        network: 'mainnet',
        target_type: 'wallet',
      },
    );
    expect(noJwt.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
    await expectProblem(noJwt, 401, 'unauthorized');
    await expectProblem(
      await postJson(`${svc.baseUrl}/api/v1/shield/preflight`, {}, { target, intent: 'sign' }),
      401,
      'unauthorized',
    );
  });

  it('provider down: risk-v2 → 503 provider_unavailable (retryable); preflight → complete:false and the fail mode', async () => {
    const target = f('fundedEoa');
    const res = await riskV2(
      acme,
      { target, chain: 'ethereum', network: 'mainnet', target_type: 'wallet' },
      deadWarn,
    );
    const problem = await expectProblem(res, 503, 'provider_unavailable');
    expect(problem).toMatchObject({ retryable: true });
    expect(problem.detail).not.toContain('127.0.0.1'); // no provider URL (it may carry an API key)

    for (const [service, failMode] of [
      [deadWarn, 'warn'],
      [deadBlock, 'block'],
    ] as const) {
      const p = await expectJson<Preflight>(
        await preflightRes(acme, { target, intent: 'transfer' }, service),
        200,
      );
      expect(p, failMode).toMatchObject({
        decision: failMode,
        complete: false,
        chain: 'ethereum',
        network: 'mainnet',
        target,
        policy: { fail_mode: failMode, allowlisted: false },
      });
      expect(p.reasons.map((r) => [r.code, r.severity])).toEqual([['check_incomplete', 'info']]);
    }
  });
});
