import {
  getMintDecoder as getSplMintDecoder,
  getTokenDecoder as getSplTokenDecoder,
  identifyTokenAccount,
  TOKEN_PROGRAM_ADDRESS,
  TokenAccount,
} from '@solana-program/token';
import {
  getMintDecoder as getToken2022MintDecoder,
  getTokenDecoder as getToken2022TokenDecoder,
  identifyToken2022Account,
  TOKEN_2022_PROGRAM_ADDRESS,
  Token2022Account,
  type Extension,
} from '@solana-program/token-2022';
import { isOption, unwrapOption, type Option } from '@solana/kit';
import type { SolanaAccount } from '../../../chains/solana.js';
import type { MintContext, SolanaTokenNotAMint, TokenProgramName } from './types.js';

const SYSTEM_PROGRAM = '11111111111111111111111111111111';
/** The all-zero key: Token-2022's "none" in its OptionalNonZeroPubkey fields. */
export const ZERO_KEY = SYSTEM_PROGRAM;

/** The token programs' codecs, built once: building a Token-2022 decoder (its extensions) is costly. */
const DECODERS = {
  splMint: getSplMintDecoder(),
  splToken: getSplTokenDecoder(),
  token2022Mint: getToken2022MintDecoder(),
  token2022Token: getToken2022TokenDecoder(),
};

export type DecodedMint =
  | {
      status: 'mint';
      program: TokenProgramName;
      decimals: number;
      supply: bigint;
      mintAuthority: string | null;
      freezeAuthority: string | null;
      extensions: Extension[];
    }
  | { status: 'other'; kind: SolanaTokenNotAMint['kind'] };

/** Mint, token account, multisig or something else, by the owning program's own codecs. */
export function decodeMintAccount(account: SolanaAccount): DecodedMint {
  const other = (kind: SolanaTokenNotAMint['kind']): DecodedMint => ({ status: 'other', kind });
  if (account.executable) return other('program');
  if (account.owner === TOKEN_PROGRAM_ADDRESS) {
    let type: TokenAccount;
    try {
      type = identifyTokenAccount(account.data);
    } catch {
      return other('account');
    }
    if (type === TokenAccount.Token) return other('token_account');
    if (type !== TokenAccount.Mint) return other('account');
    const m = DECODERS.splMint.decode(account.data);
    if (!m.isInitialized) return other('account');
    return {
      status: 'mint',
      program: 'spl-token',
      decimals: m.decimals,
      supply: m.supply,
      mintAuthority: optionalKey(m.mintAuthority),
      freezeAuthority: optionalKey(m.freezeAuthority),
      extensions: [],
    };
  }
  if (account.owner === TOKEN_2022_PROGRAM_ADDRESS) {
    const type = identifyToken2022(account.data);
    if (type === Token2022Account.Token) return other('token_account');
    if (type !== Token2022Account.Mint) return other('account');
    const m = DECODERS.token2022Mint.decode(account.data);
    if (!m.isInitialized) return other('account');
    return {
      status: 'mint',
      program: 'token-2022',
      decimals: m.decimals,
      supply: m.supply,
      mintAuthority: optionalKey(m.mintAuthority),
      freezeAuthority: optionalKey(m.freezeAuthority),
      extensions: unwrapOption(m.extensions) ?? [],
    };
  }
  if (account.owner === SYSTEM_PROGRAM && account.data.length === 0) return other('wallet');
  return other('account');
}

/**
 * Token-2022 accounts: the base sizes identify themselves; an extended account (longer than a token
 * account) is a mint if the mint codec accepts it (it checks the account-type marker), else a token
 * account if the token codec does.
 */
function identifyToken2022(data: Uint8Array): Token2022Account | undefined {
  try {
    return identifyToken2022Account(data);
  } catch {
    // not one of the base sizes
  }
  for (const [type, decoder] of [
    [Token2022Account.Mint, DECODERS.token2022Mint],
    [Token2022Account.Token, DECODERS.token2022Token],
  ] as const) {
    try {
      decoder.decode(data);
      return type;
    } catch {
      // not this type
    }
  }
  return undefined;
}

/** The owner of a token account of this mint, by the program's codec; null if it is not one. */
export function tokenOwner(ctx: MintContext, account: SolanaAccount | null): string | null {
  if (!account || account.owner !== ctx.programAddress) return null;
  try {
    const token =
      ctx.program === 'spl-token'
        ? DECODERS.splToken.decode(account.data)
        : DECODERS.token2022Token.decode(account.data);
    return token.mint === ctx.mint ? token.owner : null;
  } catch {
    return null;
  }
}

/** An Option<Address> (or a Token-2022 OptionalNonZeroPubkey) as an address or null. */
export function optionalKey(value: Option<string> | string): string | null {
  const key = isOption(value) ? unwrapOption(value) : value;
  return key === null ? null : nonZero(key);
}

export function nonZero(key: string): string | null {
  return key === ZERO_KEY ? null : key;
}

/** Raw u64 as an exact decimal string of whole tokens ("1000000", "1.5"). */
export function formatUnits(raw: bigint, decimals: number): string {
  if (decimals === 0) return raw.toString();
  const digits = raw.toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, -decimals);
  const fraction = digits.slice(-decimals).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}
