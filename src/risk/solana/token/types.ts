import type { Address } from '@solana/kit';
import type { Extension } from '@solana-program/token-2022';
import type { SolanaKnownRegistry } from '../../known/solana.js';
import type { AnalyzeOptions, ChainAnalysis, TargetKind } from '../../types.js';

export type TokenProgramName = 'spl-token' | 'token-2022';

export interface SolanaTokenOptions extends AnalyzeOptions {
  known: SolanaKnownRegistry;
}

// The views of the token scan (`token`, `holders`, `known`) are its response schema's: src/risk/schemas.ts.
export type {
  HoldersView,
  HolderView,
  KnownTokenContext,
  TokenExtensionView,
  TokenMetadataView,
  TokenView,
} from '../../schemas.js';
import type { HoldersView, KnownTokenContext, TokenView } from '../../schemas.js';

export interface SolanaTokenAnalysis extends ChainAnalysis {
  status: 'mint';
  kind: 'token';
  tokenProgram: TokenProgramName;
  token: TokenView;
  /** null when the holder check did not finish (then `complete` is false). */
  holders: HoldersView | null;
  known: KnownTokenContext | null;
}

/** No account at the address (scan/token → 404 not_found). */
export interface SolanaTokenNotFound {
  status: 'not_found';
  kind: 'missing';
  dataAsOf: { slot: number };
}

/** An account that is not an SPL Token / Token-2022 mint (scan/token → 422 not_a_mint). */
export interface SolanaTokenNotAMint {
  status: 'not_a_mint';
  kind: Exclude<TargetKind, 'token' | 'missing'>;
  /** The program owning the account. */
  ownerProgram: string;
  dataAsOf: { slot: number };
}

export type SolanaTokenResult = SolanaTokenAnalysis | SolanaTokenNotFound | SolanaTokenNotAMint;

/** A decoded mint, as every check of the analysis sees it. */
export interface MintContext {
  mint: Address;
  slot: number;
  program: TokenProgramName;
  programAddress: string;
  decimals: number;
  supply: bigint;
  mintAuthority: string | null;
  freezeAuthority: string | null;
  extensions: Extension[];
}

/** A sub-check that did not finish (→ `check_incomplete`): the check, the RPC method, and why. */
export interface IncompleteCheck {
  check: string;
  method: string;
  reason: string;
}
