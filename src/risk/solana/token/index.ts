/** The Solana token analyzer (scan/token, risk-v2 `token`): what other code may use of it. */
export { analyzeSolanaToken } from './analyze.js';
export { formatUnits } from './decode.js';
export { metaplexMetadataAddress } from './metadata.js';
export type { SolanaTokenAnalysis, SolanaTokenResult, TokenProgramName } from './types.js';
