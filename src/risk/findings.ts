/**
 * The findings catalog (docs/risk.md#findings-catalog): stable codes with their default severity and title. Codes are added,
 * never renamed. Analyzers raise findings by code; intent- and context-specific severities are applied
 * where the finding is raised (e.g. `account_not_found` is medium for a preflight `transfer`).
 */
export const SEVERITIES = ['info', 'low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

export const CATALOG = {
  sanctioned_address: { severity: 'critical', title: 'Sanctioned address' },
  org_denylisted: { severity: 'critical', title: "On your organisation's deny list" },
  target_type_mismatch: { severity: 'medium', title: 'Target is not the kind stated' },
  account_not_found: { severity: 'low', title: 'No account at this address' },
  check_incomplete: { severity: 'info', title: 'A check did not finish' },
  new_account: { severity: 'low', title: 'Recently created account' },
  token_delegate_set: { severity: 'medium', title: 'A delegate can move some of these tokens' },
  frozen_token_accounts: { severity: 'info', title: 'Frozen token accounts' },
  interacted_with_flagged: { severity: 'high', title: 'Recent transactions involve a flagged address' },
  mint_authority_enabled: { severity: 'high', title: 'Supply can still be minted' },
  freeze_authority_enabled: { severity: 'high', title: 'Holders can be frozen' },
  permanent_delegate: { severity: 'critical', title: 'A permanent delegate can move anyone’s tokens' },
  transfer_hook: { severity: 'high', title: 'A program runs on every transfer' },
  transfer_fee: { severity: 'medium', title: 'Transfers pay a fee' },
  default_account_state_frozen: { severity: 'high', title: 'New token accounts start frozen' },
  non_transferable: { severity: 'high', title: 'Tokens cannot be transferred' },
  pausable: { severity: 'high', title: 'Transfers can be paused' },
  mint_close_authority: { severity: 'medium', title: 'The mint can be closed' },
  confidential_transfers: { severity: 'low', title: 'Balances can be hidden' },
  metadata_mutable: { severity: 'low', title: 'Name, symbol and image can be changed' },
  holder_concentration: { severity: 'medium', title: 'Supply is concentrated in few holders' },
  copycat_symbol: { severity: 'high', title: 'Imitates a well-known token' },
  zero_supply: { severity: 'medium', title: 'No supply' },
  authority_changed: {
    severity: 'high',
    title: 'A well-known token’s authority differs from the expected one',
  },
  eip7702_delegated: { severity: 'high', title: 'Account code is delegated (EIP-7702)' },
  is_contract: { severity: 'info', title: 'Address holds contract code' },
  fresh_address: { severity: 'low', title: 'Address has never been used' },
  upgradeable_proxy: { severity: 'medium', title: 'Upgradeable proxy (EIP-1967)' },
  lookalike_address: {
    severity: 'high',
    title: 'Looks like an address you trust (possible address poisoning)',
  },
  approval_to_eoa: { severity: 'high', title: 'Approval to an externally owned account' },
  program_upgradeable: { severity: 'medium', title: 'Program can be upgraded' },
  blind_signature: { severity: 'critical', title: 'Blind signature of a hash or raw bytes' },
  counterparty_flagged: {
    severity: 'critical',
    title: 'The payload pays, approves or hands authority to a flagged address',
  },
  authority_transfer: { severity: 'critical', title: 'Control of your account goes to another key' },
  unlimited_approval: { severity: 'high', title: 'Unlimited approval (or one covering your whole balance)' },
  approval_for_all: { severity: 'high', title: 'Operator approval over a whole collection' },
  outflow_without_inflow: { severity: 'high', title: 'Assets leave and nothing comes back' },
  permit_signature: { severity: 'medium', title: 'Off-chain approval (a signature, no transaction)' },
  simulation_reverted: { severity: 'medium', title: 'The transaction fails in simulation' },
  chain_mismatch: { severity: 'medium', title: 'Signed for another chain than the one asked about' },
  durable_nonce: { severity: 'medium', title: 'Durable nonce: the transaction never expires' },
  close_to_other: {
    severity: 'medium',
    title: 'A token account is closed with its rent sent to another key',
  },
  burn_from_any: { severity: 'high', title: "Someone can burn anyone's tokens" },
  fee_modifiable: { severity: 'medium', title: 'Transfer taxes can be changed' },
  transfer_limits: { severity: 'medium', title: 'Transfers and wallets can be capped' },
  trading_switch: { severity: 'high', title: 'Trading can be switched off' },
  selfdestruct: { severity: 'low', title: 'The contract contains SELFDESTRUCT' },
  arbitrary_delegatecall: {
    severity: 'medium',
    title: 'Runs code from another address (DELEGATECALL) outside a known proxy pattern',
  },
  owner_flagged: { severity: 'critical', title: "The token's owner is a flagged address" },
  cannot_sell: { severity: 'critical', title: 'Cannot be sold (honeypot)' },
  no_liquidity: { severity: 'medium', title: 'No pool to sell into' },
  risky_approval: { severity: 'high', title: 'An outstanding approval to a risky spender' },
} as const satisfies Record<string, { severity: Severity; title: string }>;

export type FindingCode = keyof typeof CATALOG;

export interface Evidence {
  /** The RPC method the value was read with, and where (`slot` on Solana, `block` on EVM chains). */
  method: string;
  slot?: number;
  block?: number;
  value: unknown;
}

/** Who a finding is about, when a preflight judges more than its target (a payload's counterparties). */
export interface FindingSubject {
  role: 'target' | 'spender' | 'operator' | 'recipient' | 'authority' | 'signature' | 'transaction';
  address: string | null;
}

export interface Finding {
  code: FindingCode;
  severity: Severity;
  title: string;
  detail: string;
  evidence: Evidence;
  suppressed: boolean;
  suppressed_reason?: string;
  subject?: FindingSubject;
  /** Set when a rule lowered the severity so that the finding no longer weighs (kept visible). */
  loweredFrom?: Severity;
}

export function finding(
  code: FindingCode,
  detail: string,
  evidence: Evidence,
  options: { severity?: Severity } = {},
): Finding {
  const entry = CATALOG[code];
  return {
    code,
    severity: options.severity ?? entry.severity,
    title: entry.title,
    detail,
    evidence,
    suppressed: false,
  };
}

export const suppress = (f: Finding, reason: string): Finding => ({
  ...f,
  suppressed: true,
  suppressed_reason: reason,
});
