import {
  getMintDecoder as getToken2022MintDecoder,
  getTokenDecoder as getToken2022AccountDecoder,
  identifyToken2022Account,
  Token2022Account,
} from '@solana-program/token-2022';
import { identifyTokenAccount, TokenAccount } from '@solana-program/token';
import type { SolanaAccount } from '../../chains/solana.js';
import type { TargetKind, TargetType } from '../types.js';

/*
 * What an account on Solana is, from its owner program, `executable` flag and data — decoded by the owner
 * program's maintained codecs, never by byte offsets. Shared by the wallet and program analyzers and by the
 * risk service's `target_type_mismatch` check.
 */

export const SYSTEM_PROGRAM = '11111111111111111111111111111111';
export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
export const NATIVE_LOADER = 'NativeLoader1111111111111111111111111111111';
export const BPF_LOADER_V1 = 'BPFLoader1111111111111111111111111111111111';
export const BPF_LOADER_V2 = 'BPFLoader2111111111111111111111111111111111';
export const BPF_LOADER_UPGRADEABLE = 'BPFLoaderUpgradeab1e11111111111111111111111';
export const LOADER_V4 = 'LoaderV411111111111111111111111111111111111';

export type TokenProgramName = 'token' | 'token-2022';

/** Which loader owns (and so runs) a program: decides whether and how it can be upgraded. */
export type SolanaLoader = 'bpf-upgradeable' | 'bpf-loader-v2' | 'bpf-loader-v1' | 'loader-v4' | 'native';

/** By owner program id. A Map: the owner is the node's answer, and `constructor` must not name a loader. */
export const LOADERS: ReadonlyMap<string, SolanaLoader> = new Map<string, SolanaLoader>([
  [BPF_LOADER_UPGRADEABLE, 'bpf-upgradeable'],
  [BPF_LOADER_V2, 'bpf-loader-v2'],
  [BPF_LOADER_V1, 'bpf-loader-v1'],
  [LOADER_V4, 'loader-v4'],
  [NATIVE_LOADER, 'native'],
]);

export const tokenProgramName = (owner: string): TokenProgramName | undefined =>
  owner === TOKEN_PROGRAM ? 'token' : owner === TOKEN_2022_PROGRAM ? 'token-2022' : undefined;

/**
 * The finer-grained class behind a `TargetKind`:
 * - `system_account`: owned by the System program, no data — a wallet.
 * - `system_data_account`: owned by the System program with data (a durable nonce account).
 * - `mint` / `token_account` / `token_multisig`: SPL Token or Token-2022 accounts (`tokenProgram` says which).
 * - `program`: executable.
 * - `loader_account`: a loader's non-executable account (loader-v3 ProgramData or Buffer).
 * - `other`: owned by another program (a stake account, a PDA, …), or token-program data no codec accepts.
 * - `missing`: no account (never funded, or closed).
 */
export type SolanaAccountClass =
  | 'system_account'
  | 'system_data_account'
  | 'mint'
  | 'token_account'
  | 'token_multisig'
  | 'program'
  | 'loader_account'
  | 'other'
  | 'missing';

export interface SolanaClassification {
  kind: TargetKind;
  class: SolanaAccountClass;
  /** The owner program; null for a missing account. */
  ownerProgram: string | null;
  /** Set for token program accounts. */
  tokenProgram?: TokenProgramName;
  /** Set when the owner is a loader (programs, ProgramData, buffers). */
  loader?: SolanaLoader;
}

const KIND_OF_CLASS: Record<SolanaAccountClass, TargetKind> = {
  system_account: 'wallet',
  system_data_account: 'account',
  mint: 'token',
  token_account: 'token_account',
  token_multisig: 'account',
  program: 'program',
  loader_account: 'account',
  other: 'account',
  missing: 'missing',
};

/** Classify an account (null: no account at the address). Pure: the same bytes give the same answer. */
export function classifySolanaAccount(account: SolanaAccount | null): SolanaClassification {
  if (!account) return { kind: 'missing', class: 'missing', ownerProgram: null };
  const ownerProgram = account.owner;
  const loader = LOADERS.get(ownerProgram);
  const make = (
    cls: SolanaAccountClass,
    extra: Partial<SolanaClassification> = {},
  ): SolanaClassification => ({
    kind: KIND_OF_CLASS[cls],
    class: cls,
    ownerProgram,
    ...(loader ? { loader } : {}),
    ...extra,
  });

  if (account.executable) return make('program');
  if (loader) return make('loader_account');
  if (ownerProgram === SYSTEM_PROGRAM)
    return make(account.data.length === 0 ? 'system_account' : 'system_data_account');
  const tokenProgram = tokenProgramName(ownerProgram);
  if (tokenProgram) return make(tokenAccountClass(tokenProgram, account.data), { tokenProgram });
  return make('other');
}

/** Mint, token account or multisig, as the token program's own codecs tell them apart. */
function tokenAccountClass(program: TokenProgramName, data: Uint8Array): SolanaAccountClass {
  try {
    if (program === 'token') {
      const type = identifyTokenAccount(data);
      if (type === TokenAccount.Mint) return 'mint';
      return type === TokenAccount.Token ? 'token_account' : 'token_multisig';
    }
    const type = identifyToken2022Account(data);
    if (type === Token2022Account.Mint) return 'mint';
    return type === Token2022Account.Token ? 'token_account' : 'token_multisig';
  } catch {
    // identify* knows the base sizes only. A Token-2022 account with extensions is longer; its decoders
    // check the AccountType marker (mint 1 / account 2) behind the base layout and reject the other kind.
  }
  if (program === 'token-2022') {
    if (decodes(() => getToken2022MintDecoder().decode(data))) return 'mint';
    if (decodes(() => getToken2022AccountDecoder().decode(data))) return 'token_account';
  }
  return 'other';
}

function decodes(decode: () => unknown): boolean {
  try {
    decode();
    return true;
  } catch {
    return false;
  }
}

/** The kind each `target_type` expects on Solana (`contract` is an EVM target type: nothing matches). */
export const SOLANA_KIND_OF_TARGET_TYPE: Readonly<Record<TargetType, TargetKind | null>> = {
  wallet: 'wallet',
  program: 'program',
  token: 'token',
  contract: null,
};

/**
 * Whether the risk service should raise `target_type_mismatch` (docs/risk.md#target-kinds): the account exists,
 * its kind is known, and it is not what `target_type` says. A missing account is `account_not_found`
 * instead, and an unknown kind (the account read did not finish: `facts.kind` null) never mismatches.
 */
export function isSolanaTargetTypeMismatch(kind: TargetKind | null, targetType: TargetType): boolean {
  if (kind === null || kind === 'missing') return false;
  return kind !== SOLANA_KIND_OF_TARGET_TYPE[targetType];
}

const KIND_LABEL: Record<TargetKind, string> = {
  wallet: 'a wallet (system account)',
  token: 'a token mint',
  token_account: 'a token account',
  program: 'an executable program',
  contract: 'a contract',
  delegated_wallet: 'a delegated wallet',
  account: 'a program-owned data account',
  missing: 'no account',
};

/** "a token account": for the `target_type_mismatch` detail. */
export const describeSolanaKind = (kind: TargetKind): string => KIND_LABEL[kind];
