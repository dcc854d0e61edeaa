import {
  encodeFunctionData,
  getAddress,
  keccak256,
  maxUint256,
  numberToHex,
  parseEther,
  toHex,
  type Address,
  type Hex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERMIT2 } from '../../src/risk/known/spenders.js';
import type { Preflight } from '../../src/risk/preflight-schemas.js';
import {
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import {
  collectibleAbi,
  connectAnvil,
  deployCollectible,
  deployPermitToken,
  deployRouter,
  deploySwap,
  permitTokenAbi,
  routerAbi,
  swapAbi,
  type AnvilConnection,
} from '../support/evm/contracts.js';
import { compileContracts } from '../support/evm/solidity.js';
import { erc2612TypedData, permit2TypedData } from '../support/evm/typed-data.js';
import { startFaultProxy, type FaultProxy } from '../support/rpc-fault-proxy.js';
import { eventually, prepareEnv, type RunningService, type TestEnv } from '../support/service.js';

/*
 * Shield preflight with a payload (docs/risk.md#before-the-user-signs), EVM side: the built service against
 * anvil, whose eth_simulateV1 runs real contracts compiled from Solidity (test/support/evm/contracts):
 * an ERC-20 with ERC-2612 permit, an ERC-721, a swap, a router-like spender. Typed data and
 * authorizations are signed by viem local accounts. Each decision of the table, with its codes
 * and the simulation / signature fields.
 */

const key = (label: string): Hex => keccak256(toHex(`riskwatch:e2e:payload:${label}`));
const user = privateKeyToAccount(key('user'));
/** A key nobody funded and nothing ever used: a fresh address. */
const fresh = privateKeyToAccount(key('fresh')).address;
const DAY = 86_400n;

describe('shield preflight payloads on EVM (anvil, eth_simulateV1)', () => {
  let anvil: RunningAnvil;
  let chain: AnvilConnection;
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let svc: RunningService;
  let noSimulate: RunningService;
  let noTrace: RunningService;
  let proxy: FaultProxy;
  let proxyBare: FaultProxy;
  let acme: Customer;
  let token: Address;
  let nft: Address;
  let swap: Address;
  let router: Address;
  /** A funded EOA the user may pay or approve (a used wallet). */
  let friend: Address;
  /** Deny-listed by acme in one test. */
  let drainer: Address;
  const BALANCE = 1_000_000n * 10n ** 18n;

  const post = (service: RunningService, customer: Customer, body: unknown) =>
    fetch(`${service.baseUrl}/api/v1/shield/preflight`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': customer.key.key },
      body: JSON.stringify(body),
    });
  const preflight = async (body: Record<string, unknown>, service = svc): Promise<Preflight> =>
    expectJson<Preflight>(
      await post(service, acme, { chain: 'ethereum', network: 'mainnet', from: user.address, ...body }),
      200,
    );
  const tx = (to: Address, data: Hex, value = 0n) => ({
    from: user.address,
    to,
    data,
    value: numberToHex(value),
  });
  const codes = (p: Preflight) => p.reasons.map((r) => `${r.code}:${r.severity}`).sort();
  const reason = (p: Preflight, code: string) => {
    const found = p.reasons.filter((r) => r.code === code);
    expect(found, `${code} in ${JSON.stringify(codes(p))}`).toHaveLength(1);
    return found[0]!;
  };
  const approve = (spender: Address, amount: bigint) =>
    encodeFunctionData({ abi: permitTokenAbi, functionName: 'approve', args: [spender, amount] });

  beforeAll(async () => {
    anvil = await startAnvil();
    chain = connectAnvil(anvil);
    const deployer = chain.wallet(anvil.accounts[0]!.privateKey);
    const funder = chain.wallet(anvil.accounts[1]!.privateKey);
    friend = getAddress(anvil.accounts[2]!.address);
    drainer = getAddress(anvil.accounts[3]!.address);
    token = await deployPermitToken(deployer, { name: 'Permit Token', symbol: 'PRM', decimals: 18 });
    nft = await deployCollectible(deployer);
    swap = await deploySwap(deployer, { rate: 1000n });
    router = await deployRouter(deployer);
    const send = async (hash: Promise<Hex>) =>
      chain.publicClient.waitForTransactionReceipt({ hash: await hash });
    await send(funder.sendTransaction({ to: user.address, value: parseEther('10') }));
    await send(
      deployer.writeContract({
        address: token,
        abi: permitTokenAbi,
        functionName: 'mint',
        args: [user.address, BALANCE],
      }),
    );
    await send(
      deployer.writeContract({
        address: token,
        abi: permitTokenAbi,
        functionName: 'mint',
        args: [swap, BALANCE * 10n],
      }),
    );
    await send(
      deployer.writeContract({
        address: nft,
        abi: collectibleAbi,
        functionName: 'mint',
        args: [user.address, 7n],
      }),
    );
    // Permit2 lives at the same address on every chain; on this fresh chain it gets contract code (the
    // router's: what matters to the engine is that a contract is there, as on mainnet).
    const { Router } = await compileContracts();
    await chain.publicClient.request({
      method: 'anvil_setCode' as never,
      params: [PERMIT2, Router!.deployedBytecode] as never,
    });

    proxy = await startFaultProxy(anvil.url);
    proxy.faults.unsupported('eth_simulateV1');
    proxyBare = await startFaultProxy(anvil.url);
    proxyBare.faults.unsupported('eth_simulateV1', 'debug_traceCall');
    testEnv = await prepareEnv({ RISKWATCH_RPC_ETHEREUM_MAINNET: anvil.url, RISKWATCH_RPC_RATE_PER_S: '0' });
    db = await openAccounts(testEnv.env);
    acme = await db.customer('acme');
    const via = (p: FaultProxy, prefix: string) => ({
      ...testEnv.env,
      REDIS_KEY_PREFIX: `${testEnv.env.REDIS_KEY_PREFIX}${prefix}:`,
      RISKWATCH_RPC_ETHEREUM_MAINNET: p.url,
    });
    [svc, noSimulate, noTrace] = await Promise.all([
      startServiceRetrying(testEnv.env),
      startServiceRetrying(via(proxy, 'nosim')),
      startServiceRetrying(via(proxyBare, 'notrace')),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([svc?.stop(), noSimulate?.stop(), noTrace?.stop()]);
    await Promise.all([proxy?.close(), proxyBare?.close()]);
    await db?.close();
    await testEnv?.dropDatabase();
    await anvil?.stop();
  });

  it('approve(EOA, max) of an ERC-20: block — approval_to_eoa critical, unlimited_approval, the approval in the simulation', async () => {
    const p = await preflight({ intent: 'approve', transaction: tx(token, approve(friend, maxUint256)) });
    expect(p.decision).toBe('block');
    expect(p.target).toBe(token);
    expect(p.complete).toBe(true);
    expect(reason(p, 'approval_to_eoa')).toMatchObject({
      severity: 'critical',
      subject: { role: 'spender', address: friend },
    });
    expect(reason(p, 'unlimited_approval')).toMatchObject({
      severity: 'high',
      subject: { role: 'spender', address: friend },
    });
    expect(p.signature).toBeNull();
    expect(p.simulation).toMatchObject({
      status: 'success',
      method: 'eth_simulateV1',
      block: expect.any(Number) as unknown,
      asset_changes: [],
      approvals: [
        {
          owner: user.address,
          asset: { type: 'erc20', address: token, symbol: 'PRM', decimals: 18 },
          spender: friend,
          amount: 'unlimited',
          covers_balance: true,
          all: false,
          expires_at: null,
          source: 'transaction',
        },
      ],
      authority_changes: [],
    });
  });

  it('approve(contract, max): warn (unlimited_approval high); an exact approve to it: allow', async () => {
    const max = await preflight({ intent: 'approve', transaction: tx(token, approve(router, maxUint256)) });
    expect(max.decision).toBe('warn');
    expect(reason(max, 'unlimited_approval')).toMatchObject({
      severity: 'high',
      subject: { role: 'spender', address: router },
    });
    expect(codes(max)).not.toContain('approval_to_eoa:critical');

    const exact = await preflight({
      intent: 'approve',
      transaction: tx(token, approve(router, 25n * 10n ** 18n)),
    });
    expect(exact.decision).toBe('allow');
    expect(exact.simulation!.approvals).toEqual([
      expect.objectContaining({
        spender: router,
        amount: (25n * 10n ** 18n).toString(),
        covers_balance: false,
      }),
    ]);
  });

  it('an exact approve of a token the user does not hold yet is still exact: allow, covers_balance false', async () => {
    const body = {
      intent: 'approve',
      from: friend,
      transaction: { from: friend, to: token, data: approve(router, 5n) },
    };
    const p = await preflight(body);
    expect(p.decision).toBe('allow');
    expect(p.simulation!.approvals).toEqual([
      expect.objectContaining({ amount: '5', covers_balance: false }),
    ]);
  });

  it('a contract creation (no to): simulated (debug_traceCall where eth_simulateV1 cannot), no target', async () => {
    const { Router } = await compileContracts();
    const init = `${Router!.bytecode}${user.address.slice(2).toLowerCase().padStart(64, '0')}` as Hex;
    const p = await preflight({ intent: 'interact', transaction: { from: user.address, data: init } });
    expect(p.target).toBeNull();
    expect(p.simulation).toMatchObject({ status: 'success' });
    expect(['eth_simulateV1', 'debug_traceCall']).toContain(p.simulation!.method);
    expect(p.complete).toBe(true);
    expect(p.decision).toBe('allow');
  });

  it('approve(Permit2, max): allow — a well-known spender; the approval is still shown as unlimited', async () => {
    const p = await preflight({ intent: 'approve', transaction: tx(token, approve(PERMIT2, maxUint256)) });
    expect(p.decision).toBe('allow');
    expect(p.simulation!.approvals).toEqual([
      expect.objectContaining({ spender: PERMIT2, amount: 'unlimited' }),
    ]);
  });

  it('setApprovalForAll to an EOA: block; to a contract that is not flagged: warn (approval_for_all)', async () => {
    const toEoa = await preflight({
      intent: 'approve',
      transaction: tx(
        nft,
        encodeFunctionData({ abi: collectibleAbi, functionName: 'setApprovalForAll', args: [friend, true] }),
      ),
    });
    expect(toEoa.decision).toBe('block');
    expect(reason(toEoa, 'approval_to_eoa').severity).toBe('critical');
    expect(toEoa.simulation!.approvals).toEqual([
      expect.objectContaining({
        spender: friend,
        all: true,
        amount: 'unlimited',
        asset: expect.objectContaining({ type: 'erc721', address: nft }) as unknown,
      }),
    ]);

    const toContract = await preflight({
      intent: 'approve',
      transaction: tx(
        nft,
        encodeFunctionData({ abi: collectibleAbi, functionName: 'setApprovalForAll', args: [router, true] }),
      ),
    });
    expect(toContract.decision).toBe('warn');
    expect(reason(toContract, 'approval_for_all')).toMatchObject({
      severity: 'high',
      subject: { role: 'operator', address: router },
    });
  });

  it('a swap that sends ETH and receives tokens: allow, with both asset changes of from', async () => {
    const p = await preflight({
      intent: 'interact',
      transaction: tx(
        swap,
        encodeFunctionData({ abi: swapAbi, functionName: 'buy', args: [token] }),
        parseEther('0.5'),
      ),
    });
    expect(p.decision).toBe('allow');
    expect(p.simulation!.status).toBe('success');
    const mine = p.simulation!.asset_changes.filter((c) => c.owner === user.address);
    expect(mine).toEqual(
      expect.arrayContaining([
        { owner: user.address, asset: { type: 'native' }, amount: (-parseEther('0.5')).toString() },
        {
          owner: user.address,
          asset: expect.objectContaining({ type: 'erc20', address: token }) as unknown,
          amount: (parseEther('0.5') * 1000n).toString(),
        },
      ]),
    );
    expect(mine).toHaveLength(2);
  });

  it('tokens that leave and nothing comes back (intent interact): warn with outflow_without_inflow; the same as a transfer is no warning', async () => {
    const data = encodeFunctionData({
      abi: permitTokenAbi,
      functionName: 'transfer',
      args: [friend, BALANCE],
    });
    const p = await preflight({ intent: 'interact', transaction: tx(token, data) });
    expect(p.decision).toBe('warn');
    expect(reason(p, 'outflow_without_inflow').severity).toBe('high');
    expect(p.simulation!.asset_changes[0]).toMatchObject({
      owner: user.address,
      amount: (-BALANCE).toString(),
    });

    const asTransfer = await preflight({ intent: 'transfer', transaction: tx(token, data) });
    expect(codes(asTransfer)).not.toContain('outflow_without_inflow:high');
    expect(asTransfer.decision).toBe('allow');
  });

  it('a reverting transaction: warn (simulation_reverted) with the revert reason', async () => {
    const data = encodeFunctionData({
      abi: routerAbi,
      functionName: 'pull',
      args: [token, friend, user.address, 1n],
    });
    const p = await preflight({ intent: 'interact', transaction: tx(router, data) });
    expect(p.decision).toBe('warn');
    expect(p.simulation).toMatchObject({ status: 'reverted', method: 'eth_simulateV1' });
    expect(p.simulation!.error).toMatch(/revert|fail/i);
    expect(reason(p, 'simulation_reverted').severity).toBe('medium');
  });

  it('a type-4 authorization delegating from to an unknown contract: block (authority_transfer)', async () => {
    const authorization = await user.signAuthorization({
      chainId: anvil.chainId,
      contractAddress: router,
      nonce: 1,
    });
    const p = await preflight({
      intent: 'sign',
      transaction: {
        ...tx(user.address, '0x'),
        authorizationList: [
          {
            chainId: numberToHex(authorization.chainId),
            address: authorization.address,
            nonce: numberToHex(authorization.nonce),
            yParity: numberToHex(authorization.yParity ?? 0),
            r: authorization.r,
            s: authorization.s,
          },
        ],
      },
    });
    expect(p.decision).toBe('block');
    expect(reason(p, 'authority_transfer')).toMatchObject({
      severity: 'critical',
      subject: { role: 'authority', address: router },
    });
    expect(p.simulation!.authority_changes).toEqual([
      { account: user.address, authority_type: 'code_delegation', from: null, to: router },
    ]);
    // The same authorization with its parity sent as `v` (0/1, as some wallets do; or 27/28): the same signer.
    for (const v of [authorization.yParity ?? 0, (authorization.yParity ?? 0) + 27]) {
      const asV = await preflight({
        intent: 'sign',
        transaction: {
          ...tx(user.address, '0x'),
          authorizationList: [
            {
              chainId: numberToHex(authorization.chainId),
              address: authorization.address,
              nonce: numberToHex(authorization.nonce),
              v: numberToHex(v),
              r: authorization.r,
              s: authorization.s,
            },
          ],
        },
      });
      expect(asV.decision, `v = ${v}`).toBe('block');
      expect(asV.simulation!.authority_changes[0]!.account).toBe(user.address);
    }
  });

  it('paying or approving a deny-listed address: block (counterparty_flagged), even for a small approval', async () => {
    const res = await fetch(`${svc.baseUrl}/api/v1/lists/deny/entries`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': acme.key.key },
      body: JSON.stringify({ target: drainer, label: 'drainer' }),
    });
    expect(res.status).toBe(201);
    const p = await preflight({ intent: 'approve', transaction: tx(token, approve(drainer, 1n)) });
    expect(p.decision).toBe('block');
    expect(reason(p, 'counterparty_flagged')).toMatchObject({
      severity: 'critical',
      subject: { role: 'spender', address: drainer },
    });
    // Paying it is flagged the same way (a recipient).
    const paid = await preflight({
      intent: 'transfer',
      transaction: tx(
        token,
        encodeFunctionData({ abi: permitTokenAbi, functionName: 'transfer', args: [drainer, 5n] }),
      ),
    });
    expect(paid.decision).toBe('block');
    expect(reason(paid, 'counterparty_flagged').subject).toEqual({ role: 'recipient', address: drainer });
  });

  describe('typed data (eth_signTypedData_v4)', () => {
    const permitTyped = (spender: Address, value: bigint, chainId = 1) =>
      erc2612TypedData({
        name: 'Permit Token',
        chainId,
        token,
        owner: user.address,
        spender,
        value,
        deadline: 1_900_000_000,
      });
    const permitSingle = (spender: Address, amount: bigint) =>
      permit2TypedData({
        chainId: 1,
        spender,
        details: [{ token, amount, expiration: 1_800_000_000n + DAY }],
        sigDeadline: 1_800_000_000,
      });

    it('an ERC-2612 Permit of the max to a fresh address: block; the signature and approval fields', async () => {
      const p = await preflight({ intent: 'sign', typed_data: permitTyped(fresh, maxUint256) });
      expect(p.decision).toBe('block');
      expect(p.target).toBe(token);
      expect(reason(p, 'approval_to_eoa')).toMatchObject({
        severity: 'critical',
        subject: { role: 'spender', address: fresh },
      });
      expect(p.signature).toEqual({
        standard: 'eip712',
        kind: 'erc2612_permit',
        chain_id: 1,
        verifying_contract: token,
        deadline: new Date(1_900_000_000 * 1000).toISOString(),
      });
      expect(p.simulation).toMatchObject({
        status: 'not_applicable',
        method: 'signature',
        approvals: [
          expect.objectContaining({
            spender: fresh,
            amount: 'unlimited',
            covers_balance: true,
            source: 'signature',
          }),
        ],
      });
    });

    it('a Permit2 PermitSingle of the max to an EOA (the drain signature): block, expires_at from its expiration', async () => {
      const p = await preflight({
        intent: 'sign',
        typed_data: JSON.stringify(permitSingle(friend, 2n ** 160n - 1n)),
      });
      expect(p.decision).toBe('block');
      expect(p.signature).toMatchObject({
        kind: 'permit2_allowance',
        verifying_contract: PERMIT2,
        deadline: new Date(1_800_000_000_000).toISOString(),
      });
      expect(p.simulation!.approvals).toEqual([
        expect.objectContaining({
          spender: friend,
          amount: 'unlimited',
          expires_at: new Date(Number(1_800_000_000n + DAY) * 1000).toISOString(),
        }),
      ]);
      expect(reason(p, 'approval_to_eoa').severity).toBe('critical');
    });

    it('an exact permit to a contract: warn (permit_signature medium); for another chain id: chain_mismatch', async () => {
      const p = await preflight({ intent: 'sign', typed_data: permitTyped(router, 10n) });
      expect(p.decision).toBe('warn');
      expect(reason(p, 'permit_signature').severity).toBe('medium');
      expect(p.simulation!.approvals[0]).toMatchObject({ amount: '10', covers_balance: false });

      const other = await preflight({ intent: 'sign', typed_data: permitTyped(router, 10n, 10) });
      expect(reason(other, 'chain_mismatch').severity).toBe('medium');
    });

    it('without chain or network, the chain comes from domain.chainId', async () => {
      const body = { from: user.address, intent: 'sign', typed_data: permitTyped(router, 10n) };
      const p = await expectJson<Preflight>(await post(svc, acme, body), 200);
      expect([p.chain, p.network]).toEqual(['ethereum', 'mainnet']);
    });
  });

  describe('messages', () => {
    it('eth_sign: block (blind_signature); personal_sign of a 32-byte hash: block; of readable text: allow', async () => {
      const hash = keccak256(toHex('anything'));
      const ethSign = await preflight({ intent: 'sign', message: { method: 'eth_sign', data: hash } });
      expect(ethSign.decision).toBe('block');
      expect(ethSign.target).toBeNull();
      expect(reason(ethSign, 'blind_signature').severity).toBe('critical');
      expect(ethSign.signature).toEqual({
        standard: 'eth_sign',
        kind: 'unknown',
        chain_id: null,
        verifying_contract: null,
        deadline: null,
      });
      expect(ethSign.simulation).toMatchObject({ status: 'not_applicable', approvals: [] });

      const blind = await preflight({ intent: 'sign', message: { method: 'personal_sign', data: hash } });
      expect(blind.decision).toBe('block');
      expect(reason(blind, 'blind_signature').severity).toBe('critical');

      const text = await preflight({
        intent: 'sign',
        message: { method: 'personal_sign', data: toHex('Sign in to example.org\nNonce: 42') },
      });
      expect(text.decision).toBe('allow');
      expect(text.reasons).toEqual([]);
    });
  });

  it('token balances the provider did not read: complete false, never a silent verdict on covers_balance', async () => {
    proxy.faults.forMethod('eth_call', { status: 500 });
    try {
      const typed = erc2612TypedData({
        name: 'Permit Token',
        chainId: 1,
        token,
        owner: user.address,
        spender: router,
        value: 10n,
        deadline: 1_900_000_000,
      });
      const p = await preflight({ intent: 'sign', typed_data: typed }, noSimulate);
      expect(p.simulation!.approvals[0]).toMatchObject({ covers_balance: null });
      expect(p.complete).toBe(false);
      // The payload's balance read, and the token target's own reads: each an unfinished check.
      expect(p.reasons.some((r) => r.code === 'check_incomplete' && r.evidence.method === 'eth_call')).toBe(
        true,
      );
      expect(p.decision).not.toBe('allow');
    } finally {
      proxy.faults.clear();
      proxy.faults.unsupported('eth_simulateV1');
      // The failed reads opened the provider's circuit: the service recovers by itself (no restart) once
      // its probe after the cool-down succeeds.
      await eventually(
        async () =>
          (await preflight({ intent: 'transfer', target: friend, chain: 'ethereum' }, noSimulate)).complete,
        10_000,
      );
    }
  });

  describe('a node without eth_simulateV1', () => {
    it('falls back to debug_traceCall: the same approval and asset changes', async () => {
      const p = await preflight(
        { intent: 'approve', transaction: tx(token, approve(friend, maxUint256)) },
        noSimulate,
      );
      expect(p.decision).toBe('block');
      expect(p.simulation).toMatchObject({ status: 'success', method: 'debug_traceCall' });
      expect(p.simulation!.approvals).toEqual([
        expect.objectContaining({ spender: friend, amount: 'unlimited', covers_balance: true }),
      ]);
      const swapped = await preflight(
        {
          intent: 'interact',
          transaction: tx(
            swap,
            encodeFunctionData({ abi: swapAbi, functionName: 'buy', args: [token] }),
            parseEther('0.25'),
          ),
        },
        noSimulate,
      );
      expect(swapped.simulation!.asset_changes.filter((c) => c.owner === user.address)).toHaveLength(2);
      expect(swapped.decision).toBe('allow');
    });

    it('and without debug_traceCall: calldata decoded alone, unavailable, complete false, the fail mode decides (never allow)', async () => {
      const p = await preflight({ intent: 'approve', transaction: tx(token, approve(router, 5n)) }, noTrace);
      expect(p.simulation).toMatchObject({ status: 'unavailable', method: 'decode' });
      expect(p.simulation!.approvals).toEqual([
        expect.objectContaining({ spender: router, amount: '5', covers_balance: null }),
      ]);
      expect(p.complete).toBe(false);
      expect(p.decision).toBe('warn');
      expect(reason(p, 'check_incomplete').evidence.method).toBe('eth_simulateV1');
    });
  });

  it('a provider that hangs on the simulation: answered within the preflight deadline, unavailable, at least warn', async () => {
    proxyBare.faults.forMethod('eth_simulateV1', 'hang');
    try {
      const started = Date.now();
      const p = await preflight({ intent: 'approve', transaction: tx(token, approve(router, 7n)) }, noTrace);
      const took = Date.now() - started;
      expect(took).toBeLessThan(2500); // the 1,500 ms deadline, with room for a busy machine (the RPC deadline is 10 s)
      expect(p.simulation).toMatchObject({ status: 'unavailable', method: 'decode' });
      expect(p.complete).toBe(false);
      expect(p.decision).toBe('warn');
    } finally {
      proxyBare.faults.clear();
      proxyBare.faults.unsupported('eth_simulateV1', 'debug_traceCall');
    }
  });

  describe('bad input: 400 with a code, never a 5xx', () => {
    const bad = async (body: Record<string, unknown>, path: string) => {
      const problem = await expectProblem(
        await post(svc, acme, {
          chain: 'ethereum',
          network: 'mainnet',
          intent: 'sign',
          from: user.address,
          ...body,
        }),
        400,
        'invalid_request',
      );
      expect(JSON.stringify(problem.errors), JSON.stringify(problem)).toContain(path);
    };
    it('two payloads, no from, another from, target not the contract, bad hex', async () => {
      await bad({ transaction: tx(token, '0x'), message: { method: 'eth_sign', data: '0x00' } }, 'message');
      const noFrom = await expectProblem(
        await post(svc, acme, { chain: 'ethereum', intent: 'sign', transaction: tx(token, '0x') }),
        400,
        'invalid_request',
      );
      expect(JSON.stringify(noFrom.errors)).toContain('from');
      await bad({ transaction: { ...tx(token, '0x'), from: friend } }, 'transaction.from');
      await bad({ target: router, transaction: tx(token, '0x') }, 'target');
      await bad({ transaction: { to: token, data: '0xzz' } }, 'transaction');
      await bad({ transaction: { to: token, data: '0xabc' } }, 'transaction');
      await bad({ transaction: 'AAAA' }, 'transaction');
    });
    it('typed data: owner is not from, missing types, a cycle, bad JSON, a value that does not fit its type', async () => {
      const t = {
        types: {
          Permit: [
            { name: 'owner', type: 'address' },
            { name: 'spender', type: 'address' },
            { name: 'value', type: 'uint256' },
            { name: 'deadline', type: 'uint256' },
          ],
        },
        primaryType: 'Permit',
        domain: { name: 'X', chainId: 1, verifyingContract: token },
        message: { owner: friend, spender: router, value: '1', deadline: '1' },
      };
      await bad({ typed_data: t }, 'typed_data.message.owner');
      await bad(
        { typed_data: { ...t, types: { Permit: [{ name: 'inner', type: 'Missing' }] } } },
        'typed_data.types.Permit',
      );
      await bad(
        {
          typed_data: {
            ...t,
            types: { Permit: [{ name: 'a', type: 'B' }], B: [{ name: 'p', type: 'Permit[]' }] },
          },
        },
        'typed_data.types',
      );
      await bad({ typed_data: '{"types": ' }, 'typed_data');
      await bad(
        { typed_data: { ...t, message: { ...t.message, owner: user.address, value: '-1' } } },
        'typed_data',
      );
      await bad({ message: { method: 'eth_sign', data: 'not hex' } }, 'message.data');
      // Type names that are Object.prototype's own are just names: never a 500.
      await bad({ typed_data: { ...t, primaryType: 'hasOwnProperty' } }, 'typed_data.primaryType');
      await bad(
        { typed_data: { ...t, types: { Permit: [{ name: 'a', type: 'constructor' }] } } },
        'typed_data.types.Permit',
      );
    });
    it('a "Permit" whose amount is a string is not an ERC-2612 permit (no token accepts it as one)', async () => {
      const p = await preflight({
        intent: 'sign',
        typed_data: {
          types: {
            Permit: [
              { name: 'owner', type: 'address' },
              { name: 'spender', type: 'address' },
              { name: 'value', type: 'string' },
              { name: 'deadline', type: 'string' },
            ],
          },
          primaryType: 'Permit',
          domain: { name: 'X', chainId: 1, verifyingContract: token },
          message: { owner: user.address, spender: friend, value: 'max', deadline: 'never' },
        },
      });
      expect(p.signature!.kind).toBe('unknown');
      expect(p.decision).toBe('allow');
    });
    it('deeply nested typed data up to the body limit: 400, and the service still answers', async () => {
      const types: Record<string, { name: string; type: string }[]> = {};
      for (let i = 0; i < 3000; i++) types[`T${i}`] = [{ name: 'x', type: `T${i + 1}` }];
      types.T3000 = [{ name: 'v', type: 'uint256' }];
      let message: unknown = { v: '1' };
      for (let i = 2999; i >= 0; i--) message = { x: message };
      await bad({ typed_data: { types, primaryType: 'T0', domain: {}, message } }, 'typed_data');
      const deepJson = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
      const res = await fetch(`${svc.baseUrl}/api/v1/shield/preflight`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': acme.key.key },
        body: `{"intent":"sign","from":"${user.address}","typed_data":{"types":{},"primaryType":"A","domain":{},"message":{"a":${deepJson}}}}`,
      });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      const ok = await preflight({
        intent: 'sign',
        message: { method: 'personal_sign', data: toHex('still here') },
      });
      expect(ok.decision).toBe('allow');
    });
    it('a body over 256 KiB: 413', async () => {
      const res = await post(svc, acme, {
        intent: 'sign',
        from: user.address,
        message: { method: 'personal_sign', data: `0x${'ab'.repeat(140_000)}` },
      });
      expect(res.status).toBe(413);
    });
  });

  it('a preflight without payload answers as before (target required)', async () => {
    const p = await preflight({ target: getAddress(friend), intent: 'transfer' });
    expect(p).toMatchObject({ decision: 'allow', target: friend });
    expect(p.simulation).toBeUndefined();
    await expectProblem(
      await post(svc, acme, { chain: 'ethereum', intent: 'transfer' }),
      400,
      'invalid_request',
    );
  });
});
