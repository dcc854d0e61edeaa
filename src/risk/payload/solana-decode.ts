import {
  getAccountMetasFromCompiledTransactionMessage,
  isWritableRole,
  getBase58Decoder,
  getCompiledTransactionMessageDecoder,
  getInstructionsFromCompiledTransactionMessage,
  getTransactionDecoder,
  type Address,
  type CompiledTransactionMessage,
  type ResolvedInstruction,
} from '@solana/kit';
import {
  identifySystemInstruction,
  parseAdvanceNonceAccountInstruction,
  SystemInstruction,
} from '@solana-program/system';
import { RpcError } from '../../chains/jsonrpc.js';
import type { SolanaAccount, SolanaRpc } from '../../chains/solana.js';
import { AppError, invalidRequest } from '../../platform/errors.js';
import { SYSTEM_PROGRAM } from '../solana/kind.js';

/*
 * A Solana wire transaction as a wallet receives it, decoded with @solana/kit (legacy and v0): its
 * message, signers and writable accounts, address lookup tables read from the node (when the node cannot
 * read them, the static part and why), and the durable nonce it may advance.
 */

/** An address lookup table's metadata header; its addresses follow, 32 bytes each. */
const LOOKUP_TABLE_META_SIZE = 56;

export interface DecodedSolanaTransaction {
  message: CompiledTransactionMessage;
  /** Every account key: static, then the lookup tables' writable, then their read-only ones. */
  accountKeys: string[];
  writable: Set<string>;
  signers: string[];
  instructions: ResolvedInstruction[];
  /** The durable nonce account, when the first instruction advances one. */
  durableNonce: { account: string; authority: string } | null;
  wire: Uint8Array;
  /**
   * The provider could not read the lookup tables: the accounts they hold are unknown, so the instructions
   * and account keys are the static ones only and nothing is simulated (`status: "unavailable"`).
   */
  lookupFailure?: unknown;
}

/** The message of `wire` (400 when it does not decode), its lookup tables resolved through the node. */
export async function decodeSolanaTransaction(
  rpc: SolanaRpc,
  wire: Uint8Array,
  options: { signal?: AbortSignal; deadlineMs: number },
): Promise<DecodedSolanaTransaction> {
  let message: CompiledTransactionMessage;
  try {
    const tx = getTransactionDecoder().decode(wire);
    message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
  } catch (err) {
    throw invalidRequest(
      `The Solana transaction does not decode: ${err instanceof Error ? err.message : 'invalid'}.`,
      [{ path: 'transaction', message: 'expected a legacy or v0 wire transaction (base64)' }],
    );
  }
  if (message.version !== 'legacy' && message.version !== 0)
    throw invalidRequest(`Solana transaction version ${String(message.version)} is not supported.`, [
      { path: 'transaction', message: 'expected legacy or v0' },
    ]);
  const lookups = 'addressTableLookups' in message ? (message.addressTableLookups ?? []) : [];
  let loaded: { writable: Address[]; readonly: Address[] } | null = null;
  if (lookups.length > 0) {
    let tables: Awaited<ReturnType<SolanaRpc['getMultipleAccounts']>>;
    try {
      tables = await rpc.getMultipleAccounts(
        lookups.map((l) => l.lookupTableAddress),
        { signal: options.signal, deadlineMs: options.deadlineMs },
      );
    } catch (err) {
      if (!(err instanceof AppError) && !(err instanceof RpcError)) throw err;
      return withoutLookups(message, wire, err);
    }
    loaded = { writable: [], readonly: [] };
    lookups.forEach((lookup, i) => {
      const addresses = lookupTableAddresses(tables.accounts[i] ?? null, lookup.lookupTableAddress);
      const pick = (index: number) => {
        const a = addresses[index];
        if (a === undefined)
          throw invalidRequest(`Lookup table ${lookup.lookupTableAddress} has no entry ${index}.`, [
            { path: 'transaction', message: 'a lookup table index is out of range' },
          ]);
        return a as Address;
      };
      loaded!.writable.push(...lookup.writableIndexes.map(pick));
      loaded!.readonly.push(...lookup.readonlyIndexes.map(pick));
    });
  }
  let metas: ReturnType<typeof getAccountMetasFromCompiledTransactionMessage>;
  let instructions: ResolvedInstruction[];
  try {
    metas = getAccountMetasFromCompiledTransactionMessage(message, loaded);
    instructions = getInstructionsFromCompiledTransactionMessage(message, loaded);
  } catch (err) {
    throw invalidRequest(
      `The Solana transaction's instructions do not resolve: ${err instanceof Error ? err.message : 'invalid'}.`,
      [{ path: 'transaction', message: 'an account or program index is out of range' }],
    );
  }
  const accountKeys = metas.map((m) => m.address as string);
  const writable = new Set(metas.filter((m) => isWritableRole(m.role)).map((m) => m.address as string));
  const signers = message.staticAccounts.slice(0, message.header.numSignerAccounts).map(String);
  return {
    message,
    accountKeys,
    writable,
    signers,
    instructions,
    durableNonce: durableNonceOf(instructions),
    wire,
  };
}

/** A v0 message whose lookup tables could not be read: its static part, and why. */
function withoutLookups(
  message: CompiledTransactionMessage,
  wire: Uint8Array,
  failure: unknown,
): DecodedSolanaTransaction {
  const staticKeys = message.staticAccounts.map(String);
  const { numSignerAccounts, numReadonlySignerAccounts, numReadonlyNonSignerAccounts } = message.header;
  const writable = new Set(
    staticKeys.filter((_, i) =>
      i < numSignerAccounts
        ? i < numSignerAccounts - numReadonlySignerAccounts
        : i < staticKeys.length - numReadonlyNonSignerAccounts,
    ),
  );
  return {
    message,
    accountKeys: staticKeys,
    writable,
    signers: staticKeys.slice(0, numSignerAccounts),
    instructions: [],
    durableNonce: null,
    wire,
    lookupFailure: failure,
  };
}

/** The addresses an address lookup table holds (its documented layout: 56-byte header, then 32-byte keys). */
function lookupTableAddresses(account: SolanaAccount | null, address: string): string[] {
  if (
    !account ||
    account.owner !== 'AddressLookupTab1e1111111111111111111111111' ||
    account.data.length < LOOKUP_TABLE_META_SIZE
  )
    throw invalidRequest(`${address} is not an address lookup table on this network.`, [
      { path: 'transaction', message: 'a lookup table does not exist' },
    ]);
  const keys = account.data.subarray(LOOKUP_TABLE_META_SIZE);
  const decoder = getBase58Decoder();
  const out: string[] = [];
  for (let i = 0; i + 32 <= keys.length; i += 32) out.push(decoder.decode(keys.subarray(i, i + 32)));
  return out;
}

function durableNonceOf(instructions: ResolvedInstruction[]): DecodedSolanaTransaction['durableNonce'] {
  const first = instructions[0];
  if (!first || first.programAddress !== SYSTEM_PROGRAM || !first.data || !first.accounts) return null;
  try {
    if (identifySystemInstruction(first.data) !== SystemInstruction.AdvanceNonceAccount) return null;
    const parsed = parseAdvanceNonceAccountInstruction(
      first as Parameters<typeof parseAdvanceNonceAccountInstruction>[0],
    );
    return {
      account: parsed.accounts.nonceAccount.address,
      authority: parsed.accounts.nonceAuthority.address,
    };
  } catch {
    return null;
  }
}
