import { getAddress, hashTypedData, isAddress, type Address, type TypedDataDefinition } from 'viem';
import { clip } from '../../chains/registry.js';
import { invalidRequest } from '../../platform/errors.js';
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
const MAX_UINT256 = 2n ** 256n - 1n;

export interface TypedDataInspection {
  signature: SignatureInfo;
  /** What the signature lets others take from `from` (or, for a Seaport order, what it offers). */
  approvals: Approval[];
  counterparties: PayloadCounterparty[];
  /** Seaport: true when no consideration item pays `from` (it gives and gets nothing back). */
  givesWithoutReturn: boolean;
  /** `domain.chainId` as declared (any size: a chain id past 2^53 is still not this chain). */
  declaredChainId: bigint | null;
}

type Message = Record<string, unknown>;

/** The inspection of `typed` as `from` would sign it. A value that does not fit its type → 400. */
export function inspectTypedData(typed: TypedDataInput, from: Address): TypedDataInspection {
  try {
    // Hashing checks every value against its type (viem), as the wallet will when it signs.
    hashTypedData(typed as unknown as TypedDataDefinition);
  } catch (err) {
    // viem's own errors say what does not fit; anything else (a TypeError on a malformed domain) is
    // internal wording a caller should not see.
    const short = (err as { shortMessage?: unknown } | null)?.shortMessage;
    const why = typeof short === 'string' ? short : 'a value or the domain does not fit its EIP-712 type';
    throw invalidRequest(`typed_data does not hash as EIP-712: ${clip(why, 200)}`, [
      { path: 'typed_data', message: clip(why, 200) },
    ]);
  }
  const domain = typed.domain;
  const declaredChainId = domain.chainId === undefined ? null : toBigInt(domain.chainId);
  const chainId =
    declaredChainId !== null && declaredChainId <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(declaredChainId)
      : null;
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
    if (address.toLowerCase() === from.toLowerCase() || BigInt(address) === 0n) return;
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
    return { signature, approvals, counterparties, givesWithoutReturn, declaredChainId };
  };
  const fields = new Map(
    (Object.hasOwn(typed.types, typed.primaryType) ? typed.types[typed.primaryType]! : []).map((f) => [
      f.name,
      f.type,
    ]),
  );
  // `name` or `name:type`: a field of that name (and EIP-712 type, when given: a `Permit` whose amount is a
  // string is not an ERC-2612 permit, and no token would accept its signature as one).
  const has = (...specs: string[]) =>
    specs.every((spec) => {
      const [name, type] = spec.split(':') as [string, string | undefined];
      const actual = fields.get(name);
      if (actual === undefined) return false;
      if (type === undefined) return true;
      return type === 'uint' ? /^uint\d*$/.test(actual) : actual === type;
    });

  // ERC-2612: Permit(owner, spender, value, nonce, deadline), signed by the owner.
  if (
    typed.primaryType === 'Permit' &&
    has('owner:address', 'spender:address', 'value:uint', 'deadline:uint')
  ) {
    mustBeFrom(m.owner, from, 'owner');
    const amount = big(m.value, 'value');
    return result(sig('erc2612_permit', m.deadline), [
      {
        ...base,
        asset: tokenAt(verifyingContract),
        spender: addressField(m.spender, 'spender'),
        amount,
        unlimited: amount >= unlimitedAt(fields.get('value')),
        all: false,
      },
    ]);
  }
  // DAI: Permit(holder, spender, nonce, expiry, allowed): all or nothing.
  if (
    typed.primaryType === 'Permit' &&
    has('holder:address', 'spender:address', 'expiry:uint', 'allowed:bool')
  ) {
    mustBeFrom(m.holder, from, 'holder');
    const approvals: Approval[] =
      m.allowed === true
        ? [
            {
              ...base,
              asset: tokenAt(verifyingContract),
              spender: addressField(m.spender, 'spender'),
              amount: MAX_UINT256,
              unlimited: true,
              all: false,
            },
          ]
        : [];
    return result(sig('dai_permit', big(m.expiry, 'expiry') === 0n ? undefined : m.expiry), approvals);
  }
  // Permit2 AllowanceTransfer: PermitSingle / PermitBatch(details: {token, amount, expiration, nonce}).
  if (
    (typed.primaryType === 'PermitSingle' || typed.primaryType === 'PermitBatch') &&
    has('spender:address', 'sigDeadline:uint') &&
    structHas(typed, fields.get('details'), 'token:address', 'amount:uint', 'expiration:uint')
  ) {
    const details = (Array.isArray(m.details) ? m.details : [m.details]) as Message[];
    const spender = addressField(m.spender, 'spender');
    return result(
      sig('permit2_allowance', m.sigDeadline),
      details.map((d) => {
        const amount = big(d.amount, 'details.amount');
        // Permit2 reads an expiration of 0 as "the block it is used in": the signature's own deadline.
        const expiration = big(d.expiration, 'details.expiration') === 0n ? m.sigDeadline : d.expiration;
        return {
          ...base,
          asset: erc20(d.token),
          spender,
          amount,
          unlimited: amount >= unlimitedAt(structField(typed, fields.get('details'), 'amount')),
          all: false,
          expiresAt: dateOf(expiration),
        };
      }),
    );
  }
  // Permit2 SignatureTransfer: Permit(Batch)(Witness)TransferFrom(permitted: {token, amount}, spender, nonce, deadline).
  if (
    /^Permit(Batch)?(Witness)?TransferFrom$/.test(typed.primaryType) &&
    has('spender:address', 'deadline:uint') &&
    structHas(typed, fields.get('permitted'), 'token:address', 'amount:uint')
  ) {
    const permitted = (Array.isArray(m.permitted) ? m.permitted : [m.permitted]) as Message[];
    const spender = addressField(m.spender, 'spender');
    return result(
      sig('permit2_transfer', m.deadline),
      permitted.map((p) => {
        const amount = big(p.amount, 'permitted.amount');
        return {
          ...base,
          asset: erc20(p.token),
          spender,
          amount,
          unlimited: amount >= unlimitedAt(structField(typed, fields.get('permitted'), 'amount')),
          all: false,
          expiresAt: dateOf(m.deadline),
        };
      }),
    );
  }
  // EIP-3009: (Transfer|Receive)WithAuthorization(from, to, value, validAfter, validBefore, nonce).
  if (
    /^(Transfer|Receive)WithAuthorization$/.test(typed.primaryType) &&
    has('from:address', 'to:address', 'value:uint', 'validBefore:uint')
  ) {
    mustBeFrom(m.from, from, 'from');
    const amount = big(m.value, 'value');
    const to = addressField(m.to, 'to');
    const inspection = result(sig('transfer_authorization', m.validBefore), [
      {
        ...base,
        asset: tokenAt(verifyingContract),
        spender: to,
        amount,
        unlimited: amount >= unlimitedAt(fields.get('value')),
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
    has('offerer:address', 'endTime:uint') &&
    structHas(
      typed,
      fields.get('offer'),
      'itemType:uint8',
      'token:address',
      'identifierOrCriteria:uint',
      'startAmount:uint',
    ) &&
    structHas(
      typed,
      fields.get('consideration'),
      'itemType:uint8',
      'token:address',
      'startAmount:uint',
      'recipient:address',
    ) &&
    verifyingContract
  ) {
    mustBeFrom(m.offerer, from, 'offerer');
    const offer = (Array.isArray(m.offer) ? m.offer : []) as Message[];
    const consideration = (Array.isArray(m.consideration) ? m.consideration : []) as Message[];
    const approvals = offer.map((item): Approval => {
      const type = Number(item.itemType);
      const amount = big(item.startAmount, 'offer.startAmount');
      const all = type === 4 || type === 5; // criteria-based: any token of the collection
      const asset: Asset =
        type === 0
          ? { type: 'native' }
          : {
              type: type === 1 ? 'erc20' : type === 2 || type === 4 ? 'erc721' : 'erc1155',
              address: addressField(item.token, 'token'),
              ...(type === 2 || type === 3
                ? { tokenId: big(item.identifierOrCriteria, 'offer.identifierOrCriteria') }
                : {}),
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
        big(c.startAmount, 'consideration.startAmount') > 0n,
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

/** "Unlimited" for an amount of EIP-712 type `uintN`: at least 2^(N−1) (uint256 → 2^255, uint160 → 2^159). */
function unlimitedAt(type: string | undefined): bigint {
  const bits = /^uint(\d*)$/.exec(type ?? '')?.[1];
  return 2n ** BigInt((bits ? Number(bits) : 256) - 1);
}

/** The EIP-712 type of `field` in the struct type `type` (`S` or `S[]`). */
function structField(typed: TypedDataInput, type: string | undefined, field: string): string | undefined {
  const name = type?.replace(/\[\d*\]$/, '');
  if (name === undefined || !Object.hasOwn(typed.types, name)) return undefined;
  return typed.types[name]!.find((f) => f.name === field)?.type;
}

/** An integer field as viem accepted it (decimal or hex string, number, bigint); 400 when it is none. */
function big(value: unknown, field: string): bigint {
  try {
    if (typeof value === 'bigint') return value;
    if (typeof value === 'number' || typeof value === 'string') return BigInt(value);
  } catch {
    // fall through
  }
  throw invalidRequest(`typed_data.message.${field} is not an integer.`, [
    { path: `typed_data.message.${field}`, message: 'expected an integer' },
  ]);
}

/** The token the signature is about: the verifying contract (unknown when the domain names none). */
const tokenAt = (verifyingContract: Address | null): Asset =>
  verifyingContract ? { type: 'erc20', address: verifyingContract } : { type: 'erc20' };

/** Whether the struct type `type` (`S` or `S[]`) has these `name:type` fields. */
function structHas(typed: TypedDataInput, type: string | undefined, ...specs: string[]): boolean {
  if (type === undefined) return false;
  const name = type.replace(/\[\d*\]$/, '');
  if (!Object.hasOwn(typed.types, name)) return false;
  const fields = new Map(typed.types[name]!.map((f) => [f.name, f.type]));
  return specs.every((spec) => {
    const [field, want] = spec.split(':') as [string, string];
    const actual = fields.get(field);
    if (actual === undefined) return false;
    return want === 'uint' ? /^uint\d*$/.test(actual) : actual === want;
  });
}

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

function toBigInt(value: unknown): bigint | null {
  try {
    return typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint'
      ? BigInt(value)
      : null;
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
