import type { SignatureInfo, SolanaRpc, SolanaTransaction } from '../../chains/solana.js';
import type { Counterparty } from '../types.js';
import {
  BPF_LOADER_UPGRADEABLE,
  BPF_LOADER_V1,
  BPF_LOADER_V2,
  LOADER_V4,
  NATIVE_LOADER,
  SYSTEM_PROGRAM,
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
} from './kind.js';

/** The recent transactions of a Solana wallet and the counterparties they name (analyzeSolanaWallet). */

/**
 * Programs and sysvars nearly every transaction touches: never counterparties. Only infrastructure that
 * cannot be anybody's wallet belongs here (lists are matched against what is left).
 */
export const SOLANA_INFRASTRUCTURE: ReadonlySet<string> = new Set([
  SYSTEM_PROGRAM,
  TOKEN_PROGRAM,
  TOKEN_2022_PROGRAM,
  NATIVE_LOADER,
  BPF_LOADER_V1,
  BPF_LOADER_V2,
  BPF_LOADER_UPGRADEABLE,
  LOADER_V4,
  'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL', // Associated Token Account
  'ComputeBudget111111111111111111111111111111',
  'AddressLookupTab1e1111111111111111111111111',
  'Vote111111111111111111111111111111111111111',
  'Stake11111111111111111111111111111111111111',
  'Config1111111111111111111111111111111111111',
  'Ed25519SigVerify111111111111111111111111111',
  'KeccakSecp256k11111111111111111111111111111',
  'Secp256r1SigVerify1111111111111111111111111',
  'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr', // SPL Memo v2
  'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo', // SPL Memo v1
  'SysvarC1ock11111111111111111111111111111111',
  'SysvarEpochSchedu1e111111111111111111111111',
  'SysvarFees111111111111111111111111111111111',
  'Sysvar1nstructions1111111111111111111111111',
  'SysvarRecentB1ockHashes11111111111111111111',
  'SysvarRent111111111111111111111111111111111',
  'SysvarRewards111111111111111111111111111111',
  'SysvarS1otHashes111111111111111111111111111',
  'SysvarS1otHistory11111111111111111111111111',
  'SysvarStakeHistory1111111111111111111111111',
  'SysvarEpochRewards1111111111111111111111111',
  'SysvarLastRestartS1ot1111111111111111111111',
]);

/** The recent transactions read, and those the node did not give. */
export interface RecentTransactions {
  transactions: SolanaTransaction[];
  /** Signatures the node answered `null` for (unknown, or pruned from its history). */
  unavailable: string[];
  failed: { signature: string; reason: unknown }[];
}

/** All in one batch (same tick, history group). */
export async function readTransactions(
  rpc: SolanaRpc,
  signatures: readonly SignatureInfo[],
  options: { signal?: AbortSignal; batchGroup: string },
): Promise<RecentTransactions> {
  const answers = await Promise.allSettled(signatures.map((s) => rpc.getTransaction(s.signature, options)));
  const out: RecentTransactions = { transactions: [], unavailable: [], failed: [] };
  answers.forEach((answer, i) => {
    const signature = signatures[i]!.signature;
    if (answer.status === 'rejected') out.failed.push({ signature, reason: answer.reason });
    else if (answer.value === null) out.unavailable.push(signature);
    else out.transactions.push(answer.value);
  });
  return out;
}

/**
 * The account keys of `transactions` other than the wallet's own and infrastructure, each once, with the
 * first transaction that names it.
 */
export function counterpartiesOf(
  transactions: readonly SolanaTransaction[],
  address: string,
): Counterparty[] {
  const counterparties: Counterparty[] = [];
  const seen = new Set<string>([address]);
  for (const tx of transactions) {
    for (const key of tx.accountKeys) {
      if (seen.has(key) || SOLANA_INFRASTRUCTURE.has(key)) continue;
      seen.add(key);
      counterparties.push({ address: key, signature: tx.signatures[0] ?? '', slot: tx.slot });
    }
  }
  return counterparties;
}
