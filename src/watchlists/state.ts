import { createHash } from 'node:crypto';
import { getTokenDecoder as getSplTokenDecoder } from '@solana-program/token';
import { getTokenDecoder as getToken2022TokenDecoder, type Extension } from '@solana-program/token-2022';
import { unwrapOption, type Option } from '@solana/kit';
import { keccak256, size, numberToHex, type Hex } from 'viem';
import { parseEvmAddress } from '../chains/addresses.js';
import type { EvmAccountState, EvmRpc } from '../chains/evm.js';
import type { CallOptions } from '../chains/jsonrpc.js';
import { canonicalJson } from '../chains/jsonrpc-wire.js';
import type { SolanaAccount, SolanaReadOptions, SolanaRpc } from '../chains/solana.js';
import { addressInWord, designatedDelegate, EIP1967_SLOTS } from '../risk/evm/account.js';
import { classifySolanaAccount, type SolanaAccountClass, type SolanaLoader } from '../risk/solana/kind.js';
import { loaderV3StateDecoder, PROGRAMDATA_METADATA_SIZE } from '../risk/solana/program.js';
import { decodeMintAccount, optionalKey } from '../risk/solana/token/decode.js';
import type { TokenProgramName } from '../risk/solana/token/types.js';

/*
 * The state a watchlist tick compares between two scans: what one `getMultipleAccounts` answer (Solana) or
 * one pinned JSON-RPC batch (EVM) says about an address, normalised to plain JSON (big integers as decimal
 * strings, keys in snake_case, as the snapshots are stored and shown). Only what account state shows is
 * here; anything that needs history or holder scans is the deep re-analysis' verdict.
 */

/** A JSON value: what a snapshot or an alert's previous/current value may hold. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

export type AccountStateName = 'uninitialized' | 'initialized' | 'frozen';
const ACCOUNT_STATES: readonly AccountStateName[] = ['uninitialized', 'initialized', 'frozen'];

/** A mint (SPL Token or Token-2022). Authority fields: null = none (revoked, or the extension is absent). */
export interface MintState {
  token_program: TokenProgramName;
  decimals: number;
  supply: string;
  mint_authority: string | null;
  freeze_authority: string | null;
  extensions: string[]; // Token-2022 extension kinds present (snake_case, sorted); [] for SPL Token
  permanent_delegate: string | null;
  transfer_hook_program: string | null;
  transfer_hook_authority: string | null;
  transfer_fee_authority: string | null;
  transfer_fee_bps: number | null; // the newest fee set (SetTransferFee writes it, in force from its epoch)
  pausable_authority: string | null;
  paused: boolean | null;
  mint_close_authority: string | null;
  metadata_pointer_authority: string | null;
  metadata_address: string | null;
  metadata_update_authority: string | null; // Token-2022 TokenMetadata's (Metaplex's is another account)
  default_account_state: AccountStateName | null;
}

export interface TokenAccountState {
  token_program: TokenProgramName;
  mint: string;
  owner: string;
  amount: string;
  delegate: string | null;
  delegated_amount: string;
  state: AccountStateName;
  close_authority: string | null;
}

/**
 * An executable account. Loader-v3 (upgradeable) programs: the authority and deploy slot come from their
 * ProgramData account. Other loaders: only the loader (loader-v4's in-account authority is not decoded yet).
 */
export interface ProgramState {
  loader: SolanaLoader | null;
  programdata_address: string | null;
  upgrade_authority: string | null; // null: nobody can (immutable, closed, or a loader without upgrades)
  last_deploy_slot: number | null;
}

interface SolanaBase {
  family: 'solana';
  exists: boolean;
  owner_program: string | null;
  lamports: string;
  executable: boolean;
}

/** Accounts riskwatch does not decode: their data is watched through its hash. */
type PlainClass = Exclude<SolanaAccountClass, 'mint' | 'token_account' | 'program'>;

export type SolanaWatchedState =
  | (SolanaBase & { kind: PlainClass; data_len: number; data_hash: string | null })
  | (SolanaBase & { kind: 'mint'; mint: MintState })
  | (SolanaBase & { kind: 'token_account'; token_account: TokenAccountState })
  | (SolanaBase & { kind: 'program'; program: ProgramState });

export interface EvmWatchedState {
  family: 'evm';
  kind: 'missing' | 'wallet' | 'delegated_wallet' | 'contract';
  exists: boolean; // nonce > 0, or a balance, or code
  nonce: number;
  balance: string; // wei
  code_hash: string; // keccak256 of the code (of `0x` when there is none)
  code_size: number;
  delegate: string | null; // EIP-7702: the code is the designator `0xef0100` ‖ delegate (EIP-55)
  implementation: string | null; // EIP-1967 slots, as addresses (EIP-55), null when zero
  admin: string | null;
}

export type WatchedState = SolanaWatchedState | EvmWatchedState;

/** An account's bytes as the node returned them: the raw value behind an alert's evidence. */
export interface RawAccount {
  owner: string;
  lamports: string;
  executable: boolean;
  data: string; // base64; past RAW_DATA_MAX bytes only `sha256:<hex>` of it
  data_len: number;
}

export interface SolanaEvidence {
  method: 'getMultipleAccounts';
  slot: number;
  raw: { account: RawAccount | null; program_data?: RawAccount & { address: string; slot: number } };
}

export interface EvmEvidence {
  method: string;
  block: number;
  /** Hex as the node answered; `code` only when it is short (a 7702 designator), else its hash and size. */
  raw: {
    code: Hex | null;
    code_hash: Hex;
    code_size: number;
    nonce: Hex;
    balance: Hex;
    storage: Record<Hex, Hex>;
  };
}

/** One address's read: its state, where it was read (`slot` or `block`), and the raw answer behind it. */
export type StateRead<S, E, At> = { address: string; state: S; evidence: E } & At;
export type SolanaStateRead = StateRead<SolanaWatchedState, SolanaEvidence, { slot: number }>;
export type EvmStateRead = StateRead<EvmWatchedState, EvmEvidence, { block: number }>;

/** sha256 (hex) of the state as canonical JSON (sorted keys): equal states hash equal, whatever the key order. */
export function stateHash(state: WatchedState): string {
  return createHash('sha256').update(canonicalJson(state)).digest('hex');
}

// ---- Solana ------------------------------------------------------------------------------------------

const RAW_DATA_MAX = 2048;

const TOKEN_DECODERS = { 'spl-token': getSplTokenDecoder(), 'token-2022': getToken2022TokenDecoder() };

/**
 * The watched state of each address, `result[i]` for `addresses[i]`: one `getMultipleAccounts` per 100
 * addresses (sent together), then one more round only when some are loader-v3 programs, for their
 * ProgramData headers (the upgrade authority lives there). `slot` is the first round's context slot; the
 * second round asks for at least that slot. A failed read throws (the tick is retried whole).
 */
export async function readSolanaStates(
  rpc: SolanaRpc,
  addresses: readonly string[],
  opts: Omit<SolanaReadOptions, 'minContextSlot'> = {},
): Promise<SolanaStateRead[]> {
  const first = await rpc.getMultipleAccounts(addresses, opts);
  const pointers = first.accounts.map(programDataPointer);
  const wanted = [...new Set(pointers.filter((p) => p !== null))];
  const header = { offset: 0, length: PROGRAMDATA_METADATA_SIZE };
  const second = wanted.length
    ? await rpc.getMultipleAccounts(wanted, { ...opts, minContextSlot: first.slot, dataSlice: header })
    : { slot: first.slot, accounts: [] };
  const programData = new Map(wanted.map((address, i) => [address, second.accounts[i] ?? null]));
  return addresses.map((address, i) => {
    const [account, pointer] = [first.accounts[i] ?? null, pointers[i] ?? null];
    const data = pointer === null ? null : (programData.get(pointer) ?? null);
    const raw: SolanaEvidence['raw'] = { account: rawAccount(account) };
    if (pointer !== null && data)
      raw.program_data = { address: pointer, slot: second.slot, ...rawAccount(data)! };
    const evidence: SolanaEvidence = { method: 'getMultipleAccounts', slot: first.slot, raw };
    return { address, state: solanaState(account, data), slot: first.slot, evidence };
  });
}

/** The ProgramData address of a loader-v3 program account; null for anything else. */
function programDataPointer(account: SolanaAccount | null): string | null {
  if (!account?.executable || classifySolanaAccount(account).loader !== 'bpf-upgradeable') return null;
  const state = attempt(() => loaderV3StateDecoder.decode(account.data));
  return state?.__kind === 'Program' ? state.programData : null;
}

/** Pure: the same account bytes give the same state. */
export function solanaState(
  account: SolanaAccount | null,
  programData: SolanaAccount | null = null,
): SolanaWatchedState {
  const base: SolanaBase = {
    family: 'solana',
    exists: account !== null,
    owner_program: account?.owner ?? null,
    lamports: (account?.lamports ?? 0n).toString(),
    executable: account?.executable ?? false,
  };
  const plain = (kind: PlainClass): SolanaWatchedState => ({
    ...base,
    kind,
    data_len: account?.data.length ?? 0,
    data_hash: account && account.data.length > 0 ? sha256(account.data) : null,
  });
  if (!account) return plain('missing');
  const cls = classifySolanaAccount(account).class;
  if (cls === 'mint') {
    const mint = attempt(() => mintState(account));
    return mint ? { ...base, kind: 'mint', mint } : plain('other');
  }
  if (cls === 'token_account') {
    const tokenAccount = attempt(() => tokenAccountState(account));
    return tokenAccount ? { ...base, kind: 'token_account', token_account: tokenAccount } : plain('other');
  }
  if (cls === 'program') return { ...base, kind: 'program', program: programState(account, programData) };
  return plain(cls);
}

function mintState(account: SolanaAccount): MintState | null {
  const m = decodeMintAccount(account);
  if (m.status !== 'mint') return null;
  const ext = <K extends Extension['__kind']>(kind: K) =>
    m.extensions.find((e): e is Extract<Extension, { __kind: K }> => e.__kind === kind);
  const hook = ext('TransferHook');
  const fee = ext('TransferFeeConfig');
  const pausable = ext('PausableConfig');
  const pointer = ext('MetadataPointer');
  const defaultState = ext('DefaultAccountState');
  return {
    token_program: m.program,
    decimals: m.decimals,
    supply: m.supply.toString(),
    mint_authority: m.mintAuthority,
    freeze_authority: m.freezeAuthority,
    extensions: m.extensions.flatMap((e) => (e.__kind === 'Uninitialized' ? [] : [snake(e.__kind)])).sort(),
    permanent_delegate: key(ext('PermanentDelegate')?.delegate),
    transfer_hook_program: key(hook?.programId),
    transfer_hook_authority: key(hook?.authority),
    transfer_fee_authority: key(fee?.transferFeeConfigAuthority),
    transfer_fee_bps: fee ? fee.newerTransferFee.transferFeeBasisPoints : null,
    pausable_authority: key(pausable?.authority),
    paused: pausable ? pausable.paused : null,
    mint_close_authority: key(ext('MintCloseAuthority')?.closeAuthority),
    metadata_pointer_authority: key(pointer?.authority),
    metadata_address: key(pointer?.metadataAddress),
    metadata_update_authority: key(ext('TokenMetadata')?.updateAuthority),
    default_account_state: defaultState ? (ACCOUNT_STATES[defaultState.state] ?? null) : null,
  };
}

function tokenAccountState(account: SolanaAccount): TokenAccountState | null {
  const program = classifySolanaAccount(account).tokenProgram === 'token' ? 'spl-token' : 'token-2022';
  const t = TOKEN_DECODERS[program].decode(account.data);
  return {
    token_program: program,
    mint: t.mint,
    owner: t.owner,
    amount: t.amount.toString(),
    delegate: unwrapOption(t.delegate),
    delegated_amount: t.delegatedAmount.toString(),
    state: ACCOUNT_STATES[t.state] ?? 'uninitialized',
    close_authority: unwrapOption(t.closeAuthority),
  };
}

function programState(account: SolanaAccount, programData: SolanaAccount | null): ProgramState {
  const loader = classifySolanaAccount(account).loader ?? null;
  const header = programData ? attempt(() => loaderV3StateDecoder.decode(programData.data)) : undefined;
  const data = header?.__kind === 'ProgramData' ? header : undefined;
  return {
    loader,
    programdata_address: loader === 'bpf-upgradeable' ? programDataPointer(account) : null,
    upgrade_authority: data ? unwrapOption(data.upgradeAuthority) : null,
    last_deploy_slot: data ? Number(data.slot) : null,
  };
}

function rawAccount(account: SolanaAccount | null): RawAccount | null {
  if (!account) return null;
  const { owner, executable, data } = account;
  const encoded =
    data.length <= RAW_DATA_MAX ? Buffer.from(data).toString('base64') : `sha256:${sha256(data)}`;
  return { owner, lamports: account.lamports.toString(), executable, data: encoded, data_len: data.length };
}

const key = (value: Option<string> | string | undefined): string | null =>
  value === undefined ? null : optionalKey(value);

const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

const snake = (s: string): string => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

function attempt<T>(fn: () => T): T | undefined {
  try {
    return fn() ?? undefined;
  } catch {
    return undefined;
  }
}

// ---- EVM ---------------------------------------------------------------------------------------------

const WATCHED_SLOTS = [EIP1967_SLOTS.implementation, EIP1967_SLOTS.admin] as const;
/** Code this short is kept verbatim in the evidence: an EIP-7702 designator is 23 bytes. */
const RAW_CODE_MAX = 32;
const EVM_METHODS = 'eth_getCode,eth_getTransactionCount,eth_getBalance,eth_getStorageAt';

/**
 * The watched state of each EVM address, `result[i]` for `addresses[i]`, all at one block: the head is
 * read once (unless `opts.block` pins it), then code, nonce, balance and the two EIP-1967 slots of every
 * address are issued in the same tick, so the JSON-RPC client sends them as batches of `batchMax`.
 */
export async function readEvmStates(
  rpc: EvmRpc,
  addresses: readonly string[],
  opts: CallOptions & { block?: bigint } = {},
): Promise<EvmStateRead[]> {
  const targets = addresses.map((a, i) => parseEvmAddress(a, `addresses[${i}]`));
  const call: CallOptions = { deadlineMs: opts.deadlineMs, signal: opts.signal };
  const block = opts.block ?? (await rpc.blockNumber(call));
  const reads = await Promise.all(
    targets.map((target) => rpc.readAccount(target, { ...call, block, storageSlots: WATCHED_SLOTS })),
  );
  return reads.map((read, i) => ({ address: targets[i]!, ...evmState(read) }));
}

/** Pure: the same answers give the same state. */
export function evmState(read: EvmAccountState): Omit<EvmStateRead, 'address'> {
  const code = read.code.toLowerCase() as Hex;
  const codeSize = size(code);
  const delegate = designatedDelegate(code);
  const exists = read.nonce > 0 || read.balance > 0n || codeSize > 0;
  const codeHash = keccak256(code);
  const word = (slot: Hex): Hex => read.storage[slot] ?? '0x0';
  const state: EvmWatchedState = {
    family: 'evm',
    kind: !exists ? 'missing' : codeSize === 0 ? 'wallet' : delegate ? 'delegated_wallet' : 'contract',
    exists,
    nonce: read.nonce,
    balance: read.balance.toString(),
    code_hash: codeHash,
    code_size: codeSize,
    delegate,
    implementation: addressInWord(word(EIP1967_SLOTS.implementation)),
    admin: addressInWord(word(EIP1967_SLOTS.admin)),
  };
  const evidence: EvmEvidence = {
    method: EVM_METHODS,
    block: Number(read.block),
    raw: {
      code: codeSize <= RAW_CODE_MAX ? code : null,
      code_hash: codeHash,
      code_size: codeSize,
      nonce: numberToHex(read.nonce),
      balance: numberToHex(read.balance),
      storage: Object.fromEntries(WATCHED_SLOTS.map((slot) => [slot, word(slot)])),
    },
  };
  return { state, block: evidence.block, evidence };
}
