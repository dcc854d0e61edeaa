import { createHash } from 'node:crypto';
import {
  getAddressDecoder,
  getAddressEncoder,
  getBase58Encoder,
  type Address,
  type EncodedAccount,
  type ReadonlyUint8Array,
} from '@solana/kit';
import { FailedTransactionMetadata, type LiteSVM, type TransactionMetadata } from 'litesvm';
import {
  InstructionErrorBorshIo,
  InstructionErrorCustom,
  TransactionErrorDuplicateInstruction,
  TransactionErrorInstructionError,
  TransactionErrorInsufficientFundsForRent,
  TransactionErrorProgramExecutionTemporarilyRestricted,
} from 'litesvm/dist/internal.js';
import { uiInstruction, type UiInstruction } from './parsed-instructions.js';
import {
  addressParam,
  encodeAccount,
  integerParam,
  invalidParams,
  isRecord,
  RpcError,
  type BinaryAccountEncoding,
} from './rpc-common.js';

/*
 * simulateTransaction as an Agave node answers it (rpc.rs `simulate_transaction`, API 2.2), run by
 * LiteSVM's own simulateTransaction (which never changes state):
 *
 * - decoding: base58 (the default) or base64, the node's size limits, bincode's errors (-32602);
 * - `replaceRecentBlockhash` swaps the message's blockhash for the latest one and reports it in
 *   `replacementBlockhash`; with `sigVerify` it is refused (-32602), as a node refuses it;
 * - sanitizing failures (bad account offsets, a lookup table that does not exist...) are -32602
 *   "invalid transaction: ...", a bad signature with `sigVerify` is -32003, as in Agave 2.2;
 * - a blockhash must be recent: the latest, or one this facade handed out (getLatestBlockhash) within the last
 *   150 slots, else `err: "BlockhashNotFound"` — unless the transaction is a valid durable-nonce one;
 * - LiteSVM's signature check and blockhash check are set for the call and put back after it;
 * - `accounts`: post-simulation state of the requested addresses (their current state when the transaction
 *   does not touch them; all null when the simulation failed), base64 or base64+zstd. `jsonParsed` is refused
 *   with -32602 (a node would parse token accounts: the facade serves binary data only);
 * - `innerInstructions`: the node's jsonParsed-where-possible form (parsed-instructions.ts).
 */

/** A blockhash stays usable for this many slots after it was handed out (a node's MAX_PROCESSING_AGE). */
export const BLOCKHASH_VALID_SLOTS = 150n;
const PACKET_DATA_SIZE = 1232;
const MAX_BASE58_SIZE = 1683;
const MAX_BASE64_SIZE = 1644;
const SIGNATURE_BYTES = 64;
const TX_TYPE = 'solana_transaction::versioned::VersionedTransaction';
/** Bytes of an address lookup table's metadata before its addresses. */
const LOOKUP_TABLE_META_SIZE = 56;
const ADDRESS_LOOKUP_TABLE_PROGRAM = 'AddressLookupTab1e1111111111111111111111111';
const COMMITMENTS = ['processed', 'confirmed', 'finalized'];

/** LiteSVM's TransactionErrorFieldless, by value: the node's JSON for each. */
const TRANSACTION_ERRORS = [
  'AccountInUse',
  'AccountLoadedTwice',
  'AccountNotFound',
  'ProgramAccountNotFound',
  'InsufficientFundsForFee',
  'InvalidAccountForFee',
  'AlreadyProcessed',
  'BlockhashNotFound',
  'CallChainTooDeep',
  'MissingSignatureForFee',
  'InvalidAccountIndex',
  'SignatureFailure',
  'InvalidProgramForExecution',
  'SanitizeFailure',
  'ClusterMaintenance',
  'AccountBorrowOutstanding',
  'WouldExceedMaxBlockCostLimit',
  'UnsupportedVersion',
  'InvalidWritableAccount',
  'WouldExceedMaxAccountCostLimit',
  'WouldExceedAccountDataBlockLimit',
  'TooManyAccountLocks',
  'AddressLookupTableNotFound',
  'InvalidAddressLookupTableOwner',
  'InvalidAddressLookupTableData',
  'InvalidAddressLookupTableIndex',
  'InvalidRentPayingAccount',
  'WouldExceedMaxVoteCostLimit',
  'WouldExceedAccountDataTotalLimit',
  'MaxLoadedAccountsDataSizeExceeded',
  'ResanitizationNeeded',
  'InvalidLoadedAccountsDataSizeLimit',
  'UnbalancedTransaction',
  'ProgramCacheHitMaxLimit',
  'CommitCancelled',
] as const;

/** LiteSVM's InstructionErrorFieldless, by value. */
const INSTRUCTION_ERRORS = [
  'GenericError',
  'InvalidArgument',
  'InvalidInstructionData',
  'InvalidAccountData',
  'AccountDataTooSmall',
  'InsufficientFunds',
  'IncorrectProgramId',
  'MissingRequiredSignature',
  'AccountAlreadyInitialized',
  'UninitializedAccount',
  'UnbalancedInstruction',
  'ModifiedProgramId',
  'ExternalAccountLamportSpend',
  'ExternalAccountDataModified',
  'ReadonlyLamportChange',
  'ReadonlyDataModified',
  'DuplicateAccountIndex',
  'ExecutableModified',
  'RentEpochModified',
  'NotEnoughAccountKeys',
  'AccountDataSizeChanged',
  'AccountNotExecutable',
  'AccountBorrowFailed',
  'AccountBorrowOutstanding',
  'DuplicateAccountOutOfSync',
  'InvalidError',
  'ExecutableDataModified',
  'ExecutableLamportChange',
  'ExecutableAccountNotRentExempt',
  'UnsupportedProgramId',
  'CallDepth',
  'MissingAccount',
  'ReentrancyNotAllowed',
  'MaxSeedLengthExceeded',
  'InvalidSeeds',
  'InvalidRealloc',
  'ComputationalBudgetExceeded',
  'PrivilegeEscalation',
  'ProgramEnvironmentSetupFailure',
  'ProgramFailedToComplete',
  'ProgramFailedToCompile',
  'Immutable',
  'IncorrectAuthority',
  'AccountNotRentExempt',
  'InvalidAccountOwner',
  'ArithmeticOverflow',
  'UnsupportedSysvar',
  'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded',
  'MaxAccountsExceeded',
  'MaxInstructionTraceLengthExceeded',
  'BuiltinProgramsMustConsumeComputeUnits',
  'BorshIoError',
] as const;

/**
 * Errors a node raises while sanitizing, before simulating: answered as -32602 "invalid transaction: <the
 * error's Display text>", not as a simulation result.
 */
const SANITIZE_ERRORS: Record<string, string> = {
  SanitizeFailure: 'Transaction failed to sanitize accounts offsets correctly',
  UnsupportedVersion: 'Transaction version is unsupported',
  AddressLookupTableNotFound: "Transaction loads an address table account that doesn't exist",
  InvalidAddressLookupTableOwner: 'Transaction loads an address table account with an invalid owner',
  InvalidAddressLookupTableData: 'Transaction loads an address table account with invalid data',
  InvalidAddressLookupTableIndex: 'Transaction address table lookup uses an invalid index',
};

export type TransactionErrorJson =
  | string
  | { InstructionError: [number, unknown] }
  | { DuplicateInstruction: number }
  | { InsufficientFundsForRent: { account_index: number } }
  | { ProgramExecutionTemporarilyRestricted: { account_index: number } };

/** LiteSVM's error of a failed transaction in the node's JSON (serde's externally tagged enum). */
export function transactionErrorJson(
  err: ReturnType<FailedTransactionMetadata['err']>,
): TransactionErrorJson {
  if (typeof err === 'number') return TRANSACTION_ERRORS[err] ?? `UnknownTransactionError(${err})`;
  if (err instanceof TransactionErrorInstructionError) {
    const inner = err.err();
    let json: unknown;
    if (typeof inner === 'number') json = INSTRUCTION_ERRORS[inner] ?? `UnknownInstructionError(${inner})`;
    else if (inner instanceof InstructionErrorCustom) json = { Custom: inner.code };
    else if (inner instanceof InstructionErrorBorshIo) json = { BorshIoError: inner.msg };
    else json = String(inner);
    return { InstructionError: [err.index, json] };
  }
  if (err instanceof TransactionErrorDuplicateInstruction) return { DuplicateInstruction: err.index };
  if (err instanceof TransactionErrorInsufficientFundsForRent) {
    return { InsufficientFundsForRent: { account_index: err.accountIndex } };
  }
  if (err instanceof TransactionErrorProgramExecutionTemporarilyRestricted) {
    return { ProgramExecutionTemporarilyRestricted: { account_index: err.accountIndex } };
  }
  return String(err);
}

/** A wire transaction, read the way the node's bincode reads a VersionedTransaction. */
interface WireTransaction {
  /** The transaction's bytes (trailing bytes after it dropped, as bincode ignores them). */
  bytes: Uint8Array;
  signatures: ReadonlyUint8Array[];
  messageOffset: number;
  version: 'legacy' | 0;
  numRequiredSignatures: number;
  staticKeys: Address[];
  /** Offset of the recent blockhash in `bytes`. */
  blockhashOffset: number;
  recentBlockhash: string;
  instructionCount: number;
  lookups: { accountKey: Address; writableIndexes: number[]; readonlyIndexes: number[] }[];
}

class WireError extends Error {}

class WireReader {
  pos = 0;
  constructor(private readonly bytes: Uint8Array) {}

  take(n: number): Uint8Array {
    if (this.pos + n > this.bytes.length) throw new WireError('io error: failed to fill whole buffer');
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  u8(): number {
    return this.take(1)[0] as number;
  }

  /** Solana's short_vec length (compact-u16). */
  shortU16(): number {
    let value = 0;
    for (let i = 0; i < 3; i++) {
      const byte = this.u8();
      value |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) {
        if (i > 0 && byte === 0) throw new WireError('invalid value: alias encoding, expected a ShortU16');
        return value;
      }
    }
    throw new WireError('invalid value: overflow, expected a ShortU16');
  }

  address(): Address {
    return getAddressDecoder().decode(this.take(32));
  }

  bytesList(): number[] {
    return [...this.take(this.shortU16())];
  }
}

function readWireTransaction(bytes: Uint8Array): WireTransaction {
  const r = new WireReader(bytes);
  const signatures: ReadonlyUint8Array[] = [];
  const signatureCount = r.shortU16();
  for (let i = 0; i < signatureCount; i++) signatures.push(r.take(SIGNATURE_BYTES));
  const messageOffset = r.pos;
  const prefix = r.u8();
  let version: 'legacy' | 0 = 'legacy';
  let numRequiredSignatures = prefix;
  if (prefix & 0x80) {
    const v = prefix & 0x7f;
    if (v !== 0) {
      throw new WireError(`invalid value: integer \`${v}\`, expected a valid transaction message version`);
    }
    version = 0;
    numRequiredSignatures = r.u8();
  }
  r.take(2); // the readonly counts of the header
  const staticKeys: Address[] = [];
  const keyCount = r.shortU16();
  for (let i = 0; i < keyCount; i++) staticKeys.push(r.address());
  const blockhashOffset = r.pos;
  const recentBlockhash = r.address();
  const instructionCount = r.shortU16();
  for (let i = 0; i < instructionCount; i++) {
    r.u8();
    r.bytesList();
    r.bytesList();
  }
  const lookups: WireTransaction['lookups'] = [];
  if (version === 0) {
    const lookupCount = r.shortU16();
    for (let i = 0; i < lookupCount; i++) {
      lookups.push({
        accountKey: r.address(),
        writableIndexes: r.bytesList(),
        readonlyIndexes: r.bytesList(),
      });
    }
  }
  return {
    bytes: bytes.slice(0, r.pos),
    signatures,
    messageOffset,
    version,
    numRequiredSignatures,
    staticKeys,
    blockhashOffset,
    recentBlockhash,
    instructionCount,
    lookups,
  };
}

/** The node's decode_and_deserialize, with its error texts. */
function decodeTransaction(encoded: string, encoding: 'base58' | 'base64'): WireTransaction {
  let bytes: Uint8Array;
  if (encoding === 'base58') {
    if (encoded.length > MAX_BASE58_SIZE) {
      throw invalidParams(
        `base58 encoded ${TX_TYPE} too large: ${encoded.length} bytes (max: encoded/raw ${MAX_BASE58_SIZE}/${PACKET_DATA_SIZE})`,
      );
    }
    const bad = [...encoded].findIndex((c) => !BASE58_ALPHABET.includes(c));
    if (bad >= 0) {
      throw invalidParams(
        `invalid base58 encoding: InvalidCharacter { character: '${encoded[bad]}', index: ${bad} }`,
      );
    }
    bytes = new Uint8Array(getBase58Encoder().encode(encoded));
  } else {
    if (encoded.length > MAX_BASE64_SIZE) {
      throw invalidParams(
        `base64 encoded ${TX_TYPE} too large: ${encoded.length} bytes (max: encoded/raw ${MAX_BASE64_SIZE}/${PACKET_DATA_SIZE})`,
      );
    }
    const problem = base64Problem(encoded);
    if (problem) throw invalidParams(`invalid base64 encoding: ${problem}`);
    bytes = new Uint8Array(Buffer.from(encoded, 'base64'));
  }
  if (bytes.length > PACKET_DATA_SIZE) {
    throw invalidParams(
      `decoded ${TX_TYPE} too large: ${bytes.length} bytes (max: ${PACKET_DATA_SIZE} bytes)`,
    );
  }
  try {
    return readWireTransaction(bytes);
  } catch (err) {
    if (err instanceof WireError) throw invalidParams(`failed to deserialize ${TX_TYPE}: ${err.message}`);
    throw err;
  }
}

const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** What Rust's strict standard base64 engine says about `s` (padding required), or undefined if valid. */
function base64Problem(s: string): string | undefined {
  const body = s.replace(/={1,2}$/, '');
  for (let i = 0; i < body.length; i++) {
    if (!BASE64_ALPHABET.includes(body.charAt(i))) return `InvalidByte(${i}, ${body.charCodeAt(i)})`;
  }
  if (s.length % 4 !== 0) return body.length % 4 === 1 ? `InvalidLength(${body.length})` : 'InvalidPadding';
  return undefined;
}

interface SimulateConfig {
  encoding: 'base58' | 'base64';
  sigVerify: boolean;
  replaceRecentBlockhash: boolean;
  innerInstructions: boolean;
  minContextSlot?: number;
  accounts?: { addresses: unknown[]; encoding: string };
}

function simulateConfig(value: unknown): SimulateConfig {
  if (value === undefined || value === null) {
    return { encoding: 'base58', sigVerify: false, replaceRecentBlockhash: false, innerInstructions: false };
  }
  if (!isRecord(value))
    throw invalidParams('Invalid params: invalid type: expected struct RpcSimulateTransactionConfig');
  const flag = (name: string): boolean => {
    const v = value[name];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean')
      throw invalidParams(`Invalid params: invalid type: ${name} must be a boolean`);
    return v;
  };
  const encodingName = value.encoding ?? 'base58';
  let encoding: 'base58' | 'base64';
  if (encodingName === 'base58' || encodingName === 'binary') encoding = 'base58';
  else if (encodingName === 'base64') encoding = 'base64';
  else if (encodingName === 'json' || encodingName === 'jsonParsed') {
    throw invalidParams(`unsupported encoding: ${encodingName}. Supported encodings: base58, base64`);
  } else {
    throw invalidParams(
      `Invalid params: unknown variant ${JSON.stringify(encodingName)}, expected one of \`binary\`, \`base64\`, \`base58\`, \`json\`, \`jsonParsed\``,
    );
  }
  if (value.commitment !== undefined && !COMMITMENTS.includes(value.commitment as string)) {
    throw invalidParams(
      `Invalid params: unknown variant ${JSON.stringify(value.commitment)}, expected one of \`processed\`, \`confirmed\`, \`finalized\``,
    );
  }
  const config: SimulateConfig = {
    encoding,
    sigVerify: flag('sigVerify'),
    replaceRecentBlockhash: flag('replaceRecentBlockhash'),
    innerInstructions: flag('innerInstructions'),
  };
  if (value.minContextSlot !== undefined && value.minContextSlot !== null) {
    config.minContextSlot = integerParam(value.minContextSlot, 'minContextSlot');
  }
  if (value.accounts !== undefined && value.accounts !== null) {
    const accounts = value.accounts;
    if (!isRecord(accounts) || !Array.isArray(accounts.addresses)) {
      throw invalidParams('Invalid params: accounts must be { addresses: string[], encoding? }');
    }
    const accountEncoding = accounts.encoding ?? 'base64';
    if (typeof accountEncoding !== 'string') throw invalidParams('Invalid params: accounts.encoding');
    config.accounts = { addresses: accounts.addresses, encoding: accountEncoding };
  }
  return config;
}

/** What LiteSVM returned, whichever way the simulation went. */
interface Outcome {
  err: TransactionErrorJson | null;
  meta: TransactionMetadata;
  postAccounts: Map<string, EncodedAccount>;
}

/** The LiteSVM binding's internals this module reads: the public API sets the flags but cannot read them. */
interface LiteSvmInternals {
  inner?: { getSigverify?: () => boolean };
}

/**
 * The facade's simulateTransaction and the blockhashes it handed out. One per facade: getLatestBlockhash goes
 * through `latestBlockhash()` so that a blockhash stays valid for 150 slots, as on a node, even though
 * LiteSVM itself accepts only its latest one.
 */
export class TransactionSimulator {
  private readonly handedOut = new Map<string, bigint>();

  constructor(
    private readonly svm: LiteSVM,
    private readonly apiVersion: string,
  ) {}

  /** getLatestBlockhash's value; remembers the blockhash as recent. */
  latestBlockhash(): { blockhash: string; lastValidBlockHeight: bigint } {
    const slot = this.slot();
    const blockhash = this.svm.latestBlockhash();
    if (!this.handedOut.has(blockhash)) this.handedOut.set(blockhash, slot);
    for (const [hash, seen] of this.handedOut) {
      if (slot - seen > BLOCKHASH_VALID_SLOTS) this.handedOut.delete(hash);
    }
    return { blockhash, lastValidBlockHeight: slot + BLOCKHASH_VALID_SLOTS };
  }

  /** The JSON-RPC method: `params` = [encodedTransaction, config?]. */
  simulate(params: unknown[]) {
    const [encoded, rawConfig] = params;
    if (typeof encoded !== 'string') throw invalidParams('Invalid params: invalid type: expected a string');
    const config = simulateConfig(rawConfig);
    const tx = decodeTransaction(encoded, config.encoding);

    const slot = this.slot();
    if (config.minContextSlot !== undefined && BigInt(config.minContextSlot) > slot) {
      throw new RpcError(-32016, 'Minimum context slot has not been reached', { contextSlot: slot });
    }
    let replacementBlockhash: { blockhash: string; lastValidBlockHeight: bigint } | null = null;
    let bytes = tx.bytes;
    if (config.replaceRecentBlockhash) {
      if (config.sigVerify) throw invalidParams('sigVerify may not be used with replaceRecentBlockhash');
      replacementBlockhash = this.latestBlockhash();
      bytes = new Uint8Array(tx.bytes);
      bytes.set(getAddressEncoder().encode(replacementBlockhash.blockhash as Address), tx.blockhashOffset);
    }
    if (
      tx.signatures.length !== tx.numRequiredSignatures ||
      tx.numRequiredSignatures > tx.staticKeys.length
    ) {
      throw invalidParams(`invalid transaction: ${SANITIZE_ERRORS.SanitizeFailure}`);
    }
    if (config.sigVerify && tx.signatures.some(isZero)) throw signatureVerificationFailure();

    const blockhash = replacementBlockhash?.blockhash ?? tx.recentBlockhash;
    const outcome = this.run(bytes, tx, {
      sigverify: config.sigVerify,
      // A blockhash LiteSVM no longer knows but a node would: skip its check. Otherwise let it check (and
      // accept a durable nonce in place of a recent blockhash).
      blockhashCheck: !this.isRecent(blockhash, slot),
    });
    const errName = typeof outcome.err === 'string' ? outcome.err : undefined;
    if (errName && SANITIZE_ERRORS[errName]) {
      throw invalidParams(`invalid transaction: ${SANITIZE_ERRORS[errName]}`);
    }
    if (errName === 'SignatureFailure' && config.sigVerify) throw signatureVerificationFailure();

    const accountKeys = this.accountKeys(tx);
    const rawInner = outcome.meta.innerInstructions();
    // LiteSVM records one (possibly empty) list per top-level instruction once the transaction executed; a
    // transaction refused before execution (fee payer, blockhash...) has none, and the node answers null.
    const executed = rawInner.length > 0 || tx.instructionCount === 0;
    const returnData = outcome.meta.returnData();
    const returnBytes = returnData.data();
    return {
      context: { apiVersion: this.apiVersion, slot },
      value: {
        err: outcome.err,
        logs: outcome.meta.logs(),
        accounts: config.accounts ? this.accounts(config.accounts, outcome, accountKeys.length) : null,
        unitsConsumed: outcome.meta.computeUnitsConsumed(),
        returnData:
          returnBytes.length === 0
            ? null
            : {
                programId: getAddressDecoder().decode(returnData.programId()),
                data: [Buffer.from(returnBytes).toString('base64'), 'base64'],
              },
        innerInstructions:
          config.innerInstructions && executed ? innerInstructions(rawInner, accountKeys) : null,
        replacementBlockhash,
      },
    };
  }

  private slot(): bigint {
    return this.svm.getClock().slot;
  }

  private isRecent(blockhash: string, slot: bigint): boolean {
    if (blockhash === this.svm.latestBlockhash()) return true;
    const seen = this.handedOut.get(blockhash);
    return seen !== undefined && slot - seen <= BLOCKHASH_VALID_SLOTS;
  }

  /** Simulate with LiteSVM's checks set as asked, putting its previous settings back afterwards. */
  private run(
    bytes: Uint8Array,
    tx: WireTransaction,
    checks: { sigverify: boolean; blockhashCheck: boolean },
  ) {
    const before = this.currentChecks();
    this.svm.withSigverify(checks.sigverify).withBlockhashCheck(checks.blockhashCheck);
    try {
      const result = this.svm.simulateTransaction(liteSvmTransaction(bytes, tx));
      if (result instanceof FailedTransactionMetadata) {
        return {
          err: transactionErrorJson(result.err()),
          meta: result.meta(),
          postAccounts: new Map(),
        } as Outcome;
      }
      const postAccounts = new Map(result.postAccounts().map((a) => [a.address as string, a]));
      return { err: null, meta: result.meta(), postAccounts } as Outcome;
    } finally {
      this.svm.withSigverify(before.sigverify).withBlockhashCheck(before.blockhashCheck);
    }
  }

  /**
   * LiteSVM's current sigverify and blockhash-check flags. Sigverify has a getter in the binding; the blockhash
   * check has none, so it is probed: with sigverify off, a transaction with an unknown blockhash and an unknown
   * fee payer fails BlockhashNotFound when the check is on, something else when it is off.
   */
  private currentChecks(): { sigverify: boolean; blockhashCheck: boolean } {
    const getSigverify = (this.svm as unknown as LiteSvmInternals).inner?.getSigverify;
    const sigverify = getSigverify
      ? getSigverify.call((this.svm as unknown as LiteSvmInternals).inner)
      : true;
    this.svm.withSigverify(false);
    try {
      const probe = this.svm.simulateTransaction(PROBE.transaction);
      const blockhashCheck =
        probe instanceof FailedTransactionMetadata &&
        transactionErrorJson(probe.err()) === 'BlockhashNotFound';
      return { sigverify, blockhashCheck };
    } finally {
      this.svm.withSigverify(sigverify);
    }
  }

  /** The message's account keys: static, then each table's writable, then each table's readonly ones. */
  private accountKeys(tx: WireTransaction): Address[] {
    const writable: Address[] = [];
    const readonly: Address[] = [];
    for (const lookup of tx.lookups) {
      const table = this.svm.getAccount(lookup.accountKey);
      if (!table.exists || table.programAddress !== ADDRESS_LOOKUP_TABLE_PROGRAM) continue;
      const addressAt = (i: number): Address | undefined => {
        const start = LOOKUP_TABLE_META_SIZE + i * 32;
        if (start + 32 > table.data.length) return undefined;
        return getAddressDecoder().decode(table.data.slice(start, start + 32));
      };
      for (const i of lookup.writableIndexes) writable.push(addressAt(i) ?? ('' as Address));
      for (const i of lookup.readonlyIndexes) readonly.push(addressAt(i) ?? ('' as Address));
    }
    return [...tx.staticKeys, ...writable, ...readonly];
  }

  private accounts(requested: NonNullable<SimulateConfig['accounts']>, outcome: Outcome, keyCount: number) {
    let encoding: BinaryAccountEncoding;
    if (requested.encoding === 'base64' || requested.encoding === 'base64+zstd') {
      encoding = requested.encoding;
    } else if (requested.encoding === 'base58' || requested.encoding === 'binary') {
      throw invalidParams('base58 encoding not supported');
    } else if (requested.encoding === 'jsonParsed') {
      throw invalidParams(
        'Invalid params: the riskwatch test facade serves simulated accounts as base64 or base64+zstd only (jsonParsed is not supported)',
      );
    } else {
      throw invalidParams(`Invalid params: unknown variant \`${requested.encoding}\``);
    }
    if (requested.addresses.length > keyCount) {
      throw invalidParams(`Too many accounts provided; max ${keyCount}`);
    }
    if (outcome.err !== null) return requested.addresses.map(() => null);
    return requested.addresses.map((value) => {
      const addr = addressParam(value);
      const post = outcome.postAccounts.get(addr);
      if (post) {
        const encodedAccount = encodeAccount(post, undefined, encoding);
        // A key the transaction loads but that holds nothing is a default account to the node.
        return post.lamports === 0n && post.data.length === 0
          ? { ...encodedAccount, rentEpoch: 0 }
          : encodedAccount;
      }
      const current = this.svm.getAccount(addr);
      return current.exists ? encodeAccount(current, undefined, encoding) : null;
    });
  }
}

function innerInstructions(
  raw: ReturnType<TransactionMetadata['innerInstructions']>,
  accountKeys: Address[],
) {
  const out: { index: number; instructions: UiInstruction[] }[] = [];
  raw.forEach((list, index) => {
    if (list.length === 0) return;
    out.push({
      index,
      instructions: list.map((inner) => {
        const ix = inner.instruction();
        return uiInstruction(
          { programIdIndex: ix.programIdIndex(), accounts: [...ix.accounts()], data: ix.data() },
          accountKeys,
          inner.stackHeight(),
        );
      }),
    });
  });
  return out;
}

function signatureVerificationFailure(): RpcError {
  return new RpcError(-32003, 'Transaction signature verification failure');
}

function isZero(bytes: ReadonlyUint8Array): boolean {
  return bytes.every((b) => b === 0);
}

type LiteSvmTransaction = Parameters<LiteSVM['simulateTransaction']>[0];

/** The kit Transaction LiteSVM takes: message bytes, and each signer's signature (null when empty). */
function liteSvmTransaction(bytes: Uint8Array, tx: WireTransaction): LiteSvmTransaction {
  const signatures: Record<string, ReadonlyUint8Array | null> = {};
  tx.staticKeys.slice(0, tx.numRequiredSignatures).forEach((key, i) => {
    const signature = tx.signatures[i];
    signatures[key] = signature && !isZero(signature) ? signature : null;
  });
  return { messageBytes: bytes.slice(tx.messageOffset), signatures } as unknown as LiteSvmTransaction;
}

/** A legacy transaction no account can pay for, with a blockhash nobody has: see `currentChecks`. */
const PROBE = (() => {
  const seed = (label: string) => createHash('sha256').update(`riskwatch-simulate-probe:${label}`).digest();
  const payer = getAddressDecoder().decode(seed('fee-payer'));
  const message = new Uint8Array([1, 0, 0, 1, ...seed('fee-payer'), ...seed('blockhash'), 0]);
  const transaction = {
    messageBytes: message,
    signatures: { [payer]: new Uint8Array(SIGNATURE_BYTES).fill(1) },
  } as unknown as LiteSvmTransaction;
  return { transaction };
})();
