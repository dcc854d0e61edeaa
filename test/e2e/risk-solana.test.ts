import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG } from '../../src/risk/findings.js';
import type { Preflight } from '../../src/risk/preflight-schemas.js';
import type { Assessment, FindingBody, TokenScan } from '../../src/risk/schemas.js';
import {
  bearer,
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import { testIdentityProvider } from '../support/jwt.js';
import { cliJson, eventually, prepareEnv, type RunningService, type TestEnv } from '../support/service.js';
import type { SolanaFacade } from '../support/solana/facade.js';
import { buildSolanaWorld, type MintFixture, type SolanaWorld } from '../support/solana/fixtures.js';

/** What risk-v2 and scan/token answers have in common. */
type Verdict = Assessment | TokenScan;

/** Codes of the Solana side and of any target (docs/risk.md#findings-catalog); the EVM ones are covered by risk-evm.test.ts. */
const SOLANA_CODES = [
  'sanctioned_address',
  'org_denylisted',
  'target_type_mismatch',
  'account_not_found',
  'check_incomplete',
  'new_account',
  'token_delegate_set',
  'frozen_token_accounts',
  'interacted_with_flagged',
  'mint_authority_enabled',
  'freeze_authority_enabled',
  'permanent_delegate',
  'transfer_hook',
  'transfer_fee',
  'default_account_state_frozen',
  'non_transferable',
  'pausable',
  'mint_close_authority',
  'confidential_transfers',
  'metadata_mutable',
  'holder_concentration',
  'copycat_symbol',
  'zero_supply',
] as const;

const RPC_DEADLINE_MS = 1500;
const RISK_DEADLINE_MS = 3000;
const PREFLIGHT_DEADLINE_MS = 1500;

const active = (v: Verdict) =>
  v.findings
    .filter((f) => !f.suppressed)
    .map((f) => f.code)
    .sort();
const one = (v: Verdict, code: string) => {
  const found = v.findings.filter((f) => f.code === code);
  expect(found, `one ${code} in ${JSON.stringify(v.findings.map((f) => f.code))}`).toHaveLength(1);
  return found[0]!;
};

/**
 * The risk engine over HTTP on Solana: the built service reads a LiteSVM chain (mints, wallets and a program
 * made by real SPL Token / Token-2022 / loader transactions) through the JSON-RPC facade. Scan, risk-v2 and
 * preflight answers, lists applied per account on cached chain facts, round trips, single flight, provider
 * faults and recovery.
 */
describe('risk engine on Solana (built service over HTTP, LiteSVM behind the facade)', () => {
  let world: SolanaWorld;
  let facade: SolanaFacade;
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let svc: RunningService;
  let acme: Customer;
  let globex: Customer;
  let tmp: string;
  const idp = testIdentityProvider();
  /** Every finding code an answer in this file carried, unsuppressed, with its evidence. */
  const seen = new Map<string, FindingBody>();

  const record = <T extends Verdict>(v: T): T => {
    for (const f of v.findings) {
      expect(f.title).toBe(CATALOG[f.code].title);
      expect(f.evidence.method).toMatch(/^[a-zA-Z_]+$/);
      if (f.code !== 'check_incomplete') expect(f.evidence.slot).toEqual(expect.any(Number));
      if (!f.suppressed && !seen.has(f.code)) seen.set(f.code, f);
    }
    return v;
  };
  const post = (path: string, body: unknown, headers: Record<string, string>) =>
    fetch(`${svc.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const scanRaw = (customer: Customer, mint: string) =>
    post('/api/v1/scan/token', { mint, network: 'mainnet' }, { 'x-api-key': customer.key.key });
  const scan = async (customer: Customer, mint: string) =>
    record(await expectJson<TokenScan>(await scanRaw(customer, mint), 200));
  const assessRaw = (customer: Customer, target: string, target_type: string) =>
    post(
      '/api/web3/risk-v2',
      { target, chain: 'solana', network: 'mainnet', target_type },
      bearer(idp.sign({ sub: 'analyst', org_id: customer.account.org_id })),
    );
  const assess = async (customer: Customer, target: string, targetType: string) =>
    record(await expectJson<Assessment>(await assessRaw(customer, target, targetType), 200));
  const preflightRaw = (customer: Customer, body: Record<string, unknown>) =>
    post('/api/v1/shield/preflight', body, { 'x-api-key': customer.key.key });
  const preflight = async (customer: Customer, body: Record<string, unknown>) =>
    expectJson<Preflight>(await preflightRaw(customer, body), 200);
  const addToList = async (customer: Customer, list: 'deny' | 'allow', body: Record<string, unknown>) =>
    expectJson<{ id: string }>(
      await post(`/api/v1/lists/${list}/entries`, body, { 'x-api-key': customer.key.key }),
      201,
    );
  const removeFromList = async (customer: Customer, list: 'deny' | 'allow', id: string) =>
    expect(
      (
        await fetch(`${svc.baseUrl}/api/v1/lists/${list}/entries/${id}`, {
          method: 'DELETE',
          headers: { 'x-api-key': customer.key.key },
        })
      ).status,
    ).toBe(200);

  beforeAll(async () => {
    world = await buildSolanaWorld();
    facade = await world.startFacade();
    tmp = mkdtempSync(join(tmpdir(), 'riskwatch-risk-'));
    testEnv = await prepareEnv({
      ...idp.env,
      RISKWATCH_RPC_SOLANA_MAINNET: facade.url,
      RISKWATCH_RPC_RATE_PER_S: '0',
      RISKWATCH_RPC_RETRIES: '1',
      RISKWATCH_RPC_BACKOFF_BASE_MS: '10',
      RISKWATCH_RPC_BACKOFF_MAX_MS: '50',
      RISKWATCH_RPC_DEADLINE_MS: String(RPC_DEADLINE_MS),
      RISKWATCH_RPC_TIMEOUT_MS: '1000',
      RISKWATCH_RPC_CIRCUIT_COOLDOWN_MS: '300',
      RISKWATCH_RISK_DEADLINE_MS: String(RISK_DEADLINE_MS),
      RISKWATCH_PREFLIGHT_DEADLINE_MS: String(PREFLIGHT_DEADLINE_MS),
      RISKWATCH_IMPACT_REFRESH_CRON: '* * * * * *',
      RISKWATCH_IMPACT_RELOAD_MS: '250',
    });
    db = await openAccounts(testEnv.env);
    [acme, globex] = await Promise.all([db.customer('acme'), db.customer('globex')]);
    svc = await startServiceRetrying(testEnv.env);
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await db?.close();
    await testEnv?.dropDatabase();
    await facade?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  afterEach(async () => {
    facade.faults.clear();
    facade.setLatency(0);
    await facade.idle();
  });

  describe('POST /api/v1/scan/token', () => {
    const mintNames = () =>
      (Object.keys(world.fixtures.mints) as (keyof SolanaWorld['fixtures']['mints'])[]).filter(
        // Kept cold for the round-trip, single-flight and fault tests below.
        (name) => !['moderateConcentration', 'spreadWithPool'].includes(name),
      );

    it('raises exactly the findings each mint was built to trigger, with evidence', async () => {
      for (const name of mintNames()) {
        const fixture: MintFixture = world.fixtures.mints[name];
        const body = await scan(acme, fixture.address);
        expect(active(body), name).toEqual([...fixture.expect.findings].sort());
        expect(body).toMatchObject({
          mint: fixture.address,
          network: 'mainnet',
          token_program: fixture.program === 'token' ? 'spl-token' : 'token-2022',
          complete: true,
          cached: false,
        });
        expect(body.scan_id).toMatch(/^scn_/);
        expect(body.token.decimals).toBe(fixture.decimals);
        expect(body.token.supply_raw).toBe(fixture.supply.toString());
        expect(body.data_as_of.slot).toEqual(expect.any(Number));
        const suppressed = body.findings.filter((f) => f.suppressed).map((f) => f.code);
        expect(suppressed.sort(), name).toEqual([...(fixture.expect.suppressed ?? [])].sort());
      }
    });

    it('scores by the formula and levels of docs/risk.md#scoring', async () => {
      const permanent = await scan(acme, world.fixtures.mints.permanentDelegate.address);
      expect(one(permanent, 'permanent_delegate').severity).toBe('critical');
      expect(permanent.risk_level).toBe('critical');
      const clean = await scan(acme, world.fixtures.mints.cleanToken.address);
      expect(clean).toMatchObject({ risk_score: 0, risk_level: 'low' });
      const live = await scan(acme, world.fixtures.mints.liveAuthorities.address);
      // high 0.5, high 0.5, low 0.1: 100 × (1 − 0.5 × 0.5 × 0.9) = 77.5 → 78.
      expect(active(live)).toEqual([
        'freeze_authority_enabled',
        'metadata_mutable',
        'mint_authority_enabled',
      ]);
      expect(live).toMatchObject({ risk_score: 78, risk_level: 'high' });
      expect(
        one(await scan(acme, world.fixtures.mints.transferFeeHigh.address), 'transfer_fee').severity,
      ).toBe('high');
      expect(
        one(await scan(acme, world.fixtures.mints.transferFeeLow.address), 'transfer_fee').severity,
      ).toBe('medium');
    });

    it('USDC at its real address with its expected authorities: low, findings shown suppressed', async () => {
      const body = await scan(acme, world.fixtures.mints.usdc.address);
      expect(body.risk_level).toBe('low');
      expect(body.known).toMatchObject({ symbol: 'USDC', authorities: 'expected' });
      for (const f of body.findings) {
        expect(f.suppressed).toBe(true);
        expect(f.suppressed_reason).toMatch(/USDC|expected/i);
      }
      const copycat = await scan(acme, world.fixtures.mints.copycatUsdc.address);
      expect(one(copycat, 'copycat_symbol').severity).toBe('high');
    });

    it('answers from the cache the second time (cached: true, same verdict)', async () => {
      const mint = world.fixtures.mints.concentrated.address;
      const first = await scan(acme, mint);
      const again = await scan(acme, mint);
      expect(again.cached).toBe(true);
      expect(again.findings).toEqual(first.findings);
      expect(again.scan_id).not.toBe(first.scan_id);
      const whale = first.holders!.largest[0]!;
      expect(whale.owner).toBe(world.actors.whale);
    });

    it('404 not_found for a missing mint, 422 not_a_mint for a wallet, a token account and a program', async () => {
      await expectProblem(await scanRaw(acme, world.fixtures.missing.address), 404, 'not_found');
      for (const address of [
        world.fixtures.wallets.plainWallet.address,
        world.fixtures.tokenAccount.address,
        world.fixtures.program.address,
      ]) {
        const problem = await expectProblem(await scanRaw(acme, address), 422, 'not_a_mint');
        expect(problem.detail).toContain(address);
      }
    });

    it('refuses bad input with a 400 and a stable code', async () => {
      await expectProblem(await scanRaw(acme, 'not-an-address'), 400, 'invalid_address');
      await expectProblem(
        await post(
          '/api/v1/scan/token',
          { mint: world.fixtures.mints.cleanToken.address, network: 'eip155:1' },
          {
            'x-api-key': acme.key.key,
          },
        ),
        400,
        'unsupported_chain',
      );
      await expectProblem(
        await post('/api/v1/scan/token', { mint: 42 }, { 'x-api-key': acme.key.key }),
        400,
        'invalid_request',
      );
      await expectProblem(
        await post(
          '/api/v1/scan/token',
          { mint: world.fixtures.mints.cleanToken.address, extra: 1 },
          {
            'x-api-key': acme.key.key,
          },
        ),
        400,
        'invalid_request',
      );
      await expectProblem(
        await post('/api/v1/scan/token', { mint: world.fixtures.mints.cleanToken.address }, {}),
        401,
        'unauthorized',
      );
    });
  });

  describe('POST /api/web3/risk-v2', () => {
    it('wallets: each raises what it was built to trigger', async () => {
      const { wallets } = world.fixtures;
      for (const name of Object.keys(wallets) as (keyof typeof wallets)[]) {
        const body = await assess(acme, wallets[name].address, 'wallet');
        expect(active(body), name).toEqual([...wallets[name].expect.findings].sort());
        expect(body).toMatchObject({ target_type: 'wallet', complete: true, engine_version: '2.1.0' });
        expect(body.facts).toMatchObject({ exists: true, kind: 'wallet' });
      }
      const delegated = await assess(acme, wallets.delegatedWallet.address, 'wallet');
      expect(one(delegated, 'token_delegate_set').evidence.method).toBe('getTokenAccountsByOwner');
    });

    it('a missing account: account_not_found (low), facts.exists false', async () => {
      const body = await assess(acme, world.fixtures.missing.address, 'wallet');
      expect(one(body, 'account_not_found').severity).toBe('low');
      expect(body.facts).toMatchObject({ exists: false });
    });

    it('the program: program_upgradeable as a program, target_type_mismatch as a wallet', async () => {
      const { program } = world.fixtures;
      const asProgram = await assess(acme, program.address, 'program');
      expect(active(asProgram)).toEqual(['program_upgradeable']);
      expect(asProgram.facts).toMatchObject({ kind: 'program', upgrade_authority: program.upgradeAuthority });
      const asWallet = await assess(acme, program.address, 'wallet');
      expect(one(asWallet, 'target_type_mismatch')).toMatchObject({ severity: 'medium' });
      expect(asWallet.facts.kind).toBe('program');
      const mintAsWallet = await assess(acme, world.fixtures.mints.cleanToken.address, 'program');
      expect(one(mintAsWallet, 'target_type_mismatch').detail).toMatch(/mint/);
    });

    it('target_type token: the scan/token analysis; a wallet sent as token is a mismatch', async () => {
      const body = await assess(acme, world.fixtures.mints.permanentDelegate.address, 'token');
      expect(active(body)).toEqual([...world.fixtures.mints.permanentDelegate.expect.findings].sort());
      const wallet = await assess(acme, world.fixtures.wallets.plainWallet.address, 'token');
      expect(active(wallet)).toEqual(['target_type_mismatch']);
      expect(wallet.facts).toMatchObject({ exists: true, kind: 'wallet' });
    });

    it('a sub-check that fails: 200 with complete false and check_incomplete naming the method', async () => {
      facade.faults.always({ kind: 'http500' }, { method: 'getSignaturesForAddress' });
      const target = world.actors.holders[10]!;
      const body = await assess(acme, target, 'wallet');
      expect(body.complete).toBe(false);
      expect(one(body, 'check_incomplete').evidence.method).toBe('getSignaturesForAddress');
      expect(body.facts).toMatchObject({ exists: true, kind: 'wallet', activity_count: null });
      facade.faults.clear();
      const again = await assess(acme, target, 'wallet');
      expect(again).toMatchObject({ complete: true, cached: false });
    });

    it('refuses a bad target type, chain or token (400 / 401)', async () => {
      const target = world.fixtures.wallets.oldWallet.address;
      await expectProblem(await assessRaw(acme, target, 'contract'), 400, 'unsupported_target_type');
      await expectProblem(await assessRaw(acme, target, 'nft'), 400, 'unsupported_target_type');
      await expectProblem(
        await post(
          '/api/web3/risk-v2',
          { target, chain: 'solana', network: 'devnet', target_type: 'wallet' },
          bearer(idp.sign({ sub: 'analyst', org_id: acme.account.org_id })),
        ),
        400,
        'unsupported_chain',
      );
      await expectProblem(
        await post('/api/web3/risk-v2', { target, chain: 'solana', target_type: 'wallet' }, {}),
        401,
        'unauthorized',
      );
    });
  });

  describe('lists, per account, on cached chain facts', () => {
    it('a deny-listed counterparty makes interacted_with_flagged for that account only', async () => {
      const wallet = world.fixtures.wallets.counterpartyWallet.address;
      const before = await assess(globex, wallet, 'wallet');
      expect(active(before)).not.toContain('interacted_with_flagged');
      const entry = await addToList(acme, 'deny', {
        target: world.actors.flaggedCounterparty,
        label: 'drainer',
      });
      const flagged = await assess(acme, wallet, 'wallet');
      expect(flagged.cached).toBe(true);
      const f = one(flagged, 'interacted_with_flagged');
      expect(f).toMatchObject({ severity: 'high', suppressed: false });
      expect(f.evidence.method).toBe('getTransaction');
      expect(f.evidence.value).toEqual([
        expect.objectContaining({ address: world.actors.flaggedCounterparty, deny_list_entry: entry.id }),
      ]);
      expect(active(await assess(globex, wallet, 'wallet'))).not.toContain('interacted_with_flagged');
      await removeFromList(acme, 'deny', entry.id);
      expect(active(await assess(acme, wallet, 'wallet'))).not.toContain('interacted_with_flagged');
    });

    it('org_denylisted is critical and blocks; the allow list suppresses the rest and allows', async () => {
      const mint = world.fixtures.mints.liveAuthorities.address;
      const denied = await addToList(acme, 'deny', { target: mint, chain: 'solana', reason: 'rug' });
      const scanned = await scan(acme, mint);
      expect(one(scanned, 'org_denylisted')).toMatchObject({ severity: 'critical', suppressed: false });
      expect(scanned.risk_level).toBe('critical');
      expect((await preflight(acme, { target: mint, intent: 'interact' })).decision).toBe('block');
      expect(active(await scan(globex, mint))).not.toContain('org_denylisted');
      await removeFromList(acme, 'deny', denied.id);

      await addToList(acme, 'allow', { target: mint, label: 'our token' });
      const allowed = await scan(acme, mint);
      expect(active(allowed)).toEqual([]);
      expect(allowed.risk_level).toBe('low');
      for (const f of allowed.findings) expect(f.suppressed_reason).toMatch(/allow-listed.*our token/);
      const pf = await preflight(acme, { target: mint, intent: 'interact' });
      expect(pf).toMatchObject({ decision: 'allow', policy: { allowlisted: true } });
      expect((await preflight(globex, { target: mint, intent: 'interact' })).decision).toBe('warn');
    });

    it('a sanctioned address (imported list): critical, never suppressed, preflight block', async () => {
      const target = world.fixtures.wallets.oldWallet.address;
      await addToList(acme, 'allow', { target });
      const csv = join(tmp, 'sanctions.csv');
      writeFileSync(csv, `address,currency,name,uid\n${target},SOL,Test Sanctioned Party,T-1\n`);
      await cliJson(testEnv.env, ['lists', 'import', '--format', 'csv', '--source', 'test-list', csv]);
      const body = await assess(acme, target, 'wallet');
      const f = one(body, 'sanctioned_address');
      expect(f).toMatchObject({ severity: 'critical', suppressed: false });
      expect(f.evidence.value).toMatchObject({ source: 'test-list', name: 'Test Sanctioned Party' });
      expect(body.risk_level).toBe('critical');
      for (const intent of ['sign', 'approve', 'transfer', 'interact'])
        expect((await preflight(acme, { target, intent })).decision).toBe('block');
      expect((await preflight(globex, { target, intent: 'transfer' })).decision).toBe('block');
    });
  });

  describe('POST /api/v1/shield/preflight', () => {
    it('infers solana/mainnet from a base58 address and answers from the cache', async () => {
      const target = world.fixtures.wallets.frozenWallet.address;
      const first = await preflight(acme, { target, intent: 'sign' });
      expect(first).toMatchObject({
        chain: 'solana',
        network: 'mainnet',
        decision: 'allow',
        complete: true,
        policy: {
          name: 'default',
          fail_mode: 'warn',
          deadline_ms: PREFLIGHT_DEADLINE_MS,
          allowlisted: false,
        },
      });
      expect((await preflight(acme, { target, intent: 'sign' })).cached).toBe(true);
    });

    it('transfer: a never-used address is medium (warn); a mint or program is not a recipient', async () => {
      const missing = await preflight(acme, { target: world.fixtures.missing.address, intent: 'transfer' });
      expect(missing.reasons).toEqual([
        expect.objectContaining({ code: 'account_not_found', severity: 'medium' }),
      ]);
      expect(missing.decision).toBe('warn');
      expect(
        (await preflight(acme, { target: world.fixtures.missing.address, intent: 'sign' })).decision,
      ).toBe('allow');
      const toMint = await preflight(acme, {
        target: world.fixtures.mints.cleanToken.address,
        intent: 'transfer',
        chain: 'solana',
      });
      expect(toMint.reasons.map((r) => r.code)).toContain('target_type_mismatch');
      const program = await preflight(acme, { target: world.fixtures.program.address, intent: 'interact' });
      expect(program.reasons.map((r) => r.code)).toContain('program_upgradeable');
    });

    it('a risky mint warns or blocks by level', async () => {
      const critical = await preflight(acme, {
        target: world.fixtures.mints.permanentDelegate.address,
        intent: 'approve',
      });
      expect(critical.decision).toBe('block');
      expect(critical.reasons[0]).toMatchObject({ code: 'permanent_delegate', severity: 'critical' });
    });

    it('refuses an unknown intent and an address of no chain', async () => {
      const target = world.fixtures.wallets.oldWallet.address;
      await expectProblem(await preflightRaw(acme, { target, intent: 'steal' }), 400, 'unsupported_intent');
      await expectProblem(
        await preflightRaw(acme, { target: 'hello', intent: 'sign' }),
        400,
        'invalid_address',
      );
      await expectProblem(
        await preflightRaw(acme, { target: '0x0000000000000000000000000000000000000001', intent: 'sign' }),
        400,
        'unsupported_chain',
      );
      await expectProblem(await preflightRaw(acme, { intent: 'sign' }), 400, 'invalid_request');
    });
  });

  describe('provider round trips', () => {
    it('a cold scan/token takes at most 3 sequential provider round trips', async () => {
      facade.stats.reset();
      facade.setLatency(50);
      const body = await scan(acme, world.fixtures.mints.moderateConcentration.address);
      expect(body.cached).toBe(false);
      expect(active(body)).toEqual(['holder_concentration']);
      expect(facade.stats.sequentialRoundTrips()).toBeLessThanOrEqual(3);
      expect(facade.stats.sequentialRoundTrips()).toBeGreaterThanOrEqual(2);
    });

    it('identical concurrent scans of one mint cause one set of provider calls', async () => {
      facade.stats.reset();
      facade.setLatency(30);
      const mint = world.fixtures.mints.spreadWithPool.address;
      const bodies = await Promise.all(Array.from({ length: 8 }, () => scan(acme, mint)));
      for (const b of bodies) expect(b.findings).toEqual(bodies[0]!.findings);
      expect(facade.stats.callCount('getTokenLargestAccounts')).toBe(1);
      expect(facade.stats.roundTrips).toBeLessThanOrEqual(3);
      const pool = bodies[0]!.holders!.largest.find((h) => h.owner === world.actors.poolOwner);
      expect(pool?.label).toEqual(expect.any(String));
    });
  });

  describe('provider faults: 503 within the deadline, preflight by fail mode, recovery', () => {
    const faults = [
      { name: '500s', fault: { kind: 'http500' } },
      { name: '429 with Retry-After', fault: { kind: 'http429', retryAfterSeconds: 1 } },
      { name: 'garbage JSON', fault: { kind: 'garbage', variant: 'not-json' } },
      { name: 'timeouts (no answer)', fault: { kind: 'hang' } },
    ] as const;

    for (const { name, fault } of faults) {
      it(`${name}: scan → 503 provider_unavailable, preflight → warn (incomplete), then recovery`, async () => {
        // Addresses nothing has read yet (no cached analysis): the provider is asked, and fails.
        const i = faults.findIndex((f) => f.name === name);
        const [wallet, notAMint] = [world.actors.holders[i]!, world.actors.holders[i + 5]!];
        facade.faults.always(fault);

        let started = Date.now();
        const problem = await expectProblem(await scanRaw(acme, notAMint), 503, 'provider_unavailable');
        expect(Date.now() - started).toBeLessThan(RISK_DEADLINE_MS + 1000);
        expect(problem.retryable).toBe(true);

        started = Date.now();
        const pf = await preflight(acme, { target: wallet, intent: 'transfer' });
        expect(Date.now() - started).toBeLessThan(PREFLIGHT_DEADLINE_MS + 500);
        expect(pf).toMatchObject({ complete: false, decision: 'warn', cached: false });
        expect(pf.reasons.map((r) => r.code)).toContain('check_incomplete');

        const assessment = await assessRaw(acme, wallet, 'wallet');
        await expectProblem(assessment, 503, 'provider_unavailable');

        facade.faults.clear();
        const recovered = await eventually(
          async () => (await scanRaw(acme, notAMint)).status === 422,
          8000,
          100,
        );
        expect(recovered).toBe(true);
        const after = await preflight(acme, { target: wallet, intent: 'sign' });
        expect(after.complete).toBe(true);
      });
    }
  });

  describe('impact counters and catalog coverage', () => {
    it('the public impact numbers count the real assessments, scans, preflights and findings', async () => {
      type Impact = {
        assessments: { total: number };
        token_scans: { total: number };
        preflights: { total: number; blocked: number; warned: number };
        high_risk_findings: { total: number };
      };
      const impact = await eventually(async () => {
        const body = (await (await fetch(`${svc.baseUrl}/api/public/impact`)).json()) as Impact;
        return body.assessments.total > 0 && body.token_scans.total > 0 && body.preflights.blocked > 0
          ? body
          : null;
      }, 10_000);
      expect(impact).not.toBeNull();
      expect(impact!.preflights.total).toBeGreaterThanOrEqual(
        impact!.preflights.blocked + impact!.preflights.warned,
      );
      expect(impact!.high_risk_findings.total).toBeGreaterThan(0);
    });

    it('every Solana and any-target finding code of the catalog was produced over HTTP with method + slot', () => {
      const missing = SOLANA_CODES.filter((code) => !seen.has(code));
      expect(missing).toEqual([]);
      for (const [code, f] of seen) {
        expect(f.evidence.method, code).toBeTruthy();
        if (code !== 'check_incomplete') expect(f.evidence.slot, code).toEqual(expect.any(Number));
      }
    });
  });
});
