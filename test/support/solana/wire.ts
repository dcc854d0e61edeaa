import {
  getCreateAccountInstruction,
  getInitializeNonceAccountInstruction,
  getNonceDecoder,
} from '@solana-program/system';
import {
  AccountRole,
  appendTransactionMessageInstructions,
  compileTransaction,
  compressTransactionMessageUsingAddressLookupTables,
  createTransactionMessage,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  getProgramDerivedAddress,
  getU32Encoder,
  getU64Encoder,
  lamports,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  setTransactionMessageLifetimeUsingDurableNonce,
  address,
  type Address,
  type AddressesByLookupTableAddress,
  type Blockhash,
  type Instruction,
  type KeyPairSigner,
  type Nonce,
  type TransactionSigner,
} from '@solana/kit';
import { SYSTEM_PROGRAM, type SolanaTestChain } from './chain.js';

/*
 * Real wire transactions, built the way a dApp hands them to a wallet: compiled by @solana/kit, serialized,
 * base64. Unless `signers` are given every signature is 64 zero bytes (the wallet has not signed yet), which
 * is what a risk service gets to simulate before the user signs.
 */

export const ADDRESS_LOOKUP_TABLE_PROGRAM = address('AddressLookupTab1e1111111111111111111111111');
const SYSVAR_RECENT_BLOCKHASHES = address('SysvarRecentB1ockHashes11111111111111111111');
const SYSVAR_RENT = address('SysvarRent111111111111111111111111111111111');
/** A System nonce account's size (version, state, authority, durable nonce, fee calculator). */
export const NONCE_ACCOUNT_SIZE = 80;
/** Addresses per ExtendLookupTable: keeps each transaction well under the 1232-byte limit. */
const LOOKUP_TABLE_CHUNK = 20;

export type WireVersion = 'legacy' | 0;

interface WireMessageArgs {
  /** The account paying the fee: only its address goes on the wire unless it is among `signers`. */
  feePayer: Address | TransactionSigner;
  instructions: readonly Instruction[];
  version: WireVersion;
  /** Version 0 only: lookup tables (address → its addresses) to compress the account list with. */
  lookupTables?: AddressesByLookupTableAddress;
  /** Key pairs that sign now; every other signature stays zeros. */
  signers?: readonly KeyPairSigner[];
}

export interface BuildWireTransactionArgs extends WireMessageArgs {
  blockhash: string;
}

/** A base64 wire transaction with a recent-blockhash lifetime. */
export async function buildWireTransaction(args: BuildWireTransactionArgs): Promise<string> {
  const message = pipe(
    createTransactionMessage({ version: args.version }),
    (m) => setTransactionMessageFeePayer(feePayerAddress(args.feePayer), m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: args.blockhash as Blockhash, lastValidBlockHeight: 0n },
        m,
      ),
    (m) => appendTransactionMessageInstructions(args.instructions, m),
  );
  return encode(message, args);
}

export interface BuildDurableNonceTransactionArgs extends WireMessageArgs {
  nonceAccount: Address;
  nonceAuthority: Address;
  /** The nonce account's stored value (`readNonce`): it stands where the recent blockhash goes. */
  nonce: string;
}

/**
 * A base64 wire transaction with a durable-nonce lifetime: its first instruction is the System program's
 * AdvanceNonceAccount and its "recent blockhash" is the nonce, so it stays valid until the nonce advances.
 */
export async function buildDurableNonceTransaction(args: BuildDurableNonceTransactionArgs): Promise<string> {
  const message = pipe(
    createTransactionMessage({ version: args.version }),
    (m) => setTransactionMessageFeePayer(feePayerAddress(args.feePayer), m),
    (m) =>
      setTransactionMessageLifetimeUsingDurableNonce(
        {
          nonce: args.nonce as Nonce,
          nonceAccountAddress: args.nonceAccount,
          nonceAuthorityAddress: args.nonceAuthority,
        },
        m,
      ),
    (m) => appendTransactionMessageInstructions(args.instructions, m),
  );
  return encode(message, args);
}

type BuiltMessage = Parameters<typeof compileTransaction>[0];
type SignableTransaction = Parameters<KeyPairSigner['signTransactions']>[0][number];

async function encode(message: BuiltMessage, args: WireMessageArgs): Promise<string> {
  let compressible = message;
  if (args.lookupTables) {
    if (args.version !== 0) throw new Error('lookup tables need a version 0 transaction');
    compressible = compressTransactionMessageUsingAddressLookupTables(
      message as Parameters<typeof compressTransactionMessageUsingAddressLookupTables>[0],
      args.lookupTables,
    ) as BuiltMessage;
  }
  const tx = compileTransaction(compressible);
  const signatures = { ...tx.signatures };
  for (const signer of args.signers ?? []) {
    if (!(signer.address in signatures))
      throw new Error(`${signer.address} is not a signer of this transaction`);
    // Branded "within size limit / with lifetime" by construction: the compiled message has a lifetime.
    const [signed] = await signer.signTransactions([tx as SignableTransaction]);
    Object.assign(signatures, signed);
  }
  return getBase64EncodedWireTransaction({ ...tx, signatures });
}

function feePayerAddress(feePayer: Address | TransactionSigner): Address {
  return typeof feePayer === 'string' ? feePayer : feePayer.address;
}

/**
 * Create an Address Lookup Table owned by `authority` and extend it with `addresses`, through the real
 * Address Lookup Table program, in the chain's payer's transactions. Then one slot passes, so the addresses
 * are usable (a table serves the addresses of its last extension only from the next slot on).
 */
export async function createLookupTable(
  chain: SolanaTestChain,
  authority: KeyPairSigner,
  addresses: readonly Address[],
): Promise<Address> {
  const recentSlot = chain.slot;
  rememberSlotHash(chain, recentSlot);
  const [table, bump] = await getProgramDerivedAddress({
    programAddress: ADDRESS_LOOKUP_TABLE_PROGRAM,
    seeds: [getAddressEncoder().encode(authority.address), getU64Encoder().encode(recentSlot)],
  });
  const data = new Uint8Array([...getU32Encoder().encode(0), ...getU64Encoder().encode(recentSlot), bump]);
  await chain.send([
    {
      programAddress: ADDRESS_LOOKUP_TABLE_PROGRAM,
      accounts: [
        { address: table, role: AccountRole.WRITABLE },
        { address: authority.address, role: AccountRole.READONLY_SIGNER, signer: authority },
        { address: chain.payer.address, role: AccountRole.WRITABLE_SIGNER, signer: chain.payer },
        { address: SYSTEM_PROGRAM, role: AccountRole.READONLY },
      ],
      data,
    } as Instruction,
  ]);
  for (let i = 0; i < addresses.length; i += LOOKUP_TABLE_CHUNK) {
    const chunk = addresses.slice(i, i + LOOKUP_TABLE_CHUNK);
    const extend = new Uint8Array([
      ...getU32Encoder().encode(2),
      ...getU64Encoder().encode(BigInt(chunk.length)),
      ...chunk.flatMap((a) => [...getAddressEncoder().encode(a)]),
    ]);
    await chain.send([
      {
        programAddress: ADDRESS_LOOKUP_TABLE_PROGRAM,
        accounts: [
          { address: table, role: AccountRole.WRITABLE },
          { address: authority.address, role: AccountRole.READONLY_SIGNER, signer: authority },
          { address: chain.payer.address, role: AccountRole.WRITABLE_SIGNER, signer: chain.payer },
          { address: SYSTEM_PROGRAM, role: AccountRole.READONLY },
        ],
        data: extend,
      } as Instruction,
    ]);
  }
  chain.advanceSlots(1n);
  return table;
}

/**
 * CreateLookupTable derives the table from a slot that must be in the SlotHashes sysvar. LiteSVM keeps only
 * its start slot there, so the chain's current slot is added (newest first, as the sysvar orders them).
 */
function rememberSlotHash(chain: SolanaTestChain, slot: bigint): void {
  const hashes = chain.svm.getSlotHashes().map((h) => ({ slot: h.slot, hash: h.hash }));
  if (hashes.some((h) => h.slot === slot)) return;
  hashes.push({ slot, hash: chain.svm.latestBlockhash() });
  hashes.sort((a, b) => (a.slot === b.slot ? 0 : a.slot > b.slot ? -1 : 1));
  chain.svm.setSlotHashes(hashes.slice(0, 512));
}

export interface NonceAccount {
  address: Address;
  authority: Address;
  /** The durable nonce stored now: a durable-nonce transaction uses it as its blockhash. */
  nonce: string;
}

/** Create and initialise a System nonce account (key pair seeded by `name`) whose authority is `authority`. */
export async function createNonceAccount(
  chain: SolanaTestChain,
  args: { name: string; authority: Address },
): Promise<NonceAccount> {
  const account = await chain.signer(`nonce-account:${args.name}`);
  await chain.send([
    getCreateAccountInstruction({
      payer: chain.payer,
      newAccount: account,
      lamports: lamports(chain.minimumBalance(NONCE_ACCOUNT_SIZE)),
      space: NONCE_ACCOUNT_SIZE,
      programAddress: SYSTEM_PROGRAM,
    }),
    getInitializeNonceAccountInstruction({
      nonceAccount: account.address,
      recentBlockhashesSysvar: SYSVAR_RECENT_BLOCKHASHES,
      rentSysvar: SYSVAR_RENT,
      nonceAuthority: args.authority,
    }),
  ]);
  return { address: account.address, authority: args.authority, nonce: readNonce(chain, account.address) };
}

/** The durable nonce a nonce account holds now. */
export function readNonce(chain: SolanaTestChain, nonceAccount: Address): string {
  const account = chain.svm.getAccount(nonceAccount);
  if (!account.exists) throw new Error(`no nonce account at ${nonceAccount}`);
  return getNonceDecoder().decode(account.data).blockhash;
}
