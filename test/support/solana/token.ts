import { getCreateAccountInstruction, getTransferSolInstruction } from '@solana-program/system';
import {
  AuthorityType,
  findAssociatedTokenPda,
  getApproveInstruction,
  getCreateAssociatedTokenIdempotentInstruction,
  getFreezeAccountInstruction,
  getInitializeAccount3Instruction,
  getInitializeMint2Instruction,
  getInitializeTokenMetadataInstruction,
  getMintSize,
  getMintToInstruction,
  getPauseInstruction,
  getPreInitializeInstructionsForMintExtensions,
  getSetAuthorityInstruction,
  getSetTransferFeeInstruction,
  getThawAccountInstruction,
  getUpdateTokenMetadataUpdateAuthorityInstruction,
  type ExtensionArgs,
} from '@solana-program/token-2022';
import { lamports, none, some, type Address, type Instruction, type KeyPairSigner } from '@solana/kit';
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM, type SendOptions, type SolanaTestChain } from './chain.js';

/*
 * Token instructions come from the Token-2022 client for both programs: SPL Token's instruction set is
 * the first part of Token-2022's with the same encoding, and `programAddress` sends it to the classic
 * program, which then validates it for real.
 */

export type TokenProgramKind = 'token' | 'token-2022';

export const tokenProgramAddress = (kind: TokenProgramKind): Address =>
  kind === 'token' ? TOKEN_PROGRAM : TOKEN_2022_PROGRAM;

const SPL_TOKEN_ACCOUNT_SIZE = 165;
/** Holders per transaction: keeps a create-ATA + mint pair for each well under the 1232-byte limit. */
const HOLDERS_PER_TX = 4;

export interface TokenMetadataSpec {
  name: string;
  symbol: string;
  uri: string;
  /** null: initialised by the mint authority, then the update authority is removed (immutable metadata). */
  updateAuthority: KeyPairSigner | null;
}

export interface CreateMintSpec {
  /** Seeds the mint's key pair, so the address is stable across runs. */
  name: string;
  program: TokenProgramKind;
  decimals: number;
  /** InitializeMint needs one; revoke it later with `setAuthority` for a fixed supply. */
  mintAuthority: KeyPairSigner;
  freezeAuthority: Address | null;
  /** Token-2022 extensions initialised before the mint (not TokenMetadata: use `tokenMetadata`). */
  extensions?: ExtensionArgs[];
  /** Token-2022 metadata in the mint itself, behind a MetadataPointer to the mint. */
  tokenMetadata?: TokenMetadataSpec;
}

/** Create and initialise a mint, its extensions and its Token-2022 metadata in one transaction. */
export async function createMint(chain: SolanaTestChain, spec: CreateMintSpec): Promise<Address> {
  const mint = await chain.signer(`mint:${spec.name}`);
  const programAddress = tokenProgramAddress(spec.program);
  const extensions = [...(spec.extensions ?? [])];
  const metadata = spec.tokenMetadata;
  if (spec.program === 'token' && (extensions.length > 0 || metadata)) {
    throw new Error('extensions need the Token-2022 program');
  }
  if (metadata) {
    extensions.push({
      __kind: 'MetadataPointer',
      authority: metadata.updateAuthority ? some(metadata.updateAuthority.address) : none(),
      metadataAddress: some(mint.address),
    });
  }
  const metadataExtension: ExtensionArgs[] = metadata
    ? [
        {
          __kind: 'TokenMetadata',
          updateAuthority: some((metadata.updateAuthority ?? spec.mintAuthority).address),
          mint: mint.address,
          name: metadata.name,
          symbol: metadata.symbol,
          uri: metadata.uri,
          additionalMetadata: new Map(),
        },
      ]
    : [];
  // Sized without the metadata (InitializeTokenMetadata reallocates) but funded for the final size.
  const space = extensions.length > 0 ? getMintSize(extensions) : getMintSize();
  const rentSpace = getMintSize([...extensions, ...metadataExtension]);

  const instructions: Instruction[] = [
    getCreateAccountInstruction({
      payer: chain.payer,
      newAccount: mint,
      lamports: lamports(chain.minimumBalance(metadata ? rentSpace : space)),
      space,
      programAddress,
    }),
    ...getPreInitializeInstructionsForMintExtensions(mint.address, extensions),
    getInitializeMint2Instruction(
      {
        mint: mint.address,
        decimals: spec.decimals,
        mintAuthority: spec.mintAuthority.address,
        freezeAuthority: spec.freezeAuthority,
      },
      { programAddress },
    ),
  ];
  if (metadata) {
    instructions.push(
      getInitializeTokenMetadataInstruction({
        metadata: mint.address,
        updateAuthority: (metadata.updateAuthority ?? spec.mintAuthority).address,
        mint: mint.address,
        mintAuthority: spec.mintAuthority,
        name: metadata.name,
        symbol: metadata.symbol,
        uri: metadata.uri,
      }),
    );
    if (!metadata.updateAuthority) {
      instructions.push(
        getUpdateTokenMetadataUpdateAuthorityInstruction({
          metadata: mint.address,
          updateAuthority: spec.mintAuthority,
          newUpdateAuthority: none(),
        }),
      );
    }
  }
  await chain.send(instructions);
  return mint.address;
}

export interface Holding {
  owner: Address;
  amount: bigint;
}

export interface HeldTokenAccount extends Holding {
  tokenAccount: Address;
}

export async function associatedTokenAddress(
  kind: TokenProgramKind,
  mint: Address,
  owner: Address,
): Promise<Address> {
  const [ata] = await findAssociatedTokenPda({ owner, mint, tokenProgram: tokenProgramAddress(kind) });
  return ata;
}

/**
 * Create each owner's associated token account (off-curve owners such as pool PDAs included: the ATA
 * program does not care) and mint to it. `thawWith` thaws each new account first, for mints whose
 * DefaultAccountState is frozen.
 */
export async function mintToOwners(
  chain: SolanaTestChain,
  args: {
    kind: TokenProgramKind;
    mint: Address;
    mintAuthority: KeyPairSigner;
    holdings: Holding[];
    thawWith?: KeyPairSigner;
  },
): Promise<HeldTokenAccount[]> {
  const programAddress = tokenProgramAddress(args.kind);
  const held: HeldTokenAccount[] = [];
  for (let i = 0; i < args.holdings.length; i += HOLDERS_PER_TX) {
    const instructions: Instruction[] = [];
    for (const holding of args.holdings.slice(i, i + HOLDERS_PER_TX)) {
      const ata = await associatedTokenAddress(args.kind, args.mint, holding.owner);
      instructions.push(
        getCreateAssociatedTokenIdempotentInstruction({
          payer: chain.payer,
          ata,
          owner: holding.owner,
          mint: args.mint,
          tokenProgram: programAddress,
        }),
      );
      if (args.thawWith) {
        instructions.push(
          getThawAccountInstruction(
            { account: ata, mint: args.mint, owner: args.thawWith },
            { programAddress },
          ),
        );
      }
      instructions.push(
        getMintToInstruction(
          { mint: args.mint, token: ata, mintAuthority: args.mintAuthority, amount: holding.amount },
          { programAddress },
        ),
      );
      held.push({ ...holding, tokenAccount: ata });
    }
    await chain.send(instructions);
  }
  return held;
}

/** A second, non-associated SPL Token account for an owner (one owner, several accounts). */
export async function createExtraTokenAccount(
  chain: SolanaTestChain,
  args: { name: string; mint: Address; owner: Address; mintAuthority: KeyPairSigner; amount: bigint },
): Promise<Address> {
  const account = await chain.signer(`token-account:${args.name}`);
  await chain.send([
    getCreateAccountInstruction({
      payer: chain.payer,
      newAccount: account,
      lamports: lamports(chain.minimumBalance(SPL_TOKEN_ACCOUNT_SIZE)),
      space: SPL_TOKEN_ACCOUNT_SIZE,
      programAddress: TOKEN_PROGRAM,
    }),
    getInitializeAccount3Instruction(
      { account: account.address, mint: args.mint, owner: args.owner },
      { programAddress: TOKEN_PROGRAM },
    ),
    getMintToInstruction(
      { mint: args.mint, token: account.address, mintAuthority: args.mintAuthority, amount: args.amount },
      { programAddress: TOKEN_PROGRAM },
    ),
  ]);
  return account.address;
}

/** SetAuthority on a mint or token account; `newAuthority: null` revokes it for good. */
export async function setAuthority(
  chain: SolanaTestChain,
  args: {
    kind: TokenProgramKind;
    owned: Address;
    current: KeyPairSigner;
    type: AuthorityType;
    newAuthority: Address | null;
  },
): Promise<void> {
  await chain.send([
    getSetAuthorityInstruction(
      {
        owned: args.owned,
        owner: args.current,
        authorityType: args.type,
        newAuthority: args.newAuthority,
      },
      { programAddress: tokenProgramAddress(args.kind) },
    ),
  ]);
}

export async function revokeMintAndFreeze(
  chain: SolanaTestChain,
  args: {
    kind: TokenProgramKind;
    mint: Address;
    mintAuthority: KeyPairSigner;
    freezeAuthority?: KeyPairSigner;
  },
): Promise<void> {
  const programAddress = tokenProgramAddress(args.kind);
  const instructions: Instruction[] = [
    getSetAuthorityInstruction(
      {
        owned: args.mint,
        owner: args.mintAuthority,
        authorityType: AuthorityType.MintTokens,
        newAuthority: null,
      },
      { programAddress },
    ),
  ];
  if (args.freezeAuthority) {
    instructions.push(
      getSetAuthorityInstruction(
        {
          owned: args.mint,
          owner: args.freezeAuthority,
          authorityType: AuthorityType.FreezeAccount,
          newAuthority: null,
        },
        { programAddress },
      ),
    );
  }
  await chain.send(instructions);
}

export async function approveDelegate(
  chain: SolanaTestChain,
  args: {
    kind: TokenProgramKind;
    tokenAccount: Address;
    owner: KeyPairSigner;
    delegate: Address;
    amount: bigint;
  },
): Promise<void> {
  await chain.send(
    [
      getApproveInstruction(
        { source: args.tokenAccount, delegate: args.delegate, owner: args.owner, amount: args.amount },
        { programAddress: tokenProgramAddress(args.kind) },
      ),
    ],
    { feePayer: args.owner },
  );
}

export async function freezeTokenAccount(
  chain: SolanaTestChain,
  args: { kind: TokenProgramKind; tokenAccount: Address; mint: Address; freezeAuthority: KeyPairSigner },
): Promise<void> {
  await chain.send([
    getFreezeAccountInstruction(
      { account: args.tokenAccount, mint: args.mint, owner: args.freezeAuthority },
      { programAddress: tokenProgramAddress(args.kind) },
    ),
  ]);
}

/** Schedules a new Token-2022 transfer fee: it becomes `newerTransferFee`, effective two epochs later. */
export async function scheduleTransferFee(
  chain: SolanaTestChain,
  args: { mint: Address; authority: KeyPairSigner; basisPoints: number; maximumFee: bigint },
): Promise<void> {
  await chain.send([
    getSetTransferFeeInstruction({
      mint: args.mint,
      transferFeeConfigAuthority: args.authority,
      transferFeeBasisPoints: args.basisPoints,
      maximumFee: args.maximumFee,
    }),
  ]);
}

export async function pauseMint(
  chain: SolanaTestChain,
  args: { mint: Address; authority: KeyPairSigner },
): Promise<void> {
  await chain.send([getPauseInstruction({ mint: args.mint, authority: args.authority })]);
}

export async function transferSol(
  chain: SolanaTestChain,
  args: { from: KeyPairSigner; to: Address; amount: bigint } & SendOptions,
): Promise<void> {
  await chain.send(
    [getTransferSolInstruction({ source: args.from, destination: args.to, amount: lamports(args.amount) })],
    { feePayer: args.from, ageSeconds: args.ageSeconds },
  );
}
