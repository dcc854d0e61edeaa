import { getAddress, maxUint256, type Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalsAnswer, Assessment, FindingBody, TokenScan } from '../../src/risk/schemas.js';
import type { Preflight } from '../../src/risk/preflight-schemas.js';
import {
  bearer,
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import { connectAnvil } from '../support/evm/contracts.js';
import { lookalikeOf } from '../support/evm/fixtures.js';
import {
  buildTokenWorld,
  erc20Abi,
  FEE_BPS,
  type TokenName,
  type TokenWorld,
} from '../support/evm/tokens.js';
import { testIdentityProvider } from '../support/jwt.js';
import { startFaultProxy, sequentialRoundTrips, type FaultProxy } from '../support/rpc-fault-proxy.js';
import { prepareEnv, type RunningService, type TestEnv } from '../support/service.js';

/*
 * ERC-20 scans (docs/risk.md#erc-20-tokens) against real bytecode on anvil: OpenZeppelin tokens and the
 * traps of test/support/evm/contracts/Tokens.sol, pooled on Uniswap V2 deployed from its npm build
 * artifacts. The service reaches anvil through a fault proxy, which counts round trips and plays a node
 * without eth_simulateV1.
 */

type Erc20Token = Extract<TokenScan['token'], { standard: 'erc20' }>;

/** The codes of the findings that weigh (unsuppressed, above info). */
const codes = (findings: readonly FindingBody[]) =>
  findings
    .filter((f) => !f.suppressed && f.severity !== 'info')
    .map((f) => f.code)
    .sort();
function only(findings: readonly FindingBody[], code: string): FindingBody {
  const matching = findings.filter((f) => f.code === code);
  expect(
    matching,
    `exactly one ${code} in ${JSON.stringify(findings.map((f) => [f.code, f.severity, f.suppressed]))}`,
  ).toHaveLength(1);
  return matching[0]!;
}
const erc20 = (scan: TokenScan): Erc20Token => {
  expect(scan.token_program).toBe('erc20');
  return scan.token as Erc20Token;
};

describe('ERC-20 scans: bytecode capabilities, owner, honeypot and taxes by simulation', () => {
  let anvil: RunningAnvil;
  let world: TokenWorld;
  let proxy: FaultProxy;
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let svc: RunningService;
  /** The same chain with the built-in (mainnet) router, which has no code on anvil. */
  let noRouter: RunningService;
  /** Through a proxy playing a node without eth_simulateV1 (and a cache of its own). */
  let bareProxy: FaultProxy;
  let bare: RunningService;
  let acme: Customer;
  let globex: Customer;
  const idp = testIdentityProvider();
  /** An address that copies USDT's symbol but is not the registry's USDT. */
  const REGISTERED_OWNER: Address = getAddress('0x00000000000000000000000000000000000a11ce');

  const post = (service: RunningService, path: string, headers: Record<string, string>, body: unknown) =>
    fetch(`${service.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const scanRes = (body: Record<string, unknown>, customer = acme, service = svc) =>
    post(service, '/api/v1/scan/token', { 'x-api-key': customer.key.key }, body);
  const scan = async (name: TokenName, customer = acme, service = svc): Promise<TokenScan> =>
    expectJson<TokenScan>(
      await scanRes({ mint: world.tokens[name], chain: 'ethereum' }, customer, service),
      200,
    );

  beforeAll(async () => {
    anvil = await startAnvil();
    world = await buildTokenWorld(anvil.url);
    [proxy, bareProxy] = await Promise.all([startFaultProxy(anvil.url), startFaultProxy(anvil.url)]);
    bareProxy.faults.unsupported('eth_simulateV1');
    testEnv = await prepareEnv({
      ...idp.env,
      RISKWATCH_RPC_ETHEREUM_MAINNET: proxy.url,
      RISKWATCH_RPC_RATE_PER_S: '0',
      RISKWATCH_EVM_ROUTERS: JSON.stringify([
        { network: 'eip155:1', address: world.uniswap.router, name: 'Uniswap V2 (test deployment)' },
      ]),
      RISKWATCH_EVM_KNOWN_TOKENS: JSON.stringify([
        // The blacklisting token, registered as an issuer's stablecoin whose blacklist is expected.
        {
          network: 'eip155:1',
          address: world.tokens.blacklist,
          symbol: 'BLOCK',
          name: 'Blacklist Token',
          issuer: 'Test Issuer',
          expected: ['freeze'],
          owner: world.owner,
          source: 'test configuration',
        },
        // The pausable token, registered with an owner it no longer has.
        {
          network: 'eip155:1',
          address: world.tokens.pausable,
          symbol: 'PAUSE',
          name: 'Pausable Token',
          issuer: 'Test Issuer',
          expected: ['pause'],
          owner: REGISTERED_OWNER,
        },
        // A registered CLEAN somewhere else: the world's CLEAN is then a copycat.
        {
          network: 'eip155:1',
          address: '0x00000000000000000000000000000000000c1ea0',
          symbol: 'CLEAN',
          name: 'The real Clean',
          issuer: 'Clean Inc.',
        },
      ]),
    });
    db = await openAccounts(testEnv.env);
    [acme, globex] = await Promise.all([db.customer('acme'), db.customer('globex')]);
    [svc, noRouter, bare] = await Promise.all([
      startServiceRetrying(testEnv.env),
      startServiceRetrying({
        ...testEnv.env,
        REDIS_KEY_PREFIX: `${testEnv.env.REDIS_KEY_PREFIX}norouter:`,
        RISKWATCH_EVM_ROUTERS: '[]',
      }),
      startServiceRetrying({
        ...testEnv.env,
        REDIS_KEY_PREFIX: `${testEnv.env.REDIS_KEY_PREFIX}bare:`,
        RISKWATCH_RPC_ETHEREUM_MAINNET: bareProxy.url,
      }),
    ]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([svc?.stop(), noRouter?.stop(), bare?.stop()]);
    await db?.close();
    await testEnv?.dropDatabase();
    await Promise.all([proxy?.close(), bareProxy?.close()]);
    await anvil?.stop();
  });

  it('a plain OpenZeppelin ERC-20 with a pool: no capability, taxes measured at 0, in at most 3 sequential round trips', async () => {
    proxy.resetStats();
    const res = await scan('clean');
    expect(sequentialRoundTrips(proxy.stats)).toBeLessThanOrEqual(3);
    expect(res).toMatchObject({
      mint: world.tokens.clean,
      chain: 'ethereum',
      network: 'mainnet',
      token_program: 'erc20',
      complete: true,
      holders: null,
    });
    const token = erc20(res);
    expect(token).toMatchObject({
      name: 'Clean Token',
      symbol: 'CLEAN',
      decimals: 18,
      supply: '1000000',
      owner: null,
      buy_tax: 0,
      sell_tax: 0,
      transfer_tax: 0,
    });
    expect(token.trade).toMatchObject({ status: 'measured', method: 'eth_simulateV1', delayed_s: 3600 });
    expect(token.trade!.router!.address).toBe(world.uniswap.router);
    expect(BigInt(token.trade!.sell!.received_wei)).toBeGreaterThan(0n);
    // The registry has another CLEAN: this one imitates it.
    expect(codes(res.findings)).toEqual(['copycat_symbol']);
  });

  it('a live owner can mint (high); once renounced the same function is info and suppressed', async () => {
    const live = await scan('mintable');
    expect(erc20(live)).toMatchObject({ owner: world.owner, owner_kind: 'eoa' });
    const mint = only(live.findings, 'mint_authority_enabled');
    expect(mint).toMatchObject({ severity: 'high', suppressed: false });
    expect(JSON.stringify(mint.evidence.value)).toContain('mint(address,uint256)');

    const renounced = await scan('renounced');
    expect(erc20(renounced)).toMatchObject({
      owner: '0x0000000000000000000000000000000000000000',
      owner_kind: 'renounced',
    });
    expect(only(renounced.findings, 'mint_authority_enabled')).toMatchObject({
      severity: 'info',
      suppressed: true,
    });
    expect(erc20(renounced).capabilities.find((c) => c.capability === 'mint')).toMatchObject({ live: false });
    expect(renounced.risk_level).toBe('low');
  });

  it('pause, blacklist, limits and trading switch are read from the bytecode', async () => {
    const limits = await scan('limits');
    expect(codes(limits.findings)).toEqual(expect.arrayContaining(['trading_switch', 'transfer_limits']));
    const blacklist = await scan('blacklist');
    // Registered with the blacklist expected and this owner: shown, suppressed.
    expect(only(blacklist.findings, 'freeze_authority_enabled')).toMatchObject({ suppressed: true });
    expect(blacklist.known).toMatchObject({ issuer: 'Test Issuer', authorities: 'expected' });
    const pausable = await scan('pausable');
    // Registered, but its owner is not the registered one: authority_changed; its pause stays expected.
    expect(only(pausable.findings, 'authority_changed')).toMatchObject({
      severity: 'high',
      suppressed: false,
    });
    expect(only(pausable.findings, 'pausable')).toMatchObject({ suppressed: true });
    expect(pausable.known).toMatchObject({ authorities: 'changed' });
  });

  it('behind a transparent proxy: the implementation’s functions count, and the proxy is upgradeable', async () => {
    const res = await scan('proxy');
    const token = erc20(res);
    expect(token.implementation).toBe(world.tokens.proxyImplementation);
    expect(codes(res.findings)).toEqual(
      expect.arrayContaining(['mint_authority_enabled', 'upgradeable_proxy']),
    );
  });

  it('a 5% fee on every transfer is measured on the buy, the transfer and the sell', async () => {
    const res = await scan('fee');
    const token = erc20(res);
    const fee = Number(FEE_BPS) / 10_000;
    for (const tax of [token.buy_tax, token.transfer_tax, token.sell_tax]) expect(tax).toBeCloseTo(fee, 3);
    expect(only(res.findings, 'transfer_fee')).toMatchObject({ severity: 'medium' });
    expect(only(res.findings, 'fee_modifiable')).toMatchObject({ severity: 'medium' });
  });

  it('a honeypot (sells revert) and a delayed trap (sells revert an hour later) are cannot_sell', async () => {
    for (const name of ['honeypot', 'timeBomb'] as const) {
      const res = await scan(name);
      const token = erc20(res);
      expect(token.trade!.status, name).toBe('sell_reverted');
      expect(BigInt(token.trade!.buy!.received_raw), name).toBeGreaterThan(0n);
      expect(only(res.findings, 'cannot_sell'), name).toMatchObject({ severity: 'critical' });
      expect(res.risk_level, name).toBe('critical');
      expect(token.sell_tax, name).toBeNull();
    }
  });

  it('a token without a pool on the router is no_liquidity; without a router the trade check is incomplete, never safe', async () => {
    const noPool = await scan('noPool');
    expect(erc20(noPool).trade!.status).toBe('no_pool');
    expect(only(noPool.findings, 'no_liquidity')).toMatchObject({ severity: 'medium' });

    const res = await scan('clean', acme, noRouter);
    expect(res.complete).toBe(false);
    expect(only(res.findings, 'check_incomplete').detail).toMatch(/router/);
    expect(erc20(res).buy_tax).toBeNull();
  });

  it('a node without eth_simulateV1 gets one eth_call of the probe: the honeypot is still caught (high: one block)', async () => {
    const res = await scan('honeypot', acme, bare);
    expect(erc20(res).trade, JSON.stringify(erc20(res).trade)).toMatchObject({
      method: 'eth_call',
      status: 'sell_reverted',
      delayed_s: 0,
    });
    // One transaction, one block: a per-block trading limit could revert it too, so high, not critical.
    expect(only(res.findings, 'cannot_sell')).toMatchObject({ severity: 'high' });
    const fee = erc20(await scan('fee', acme, bare));
    expect(fee.trade!.method).toBe('eth_call');
    expect(fee.sell_tax).toBeCloseTo(Number(FEE_BPS) / 10_000, 3);
    expect(bareProxy.stats.calls.eth_simulateV1).toBeGreaterThan(0);
  });

  it('an owner on the account’s deny list is owner_flagged, for that account only; one imitating a trusted address is lookalike_address', async () => {
    const entry = await post(
      svc,
      '/api/v1/lists/deny/entries',
      { 'x-api-key': globex.key.key },
      {
        chain: 'ethereum',
        target: world.owner,
        reason: 'drainer operator',
      },
    );
    expect(entry.status).toBe(201);
    const flagged = await expectJson<TokenScan>(
      await scanRes({ mint: world.tokens.mintable, chain: 'ethereum' }, globex),
      200,
    );
    expect(only(flagged.findings, 'owner_flagged')).toMatchObject({ severity: 'critical' });
    const other = await scan('mintable', acme);
    expect(other.findings.some((f) => f.code === 'owner_flagged')).toBe(false);

    // An owner that imitates an address the account trusts (address poisoning of the owner).
    const initech = await db.customer('initech');
    const trusted = lookalikeOf(world.owner, 'trusted treasury');
    const allow = await post(
      svc,
      '/api/v1/lists/allow/entries',
      { 'x-api-key': initech.key.key },
      {
        chain: 'ethereum',
        target: trusted,
      },
    );
    expect(allow.status).toBe(201);
    const poisoned = await scan('mintable', initech);
    expect(only(poisoned.findings, 'lookalike_address').evidence.value).toEqual({
      owner: world.owner,
      imitates: trusted,
    });
  });

  it('no code → 404 not_found, a contract that is not an ERC-20 → 422 not_a_mint; 0x… without chain is ethereum', async () => {
    await expectProblem(
      await scanRes({ mint: getAddress('0x000000000000000000000000000000000000beef') }),
      404,
      'not_found',
    );
    await expectProblem(await scanRes({ mint: world.uniswap.factory }), 422, 'not_a_mint');
    const inferred = await expectJson<TokenScan>(
      await scanRes({ mint: world.tokens.mintable.toLowerCase() }),
      200,
    );
    expect(inferred).toMatchObject({ chain: 'ethereum', mint: world.tokens.mintable });
  });

  it('risk-v2 target_type token answers the same findings; a preflight to a token includes bytecode and owner checks', async () => {
    const token = idp.sign({ org_id: acme.account.org_id, sub: 'analyst' });
    const assessment = await expectJson<Assessment>(
      await post(svc, '/api/web3/risk-v2', bearer(token), {
        target: world.tokens.honeypot,
        chain: 'ethereum',
        target_type: 'token',
      }),
      200,
    );
    expect(assessment.target_type).toBe('token');
    expect(codes(assessment.findings)).toContain('cannot_sell');

    const preflight = await expectJson<Preflight>(
      await post(
        svc,
        '/api/v1/shield/preflight',
        { 'x-api-key': acme.key.key },
        {
          target: world.tokens.mintable,
          chain: 'ethereum',
          intent: 'interact',
        },
      ),
      200,
    );
    expect(preflight.reasons.map((f) => f.code)).toContain('mint_authority_enabled');
    expect(preflight.reasons.map((f) => f.code)).not.toContain('cannot_sell');
  });

  describe('wallet approvals (risk-v2 wallet, GET /api/v1/approvals)', () => {
    /** Dev account 1: grants and revokes approvals by real transactions. */
    let wallet: Address;
    /** Dev account 2: an EOA spender. */
    let eoa: Address;
    const approvalsRes = (query: Record<string, string>, customer = acme) =>
      fetch(`${svc.baseUrl}/api/v1/approvals?${new URLSearchParams(query).toString()}`, {
        headers: { 'x-api-key': customer.key.key },
      });

    beforeAll(async () => {
      const conn = connectAnvil(anvil);
      const signer = conn.wallet(anvil.accounts[1]!.privateKey);
      wallet = signer.account.address;
      eoa = getAddress(anvil.accounts[2]!.address);
      const approve = async (token: Address, spender: Address, amount: bigint) => {
        const hash = await signer.writeContract({
          address: token,
          abi: erc20Abi,
          functionName: 'approve',
          args: [spender, amount],
        });
        const receipt = await conn.publicClient.waitForTransactionReceipt({ hash });
        expect(receipt.status).toBe('success');
      };
      await approve(world.tokens.clean, eoa, maxUint256); // unlimited to an EOA: risky
      await approve(world.tokens.mintable, world.uniswap.router, 100n); // limited to a contract
      await approve(world.tokens.pausable, eoa, maxUint256); // granted…
      await approve(world.tokens.pausable, eoa, 0n); // …and revoked
    });

    it('lists what is outstanding, confirmed by reads; an unlimited approval to an EOA is risky_approval', async () => {
      const res = await expectJson<ApprovalsAnswer>(
        await approvalsRes({ target: wallet, chain: 'ethereum' }),
        200,
      );
      expect(res).toMatchObject({
        target: wallet,
        chain: 'ethereum',
        network: 'mainnet',
        complete: true,
        gaps: [],
      });
      expect(res.from_block).toBe(0);
      const byToken = Object.fromEntries(res.approvals.map((a) => [a.asset.address ?? '', a] as const));
      expect(Object.keys(byToken).sort()).toEqual([world.tokens.clean, world.tokens.mintable].sort());
      expect(byToken[world.tokens.clean]).toMatchObject({
        spender: eoa,
        amount: 'unlimited',
        kind: 'erc20',
        confirmed: true,
        spender_kind: 'eoa',
        risky: true,
        source: 'transaction',
      });
      expect(byToken[world.tokens.mintable]).toMatchObject({
        spender: world.uniswap.router,
        amount: '100',
        risky: false,
      });
      expect(byToken[world.tokens.clean]!.granted_at_block).toBeGreaterThan(Number(world.blockNumber));
      expect(only(res.findings, 'risky_approval')).toMatchObject({ severity: 'high', suppressed: false });

      // The same list in the wallet's risk-v2 answer.
      const token = idp.sign({ org_id: acme.account.org_id, sub: 'analyst' });
      const assessment = await expectJson<Assessment>(
        await post(svc, '/api/web3/risk-v2', bearer(token), {
          target: wallet,
          chain: 'ethereum',
          target_type: 'wallet',
        }),
        200,
      );
      expect(assessment.approvals?.approvals.map((a) => a.asset.address).sort()).toEqual(
        [world.tokens.clean, world.tokens.mintable].sort(),
      );
      expect(codes(assessment.findings)).toContain('risky_approval');
    });

    it('a spender on the account’s deny list makes it critical, for that account only; bad input is a 4xx', async () => {
      const entry = await post(
        svc,
        '/api/v1/lists/deny/entries',
        { 'x-api-key': globex.key.key },
        {
          chain: 'ethereum',
          target: world.uniswap.router,
          reason: 'compromised router',
        },
      );
      expect(entry.status).toBe(201);
      const flagged = await expectJson<ApprovalsAnswer>(await approvalsRes({ target: wallet }, globex), 200);
      const critical = flagged.findings.filter(
        (f) => f.code === 'risky_approval' && f.severity === 'critical',
      );
      expect(critical).toHaveLength(1);
      expect(JSON.stringify(critical[0]!.evidence.value)).toContain(world.uniswap.router);
      const other = await expectJson<ApprovalsAnswer>(await approvalsRes({ target: wallet }), 200);
      expect(other.findings.filter((f) => f.severity === 'critical')).toEqual([]);

      await expectProblem(await approvalsRes({ target: 'not-an-address' }), 400, 'invalid_address');
      await expectProblem(
        await approvalsRes({ target: 'So11111111111111111111111111111111111111112', chain: 'solana' }),
        400,
        'unsupported_chain',
      );
      const anonymous = await fetch(`${svc.baseUrl}/api/v1/approvals?target=${wallet}`);
      expect(anonymous.status).toBe(401);
    });
  });
});
