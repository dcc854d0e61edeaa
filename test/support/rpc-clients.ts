import { EVM_METHODS, EvmRpc } from '../../src/chains/evm.js';
import { JsonRpcClient, type ProviderTuning } from '../../src/chains/jsonrpc.js';
import { BUILT_IN_NETWORKS, type NetworkDef } from '../../src/chains/registry.js';
import { SOLANA_METHODS, SolanaRpc } from '../../src/chains/solana.js';

const network = (chain: string): NetworkDef =>
  BUILT_IN_NETWORKS.find((n) => n.chain === chain && n.network === 'mainnet')!;

/** Test tuning: short backoffs, no rate limit, a circuit that tolerates deliberate faults. */
export const TEST_TUNING: ProviderTuning = {
  deadlineMs: 5000,
  timeoutMs: 3000,
  retries: 1,
  backoffBaseMs: 10,
  backoffMaxMs: 20,
  ratePerS: 0,
  concurrency: 8,
  batchMax: 50,
  circuitFailures: 10,
  // min ≥ max: a fixed cool-down of circuitCooldownMs, unless a test sets both.
  circuitCooldownMinMs: 1000,
  circuitCooldownMs: 1000,
  maxResponseBytes: 32 * 1024 * 1024,
  retryAfterMaxMs: 60_000,
};

/** A fresh EVM client (own circuit breaker, nothing in flight) for one URL, as the service builds it. */
export const testEvmRpc = (url: string, tuning: Partial<ProviderTuning> = {}): EvmRpc =>
  new EvmRpc(
    new JsonRpcClient({
      network: 'ethereum/mainnet',
      urls: [url],
      knownMethods: EVM_METHODS,
      ...TEST_TUNING,
      ...tuning,
    }),
    network('ethereum'),
  );

/** A fresh Solana client for one URL, as the service builds it. */
export const testSolanaRpc = (url: string, tuning: Partial<ProviderTuning> = {}): SolanaRpc =>
  new SolanaRpc(
    new JsonRpcClient({
      network: 'solana/mainnet',
      urls: [url],
      knownMethods: SOLANA_METHODS,
      ...TEST_TUNING,
      ...tuning,
    }),
    network('solana'),
  );
