import { getAddress, hexToBigInt, isAddress, isHex, type Hex } from 'viem';
import { z } from 'zod';
import { clip } from '../../chains/registry.js';
import { AppError, invalidRequest } from '../../platform/errors.js';
import type { EvmAuthorization, EvmTransaction, Payload, TypedDataInput } from './types.js';

/*
 * The payload fields of a shield preflight as the API receives them (schemas.ts documents them with
 * these schemas), and their checks beyond shape: one payload at most, hex that decodes, typed data whose
 * types resolve (no cycle, no missing type, bounded depth). Every refusal is `400 invalid_request` naming
 * the field.
 */

const quantity = z
  .string()
  .regex(/^0x[0-9a-fA-F]{1,64}$/, 'expected a hex quantity (0x…, at most 256 bits)')
  .meta({ description: 'Hex quantity, as JSON-RPC sends it.' });
const bytes = z
  .string()
  .max(200_000)
  .regex(/^0x([0-9a-fA-F]{2})*$/, 'expected hex bytes (0x followed by an even number of hex digits)');
const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'expected an EVM address (0x + 40 hex digits)');

const authorization = z
  .object({
    chainId: quantity,
    address: evmAddress,
    nonce: quantity,
    yParity: quantity.optional(),
    v: quantity.optional(),
    r: quantity,
    s: quantity,
  })
  .strict();

export const evmTransactionBody = z
  .object({
    from: evmAddress.optional(),
    to: evmAddress.nullable().optional(),
    data: bytes.optional(),
    input: bytes.optional(),
    value: quantity.optional(),
    gas: quantity.optional(),
    gasPrice: quantity.optional(),
    maxFeePerGas: quantity.optional(),
    maxPriorityFeePerGas: quantity.optional(),
    nonce: quantity.optional(),
    chainId: quantity.optional(),
    type: quantity.optional(),
    accessList: z
      .array(z.object({ address: evmAddress, storageKeys: z.array(bytes) }).strict())
      .max(1000)
      .optional(),
    authorizationList: z.array(authorization).max(64).optional(),
  })
  .strict()
  .meta({
    id: 'EvmTransactionRequest',
    description:
      'The `eth_sendTransaction` object (EIP-1474: hex strings). Fee fields are accepted and ignored (gas is ' +
      'not part of the asset changes); `authorizationList` makes it a type-4 (EIP-7702) transaction.',
  });

const typedDataObject = z
  .object({
    types: z.record(
      z.string().max(200),
      z.array(z.object({ name: z.string().max(200), type: z.string().max(200) }).strict()).max(256),
    ),
    domain: z.record(z.string(), z.unknown()),
    primaryType: z.string().min(1).max(200),
    message: z.record(z.string(), z.unknown()),
  })
  .strict();

export const typedDataBody = z.union([z.string().min(2).max(262_144), typedDataObject]).meta({
  id: 'TypedDataRequest',
  description:
    'EIP-712 typed data as `eth_signTypedData_v4` receives it (`types`, `domain`, `primaryType`, ' +
    '`message`): an object or its JSON string.',
});

export const messageBody = z
  .object({
    method: z.enum(['personal_sign', 'eth_sign']),
    data: z
      .string()
      .min(1)
      .max(200_000)
      .meta({ description: 'The bytes to sign, `0x`-hex (personal_sign also takes plain UTF-8 text).' }),
  })
  .strict()
  .meta({ id: 'MessageRequest' });

export const transactionBody = z
  .union([
    z.string().min(1).max(262_144).meta({
      description: 'Solana: the base64 wire transaction (legacy or v0) the wallet is asked to sign.',
    }),
    evmTransactionBody,
  ])
  .meta({ description: 'EVM: the `eth_sendTransaction` object. Solana: the base64 wire transaction.' });

/** The payload fields of the preflight body, as validated by its schema. */
export interface PayloadFields {
  from?: string | undefined;
  transaction?: string | z.infer<typeof evmTransactionBody> | undefined;
  typed_data?: z.infer<typeof typedDataBody> | undefined;
  message?: z.infer<typeof messageBody> | undefined;
}

/** Deepest struct nesting accepted in typed data (real protocols use 3–4 levels). */
const MAX_TYPE_DEPTH = 16;
/** Most values in a typed-data message (arrays of structs included): real signatures hold a few dozen. */
export const MAX_TYPED_VALUES = 2_000;

/** How many payloads the body carries, with their field names. */
export function payloadFieldsOf(fields: PayloadFields): ('transaction' | 'typed_data' | 'message')[] {
  return (['transaction', 'typed_data', 'message'] as const).filter((k) => fields[k] !== undefined);
}

/**
 * The one payload of `fields` (checked beyond shape), or null when there is none. `family` is the chain
 * family the preflight runs on: an EVM transaction object on Solana (or the reverse) is refused.
 */
export function parsePayload(fields: PayloadFields, family: 'evm' | 'solana'): Payload | null {
  const given = payloadFieldsOf(fields);
  if (given.length === 0) return null;
  if (given.length > 1)
    throw invalidRequest(`Send one payload at most: got ${given.join(' and ')}.`, [
      { path: given[1]!, message: 'only one of transaction, typed_data, message' },
    ]);
  if (fields.transaction !== undefined) {
    if (typeof fields.transaction === 'string') {
      if (family !== 'solana')
        throw invalidRequest('A transaction given as a string is a Solana wire transaction.', [
          { path: 'transaction', message: 'expected the eth_sendTransaction object on an EVM chain' },
        ]);
      return { kind: 'solana_transaction', wire: decodeBase64(fields.transaction) };
    }
    if (family !== 'evm')
      throw invalidRequest('On Solana the transaction is the base64 wire transaction (a string).', [
        { path: 'transaction', message: 'expected a base64 string on Solana' },
      ]);
    return { kind: 'evm_transaction', tx: evmTransaction(fields.transaction) };
  }
  if (family !== 'evm')
    throw invalidRequest(`${given[0]} is an EVM payload; this preflight runs on Solana.`, [
      { path: given[0]!, message: 'only on EVM chains' },
    ]);
  if (fields.typed_data !== undefined) return { kind: 'typed_data', typed: typedData(fields.typed_data) };
  const { method, data } = fields.message!;
  return { kind: 'message', method, data: messageBytes(method, data) };
}

function decodeBase64(text: string): Uint8Array {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) || trimmed.length % 4 !== 0)
    throw invalidRequest('The Solana transaction is not base64.', [
      { path: 'transaction', message: 'expected the base64 wire transaction' },
    ]);
  return new Uint8Array(Buffer.from(trimmed, 'base64'));
}

function evmTransaction(raw: z.infer<typeof evmTransactionBody>): EvmTransaction {
  if (raw.data !== undefined && raw.input !== undefined && raw.data.toLowerCase() !== raw.input.toLowerCase())
    throw invalidRequest('transaction.data and transaction.input differ.', [
      { path: 'transaction.input', message: 'must equal data when both are given' },
    ]);
  if (raw.to == null && raw.authorizationList?.length)
    throw invalidRequest('A type-4 transaction cannot create a contract.', [
      { path: 'transaction.to', message: 'required with authorizationList' },
    ]);
  for (const field of ['from', 'to'] as const) {
    const value = raw[field];
    if (typeof value === 'string' && !isAddress(value, { strict: true }))
      throw invalidRequest(`transaction.${field} fails its EIP-55 checksum (mixed case must be exact).`, [
        { path: `transaction.${field}`, message: 'bad EIP-55 checksum' },
      ]);
  }
  return {
    from: (raw.from ?? '0x') as Hex,
    to: raw.to ? getAddress(raw.to.toLowerCase()) : null,
    data: ((raw.data ?? raw.input ?? '0x') as Hex).toLowerCase() as Hex,
    value: raw.value ? hexToBigInt(raw.value as Hex) : 0n,
    ...(raw.gas ? { gas: hexToBigInt(raw.gas as Hex) } : {}),
    ...(raw.chainId ? { chainId: smallNumber(raw.chainId, 'transaction.chainId') } : {}),
    authorizationList: (raw.authorizationList ?? []).map((a, i) => authorizationOf(a, i)),
  };
}

function authorizationOf(a: z.infer<typeof authorization>, i: number): EvmAuthorization {
  const path = `transaction.authorizationList.${i}`;
  if (a.yParity === undefined && a.v === undefined)
    throw invalidRequest('An authorization needs yParity (or v).', [
      { path: `${path}.yParity`, message: 'required' },
    ]);
  // v is 27/28 in the legacy form (yParity = v − 27), and 0/1 when a wallet sends yParity under that name.
  const v = a.v !== undefined ? BigInt(a.v) : undefined;
  const yParity =
    a.yParity !== undefined ? Number(BigInt(a.yParity)) : v! >= 27n ? Number(v! - 27n) : Number(v!);
  if (yParity > 1)
    throw invalidRequest('yParity is 0 or 1.', [{ path: `${path}.yParity`, message: 'expected 0x0 or 0x1' }]);
  return {
    chainId: smallNumber(a.chainId, `${path}.chainId`),
    address: getAddress(a.address.toLowerCase()),
    nonce: smallNumber(a.nonce, `${path}.nonce`),
    yParity,
    r: a.r as Hex,
    s: a.s as Hex,
  };
}

function smallNumber(hex: string, path: string): number {
  const n = BigInt(hex);
  if (n > BigInt(Number.MAX_SAFE_INTEGER))
    throw invalidRequest(`${path} is too large.`, [{ path, message: 'at most 2^53 − 1' }]);
  return Number(n);
}

function messageBytes(method: 'personal_sign' | 'eth_sign', data: string): Hex {
  if (isHex(data, { strict: true }) && data.length % 2 === 0) return data.toLowerCase() as Hex;
  if (method === 'eth_sign' || data.startsWith('0x'))
    throw invalidRequest(`message.data of ${method} must be 0x-hex bytes.`, [
      { path: 'message.data', message: 'expected 0x followed by an even number of hex digits' },
    ]);
  return `0x${Buffer.from(data, 'utf8').toString('hex')}`;
}

/**
 * Typed data checked so that hashing it cannot loop or blow the stack: JSON parsed (when a string), the
 * primary type and every referenced struct type defined, no cycle, nesting at most MAX_TYPE_DEPTH.
 */
function typedData(raw: z.infer<typeof typedDataBody>): TypedDataInput {
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw invalidRequest('typed_data is not valid JSON.', [
        { path: 'typed_data', message: 'expected the EIP-712 JSON' },
      ]);
    }
  }
  const parsed = typedDataObject.safeParse(value);
  if (!parsed.success)
    throw new AppError('invalid_request', 'typed_data is not EIP-712 typed data.', {
      errors: parsed.error.issues.map((i) => ({
        path: ['typed_data', ...i.path.map(String)].join('.'),
        message: i.message,
      })),
    });
  const typed = parsed.data;
  if (!Object.hasOwn(typed.types, typed.primaryType) && typed.primaryType !== 'EIP712Domain')
    throw invalidRequest(`typed_data.primaryType "${clip(typed.primaryType)}" has no entry in types.`, [
      { path: 'typed_data.primaryType', message: 'not defined in types' },
    ]);
  checkTypeGraph(typed.types, typed.primaryType);
  if (countValues(typed.message) > MAX_TYPED_VALUES)
    throw invalidRequest(`typed_data.message holds more than ${MAX_TYPED_VALUES} values.`, [
      { path: 'typed_data.message', message: `at most ${MAX_TYPED_VALUES} values` },
    ]);
  return typed;
}

/** Values in a JSON value (objects, arrays and leaves), counted iteratively: deep input is fine. */
function countValues(value: unknown): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && count <= MAX_TYPED_VALUES) {
    const v = stack.pop();
    count += 1;
    if (typeof v === 'object' && v !== null) for (const child of Object.values(v)) stack.push(child);
  }
  return count;
}

const ATOMIC =
  /^(address|bool|string|bytes([1-9]|[12][0-9]|3[0-2])?|u?int(8|16|24|32|40|48|56|64|72|80|88|96|104|112|120|128|136|144|152|160|168|176|184|192|200|208|216|224|232|240|248|256)?)$/;

/** The struct type named by a field type (`Foo`, `Foo[]`, `Foo[3][]`), or null for an atomic type. */
function structOf(type: string): string | null {
  const base = type.replace(/(\[\d*\])+$/, '');
  return ATOMIC.test(base) ? null : base;
}

function checkTypeGraph(types: TypedDataInput['types'], primary: string): void {
  // Iterative DFS with colours: grey on the path (a cycle), black done; depth counted along the path.
  const state = new Map<string, 'grey' | 'black'>();
  const stack: { name: string; depth: number; next: number }[] = [{ name: primary, depth: 1, next: 0 }];
  state.set(primary, 'grey');
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    // Own properties only: a type named `constructor` or `hasOwnProperty` is not Object.prototype's.
    const fields = Object.hasOwn(types, top.name) ? types[top.name]! : [];
    if (top.next >= fields.length) {
      state.set(top.name, 'black');
      stack.pop();
      continue;
    }
    const field = fields[top.next++]!;
    const struct = structOf(field.type);
    if (struct === null) continue;
    if (!Object.hasOwn(types, struct))
      throw invalidRequest(
        `typed_data type ${top.name}.${field.name} refers to undefined type "${clip(struct)}".`,
        [{ path: `typed_data.types.${top.name}`, message: `missing type ${clip(struct)}` }],
      );
    const seen = state.get(struct);
    if (seen === 'grey')
      throw invalidRequest(
        `typed_data types form a cycle through ${struct}: EIP-712 structs cannot contain themselves.`,
        [{ path: `typed_data.types.${struct}`, message: 'recursive type' }],
      );
    if (seen === 'black') continue;
    if (top.depth + 1 > MAX_TYPE_DEPTH)
      throw invalidRequest(`typed_data nests structs deeper than ${MAX_TYPE_DEPTH} levels.`, [
        { path: `typed_data.types.${struct}`, message: `nesting deeper than ${MAX_TYPE_DEPTH}` },
      ]);
    state.set(struct, 'grey');
    stack.push({ name: struct, depth: top.depth + 1, next: 0 });
  }
}
