import type { Address } from 'viem';
import { PERMIT2 } from '../../../src/risk/known/spenders.js';

/*
 * EIP-712 payloads as dApps ask wallets to sign them (`eth_signTypedData_v4`), for the shield tests, the
 * demo chain and the bench: the published type definitions of Permit2's AllowanceTransfer
 * (github.com/Uniswap/permit2, src/libraries/PermitHash.sol) and of ERC-2612.
 */

const PERMIT2_DOMAIN_TYPE = [
  { name: 'name', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
];
const PERMIT_DETAILS = [
  { name: 'token', type: 'address' },
  { name: 'amount', type: 'uint160' },
  { name: 'expiration', type: 'uint48' },
  { name: 'nonce', type: 'uint48' },
];

export interface Permit2Detail {
  token: Address;
  amount: bigint;
  /** Unix seconds. */
  expiration: bigint | number;
}

/** Permit2 `PermitSingle` (one detail) or `PermitBatch` (several), on `chainId`. */
export function permit2TypedData(args: {
  chainId: number;
  spender: Address;
  details: Permit2Detail[];
  sigDeadline: bigint | number;
  batch?: boolean;
}) {
  const batch = args.batch ?? args.details.length > 1;
  const details = args.details.map((d) => ({
    token: d.token,
    amount: d.amount.toString(),
    expiration: String(d.expiration),
    nonce: '0',
  }));
  return {
    types: {
      EIP712Domain: PERMIT2_DOMAIN_TYPE,
      [batch ? 'PermitBatch' : 'PermitSingle']: [
        { name: 'details', type: batch ? 'PermitDetails[]' : 'PermitDetails' },
        { name: 'spender', type: 'address' },
        { name: 'sigDeadline', type: 'uint256' },
      ],
      PermitDetails: PERMIT_DETAILS,
    },
    primaryType: batch ? 'PermitBatch' : 'PermitSingle',
    domain: { name: 'Permit2', chainId: args.chainId, verifyingContract: PERMIT2 },
    message: {
      details: batch ? details : details[0]!,
      spender: args.spender,
      sigDeadline: String(args.sigDeadline),
    },
  };
}

/** ERC-2612 `Permit` of an ERC-20 whose EIP-712 domain is (`name`, version "1", `chainId`, the token). */
export function erc2612TypedData(args: {
  name: string;
  chainId: number;
  token: Address;
  owner: Address;
  spender: Address;
  value: bigint;
  deadline: bigint | number;
}) {
  return {
    types: {
      EIP712Domain: [
        { name: 'name', type: 'string' },
        { name: 'version', type: 'string' },
        { name: 'chainId', type: 'uint256' },
        { name: 'verifyingContract', type: 'address' },
      ],
      Permit: [
        { name: 'owner', type: 'address' },
        { name: 'spender', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'nonce', type: 'uint256' },
        { name: 'deadline', type: 'uint256' },
      ],
    },
    primaryType: 'Permit',
    domain: { name: args.name, version: '1', chainId: args.chainId, verifyingContract: args.token },
    message: {
      owner: args.owner,
      spender: args.spender,
      value: args.value.toString(),
      nonce: '0',
      deadline: String(args.deadline),
    },
  };
}
