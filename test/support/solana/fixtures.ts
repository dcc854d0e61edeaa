import { AccountState, AuthorityType, type ExtensionArgs } from '@solana-program/token-2022';
import { address, lamports, none, some, type Address, type KeyPairSigner } from '@solana/kit';
import type { LiteSVM } from 'litesvm';
import { SolanaTestChain, type TransactionLedger } from './chain.js';
import { startSolanaFacade, type SolanaFacade } from './facade.js';
import { writeMetaplexMetadata } from './metaplex.js';
import { deployUpgradeableProgram, MEMO_PROGRAM } from './program.js';
import {
  approveDelegate,
  createExtraTokenAccount,
  createMint,
  freezeTokenAccount,
  mintToOwners,
  pauseMint,
  revokeMintAndFreeze,
  scheduleTransferFee,
  setAuthority,
  tokenProgramAddress,
  transferSol,
  type HeldTokenAccount,
  type Holding,
  type TokenMetadataSpec,
  type TokenProgramKind,
} from './token.js';

/** The real USDC mint address on mainnet. */
export const USDC_MINT = address('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v');
/** USDC's authorities on mainnet (Circle): the fixture's default, for a known-token registry to expect. */
export const USDC_EXPECTED_AUTHORITIES: Readonly<{ mintAuthority: Address; freezeAuthority: Address }> = {
  mintAuthority: address('BJE5MMbqXjVwjAF7oxwPYXnTXDyspzZyt4vwenNw5ruG'),
  freezeAuthority: address('7dGbd2QZcCKcTndnHcTL8q7SMVXAkp688NTQYwrRCrar'),
};
/** Raydium AMM v4's pool authority (a PDA, off curve): owns the token vaults of every v4 pool. */
export const RAYDIUM_AMM_V4_AUTHORITY = address('5Q544fKrFoe6tsEbD7S8EmxGTJYAKtTVhAW5Q5pge4j1');

const DECIMALS = 6;
const tokens = (whole: number): bigint => BigInt(whole) * 10n ** BigInt(DECIMALS);
const DAY = 86_400;
const OLD_AGE_SECONDS = 400 * DAY;
const NEW_AGE_SECONDS = 2 * DAY;
const SOL = 1_000_000_000n;
/** Effectively uncapped, so the fee is the basis points. */
const NO_FEE_CAP = tokens(1_000_000_000);

/** Finding codes (docs/risk.md#findings-catalog) the Solana fixtures are built to trigger (or not). */
export type SolanaFindingCode =
  | 'account_not_found'
  | 'target_type_mismatch'
  | 'new_account'
  | 'token_delegate_set'
  | 'frozen_token_accounts'
  | 'interacted_with_flagged'
  | 'mint_authority_enabled'
  | 'freeze_authority_enabled'
  | 'permanent_delegate'
  | 'transfer_hook'
  | 'transfer_fee'
  | 'default_account_state_frozen'
  | 'non_transferable'
  | 'pausable'
  | 'mint_close_authority'
  | 'confidential_transfers'
  | 'metadata_mutable'
  | 'holder_concentration'
  | 'copycat_symbol'
  | 'zero_supply';

export interface Expectation {
  /** Codes a correct analyzer raises unsuppressed for this target, with empty deny/allow lists. */
  findings: SolanaFindingCode[];
  /** Codes raised but suppressed (known-good registry). */
  suppressed?: SolanaFindingCode[];
  /** POST scan/token status when it is not 200. */
  scanTokenStatus?: 404 | 422;
  note: string;
}

export interface MetadataFixture {
  standard: 'metaplex' | 'token-2022';
  /** The Metaplex Metadata PDA, or the mint itself for Token-2022 metadata. */
  address: Address;
  name: string;
  symbol: string;
  uri: string;
  updateAuthority: Address | null;
  mutable: boolean;
}

export interface MintFixture {
  kind: 'mint';
  address: Address;
  program: TokenProgramKind;
  programAddress: Address;
  decimals: number;
  supply: bigint;
  mintAuthority: Address | null;
  freezeAuthority: Address | null;
  /** Token-2022 extension kinds on the mint (TokenMetadata included when present). */
  extensions: ExtensionArgs['__kind'][];
  metadata: MetadataFixture | null;
  /** Every token account created for the mint, in creation order. */
  holders: HeldTokenAccount[];
  expect: Expectation;
}

export interface WalletFixture {
  kind: 'wallet';
  address: Address;
  /** Age of the wallet's oldest transaction. */
  oldestTransactionDays: number;
  tokenAccounts: { address: Address; mint: Address; program: TokenProgramKind }[];
  expect: Expectation;
}

export interface ProgramFixture {
  kind: 'program';
  /** Executable account owned by the upgradeable loader. */
  address: Address;
  programData: Address;
  upgradeAuthority: Address;
  expect: Expectation;
}

export interface AddressFixture {
  kind: 'token_account' | 'missing';
  address: Address;
  expect: Expectation;
}

export interface SolanaFixtures {
  mints: {
    /** SPL Token, authorities revoked, 25 even holders, immutable Metaplex metadata: nothing to report. */
    cleanToken: MintFixture;
    /** SPL Token, mint + freeze authority live, mutable Metaplex metadata. */
    liveAuthorities: MintFixture;
    /** SPL Token with a mint authority and nothing minted. */
    zeroSupply: MintFixture;
    /** One owner holds 55% across two token accounts (30% ATA + 25% extra account). */
    concentrated: MintFixture;
    /** Top 10 accounts hold 60%, no owner above 6%. */
    moderateConcentration: MintFixture;
    /** A Raydium v4 pool vault holds 45%, 25 wallets share the rest. */
    spreadWithPool: MintFixture;
    /** Token-2022 without extensions, authorities revoked. */
    token2022Plain: MintFixture;
    permanentDelegate: MintFixture;
    transferHook: MintFixture;
    /** Transfer fee 50 bps (current and newer). */
    transferFeeLow: MintFixture;
    /** Transfer fee 500 bps. */
    transferFeeHigh: MintFixture;
    /** 50 bps now, 500 bps scheduled by SetTransferFee (newerTransferFee, epoch + 2). */
    transferFeeScheduled: MintFixture;
    defaultFrozen: MintFixture;
    nonTransferable: MintFixture;
    /** PausableConfig with an authority, currently paused. */
    pausable: MintFixture;
    mintCloseAuthority: MintFixture;
    confidentialTransfers: MintFixture;
    /** MetadataPointer to itself + TokenMetadata with an update authority. */
    token2022MetadataMutable: MintFixture;
    /** Same, update authority removed. */
    token2022MetadataImmutable: MintFixture;
    /** USDC's real address, bytes of a real mint, authorities as configured (default: mainnet's). */
    usdc: MintFixture;
    /** Another SPL mint whose Metaplex metadata says "USD Coin" / "USDC". */
    copycatUsdc: MintFixture;
    /** A Token-2022 mint whose own metadata says "USD Coin" / "USDC". */
    copycatUsdcToken2022: MintFixture;
  };
  wallets: {
    /** First transaction 400 days ago, one today. */
    oldWallet: WalletFixture;
    /** First transaction 2 days ago. */
    newWallet: WalletFixture;
    /** SPL Token account with a delegate. */
    delegatedWallet: WalletFixture;
    /** Token-2022 account with a delegate. */
    delegatedWallet2022: WalletFixture;
    /** SPL Token account frozen by the mint's freeze authority. */
    frozenWallet: WalletFixture;
    /** Recently sent SOL to `actors.flaggedCounterparty`. */
    counterpartyWallet: WalletFixture;
    /** A system account with lamports and no tokens: a wallet, not a mint (scan/token 422). */
    plainWallet: WalletFixture;
  };
  /** Upgradeable BPF program (ProgramData + upgrade authority), deployed by real loader-v3 transactions. */
  program: ProgramFixture;
  /** An SPL token account (owned by the Token program, not a mint). */
  tokenAccount: AddressFixture;
  /** An address nothing was ever written to. */
  missing: AddressFixture;
}

export interface SolanaWorld {
  chain: SolanaTestChain;
  svm: LiteSVM;
  ledger: TransactionLedger;
  fixtures: SolanaFixtures;
  /** Addresses that play a part without being a fixture of their own. */
  actors: {
    /** Put this on a deny/sanctions list to make `counterpartyWallet` interacted_with_flagged. */
    flaggedCounterparty: Address;
    /** The delegate of delegatedWallet / delegatedWallet2022. */
    delegateSpender: Address;
    poolOwner: Address;
    /** The concentrated mint's whale. */
    whale: Address;
    /** Plain funded wallets used as token holders. */
    holders: Address[];
  };
  /**
   * A facade over this world's state and ledger; close it when done. Change state through `chain`
   * (send / setAccount), not `svm` directly: the chain's ledger version keys the facade's token index.
   */
  startFacade(port?: number): Promise<SolanaFacade>;
}

export interface BuildSolanaWorldOptions {
  /** The authorities the USDC fixture ends up with (default: mainnet's, USDC_EXPECTED_AUTHORITIES). */
  usdcAuthorities?: { mintAuthority: Address | null; freezeAuthority: Address | null };
}

/**
 * One LiteSVM chain with every Solana fixture riskwatch's analyzers need, built by real transactions of the
 * real SPL Token, Token-2022, ATA, System and upgradeable-loader programs. Only the Metaplex metadata
 * accounts and the USDC mint account (an address nobody here holds the key of) are written with setAccount.
 * Takes 2–4 s on a 2-core machine.
 */
export async function buildSolanaWorld(options: BuildSolanaWorldOptions = {}): Promise<SolanaWorld> {
  const chain = await SolanaTestChain.create();
  const b = new WorldBuilder(chain);

  const holders = await b.fundedWallets('holder', 30);
  const poolOwner = RAYDIUM_AMM_V4_AUTHORITY;
  const whale = (await b.fundedWallets('whale', 1))[0] as Address;
  const delegateSpender = (await chain.signer('delegate-spender')).address;
  const flaggedCounterparty = (await chain.signer('flagged-counterparty')).address;
  const even = (count: number, each: number): Holding[] =>
    holders.slice(0, count).map((owner) => ({ owner, amount: tokens(each) }));
  const spread = even(25, 40_000);

  // Wallets first: their token accounts are created while the mints still have authorities.
  const oldWallet = await b.wallet('old-wallet', OLD_AGE_SECONDS, { recentActivity: true });
  const newWallet = await b.wallet('new-wallet', NEW_AGE_SECONDS, { recentActivity: true });
  const delegatedWallet = await b.wallet('delegated-wallet', OLD_AGE_SECONDS);
  const delegatedWallet2022 = await b.wallet('delegated-wallet-2022', OLD_AGE_SECONDS);
  const frozenWallet = await b.wallet('frozen-wallet', OLD_AGE_SECONDS);
  const counterpartyWallet = await b.wallet('counterparty-wallet', OLD_AGE_SECONDS);
  const plainWallet = await b.wallet('plain-wallet', OLD_AGE_SECONDS);
  await transferSol(chain, { from: counterpartyWallet, to: flaggedCounterparty, amount: SOL / 10n });

  const deployed = await deployUpgradeableProgram(chain, {
    name: 'hook',
    elf: memoElf(chain),
    upgradeAuthority: await chain.signer('program-upgrade-authority'),
  });

  const revoked = { revokeMint: true, revokeFreeze: true } as const;

  const cleanToken = await b.mint('clean', {
    holdings: [...spread, { owner: delegatedWallet.address, amount: tokens(1_000) }],
    metaplex: { name: 'Clean Coin', symbol: 'CLEAN', mutable: false },
    ...revoked,
  });
  const liveAuthorities = await b.mint('live-authorities', {
    holdings: [...spread, { owner: frozenWallet.address, amount: tokens(1_000) }],
    metaplex: { name: 'Live Coin', symbol: 'LIVE', mutable: true },
  });
  const zeroSupply = await b.mint('zero-supply', { holdings: [], freeze: false });

  const concentrated = await b.mint('concentrated', {
    holdings: [{ owner: whale, amount: tokens(300_000) }, ...even(9, 50_000)],
    ...revoked,
    beforeRevoke: async (mint, mintAuthority) => [
      {
        owner: whale,
        amount: tokens(250_000),
        tokenAccount: await createExtraTokenAccount(chain, {
          name: 'whale-second',
          mint,
          owner: whale,
          mintAuthority,
          amount: tokens(250_000),
        }),
      },
    ],
  });
  const moderateConcentration = await b.mint('moderate', {
    holdings: [
      ...even(10, 60_000),
      ...holders.slice(10, 30).map((owner) => ({ owner, amount: tokens(20_000) })),
    ],
    ...revoked,
  });
  const spreadWithPool = await b.mint('spread-with-pool', {
    holdings: [{ owner: poolOwner, amount: tokens(450_000) }, ...even(25, 22_000)],
    ...revoked,
  });

  const t22 = { program: 'token-2022', ...revoked } as const;
  const token2022Plain = await b.mint('t22-plain', {
    ...t22,
    holdings: [...spread, { owner: delegatedWallet2022.address, amount: tokens(1_000) }],
  });
  const someone = async (role: string) => (await chain.signer(role)).address;
  const permanentDelegate = await b.mint('permanent-delegate', {
    ...t22,
    holdings: spread,
    extensions: [{ __kind: 'PermanentDelegate', delegate: await someone('permanent-delegate') }],
  });
  const transferHook = await b.mint('transfer-hook', {
    ...t22,
    holdings: spread,
    extensions: [
      {
        __kind: 'TransferHook',
        authority: await someone('transfer-hook-authority'),
        programId: deployed.program,
      },
    ],
  });
  const feeAuthority = await chain.signer('transfer-fee-authority');
  const feeConfig = (basisPoints: number): ExtensionArgs => {
    const fee = { epoch: chain.epoch, maximumFee: NO_FEE_CAP, transferFeeBasisPoints: basisPoints };
    return {
      __kind: 'TransferFeeConfig',
      transferFeeConfigAuthority: feeAuthority.address,
      withdrawWithheldAuthority: feeAuthority.address,
      withheldAmount: 0n,
      olderTransferFee: fee,
      newerTransferFee: fee,
    };
  };
  const transferFeeLow = await b.mint('fee-50bps', { ...t22, holdings: spread, extensions: [feeConfig(50)] });
  const transferFeeHigh = await b.mint('fee-500bps', {
    ...t22,
    holdings: spread,
    extensions: [feeConfig(500)],
  });
  const transferFeeScheduled = await b.mint('fee-scheduled', {
    ...t22,
    holdings: spread,
    extensions: [feeConfig(50)],
    afterRevoke: (mint) =>
      scheduleTransferFee(chain, { mint, authority: feeAuthority, basisPoints: 500, maximumFee: NO_FEE_CAP }),
  });
  const defaultFrozen = await b.mint('default-frozen', {
    program: 'token-2022',
    revokeMint: true,
    holdings: spread,
    extensions: [{ __kind: 'DefaultAccountState', state: AccountState.Frozen }],
    thawNewAccounts: true,
  });
  const nonTransferable = await b.mint('non-transferable', {
    ...t22,
    holdings: spread,
    extensions: [{ __kind: 'NonTransferable' }],
  });
  const pauseAuthority = await chain.signer('pause-authority');
  const pausable = await b.mint('pausable', {
    ...t22,
    holdings: spread,
    extensions: [{ __kind: 'PausableConfig', authority: some(pauseAuthority.address), paused: false }],
    afterRevoke: (mint) => pauseMint(chain, { mint, authority: pauseAuthority }),
  });
  const mintCloseAuthority = await b.mint('mint-close-authority', {
    ...t22,
    holdings: spread,
    extensions: [{ __kind: 'MintCloseAuthority', closeAuthority: await someone('mint-close-authority') }],
  });
  const confidentialTransfers = await b.mint('confidential', {
    ...t22,
    holdings: spread,
    extensions: [
      {
        __kind: 'ConfidentialTransferMint',
        authority: some(await someone('confidential-authority')),
        autoApproveNewAccounts: true,
        auditorElgamalPubkey: none(),
      },
    ],
  });
  const token2022MetadataMutable = await b.mint('t22-metadata-mutable', {
    ...t22,
    holdings: spread,
    tokenMetadata: {
      name: 'Mutable Meta',
      symbol: 'MUTA',
      uri: 'https://example.com/muta.json',
      updateAuthority: await chain.signer('t22-metadata-update-authority'),
    },
  });
  const token2022MetadataImmutable = await b.mint('t22-metadata-immutable', {
    ...t22,
    holdings: spread,
    tokenMetadata: {
      name: 'Fixed Meta',
      symbol: 'FIXD',
      uri: 'https://example.com/fixd.json',
      updateAuthority: null,
    },
  });

  const usdc = await b.usdc(options.usdcAuthorities ?? USDC_EXPECTED_AUTHORITIES, [
    { owner: poolOwner, amount: tokens(450_000) },
    ...even(25, 22_000),
  ]);
  const copycatUsdc = await b.mint('copycat-usdc', {
    holdings: spread,
    metaplex: { name: 'USD Coin', symbol: 'USDC', mutable: true },
  });
  const copycatUsdcToken2022 = await b.mint('copycat-usdc-2022', {
    ...t22,
    holdings: spread,
    tokenMetadata: {
      name: 'USD Coin',
      symbol: 'USDC',
      uri: 'https://example.com/usdc.json',
      updateAuthority: await chain.signer('copycat-2022-update-authority'),
    },
  });

  // Wallet-side token state, on accounts created above.
  const delegatedAccount = b.holding(cleanToken, delegatedWallet.address);
  await approveDelegate(chain, {
    kind: 'token',
    tokenAccount: delegatedAccount,
    owner: delegatedWallet,
    delegate: delegateSpender,
    amount: tokens(500),
  });
  const delegatedAccount2022 = b.holding(token2022Plain, delegatedWallet2022.address);
  await approveDelegate(chain, {
    kind: 'token-2022',
    tokenAccount: delegatedAccount2022,
    owner: delegatedWallet2022,
    delegate: delegateSpender,
    amount: tokens(500),
  });
  const frozenAccount = b.holding(liveAuthorities, frozenWallet.address);
  await freezeTokenAccount(chain, {
    kind: 'token',
    tokenAccount: frozenAccount,
    mint: liveAuthorities.address,
    freezeAuthority: await chain.signer('freeze-authority:live-authorities'),
  });

  const walletFixture = (
    signer: KeyPairSigner,
    ageSeconds: number,
    expect: Expectation,
    tokenAccounts: WalletFixture['tokenAccounts'] = [],
  ): WalletFixture => ({
    kind: 'wallet',
    address: signer.address,
    oldestTransactionDays: ageSeconds / DAY,
    tokenAccounts,
    expect,
  });

  const fixtures: SolanaFixtures = {
    mints: {
      cleanToken: cleanToken.with({
        findings: [],
        note: 'fixed supply, no freeze, even holders, immutable metadata',
      }),
      liveAuthorities: liveAuthorities.with({
        findings: ['mint_authority_enabled', 'freeze_authority_enabled', 'metadata_mutable'],
        note: 'both authorities live; Metaplex isMutable = true',
      }),
      zeroSupply: zeroSupply.with({
        findings: ['zero_supply', 'mint_authority_enabled'],
        note: 'supply 0: getTokenLargestAccounts returns an empty list (no holder finding can be computed)',
      }),
      concentrated: concentrated.with({
        findings: ['holder_concentration'],
        note: 'high: one owner holds 55% through two accounts (largest single account only 30%)',
      }),
      moderateConcentration: moderateConcentration.with({
        findings: ['holder_concentration'],
        note: 'medium: top-10 accounts hold 60%, no owner above 6%',
      }),
      spreadWithPool: spreadWithPool.with({
        findings: [],
        note: `the ${poolOwner} (Raydium AMM v4 authority) vault holds 45%: excluded and labelled; the rest is spread`,
      }),
      token2022Plain: token2022Plain.with({ findings: [], note: 'Token-2022 without extensions' }),
      permanentDelegate: permanentDelegate.with({ findings: ['permanent_delegate'], note: 'critical' }),
      transferHook: transferHook.with({
        findings: ['transfer_hook'],
        note: 'hook program = the program fixture',
      }),
      transferFeeLow: transferFeeLow.with({ findings: ['transfer_fee'], note: 'medium: 50 bps' }),
      transferFeeHigh: transferFeeHigh.with({ findings: ['transfer_fee'], note: 'high: 500 bps' }),
      transferFeeScheduled: transferFeeScheduled.with({
        findings: ['transfer_fee'],
        note: 'high: older (current) 50 bps, newer 500 bps from epoch + 2',
      }),
      defaultFrozen: defaultFrozen.with({
        findings: ['default_account_state_frozen', 'freeze_authority_enabled'],
        note: 'the extension requires a freeze authority, which thawed each holder account',
      }),
      nonTransferable: nonTransferable.with({ findings: ['non_transferable'], note: 'soul-bound' }),
      pausable: pausable.with({ findings: ['pausable'], note: 'paused = true, pause authority present' }),
      mintCloseAuthority: mintCloseAuthority.with({ findings: ['mint_close_authority'], note: 'medium' }),
      confidentialTransfers: confidentialTransfers.with({
        findings: ['confidential_transfers'],
        note: 'auto-approve, no auditor',
      }),
      token2022MetadataMutable: token2022MetadataMutable.with({
        findings: ['metadata_mutable'],
        note: 'Token-2022 metadata with an update authority',
      }),
      token2022MetadataImmutable: token2022MetadataImmutable.with({
        findings: [],
        note: 'Token-2022 metadata, update authority None',
      }),
      usdc: usdc.with({
        findings: [],
        suppressed: ['mint_authority_enabled', 'freeze_authority_enabled', 'metadata_mutable'],
        note: 'known issuer stablecoin with its expected authorities: level low, findings suppressed',
      }),
      copycatUsdc: copycatUsdc.with({
        findings: [
          'copycat_symbol',
          'mint_authority_enabled',
          'freeze_authority_enabled',
          'metadata_mutable',
        ],
        note: 'Metaplex symbol "USDC" on another mint (NUL-padded on chain, as the program stores it)',
      }),
      copycatUsdcToken2022: copycatUsdcToken2022.with({
        findings: ['copycat_symbol', 'metadata_mutable'],
        note: 'Token-2022 metadata symbol "USDC" on another mint',
      }),
    },
    wallets: {
      oldWallet: walletFixture(oldWallet, OLD_AGE_SECONDS, { findings: [], note: 'active for 400 days' }),
      newWallet: walletFixture(newWallet, NEW_AGE_SECONDS, {
        findings: ['new_account'],
        note: 'oldest transaction 2 days old',
      }),
      delegatedWallet: walletFixture(
        delegatedWallet,
        OLD_AGE_SECONDS,
        { findings: ['token_delegate_set'], note: `SPL Token account delegated to ${delegateSpender}` },
        [{ address: delegatedAccount, mint: cleanToken.address, program: 'token' }],
      ),
      delegatedWallet2022: walletFixture(
        delegatedWallet2022,
        OLD_AGE_SECONDS,
        { findings: ['token_delegate_set'], note: `Token-2022 account delegated to ${delegateSpender}` },
        [{ address: delegatedAccount2022, mint: token2022Plain.address, program: 'token-2022' }],
      ),
      frozenWallet: walletFixture(
        frozenWallet,
        OLD_AGE_SECONDS,
        { findings: ['frozen_token_accounts'], note: 'info: one frozen SPL Token account' },
        [{ address: frozenAccount, mint: liveAuthorities.address, program: 'token' }],
      ),
      counterpartyWallet: walletFixture(counterpartyWallet, OLD_AGE_SECONDS, {
        findings: [],
        note: `interacted_with_flagged once ${flaggedCounterparty} is on a deny or sanctions list`,
      }),
      plainWallet: walletFixture(plainWallet, OLD_AGE_SECONDS, {
        findings: [],
        scanTokenStatus: 422,
        note: 'system account: not a mint',
      }),
    },
    program: {
      kind: 'program',
      address: deployed.program,
      programData: deployed.programData,
      upgradeAuthority: deployed.upgradeAuthority,
      expect: {
        findings: [],
        scanTokenStatus: 422,
        note: 'target_type_mismatch when sent as a wallet; not a mint',
      },
    },
    tokenAccount: {
      kind: 'token_account',
      address: cleanToken.holders[0]?.tokenAccount ?? fail('clean token has no holders'),
      expect: { findings: [], scanTokenStatus: 422, note: 'a token account is not a mint' },
    },
    missing: {
      kind: 'missing',
      address: (await chain.signer('missing-account')).address,
      expect: { findings: ['account_not_found'], scanTokenStatus: 404, note: 'never written' },
    },
  };

  return {
    chain,
    svm: chain.svm,
    ledger: chain.ledger,
    fixtures,
    actors: { flaggedCounterparty, delegateSpender, poolOwner, whale, holders },
    startFacade: (port?: number) => startSolanaFacade(chain.svm, chain.ledger, port),
  };
}

interface MintPlan {
  program?: TokenProgramKind;
  holdings: Holding[];
  /** Freeze authority at creation (default true). */
  freeze?: boolean;
  extensions?: ExtensionArgs[];
  tokenMetadata?: TokenMetadataSpec;
  metaplex?: { name: string; symbol: string; mutable: boolean };
  /** Revoke after minting the holdings. */
  revokeMint?: boolean;
  revokeFreeze?: boolean;
  /** For DefaultAccountState = frozen: the freeze authority thaws each new account before minting. */
  thawNewAccounts?: boolean;
  /** Extra minting while the mint authority still exists; returns the accounts it created. */
  beforeRevoke?: (mint: Address, mintAuthority: KeyPairSigner) => Promise<HeldTokenAccount[]>;
  afterRevoke?: (mint: Address) => Promise<void>;
}

type PendingMint = Omit<MintFixture, 'expect'> & { with(expect: Expectation): MintFixture };

class WorldBuilder {
  constructor(private readonly chain: SolanaTestChain) {}

  async fundedWallets(prefix: string, count: number): Promise<Address[]> {
    const wallets: Address[] = [];
    for (let i = 1; i <= count; i++) {
      const wallet = await this.chain.signer(`${prefix}-${String(i).padStart(2, '0')}`);
      await transferSol(this.chain, { from: this.chain.payer, to: wallet.address, amount: SOL });
      wallets.push(wallet.address);
    }
    return wallets;
  }

  /** Funded `ageSeconds` ago; `recentActivity` adds a transaction of its own today. */
  async wallet(
    name: string,
    ageSeconds: number,
    opts: { recentActivity?: boolean } = {},
  ): Promise<KeyPairSigner> {
    const wallet = await this.chain.signer(name);
    await transferSol(this.chain, {
      from: this.chain.payer,
      to: wallet.address,
      amount: 10n * SOL,
      ageSeconds,
    });
    if (opts.recentActivity) {
      await transferSol(this.chain, { from: wallet, to: this.chain.payer.address, amount: SOL / 100n });
    }
    return wallet;
  }

  async mint(name: string, plan: MintPlan): Promise<PendingMint> {
    const chain = this.chain;
    const program = plan.program ?? 'token';
    const mintAuthority = await chain.signer(`mint-authority:${name}`);
    const freezeAuthority =
      plan.freeze === false ? undefined : await chain.signer(`freeze-authority:${name}`);
    const mint = await createMint(chain, {
      name,
      program,
      decimals: DECIMALS,
      mintAuthority,
      freezeAuthority: freezeAuthority?.address ?? null,
      extensions: plan.extensions,
      tokenMetadata: plan.tokenMetadata,
    });
    const holders = await mintToOwners(chain, {
      kind: program,
      mint,
      mintAuthority,
      holdings: plan.holdings,
      thawWith: plan.thawNewAccounts ? freezeAuthority : undefined,
    });
    if (plan.beforeRevoke) holders.push(...(await plan.beforeRevoke(mint, mintAuthority)));
    if (plan.revokeMint || plan.revokeFreeze) {
      await revokeMintAndFreeze(chain, {
        kind: program,
        mint,
        mintAuthority,
        freezeAuthority: plan.revokeFreeze ? freezeAuthority : undefined,
      });
    }
    if (plan.afterRevoke) await plan.afterRevoke(mint);

    let metadata: MetadataFixture | null = null;
    if (plan.metaplex) {
      const updateAuthority = (await chain.signer(`metaplex-update-authority:${name}`)).address;
      const uri = `https://example.com/${name}.json`;
      metadata = {
        standard: 'metaplex',
        address: await writeMetaplexMetadata(chain, {
          mint,
          name: plan.metaplex.name,
          symbol: plan.metaplex.symbol,
          uri,
          updateAuthority,
          isMutable: plan.metaplex.mutable,
        }),
        name: plan.metaplex.name,
        symbol: plan.metaplex.symbol,
        uri,
        updateAuthority,
        mutable: plan.metaplex.mutable,
      };
    } else if (plan.tokenMetadata) {
      const updateAuthority = plan.tokenMetadata.updateAuthority?.address ?? null;
      metadata = {
        standard: 'token-2022',
        address: mint,
        name: plan.tokenMetadata.name,
        symbol: plan.tokenMetadata.symbol,
        uri: plan.tokenMetadata.uri,
        updateAuthority,
        mutable: updateAuthority !== null,
      };
    }

    const extensions: ExtensionArgs['__kind'][] = (plan.extensions ?? []).map((e) => e.__kind);
    if (plan.tokenMetadata) extensions.push('MetadataPointer', 'TokenMetadata');
    return pending({
      kind: 'mint',
      address: mint,
      program,
      programAddress: tokenProgramAddress(program),
      decimals: DECIMALS,
      supply: holders.reduce((sum, h) => sum + h.amount, 0n),
      mintAuthority: plan.revokeMint ? null : mintAuthority.address,
      freezeAuthority: plan.revokeFreeze || !freezeAuthority ? null : freezeAuthority.address,
      extensions,
      metadata,
      holders,
    });
  }

  /**
   * USDC at its real address. Nobody here holds that key, so a mint is created by real transactions at a
   * template address and its bytes copied there (setAccount); from then on everything is real transactions
   * against the copy: token accounts, minting, and SetAuthority to the requested authorities.
   */
  async usdc(
    authorities: { mintAuthority: Address | null; freezeAuthority: Address | null },
    holdings: Holding[],
  ): Promise<PendingMint> {
    const chain = this.chain;
    const mintAuthority = await chain.signer('mint-authority:usdc-setup');
    const freezeAuthority = await chain.signer('freeze-authority:usdc-setup');
    const template = await createMint(chain, {
      name: 'usdc-template',
      program: 'token',
      decimals: DECIMALS,
      mintAuthority,
      freezeAuthority: freezeAuthority.address,
    });
    const account = chain.svm.getAccount(template);
    if (!account.exists) throw new Error('USDC template mint missing');
    chain.setAccount({ ...account, address: USDC_MINT });
    chain.setAccount({ ...account, address: template, lamports: lamports(0n), data: new Uint8Array() });

    const holders = await mintToOwners(chain, { kind: 'token', mint: USDC_MINT, mintAuthority, holdings });
    await setAuthority(chain, {
      kind: 'token',
      owned: USDC_MINT,
      current: mintAuthority,
      type: AuthorityType.MintTokens,
      newAuthority: authorities.mintAuthority,
    });
    await setAuthority(chain, {
      kind: 'token',
      owned: USDC_MINT,
      current: freezeAuthority,
      type: AuthorityType.FreezeAccount,
      newAuthority: authorities.freezeAuthority,
    });
    const updateAuthority = (await chain.signer('metaplex-update-authority:usdc')).address;
    const uri = 'https://example.com/usdc.json';
    return pending({
      kind: 'mint',
      address: USDC_MINT,
      program: 'token',
      programAddress: tokenProgramAddress('token'),
      decimals: DECIMALS,
      supply: holders.reduce((sum, h) => sum + h.amount, 0n),
      mintAuthority: authorities.mintAuthority,
      freezeAuthority: authorities.freezeAuthority,
      extensions: [],
      metadata: {
        standard: 'metaplex',
        address: await writeMetaplexMetadata(chain, {
          mint: USDC_MINT,
          name: 'USD Coin',
          symbol: 'USDC',
          uri,
          updateAuthority,
          isMutable: true,
        }),
        name: 'USD Coin',
        symbol: 'USDC',
        uri,
        updateAuthority,
        mutable: true,
      },
      holders,
    });
  }

  holding(mint: PendingMint, owner: Address): Address {
    return (
      mint.holders.find((h) => h.owner === owner)?.tokenAccount ?? fail(`${owner} holds no ${mint.address}`)
    );
  }
}

function pending(fixture: Omit<MintFixture, 'expect'>): PendingMint {
  return { ...fixture, with: (expect) => ({ ...fixture, expect }) };
}

/** SPL Memo's ELF, read from LiteSVM's bundled copy (loader v2 keeps the ELF in the program account). */
function memoElf(chain: SolanaTestChain): Uint8Array {
  const memo = chain.svm.getAccount(MEMO_PROGRAM);
  if (!memo.exists) throw new Error('LiteSVM no longer ships SPL Memo');
  return memo.data;
}

function fail(message: string): never {
  throw new Error(message);
}
