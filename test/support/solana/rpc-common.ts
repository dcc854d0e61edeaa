import { zstdCompressSync } from 'node:zlib';
import { isAddress, type Address, type EncodedAccount } from '@solana/kit';
import { RENT_EPOCH_EXEMPT } from './chain.js';

/* What the facade's JSON-RPC methods share: their error type, parameter checks and the account encoding. */

/** A JSON-RPC error answer (`data` is sent when given, as nodes do for some custom errors). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export function invalidParams(message: string): RpcError {
  return new RpcError(-32602, message);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function addressParam(value: unknown): Address {
  if (typeof value !== 'string' || !isAddress(value)) throw invalidParams('Invalid param: Invalid');
  return value;
}

export function integerParam(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw invalidParams(`Invalid params: ${name} must be a non-negative integer`);
  }
  return value;
}

/** The binary account encodings the facade serves (`base64+zstd` compresses the data before base64). */
export type BinaryAccountEncoding = 'base64' | 'base64+zstd';

/** An account as a node's UiAccount with binary data. */
export function encodeAccount(
  account: EncodedAccount,
  dataSlice?: { offset: number; length: number },
  encoding: BinaryAccountEncoding = 'base64',
) {
  const data = dataSlice
    ? account.data.slice(dataSlice.offset, dataSlice.offset + dataSlice.length)
    : account.data;
  const bytes = encoding === 'base64+zstd' ? zstdCompressSync(new Uint8Array(data)) : data;
  return {
    data: [Buffer.from(bytes).toString('base64'), encoding],
    executable: account.executable,
    lamports: account.lamports,
    owner: account.programAddress,
    rentEpoch: RENT_EPOCH_EXEMPT,
    space: account.data.length,
  };
}
