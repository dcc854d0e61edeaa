import type { z } from 'zod';
import { AppError } from '../platform/errors.js';
import type { CallOptions, JsonRpcClient } from './jsonrpc.js';
import { networkLabel, type NetworkDef } from './registry.js';
import {
  results,
  type Commitment,
  type SignatureInfo,
  type SolanaAccount,
  type SolanaSimulation,
  type SolanaTransaction,
  type TokenAccountBalance,
} from './solana-results.js';

/** Solana methods with their own metrics label (any other is counted as `other`). */
export const SOLANA_METHODS = [
  'getAccountInfo',
  'getBalance',
  'getBlockTime',
  'getEpochInfo',
  'getGenesisHash',
  'getHealth',
  'getLatestBlockhash',
  'getMultipleAccounts',
  'getProgramAccounts',
  'getSignaturesForAddress',
  'getSlot',
  'getTokenAccountsByOwner',
  'getTokenLargestAccounts',
  'getTokenSupply',
  'getTransaction',
  'getVersion',
  'simulateTransaction',
] as const;

/** getMultipleAccounts takes at most 100 keys per call. */
export const MULTIPLE_ACCOUNTS_MAX = 100;

export interface SolanaReadOptions extends CallOptions {
  /** Default: the client's (`confirmed`). */
  commitment?: Commitment;
  minContextSlot?: number;
}

/** Account reads: `dataSlice` returns only those bytes of each account's data (`space` stays the full size). */
export interface SolanaAccountReadOptions extends SolanaReadOptions {
  dataSlice?: { offset: number; length: number };
}

export type {
  Commitment,
  SignatureInfo,
  SolanaAccount,
  SolanaSimulation,
  SolanaTransaction,
  TokenAccountBalance,
} from './solana-results.js';

/**
 * Typed Solana JSON-RPC over a JsonRpcClient: account data always in `base64` (decoded to bytes here,
 * interpreted by the callers' codecs), never `jsonParsed`. Calls made together (same tick) share one
 * HTTP batch request; identical ones in flight share one upstream call.
 */
export class SolanaRpc {
  constructor(
    readonly rpc: JsonRpcClient,
    readonly network: NetworkDef,
    private readonly commitment: Commitment = 'confirmed',
  ) {}

  /**
   * Any number of accounts, in chunks of ≤ 100 keys sent as one batch request. `accounts[i]` answers
   * `addresses[i]` (null: no such account). `slot` is the lowest context slot of the chunks (0 when no
   * address was asked, and no call made).
   */
  async getMultipleAccounts(
    addresses: readonly string[],
    options: SolanaAccountReadOptions = {},
  ): Promise<{ slot: number; accounts: (SolanaAccount | null)[] }> {
    if (addresses.length === 0) return { slot: 0, accounts: [] };
    const chunks: string[][] = [];
    for (let i = 0; i < addresses.length; i += MULTIPLE_ACCOUNTS_MAX)
      chunks.push(addresses.slice(i, i + MULTIPLE_ACCOUNTS_MAX));
    const answers = await Promise.all(
      chunks.map((chunk) =>
        this.read(
          'getMultipleAccounts',
          [chunk, this.config(options, { encoding: 'base64', dataSlice: options.dataSlice })],
          results.accounts,
          options,
        ),
      ),
    );
    answers.forEach((answer, i) => {
      if (answer.value.length !== chunks[i]!.length)
        throw this.malformed('getMultipleAccounts', 'answered a different number of accounts than asked');
    });
    return {
      slot: Math.min(...answers.map((a) => a.context.slot)),
      accounts: answers.flatMap((a) => a.value),
    };
  }

  async getAccountInfo(
    address: string,
    options: SolanaAccountReadOptions = {},
  ): Promise<{ slot: number; account: SolanaAccount | null }> {
    const answer = await this.read(
      'getAccountInfo',
      [address, this.config(options, { encoding: 'base64', dataSlice: options.dataSlice })],
      results.account,
      options,
    );
    return { slot: answer.context.slot, account: answer.value };
  }

  async getBalance(
    address: string,
    options: SolanaReadOptions = {},
  ): Promise<{ slot: number; lamports: bigint }> {
    const answer = await this.read('getBalance', [address, this.config(options)], results.balance, options);
    return { slot: answer.context.slot, lamports: answer.value };
  }

  getSlot(options: SolanaReadOptions = {}): Promise<number> {
    return this.read('getSlot', [this.config(options)], results.slot, options);
  }

  /** The 20 largest token accounts of a mint (the RPC's fixed page), largest first. */
  async getTokenLargestAccounts(
    mint: string,
    options: SolanaReadOptions = {},
  ): Promise<{ slot: number; accounts: TokenAccountBalance[] }> {
    const answer = await this.read(
      'getTokenLargestAccounts',
      [mint, this.config(options)],
      results.largest,
      options,
    );
    return {
      slot: answer.context.slot,
      accounts: answer.value.map((a) => ({
        address: a.address,
        amount: BigInt(a.amount),
        decimals: a.decimals,
      })),
    };
  }

  /** The owner's token accounts under one token program (SPL Token or Token-2022), raw `base64` data. */
  async getTokenAccountsByOwner(
    owner: string,
    programId: string,
    options: SolanaReadOptions = {},
  ): Promise<{ slot: number; accounts: { pubkey: string; account: SolanaAccount }[] }> {
    const answer = await this.read(
      'getTokenAccountsByOwner',
      [owner, { programId }, this.config(options, { encoding: 'base64' })],
      results.tokenAccounts,
      options,
    );
    return { slot: answer.context.slot, accounts: answer.value };
  }

  /** Newest first; `limit` 1–1000. */
  async getSignaturesForAddress(
    address: string,
    options: SolanaReadOptions & { limit?: number; before?: string; until?: string } = {},
  ): Promise<SignatureInfo[]> {
    const { limit = 1000, before, until } = options;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw new RangeError('getSignaturesForAddress: limit must be an integer 1–1000');
    const answer = await this.read(
      'getSignaturesForAddress',
      [address, this.config(options, { limit, before, until })],
      results.signatures,
      options,
    );
    return answer.map((s) => ({
      signature: s.signature,
      slot: s.slot,
      err: s.err ?? null,
      memo: s.memo ?? null,
      blockTime: s.blockTime ?? null,
      confirmationStatus: s.confirmationStatus ?? null,
    }));
  }

  /** null when the node does not know the transaction (not found, or pruned from its history). */
  async getTransaction(
    signature: string,
    options: SolanaReadOptions = {},
  ): Promise<SolanaTransaction | null> {
    const commitment = options.commitment === 'processed' ? 'confirmed' : options.commitment;
    const raw: unknown = await this.rpc.call(
      'getTransaction',
      [
        signature,
        {
          encoding: 'json',
          maxSupportedTransactionVersion: 0,
          commitment: commitment ?? this.commitment,
        },
      ],
      { deadlineMs: options.deadlineMs, signal: options.signal, batchGroup: options.batchGroup },
    );
    const tx = this.check('getTransaction', results.transaction, raw);
    if (!tx) return null;
    const loaded = tx.meta?.loadedAddresses;
    return {
      slot: tx.slot,
      blockTime: tx.blockTime ?? null,
      version: tx.version ?? 'legacy',
      err: tx.meta?.err ?? null,
      signatures: tx.transaction.signatures,
      accountKeys: [
        ...tx.transaction.message.accountKeys,
        ...(loaded?.writable ?? []),
        ...(loaded?.readonly ?? []),
      ],
      raw,
    };
  }

  private config(options: SolanaReadOptions, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const config: Record<string, unknown> = { commitment: options.commitment ?? this.commitment, ...extra };
    if (options.minContextSlot !== undefined) config.minContextSlot = options.minContextSlot;
    for (const key of Object.keys(config)) if (config[key] === undefined) delete config[key];
    return config;
  }

  /**
   * `simulateTransaction` of a base64 wire transaction, signatures not verified; `replaceRecentBlockhash`
   * unless the transaction carries a durable nonce (whose "blockhash" is the nonce and must stay);
   * the post-state of `addresses` in base64 and the inner instructions.
   */
  async simulateTransaction(
    wireBase64: string,
    options: SolanaReadOptions & { addresses: readonly string[]; replaceRecentBlockhash: boolean },
  ): Promise<SolanaSimulation> {
    const answer = await this.read(
      'simulateTransaction',
      [
        wireBase64,
        this.config(options, {
          encoding: 'base64',
          sigVerify: false,
          replaceRecentBlockhash: options.replaceRecentBlockhash,
          innerInstructions: true,
          accounts: { addresses: options.addresses, encoding: 'base64' },
        }),
      ],
      results.simulation,
      options,
    );
    const value = answer.value;
    if (value.accounts && value.accounts.length !== options.addresses.length)
      throw this.malformed('simulateTransaction', 'answered a different number of accounts than asked');
    return {
      slot: answer.context.slot,
      err: value.err ?? null,
      logs: value.logs ?? [],
      accounts: value.accounts ?? options.addresses.map(() => null),
      unitsConsumed: value.unitsConsumed ?? null,
      innerInstructions: value.innerInstructions ?? [],
    };
  }

  private async read<S extends z.ZodType>(
    method: string,
    params: unknown[],
    schema: S,
    options: CallOptions,
  ): Promise<z.output<S>> {
    const raw = await this.rpc.call(method, params, {
      deadlineMs: options.deadlineMs,
      signal: options.signal,
      batchGroup: options.batchGroup,
    });
    return this.check(method, schema, raw);
  }

  private check<S extends z.ZodType>(method: string, schema: S, raw: unknown): z.output<S> {
    const parsed = schema.safeParse(raw);
    if (!parsed.success) throw this.malformed(method, 'answered in an unexpected shape');
    return parsed.data;
  }

  private malformed(method: string, what: string): AppError {
    return new AppError(
      'provider_unavailable',
      `The ${networkLabel(this.network)} node provider ${what} (${method}).`,
    );
  }
}
