import { z } from 'zod';

/*
 * What a Solana node answers, as the typed client (solana.ts) hands it on: the domain shapes, and the zod
 * schemas that check each method's JSON result (u64 as bigint, account data decoded from base64).
 */

export type Commitment = 'processed' | 'confirmed' | 'finalized';

/** An account as the node stores it: raw `data` bytes (decode them with the program's codec). */
export interface SolanaAccount {
  owner: string;
  lamports: bigint;
  executable: boolean;
  data: Uint8Array;
  /** Allocated data size in bytes. */
  space: number;
}

export interface TokenAccountBalance {
  /** The token account (not its owner). */
  address: string;
  amount: bigint;
  decimals: number;
}

export interface SignatureInfo {
  signature: string;
  slot: number;
  /** null when the transaction succeeded. */
  err: unknown;
  memo: string | null;
  blockTime: number | null;
  confirmationStatus: Commitment | null;
}

export interface SolanaTransaction {
  slot: number;
  blockTime: number | null;
  version: 'legacy' | number;
  /** null when the transaction succeeded. */
  err: unknown;
  signatures: string[];
  /** Static account keys, then the ones loaded from lookup tables (writable, then read-only). */
  accountKeys: string[];
  /** The node's whole answer (`json` encoding) for evidence. */
  raw: unknown;
}

const u64 = z.union([z.number().int().nonnegative(), z.bigint().nonnegative()]).transform((v) => BigInt(v));
const slot = z.number().int().nonnegative();
const context = z.object({ slot });

const account = z
  .object({
    owner: z.string(),
    lamports: u64,
    executable: z.boolean(),
    data: z.tuple([z.string(), z.literal('base64')]),
    space: z.number().int().nonnegative().optional(),
  })
  .transform((a): SolanaAccount => {
    // A copy, not a view: small Buffers share Node's pool, which callers must never see through `.buffer`.
    const data = new Uint8Array(Buffer.from(a.data[0], 'base64'));
    return {
      owner: a.owner,
      lamports: a.lamports,
      executable: a.executable,
      data,
      space: a.space ?? data.byteLength,
    };
  });

/** One simulated transaction, as `simulateTransaction` answers it (post-state accounts as asked). */
export interface SolanaSimulation {
  slot: number;
  /** null when the transaction succeeded; else the node's error (e.g. `{ InstructionError: [0, …] }`). */
  err: unknown;
  logs: string[];
  /** Post-state of the addresses asked for (null: no account after the transaction). */
  accounts: (SolanaAccount | null)[];
  unitsConsumed: number | null;
  /**
   * Inner (CPI) instructions per outer instruction, as the node renders them: compiled
   * (`programIdIndex`, account indexes), partially decoded (`programId`, addresses) or parsed
   * (`program`, `parsed: { type, info }`) — interpreting them is the caller's.
   */
  innerInstructions: { index: number; instructions: unknown[] }[];
}

export const results = {
  accounts: z.object({ context, value: z.array(account.nullable()) }),
  account: z.object({ context, value: account.nullable() }),
  balance: z.object({ context, value: u64 }),
  slot,
  simulation: z.object({
    context,
    value: z.object({
      err: z.unknown(),
      logs: z.array(z.string()).nullable().optional(),
      accounts: z.array(account.nullable()).nullable().optional(),
      unitsConsumed: z.number().int().nonnegative().nullable().optional(),
      innerInstructions: z
        .array(
          z.object({
            index: z.number().int().nonnegative(),
            instructions: z.array(z.unknown()),
          }),
        )
        .nullable()
        .optional(),
    }),
  }),
  largest: z.object({
    context,
    value: z.array(
      z.object({ address: z.string(), amount: z.string().regex(/^\d+$/), decimals: z.number().int() }),
    ),
  }),
  tokenAccounts: z.object({ context, value: z.array(z.object({ pubkey: z.string(), account })) }),
  signatures: z.array(
    z.object({
      signature: z.string(),
      slot,
      err: z.unknown(),
      memo: z.string().nullable().optional(),
      blockTime: z.number().int().nullable().optional(),
      confirmationStatus: z.enum(['processed', 'confirmed', 'finalized']).nullable().optional(),
    }),
  ),
  transaction: z
    .object({
      slot,
      blockTime: z.number().int().nullable().optional(),
      version: z.union([z.literal('legacy'), z.number().int()]).optional(),
      meta: z
        .object({
          err: z.unknown(),
          loadedAddresses: z
            .object({ writable: z.array(z.string()), readonly: z.array(z.string()) })
            .optional(),
        })
        .nullable(),
      transaction: z.object({
        signatures: z.array(z.string()),
        message: z.object({ accountKeys: z.array(z.string()) }),
      }),
    })
    .nullable(),
};
