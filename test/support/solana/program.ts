import { getCreateAccountInstruction } from '@solana-program/system';
import {
  AccountRole,
  addEncoderSizePrefix,
  address,
  getBytesEncoder,
  getProgramDerivedAddress,
  getStructEncoder,
  getU32Encoder,
  getU64Encoder,
  lamports,
  type AccountMeta,
  type AccountSignerMeta,
  type Address,
  type Instruction,
  type KeyPairSigner,
  type ReadonlyUint8Array,
} from '@solana/kit';
import { addressBytes, BPF_LOADER_UPGRADEABLE, SYSTEM_PROGRAM, type SolanaTestChain } from './chain.js';

/** SPL Memo v2: LiteSVM ships it, so its account data is a real, verifiable sBPF ELF we can redeploy. */
export const MEMO_PROGRAM = address('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');

const SYSVAR_RENT = address('SysvarRent111111111111111111111111111111111');
const SYSVAR_CLOCK = address('SysvarC1ock11111111111111111111111111111111');
// UpgradeableLoaderState sizes: Buffer header (tag + Option<Pubkey>), Program (tag + Pubkey).
const BUFFER_HEADER = 37;
const PROGRAM_ACCOUNT_SIZE = 36;
/** Bytes per Write instruction: leaves room for the signatures and keys in a 1232-byte transaction. */
const WRITE_CHUNK = 900;

// bincode-encoded UpgradeableLoaderInstruction variants (u32 tag first).
const INITIALIZE_BUFFER = 0;
const WRITE = 1;
const DEPLOY_WITH_MAX_DATA_LEN = 2;
const tagEncoder = getU32Encoder();
const writeEncoder = getStructEncoder([
  ['tag', getU32Encoder()],
  ['offset', getU32Encoder()],
  ['bytes', addEncoderSizePrefix(getBytesEncoder(), getU64Encoder())],
]);
const deployEncoder = getStructEncoder([
  ['tag', getU32Encoder()],
  ['maxDataLen', getU64Encoder()],
]);

export interface DeployedProgram {
  program: Address;
  programData: Address;
  upgradeAuthority: Address;
}

/**
 * Deploy an upgradeable (loader-v3) program by real transactions: buffer, writes, DeployWithMaxDataLen,
 * exactly as `solana program deploy` does. The loader verifies the ELF, so it must be a real one.
 */
export async function deployUpgradeableProgram(
  chain: SolanaTestChain,
  args: { name: string; elf: ReadonlyUint8Array; upgradeAuthority: KeyPairSigner },
): Promise<DeployedProgram> {
  const buffer = await chain.signer(`program-buffer:${args.name}`);
  const program = await chain.signer(`program:${args.name}`);
  const authority = args.upgradeAuthority;
  const bufferSize = BUFFER_HEADER + args.elf.length;

  await chain.send([
    getCreateAccountInstruction({
      payer: chain.payer,
      newAccount: buffer,
      lamports: lamports(chain.minimumBalance(bufferSize)),
      space: bufferSize,
      programAddress: BPF_LOADER_UPGRADEABLE,
    }),
    loaderInstruction(
      [
        { address: buffer.address, role: AccountRole.WRITABLE },
        { address: authority.address, role: AccountRole.READONLY },
      ],
      tagEncoder.encode(INITIALIZE_BUFFER),
    ),
  ]);
  for (let offset = 0; offset < args.elf.length; offset += WRITE_CHUNK) {
    await chain.send([
      loaderInstruction(
        [
          { address: buffer.address, role: AccountRole.WRITABLE },
          { address: authority.address, role: AccountRole.READONLY_SIGNER, signer: authority },
        ],
        writeEncoder.encode({ tag: WRITE, offset, bytes: args.elf.slice(offset, offset + WRITE_CHUNK) }),
      ),
    ]);
  }

  const [programData] = await getProgramDerivedAddress({
    programAddress: BPF_LOADER_UPGRADEABLE,
    seeds: [addressBytes(program.address)],
  });
  await chain.send([
    getCreateAccountInstruction({
      payer: chain.payer,
      newAccount: program,
      lamports: lamports(chain.minimumBalance(PROGRAM_ACCOUNT_SIZE)),
      space: PROGRAM_ACCOUNT_SIZE,
      programAddress: BPF_LOADER_UPGRADEABLE,
    }),
    loaderInstruction(
      [
        { address: chain.payer.address, role: AccountRole.WRITABLE_SIGNER, signer: chain.payer },
        { address: programData, role: AccountRole.WRITABLE },
        { address: program.address, role: AccountRole.WRITABLE },
        { address: buffer.address, role: AccountRole.WRITABLE },
        { address: SYSVAR_RENT, role: AccountRole.READONLY },
        { address: SYSVAR_CLOCK, role: AccountRole.READONLY },
        { address: SYSTEM_PROGRAM, role: AccountRole.READONLY },
        { address: authority.address, role: AccountRole.READONLY_SIGNER, signer: authority },
      ],
      // Room to grow, as the CLI leaves by default.
      deployEncoder.encode({ tag: DEPLOY_WITH_MAX_DATA_LEN, maxDataLen: BigInt(args.elf.length * 2) }),
    ),
  ]);
  return { program: program.address, programData, upgradeAuthority: authority.address };
}

function loaderInstruction(
  accounts: readonly (AccountMeta | AccountSignerMeta)[],
  data: ReadonlyUint8Array,
): Instruction {
  return { programAddress: BPF_LOADER_UPGRADEABLE, accounts, data };
}
