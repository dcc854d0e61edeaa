import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  getMintDecoder as getSplMintDecoder,
  getMintEncoder as getSplMintEncoder,
} from '@solana-program/token';
import { address, getProgramDerivedAddress, lamports, none } from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainProviders } from '../../src/chains/providers.js';
import type { NetworkDef } from '../../src/chains/registry.js';
import type { SolanaRpc } from '../../src/chains/solana.js';
import { loadConfig } from '../../src/config.js';
import type { Finding } from '../../src/risk/findings.js';
import {
  normalizeTokenText,
  RAYDIUM_AMM_V4_AUTHORITY as KNOWN_RAYDIUM_AMM_V4_AUTHORITY,
  SOLANA_KNOWN,
  SOLANA_KNOWN_VERSION,
  SolanaKnownRegistry,
} from '../../src/risk/known/solana.js';
import { score } from '../../src/risk/scoring.js';
import {
  analyzeSolanaToken,
  formatUnits,
  metaplexMetadataAddress,
  type SolanaTokenAnalysis,
  type SolanaTokenResult,
} from '../../src/risk/solana/token/index.js';
import type { SolanaFacade } from '../support/solana/facade.js';
import {
  buildSolanaWorld,
  RAYDIUM_AMM_V4_AUTHORITY,
  USDC_EXPECTED_AUTHORITIES,
  USDC_MINT,
  type MintFixture,
  type SolanaFixtures,
  type SolanaWorld,
} from '../support/solana/fixtures.js';
import { createMint, mintToOwners } from '../support/solana/token.js';

/*
 * The Solana token analyzer against the real LiteSVM world, read over HTTP through the JSON-RPC facade by
 * the SolanaRpc the service builds (ChainProviders.fromConfig): every mint fixture's expected findings,
 * the known-token registry, the round-trip budget and the holder check failing on its own.
 */

const MINTS = [
  'cleanToken',
  'liveAuthorities',
  'zeroSupply',
  'concentrated',
  'moderateConcentration',
  'spreadWithPool',
  'token2022Plain',
  'permanentDelegate',
  'transferHook',
  'transferFeeLow',
  'transferFeeHigh',
  'transferFeeScheduled',
  'defaultFrozen',
  'nonTransferable',
  'pausable',
  'mintCloseAuthority',
  'confidentialTransfers',
  'token2022MetadataMutable',
  'token2022MetadataImmutable',
  'usdc',
  'copycatUsdc',
  'copycatUsdcToken2022',
] as const satisfies readonly (keyof SolanaFixtures['mints'])[];

const ORCA_WHIRLPOOL_PROGRAM = address('whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc');

let world: SolanaWorld;
let facade: SolanaFacade;
let chain: { rpc: SolanaRpc; network: NetworkDef };

/** A SolanaRpc exactly as the service builds one, pointed at `url` (own client: own circuit breaker). */
function solanaAt(url: string, tuning: Record<string, string> = {}): { rpc: SolanaRpc; network: NetworkDef } {
  const config = loadConfig({
    RISKWATCH_RPC_SOLANA_MAINNET: url,
    RISKWATCH_RPC_RATE_PER_S: '0',
    RISKWATCH_RPC_RETRIES: '1',
    RISKWATCH_RPC_BACKOFF_BASE_MS: '5',
    RISKWATCH_RPC_BACKOFF_MAX_MS: '10',
    ...tuning,
  });
  const providers = ChainProviders.fromConfig(config.chains);
  const network = providers.resolve('solana', 'mainnet');
  return { rpc: providers.solana(network), network };
}

async function analyze(
  mint: string,
  on: { rpc: SolanaRpc; network: NetworkDef } = chain,
): Promise<SolanaTokenResult> {
  return analyzeSolanaToken(on.rpc, mint, { network: on.network, known: SOLANA_KNOWN });
}

async function analyzeMint(
  mint: string,
  on: { rpc: SolanaRpc; network: NetworkDef } = chain,
): Promise<SolanaTokenAnalysis> {
  const result = await analyze(mint, on);
  if (result.status !== 'mint') throw new Error(`${mint}: ${result.status}`);
  return result;
}

const codes = (findings: Finding[], suppressed: boolean) =>
  findings
    .filter((f) => f.suppressed === suppressed)
    .map((f) => f.code)
    .sort();
const byCode = (a: SolanaTokenAnalysis, code: Finding['code']) =>
  a.findings.find((f) => f.code === code) ?? expect.fail(`no ${code} finding`);
const snake = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

beforeAll(async () => {
  world = await buildSolanaWorld();
  facade = await world.startFacade();
  chain = solanaAt(facade.url);
}, 60_000);

afterAll(async () => {
  await facade?.close();
});

describe('analyzeSolanaToken: every mint fixture', () => {
  it.each(MINTS)('%s: the expected findings, suppressed ones apart, with evidence', async (name) => {
    const fixture: MintFixture = world.fixtures.mints[name];
    const a = await analyzeMint(fixture.address);

    expect(codes(a.findings, false), fixture.expect.note).toEqual([...fixture.expect.findings].sort());
    expect(codes(a.findings, true)).toEqual([...(fixture.expect.suppressed ?? [])].sort());
    expect(a.complete).toBe(true);
    for (const f of a.findings) {
      expect(f.evidence.method).toMatch(/^get[A-Za-z]+$/);
      expect(f.evidence.slot).toBeGreaterThan(0);
      expect(f.evidence.value).toBeDefined();
      expect(f.detail.length).toBeGreaterThan(10);
      if (f.suppressed) expect(f.suppressed_reason).toContain(SOLANA_KNOWN_VERSION);
    }

    // What the bytes say equals what the fixture was built with.
    expect(a.kind).toBe('token');
    expect(a.tokenProgram).toBe(fixture.program === 'token' ? 'spl-token' : 'token-2022');
    expect(a.token).toMatchObject({
      decimals: fixture.decimals,
      supply_raw: fixture.supply.toString(),
      supply: formatUnits(fixture.supply, fixture.decimals),
      mint_authority: fixture.mintAuthority,
      freeze_authority: fixture.freezeAuthority,
    });
    expect(a.token.extensions.map((e) => e.type).sort()).toEqual(fixture.extensions.map(snake).sort());
    if (fixture.metadata) {
      expect(a.token.metadata).toEqual({
        name: fixture.metadata.name,
        symbol: fixture.metadata.symbol,
        uri: fixture.metadata.uri,
        update_authority: fixture.metadata.updateAuthority,
        mutable: fixture.metadata.mutable,
        source: fixture.metadata.standard,
      });
    } else {
      expect(a.token.metadata).toBeNull();
    }
    expect(a.facts).toMatchObject({
      exists: true,
      kind: 'token',
      owner_program: fixture.programAddress,
      supply_raw: fixture.supply.toString(),
    });
    expect(a.dataAsOf.slot).toBeGreaterThan(0);
    expect(a.listInputs).toEqual({});

    // Holders: the 20 largest accounts, with their owners resolved.
    const holders = a.holders ?? expect.fail('holders missing');
    expect(holders.largest.length).toBe(Math.min(20, fixture.holders.filter((h) => h.amount > 0n).length));
    for (const h of holders.largest) {
      const held = fixture.holders.find((x) => x.tokenAccount === h.token_account);
      expect(h.owner).toBe(held?.owner);
      expect(h.amount_raw).toBe(held?.amount.toString());
    }
  });

  it('severities follow docs/risk.md#solana-token (fees by the higher of both fees, concentration by top-10 and one owner)', async () => {
    const m = world.fixtures.mints;
    const severity = async (f: MintFixture, code: Finding['code']) =>
      byCode(await analyzeMint(f.address), code).severity;
    expect(await severity(m.transferFeeLow, 'transfer_fee')).toBe('medium');
    expect(await severity(m.transferFeeHigh, 'transfer_fee')).toBe('high');
    expect(await severity(m.transferFeeScheduled, 'transfer_fee')).toBe('high');
    expect(await severity(m.permanentDelegate, 'permanent_delegate')).toBe('critical');
    expect(await severity(m.confidentialTransfers, 'confidential_transfers')).toBe('low');
    expect(await severity(m.mintCloseAuthority, 'mint_close_authority')).toBe('medium');
    expect(await severity(m.moderateConcentration, 'holder_concentration')).toBe('medium');
    expect(await severity(m.concentrated, 'holder_concentration')).toBe('high');
    expect(await severity(m.copycatUsdc, 'copycat_symbol')).toBe('high');

    const scheduled = await analyzeMint(m.transferFeeScheduled.address);
    expect(scheduled.token.extensions).toContainEqual(
      expect.objectContaining({
        type: 'transfer_fee_config',
        fee_bps: 500,
        older_fee: expect.objectContaining({ fee_bps: 50 }) as unknown,
        newer_fee: expect.objectContaining({ fee_bps: 500 }) as unknown,
      }),
    );
    expect(byCode(scheduled, 'transfer_fee').detail).toContain('from then on');
  });

  it('holder concentration groups accounts by owner; the Raydium pool vault is labelled and left out', async () => {
    const m = world.fixtures.mints;
    const concentrated = await analyzeMint(m.concentrated.address);
    expect(concentrated.holders?.top_owner).toEqual({ owner: world.actors.whale, share: 0.55, accounts: 2 });
    expect(concentrated.holders?.top10_share).toBe(1);
    const finding = byCode(concentrated, 'holder_concentration');
    expect(finding.detail).toContain(world.actors.whale);
    expect(finding.evidence).toMatchObject({ method: 'getTokenLargestAccounts' });

    const moderate = await analyzeMint(m.moderateConcentration.address);
    expect(moderate.holders?.top10_share).toBeCloseTo(0.6, 6);
    expect(moderate.holders?.top_owner?.share).toBeCloseTo(0.06, 6);

    const pool = await analyzeMint(m.spreadWithPool.address);
    const vault = pool.holders?.largest[0];
    expect(vault).toMatchObject({
      owner: RAYDIUM_AMM_V4_AUTHORITY,
      label: 'Raydium AMM v4 pool authority',
      label_kind: 'pool',
      excluded: true,
      share: 0.45,
    });
    expect(pool.holders?.largest.slice(1).every((h) => h.label === null && !h.excluded)).toBe(true);
    expect(pool.holders?.excluded_share).toBe(0.45);
    expect(pool.holders?.top10_share).toBeCloseTo(0.22, 6);
    // Round trip 3 read the holders' own accounts: plain wallets are System accounts.
    expect(pool.holders?.largest[1]?.owner_program).toBe('11111111111111111111111111111111');
  });

  it('copycat_symbol names the imitated token; NUL padding and case do not hide it', async () => {
    const m = world.fixtures.mints;
    for (const copy of [m.copycatUsdc, m.copycatUsdcToken2022]) {
      const a = await analyzeMint(copy.address);
      const f = byCode(a, 'copycat_symbol');
      expect(f.detail).toContain(USDC_MINT);
      expect(f.evidence.value).toMatchObject({ imitates: [{ mint: USDC_MINT, symbol: 'USDC' }] });
      expect(a.token.metadata?.symbol).toBe('USDC'); // the Metaplex copy is NUL-padded on chain
    }
    expect(normalizeTokenText(' ＵＳＤＣ\0\0')).toBe('usdc');
    expect(SOLANA_KNOWN.imitatedBy(chain.network, 'usd coin', 'another-mint').map((k) => k.mint)).toEqual([
      USDC_MINT,
    ]);
    expect(SOLANA_KNOWN.imitatedBy(chain.network, 'USDC', USDC_MINT)).toEqual([]);
  });
});

describe('known-token context', () => {
  it('USDC with its expected authorities: findings present but suppressed with the reason, score low', async () => {
    const a = await analyzeMint(USDC_MINT);
    expect(a.known).toEqual({
      symbol: 'USDC',
      name: 'USD Coin',
      issuer: 'Circle',
      category: 'issuer_stablecoin',
      authorities: 'expected',
      registry_version: SOLANA_KNOWN_VERSION,
    });
    const mintAuthority = byCode(a, 'mint_authority_enabled');
    expect(mintAuthority.suppressed).toBe(true);
    expect(mintAuthority.suppressed_reason).toContain(USDC_EXPECTED_AUTHORITIES.mintAuthority);
    expect(byCode(a, 'freeze_authority_enabled').suppressed_reason).toContain(
      USDC_EXPECTED_AUTHORITIES.freezeAuthority,
    );
    expect(score(a.findings)).toEqual({ risk_score: 0, risk_level: 'low' });
    expect(a.holders?.largest[0]).toMatchObject({ label_kind: 'pool', excluded: true });
  });

  it('the registry is versioned data with sources; its pool authorities re-derive from their programs', async () => {
    expect(SOLANA_KNOWN_VERSION).toMatch(/^\d{4}-\d{2}-\d{2}\.\d+$/);
    expect(KNOWN_RAYDIUM_AMM_V4_AUTHORITY).toBe(RAYDIUM_AMM_V4_AUTHORITY);
    for (const entry of [...SOLANA_KNOWN.mints, ...SOLANA_KNOWN.owners, ...SOLANA_KNOWN.ownerPrograms])
      expect(entry.sources.length).toBeGreaterThan(0);
    expect(SOLANA_KNOWN.mint(chain.network, USDC_MINT)?.authorities).toEqual({
      mint: USDC_EXPECTED_AUTHORITIES.mintAuthority,
      freeze: USDC_EXPECTED_AUTHORITIES.freezeAuthority,
    });
    const pyusd = SOLANA_KNOWN.mint(chain.network, '2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo');
    expect(pyusd).toMatchObject({ program: 'token-2022', decimals: 6, authorities: 'unverified' });

    const pda = async (program: string, seed: string) =>
      (await getProgramDerivedAddress({ programAddress: address(program), seeds: [seed] }))[0];
    expect(await pda('675kPX9MHTjS2zt1qfr1NYHuzeLXfQM9H24wFSUt1Mp8', 'amm authority')).toBe(
      RAYDIUM_AMM_V4_AUTHORITY,
    );
    expect(SOLANA_KNOWN.owner(chain.network, RAYDIUM_AMM_V4_AUTHORITY)?.kind).toBe('pool');
    const cpmm = await pda('CPMMoo8L3F4NbTegBCKVNunggL7H1ZpdTHKxQB5qKP1C', 'vault_and_lp_mint_auth_seed');
    expect(SOLANA_KNOWN.owner(chain.network, cpmm)?.label).toBe('Raydium CPMM vault authority');

    // Mainnet entries do not apply on devnet; the incinerator does everywhere.
    const devnet = { ...chain.network, network: 'devnet', caip2: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1' };
    expect(SOLANA_KNOWN.mint(devnet, USDC_MINT)).toBeUndefined();
    expect(SOLANA_KNOWN.owner(devnet, '1nc1nerator11111111111111111111111111111111')?.kind).toBe('burn');

    expect(
      () =>
        new SolanaKnownRegistry({
          version: 'x',
          mints: [],
          owners: [
            { address: 'not-an-address', networks: ['solana:x'], label: 'l', kind: 'pool', sources: [] },
          ],
          owner_programs: [],
        }),
    ).toThrow();
  });

  it('a holder that is a program-owned pool account (Orca Whirlpool) is labelled through round trip 3', async () => {
    const c = world.chain;
    const mintAuthority = await c.signer('mint-authority:whirlpool-held');
    const mint = await createMint(c, {
      name: 'whirlpool-held',
      program: 'token',
      decimals: 6,
      mintAuthority,
      freezeAuthority: null,
    });
    const poolState = (await c.signer('whirlpool-pool-state')).address;
    const holders = world.actors.holders.slice(0, 10);
    await mintToOwners(c, {
      kind: 'token',
      mint,
      mintAuthority,
      holdings: [
        { owner: poolState, amount: 600_000n },
        ...holders.map((owner) => ({ owner, amount: 40_000n })),
      ],
    });
    // The pool state: an account owned by the Whirlpool program (its vaults' token-account owner).
    c.setAccount({
      address: poolState,
      data: new Uint8Array(653),
      executable: false,
      lamports: lamports(10_000_000n),
      programAddress: ORCA_WHIRLPOOL_PROGRAM,
    });

    const a = await analyzeMint(mint);
    expect(a.holders?.largest[0]).toMatchObject({
      owner: poolState,
      label: 'Orca Whirlpool pool',
      label_kind: 'pool',
      excluded: true,
      owner_program: ORCA_WHIRLPOOL_PROGRAM,
    });
    expect(a.holders?.top10_share).toBe(0.4);
    expect(codes(a.findings, false)).toEqual(['mint_authority_enabled']);
  });
});

describe('accounts that are not a mint', () => {
  it('not_found for an address without an account; not_a_mint with the kind for the others', async () => {
    const { wallets, program, tokenAccount, missing } = world.fixtures;
    expect(await analyze(missing.address)).toEqual({
      status: 'not_found',
      kind: 'missing',
      dataAsOf: { slot: expect.any(Number) as unknown },
    });
    expect(await analyze(wallets.plainWallet.address)).toMatchObject({
      status: 'not_a_mint',
      kind: 'wallet',
      ownerProgram: '11111111111111111111111111111111',
    });
    expect(await analyze(program.address)).toMatchObject({ status: 'not_a_mint', kind: 'program' });
    expect(await analyze(program.programData)).toMatchObject({ status: 'not_a_mint', kind: 'account' });
    expect(await analyze(tokenAccount.address)).toMatchObject({
      status: 'not_a_mint',
      kind: 'token_account',
      ownerProgram: 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
    });
    const t22Account = world.fixtures.mints.permanentDelegate.holders[0]?.tokenAccount ?? expect.fail();
    expect(await analyze(t22Account)).toMatchObject({ status: 'not_a_mint', kind: 'token_account' });
    const metadataPda = world.fixtures.mints.cleanToken.metadata?.address ?? expect.fail();
    expect(await analyze(metadataPda)).toMatchObject({ status: 'not_a_mint', kind: 'account' });
  });
});

describe('provider round trips and failures', () => {
  it('a cold scan takes at most 3 sequential round trips; the mint and its largest accounts share the first', async () => {
    const fresh = solanaAt(facade.url);
    await facade.idle();
    facade.stats.reset();
    facade.setLatency(50);
    try {
      const a = await analyzeMint(world.fixtures.mints.liveAuthorities.address, fresh);
      expect(a.complete).toBe(true);
    } finally {
      facade.setLatency(0);
    }
    expect(facade.stats.sequentialRoundTrips()).toBeLessThanOrEqual(3);
    expect(facade.stats.roundTrips).toBe(3);
    const [first] = facade.stats.log;
    expect(first?.batch).toBe(true);
    expect([...(first?.methods ?? [])].sort()).toEqual(['getMultipleAccounts', 'getTokenLargestAccounts']);
    expect(facade.stats.calls).toEqual({ getMultipleAccounts: 3, getTokenLargestAccounts: 1 });
  });

  it('HTTP 500 on every request carrying getTokenLargestAccounts: holders incomplete, the rest intact', async () => {
    const fixture = world.fixtures.mints.liveAuthorities;
    facade.faults.always({ kind: 'http500' }, { method: 'getTokenLargestAccounts' });
    let a: SolanaTokenAnalysis;
    try {
      a = await analyzeMint(fixture.address, solanaAt(facade.url));
    } finally {
      facade.faults.clear();
    }
    expect(a.complete).toBe(false);
    expect(a.holders).toBeNull();
    expect(a.facts.top10_share).toBeNull();
    const incomplete = byCode(a, 'check_incomplete');
    expect(incomplete).toMatchObject({ severity: 'info', suppressed: false });
    expect(incomplete.detail).toContain('holder_concentration');
    expect(incomplete.evidence).toMatchObject({
      method: 'getTokenLargestAccounts',
      value: { check: 'holder_concentration' },
    });
    expect(codes(a.findings, false)).toEqual([...fixture.expect.findings, 'check_incomplete'].sort());
    expect(score(a.findings)).toEqual(score((await analyzeMint(fixture.address)).findings));
  });

  it('getTokenLargestAccounts timing out: the mint is read again alone, holders incomplete', async () => {
    const fixture = world.fixtures.mints.concentrated;
    facade.faults.always({ kind: 'hang' }, { method: 'getTokenLargestAccounts' });
    let a: SolanaTokenAnalysis;
    try {
      a = await analyzeMint(
        fixture.address,
        solanaAt(facade.url, { RISKWATCH_RPC_TIMEOUT_MS: '150', RISKWATCH_RPC_DEADLINE_MS: '400' }),
      );
    } finally {
      facade.faults.clear();
    }
    expect(a.complete).toBe(false);
    expect(codes(a.findings, false)).toEqual(['check_incomplete']);
    expect(byCode(a, 'check_incomplete').detail).toMatch(/holder_concentration.*(deadline|no answer)/);
  });

  it('the node refusing getTokenLargestAccounts (an RPC error in a good batch): no extra read, holders incomplete', async () => {
    const proxy = await refusingProxy(facade.url);
    try {
      const fixture = world.fixtures.mints.transferHook;
      const a = await analyzeMint(fixture.address, solanaAt(proxy.url));
      expect(a.complete).toBe(false);
      expect(codes(a.findings, false)).toEqual(['check_incomplete', 'transfer_hook']);
      expect(byCode(a, 'check_incomplete').detail).toContain('-32010');
      expect(proxy.requests).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it('an unknown provider failure on the mint read is provider_unavailable', async () => {
    facade.faults.always({ kind: 'http500' });
    try {
      await expect(
        analyze(world.fixtures.mints.cleanToken.address, solanaAt(facade.url)),
      ).rejects.toMatchObject({
        code: 'provider_unavailable',
      });
    } finally {
      facade.faults.clear();
    }
  });
});

describe('metadata that cannot be decoded', () => {
  it('is a check that did not finish, not a clean bill', async () => {
    const fixture = world.fixtures.mints.zeroSupply;
    const pda = await metaplexMetadataAddress(fixture.address);
    world.chain.setAccount({
      address: pda,
      data: new Uint8Array([4, 1, 2, 3]),
      executable: false,
      lamports: lamports(5_000_000n),
      programAddress: address('metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s'),
    });
    const a = await analyzeMint(fixture.address);
    expect(a.complete).toBe(false);
    expect(byCode(a, 'check_incomplete').evidence.value).toMatchObject({ check: 'metadata' });
    expect(codes(a.findings, false)).toEqual([...fixture.expect.findings, 'check_incomplete'].sort());
    expect(a.facts.metadata_source).toBeNull();
  });
});

describe('USDC with authorities other than the expected ones', () => {
  let changed: SolanaWorld;
  let changedFacade: SolanaFacade;
  const otherAuthority = address('9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin');

  beforeAll(async () => {
    changed = await buildSolanaWorld({
      usdcAuthorities: {
        mintAuthority: otherAuthority,
        freezeAuthority: USDC_EXPECTED_AUTHORITIES.freezeAuthority,
      },
    });
    changedFacade = await changed.startFacade();
  }, 60_000);

  afterAll(async () => {
    await changedFacade?.close();
  });

  it('a new mint authority: authority_changed (high), its finding not suppressed, the matching one still is', async () => {
    const a = await analyzeMint(USDC_MINT, solanaAt(changedFacade.url));
    expect(a.known?.authorities).toBe('changed');
    const changedFinding = byCode(a, 'authority_changed');
    expect(changedFinding).toMatchObject({ severity: 'high', suppressed: false });
    expect(changedFinding.detail).toContain(otherAuthority);
    expect(changedFinding.evidence.value).toMatchObject({
      changes: [
        { authority: 'mint', expected: USDC_EXPECTED_AUTHORITIES.mintAuthority, actual: otherAuthority },
      ],
    });
    expect(byCode(a, 'mint_authority_enabled').suppressed).toBe(false);
    expect(byCode(a, 'freeze_authority_enabled').suppressed).toBe(true);
    expect(byCode(a, 'metadata_mutable').suppressed).toBe(false);
    expect(codes(a.findings, false)).toEqual([
      'authority_changed',
      'metadata_mutable',
      'mint_authority_enabled',
    ]);
    expect(score(a.findings).risk_level).toBe('high');
  });

  it('a revoked mint authority is authority_changed too, at low severity', async () => {
    // Rewrite the mint with the SPL Token codec: no key is held for USDC's authorities here.
    const account = changed.svm.getAccount(USDC_MINT);
    if (!account.exists) throw new Error('USDC missing');
    const mint = getSplMintDecoder().decode(account.data);
    changed.chain.setAccount({
      ...account,
      data: new Uint8Array(getSplMintEncoder().encode({ ...mint, mintAuthority: none() })),
    });
    const a = await analyzeMint(USDC_MINT, solanaAt(changedFacade.url));
    expect(byCode(a, 'authority_changed')).toMatchObject({ severity: 'low', suppressed: false });
    expect(codes(a.findings, false)).toEqual(['authority_changed', 'metadata_mutable']);
  });
});

/**
 * A JSON-RPC forwarder to `upstream` that answers every getTokenLargestAccounts call with the error some
 * providers give for mints excluded from their secondary indexes; the other calls of the same batch get the
 * upstream's real answers, byte for byte (forwarded one by one, re-assembled into one batch answer).
 */
async function refusingProxy(
  upstream: string,
): Promise<{ url: string; readonly requests: number; close(): Promise<void> }> {
  interface Call {
    id: number;
    method: string;
  }
  const refused = {
    code: -32010,
    message: 'Token mint is excluded from account secondary indexes; this RPC method unavailable for key',
  };
  let requests = 0;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      requests += 1;
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Call | Call[];
      const calls = Array.isArray(parsed) ? parsed : [parsed];
      const answers = await Promise.all(
        calls.map(async (call) =>
          call.method === 'getTokenLargestAccounts'
            ? JSON.stringify({ jsonrpc: '2.0', id: call.id, error: refused })
            : (
                await fetch(upstream, {
                  method: 'POST',
                  headers: { 'content-type': 'application/json' },
                  body: JSON.stringify(call),
                })
              ).text(),
        ),
      );
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Array.isArray(parsed) ? `[${answers.join(',')}]` : answers[0]);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
