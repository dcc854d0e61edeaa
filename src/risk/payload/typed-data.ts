import { getAddress, hashTypedData, isAddress, type Address, type Hex, type TypedDataDefinition } from 'viem';
import { clip } from '../../chains/registry.js';
import { invalidRequest } from '../../platform/errors.js';
import { PERMIT2 } from '../known/spenders.js';
import type {
  Approval,
  Asset,
  PayloadCounterparty,
  SignatureInfo,
  SignatureKind,
  TypedDataInput,
} from './types.js';

/*
 * EIP-712 typed data, before it is signed (docs/risk.md#signatures): hashed with viem (which checks every
 * value against its type), then recognised by its shape — ERC-2612 and DAI permits, Permit2 allowances and
 * transfers, EIP-3009 transfer authorizations, Seaport orders — and turned into what the signature grants.
 * Nothing is simulated: a signature moves nothing until someone submits it, which is why drainers prefer
 * them.
 */

const UNLIMITED_256 = 2n ** 255n;
const UNLIMITED_160 = 2n ** 159n;
const MAX_UINT256 = 2n ** 256n - 1n;

export interface TypedDataInspection {
  signature: SignatureInfo;
  /** What the signature lets others take from `from` (or, for a Seaport order, what it offers). */
  approvals: Approval[];
  counterparties: PayloadCounterparty[];
  /** Seaport: true when no consideration item pays `from` (it gives and gets nothing back). */
  givesWithoutReturn: boolean;
  /** The EIP-712 digest the wallet would sign. */
  digest: Hex;
}

type Message = Record<string, unknown>;

/** The inspection of `typed` as `from` would sign it. A value that does not fit its type → 400. */
export function inspectTypedData(typed: TypedDataInput, from: Address): TypedDataInspection {
  let digest: Hex;
  try {
    digest = hashTypedData(typed as unknown as TypedDataDefinition);
  } catch (err) {
    const why =
      err instanceof Error ? ((err as { shortMessage?: string }).shortMessage ?? err.message) : 'invalid';
    throw invalidRequest(`typed_data does not hash as EIP-712: ${clip(why, 200)}`, [
      { path: 'typed_data', message: clip(why, 200) },
    ]);
  }
  const domain = typed.domain;
  const chainId = domain.chainId === undefined ? null : toNumber(domain.chainId);
  const verifyingContract =
    typeof domain.verifyingContract === 'string' && isAddress(domain.verifyingContract, { strict: false })
      ? getAddress(domain.verifyingContract.toLowerCase())
      : null;
  const m = typed.message;
  const base = { owner: from, coversBalance: null, expiresAt: null, source: 'signature' as const };
  const erc20 = (token: unknown): Asset => ({ type: 'erc20', address: addressField(token, 'token') });
  const sig = (kind: SignatureKind, deadline: unknown): SignatureInfo => ({
    standard: 'eip712',
    kind,
    chainId,
    verifyingContract,
    deadline: deadline === undefined ? null : dateOf(deadline),
  });
  const counterparties: PayloadCounterparty[] = [];
  const evidence = (value: unknown) => ({ method: 'eth_signTypedData_v4', value });
  const party = (address: string, role: PayloadCounterparty['role'], value: unknown) => {
    if (address.toLowerCase() === from.toLowerCase()) return;
    if (counterparties.some((c) => c.address.toLowerCase() === address.toLowerCase())) return;
    counterparties.push({ address, role, evidence: evidence(value) });
  };
  const result = (
    signature: SignatureInfo,
    approvals: Approval[],
    givesWithoutReturn = false,
  ): TypedDataInspection => {
    for (const a of approvals)
      party(a.spender, a.all ? 'operator' : 'spender', {
        kind: signature.kind,
        amount: a.unlimited ? 'unlimited' : a.amount.toString(),
      });
    return { signature, approvals, counterparties, givesWithoutReturn, digest };
  };
  const fields = new Set((typed.types[typed.primaryType] ?? []).map((f) => f.name));
  const has = (...names: string[]) => names.every((n) => fields.has(n));

  // ERC-2612: Permit(owner, spender, value, nonce, deadline), signed by the owner.
  if (typed.primaryType === 'Permit' && has('owner', 'spender', 'value', 'deadline') && verifyingContract) {
    mustBeFrom(m.owner, from, 'owner');
    const amount = BigInt(m.value as string);
    return result(sig('erc2612_permit', m.deadline), [
      {
        ...base,
        asset: { type: 'erc20', address: verifyingContract },
        spender: addressField(m.spender, 'spender'),
        amount,
        unlimited: amount >= UNLIMITED_256,
        all: false,
      },
    ]);
  }
  // DAI: Permit(holder, spender, nonce, expiry, allowed): all or nothing.
  if (typed.primaryType === 'Permit' && has('holder', 'spender', 'expiry', 'allowed') && verifyingContract) {
    mustBeFrom(m.holder, from, 'holder');
    const approvals: Approval[] =
      m.allowed === true
        ? [
            {
              ...base,
              asset: { type: 'erc20', address: verifyingContract },
              spender: addressField(m.spender, 'spender'),
              amount: MAX_UINT256,
              unlimited: true,
              all: false,
            },
          ]
        : [];
    return result(sig('dai_permit', BigInt(m.expiry as string) === 0n ? undefined : m.expiry), approvals);
  }
  // Permit2 AllowanceTransfer: PermitSingle / PermitBatch(details: {token, amount, expiration, nonce}).
  if (
    (typed.primaryType === 'PermitSingle' || typed.primaryType === 'PermitBatch') &&
    has('details', 'spender', 'sigDeadline')
  ) {
    const details = (Array.isArray(m.details) ? m.details : [m.details]) as Message[];
    const spender = addressField(m.spender, 'spender');
    return result(
      sig('permit2_allowance', m.sigDeadline),
      details.map((d) => {
        const amount = BigInt(d.amount as string);
        return {
          ...base,
          asset: erc20(d.token),
          spender,
          amount,
          unlimited: amount >= UNLIMITED_160,
          all: false,
          expiresAt: dateOf(d.expiration),
        };
      }),
    );
  }
  // Permit2 SignatureTransfer: Permit(Batch)(Witness)TransferFrom(permitted: {token, amount}, spender, nonce, deadline).
  if (
    /^Permit(Batch)?(Witness)?TransferFrom$/.test(typed.primaryType) &&
    has('permitted', 'spender', 'deadline')
  ) {
    const permitted = (Array.isArray(m.permitted) ? m.permitted : [m.permitted]) as Message[];
    const spender = addressField(m.spender, 'spender');
    return result(
      sig('permit2_transfer', m.deadline),
      permitted.map((p) => {
        const amount = BigInt(p.amount as string);
        return {
          ...base,
          asset: erc20(p.token),
          spender,
          amount,
          unlimited: amount >= UNLIMITED_256,
          all: false,
          expiresAt: dateOf(m.deadline),
        };
      }),
    );
  }
  // EIP-3009: (Transfer|Receive)WithAuthorization(from, to, value, validAfter, validBefore, nonce).
  if (
    /^(Transfer|Receive)WithAuthorization$/.test(typed.primaryType) &&
    has('from', 'to', 'value', 'validBefore') &&
    verifyingContract
  ) {
    mustBeFrom(m.from, from, 'from');
    const amount = BigInt(m.value as string);
    const to = addressField(m.to, 'to');
    const inspection = result(sig('transfer_authorization', m.validBefore), [
      {
        ...base,
        asset: { type: 'erc20', address: verifyingContract },
        spender: to,
        amount,
        unlimited: amount >= UNLIMITED_256,
        all: false,
        expiresAt: dateOf(m.validBefore),
      },
    ]);
    for (const c of inspection.counterparties) c.role = 'recipient';
    return { ...inspection, givesWithoutReturn: true };
  }
  // Seaport: OrderComponents(offerer, offer[], consideration[], …, endTime …).
  if (
    typed.primaryType === 'OrderComponents' &&
    has('offerer', 'offer', 'consideration') &&
    verifyingContract
  ) {
    mustBeFrom(m.offerer, from, 'offerer');
    const offer = (Array.isArray(m.offer) ? m.offer : []) as Message[];
    const consideration = (Array.isArray(m.consideration) ? m.consideration : []) as Message[];
    const approvals = offer.map((item): Approval => {
      const type = Number(item.itemType);
      const amount = BigInt((item.startAmount ?? item.endAmount ?? '0') as string);
      const all = type === 4 || type === 5; // criteria-based: any token of the collection
      const asset: Asset =
        type === 0
          ? { type: 'native' }
          : {
              type: type === 1 ? 'erc20' : type === 2 || type === 4 ? 'erc721' : 'erc1155',
              address: addressField(item.token, 'token'),
              ...(type === 2 || type === 3 ? { tokenId: BigInt(item.identifierOrCriteria as string) } : {}),
            };
      return {
        ...base,
        asset,
        spender: verifyingContract,
        amount,
        unlimited: all || amount >= UNLIMITED_256,
        all,
        expiresAt: dateOf(m.endTime),
      };
    });
    const paysFrom = consideration.some(
      (c) =>
        typeof c.recipient === 'string' &&
        c.recipient.toLowerCase() === from.toLowerCase() &&
        BigInt((c.startAmount ?? '0') as string) > 0n,
    );
    const inspection = result(sig('seaport_order', m.endTime), approvals, offer.length > 0 && !paysFrom);
    for (const c of consideration)
      if (typeof c.recipient === 'string' && isAddress(c.recipient, { strict: false }))
        party(getAddress(c.recipient.toLowerCase()), 'recipient', {
          kind: 'seaport_order',
          consideration: c,
        });
    return inspection;
  }
  return result(sig('unknown', undefined), []);
}

/** Whether typed data is a Permit2 message (for the docs' wording of the verifying contract). */
export const isPermit2 = (address: string | null) =>
  address !== null && address.toLowerCase() === PERMIT2.toLowerCase();

function mustBeFrom(value: unknown, from: Address, field: string): void {
  if (typeof value === 'string' && value.toLowerCase() === from.toLowerCase()) return;
  throw invalidRequest(
    `typed_data.message.${field} is not \`from\` (${from}): the signer is the one who approves.`,
    [{ path: `typed_data.message.${field}`, message: 'must equal from' }],
  );
}

function addressField(value: unknown, field: string): Address {
  if (typeof value === 'string' && isAddress(value, { strict: false }))
    return getAddress(value.toLowerCase());
  throw invalidRequest(`typed_data.message.${field} is not an address.`, [
    { path: `typed_data.message.${field}`, message: 'expected an address' },
  ]);
}

function toNumber(value: unknown): number | null {
  try {
    const n = BigInt(value as string);
    return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : null;
  } catch {
    return null;
  }
}

/** A unix-seconds field as a Date (capped at year 9999), or null when it is not a number. */
function dateOf(value: unknown): Date | null {
  try {
    const seconds = BigInt(value as string);
    const capped = seconds > 253402300799n ? 253402300799n : seconds < 0n ? 0n : seconds;
    return new Date(Number(capped) * 1000);
  } catch {
    return null;
  }
}
