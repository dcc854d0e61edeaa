import type { Address, Hex } from 'viem';
import type { Evidence } from '../findings.js';

/*
 * What a shield preflight payload is (after parsing) and what inspecting it found: the simulation (or,
 * for a signature, what it grants), the signature's own shape, and the counterparties it names. Domain
 * objects: amounts as bigint, times as Date; present.ts writes the HTTP form.
 */

/** One `authorizationList` entry of a type-4 (EIP-7702) transaction. */
export interface EvmAuthorization {
  chainId: number;
  address: Hex;
  nonce: number;
  yParity: number;
  r: Hex;
  s: Hex;
}

/** An `eth_sendTransaction` object, checked. */
export interface EvmTransaction {
  from: Hex;
  /** null for a contract creation. */
  to: Hex | null;
  data: Hex;
  value: bigint;
  gas?: bigint;
  chainId?: number;
  authorizationList: EvmAuthorization[];
}

export type Payload =
  | { kind: 'evm_transaction'; tx: EvmTransaction }
  | { kind: 'solana_transaction'; wire: Uint8Array }
  | { kind: 'typed_data'; typed: TypedDataInput }
  | { kind: 'message'; method: 'personal_sign' | 'eth_sign'; data: Hex };

/** EIP-712 as `eth_signTypedData_v4` receives it (shape-checked, not yet hashed). */
export interface TypedDataInput {
  types: Record<string, { name: string; type: string }[]>;
  domain: Record<string, unknown>;
  primaryType: string;
  message: Record<string, unknown>;
}

export type AssetType = 'native' | 'erc20' | 'erc721' | 'erc1155' | 'spl';

export interface Asset {
  type: AssetType;
  /** The token contract or mint; absent for the native asset. */
  address?: string;
  tokenId?: bigint;
  symbol?: string;
  decimals?: number;
}

export interface AssetChange {
  owner: string;
  asset: Asset;
  /** Signed, raw units. */
  amount: bigint;
}

export interface Approval {
  owner: string;
  asset: Asset;
  spender: string;
  amount: bigint;
  /** At least 2^(w−1) for the amount field's width w, or DAI's `allowed: true`, or an operator approval. */
  unlimited: boolean;
  /** The amount is at least the owner's balance of the asset; null when the balance is unknown. */
  coversBalance: boolean | null;
  /** An NFT operator approval (`setApprovalForAll`) or a Solana delegate over the whole account. */
  all: boolean;
  /** When the allowance itself ends (Permit2 `expiration`); null when it does not. */
  expiresAt: Date | null;
  source: 'transaction' | 'signature';
}

export type AuthorityType =
  | 'account_owner'
  | 'close_account'
  | 'mint_tokens'
  | 'freeze_account'
  | 'upgrade_authority'
  | 'program_owner'
  | 'code_delegation';

export interface AuthorityChange {
  account: string;
  authorityType: AuthorityType;
  from: string | null;
  to: string | null;
}

export type SimulationStatus = 'success' | 'reverted' | 'unavailable' | 'not_applicable';

export interface Simulation {
  status: SimulationStatus;
  /** `eth_simulateV1`, `debug_traceCall`, `simulateTransaction`, `decode` (calldata alone), `signature`. */
  method: string;
  block?: number;
  slot?: number;
  error?: string;
  assetChanges: AssetChange[];
  approvals: Approval[];
  authorityChanges: AuthorityChange[];
}

export type SignatureKind =
  | 'erc2612_permit'
  | 'dai_permit'
  | 'permit2_allowance'
  | 'permit2_transfer'
  | 'transfer_authorization'
  | 'seaport_order'
  | 'unknown';

export interface SignatureInfo {
  standard: 'eip712' | 'eth_sign' | 'personal_sign';
  kind: SignatureKind;
  chainId: number | null;
  verifyingContract: string | null;
  /** The signature's own deadline (when it can no longer be used), or null. */
  deadline: Date | null;
}

export type CounterpartyRole = 'spender' | 'operator' | 'recipient' | 'authority';

/** An address the payload gives something to: judged by the engine like a target, with its role's rules. */
export interface PayloadCounterparty {
  address: string;
  role: CounterpartyRole;
  /** What makes it one (the approval, transfer or authority change), for the findings' evidence. */
  evidence: Evidence;
}

export interface EvmSimulationOptions {
  signal?: AbortSignal;
  deadlineMs: number;
}

/** The simulation of an EVM transaction, with what its second round trip (token metadata) still has to fill. */
export interface EvmSimulated {
  simulation: Simulation;
  /** The block the simulation ran on top of (`eth_blockNumber` of its batch); null when unknown. */
  block: bigint | null;
  counterparties: PayloadCounterparty[];
  /** ERC-20 tokens only the logs revealed: their symbol, decimals and `from`'s balance are read next. */
  unresolvedTokens: Address[];
  /** Why the simulation did not run (for the `check_incomplete` finding), when it did not. */
  failure?: unknown;
}
