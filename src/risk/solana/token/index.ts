/** The Solana token analyzer (scan/token, risk-v2 `token`): what other code may use of it. */
export { analyzeSolanaToken } from './analyze.js';
export { formatUnits } from './decode.js';
export { extensionView } from './extensions.js';
export { metaplexMetadataAddress } from './metadata.js';
export type {
  HolderView,
  HoldersView,
  KnownTokenContext,
  SolanaTokenAnalysis,
  SolanaTokenNotAMint,
  SolanaTokenNotFound,
  SolanaTokenOptions,
  SolanaTokenResult,
  TokenExtensionView,
  TokenMetadataView,
  TokenProgramName,
  TokenView,
} from './types.js';
