import { isAddress } from '@solana/kit';
import { z } from 'zod';
import { appliesOn, CAIP2_PATTERN, type NetworkDef } from '../../chains/registry.js';
import data from './solana.json' with { type: 'json' };

/*
 * Known-good context for Solana (docs/risk.md#known-good-context): well-known mints with the authorities their issuers
 * are expected to hold, and well-known token owners (pool vault authorities, burn addresses) whose
 * holdings are not a holder's. The entries are data (solana.json, beside this file), versioned, each with
 * its sources; this module validates them once at load and answers look-ups by network.
 */

/** What a known owner is; pools, lockers and burn addresses are left out of holder concentration. */
export const KNOWN_OWNER_KINDS = ['pool', 'locker', 'burn', 'exchange'] as const;
export type KnownOwnerKind = (typeof KNOWN_OWNER_KINDS)[number];

/** Owner kinds whose holdings are not a holder's: excluded from the concentration shares (docs/risk.md#known-good-context). */
export const EXCLUDED_OWNER_KINDS: ReadonlySet<KnownOwnerKind> = new Set(['pool', 'locker', 'burn']);

/** Raydium AMM v4's pool authority: the PDA that owns every AMM v4 pool's token vaults. */
export const RAYDIUM_AMM_V4_AUTHORITY = '5Q544fKrFoe6tsEbD7S8EmxGTJYAKtTVhAW5Q5pge4j1';
/** The Solana incinerator: tokens held by accounts it owns can never move. */
export const INCINERATOR = '1nc1nerator11111111111111111111111111111111';

const address = z.string().refine((s) => isAddress(s), 'expected a base58 Solana address');
const networks = z.array(z.string().regex(CAIP2_PATTERN)).min(1);
const sources = z.array(z.string().min(10)).min(1);

const mintEntry = z.strictObject({
  mint: address,
  networks,
  symbol: z.string().min(1),
  name: z.string().min(1),
  /** Other names an impostor would use (copycat_symbol compares them too). */
  aliases: z.array(z.string().min(1)),
  issuer: z.string().min(1),
  category: z.enum(['issuer_stablecoin', 'native_wrapper']),
  program: z.enum(['spl-token', 'token-2022']),
  decimals: z.number().int().min(0).max(255),
  /**
   * The mint and freeze authorities the issuer is expected to hold (null: none), or `unverified`: the
   * registry knows the token but not its authorities, so its findings are labelled, never suppressed.
   */
  authorities: z.union([
    z.literal('unverified'),
    z.strictObject({ mint: address.nullable(), freeze: address.nullable() }),
  ]),
  /** false: the mint's supply field is not the circulating amount (the native mint), so zero is no finding. */
  supply_tracked: z.boolean(),
  sources,
});

const ownerEntry = z.strictObject({
  address,
  networks,
  label: z.string().min(1),
  kind: z.enum(KNOWN_OWNER_KINDS),
  sources,
});

const ownerProgramEntry = z.strictObject({
  /** Token accounts whose owner is an account owned by this program get the label (e.g. pool states). */
  program: address,
  networks,
  label: z.string().min(1),
  kind: z.enum(KNOWN_OWNER_KINDS),
  sources,
});

const registrySchema = z.object({
  version: z.string().min(1),
  mints: z.array(mintEntry),
  owners: z.array(ownerEntry),
  owner_programs: z.array(ownerProgramEntry),
});

export type KnownMint = z.infer<typeof mintEntry>;
export type KnownOwner = z.infer<typeof ownerEntry>;
export type KnownOwnerProgram = z.infer<typeof ownerProgramEntry>;

/** A known owner as a holder list shows it. */
export interface OwnerLabel {
  label: string;
  kind: KnownOwnerKind;
  /** Matched by the owner's address, or by the program that owns the owner's account. */
  matchedBy: 'address' | 'owner_program';
}

/** Symbols and names compare trimmed, case-insensitively, after Unicode NFKC (full-width letters fold). */
export const normalizeTokenText = (s: string): string =>
  s.replace(/\0/g, '').normalize('NFKC').trim().toLowerCase();

/** The known-token / known-owner registry of Solana, validated; look-ups are per network (CAIP-2). */
export class SolanaKnownRegistry {
  readonly version: string;
  readonly mints: readonly KnownMint[];
  readonly owners: readonly KnownOwner[];
  readonly ownerPrograms: readonly KnownOwnerProgram[];

  /** `input` as in solana.json; throws (a ZodError, or an Error naming the duplicate) on invalid data. */
  constructor(input: unknown) {
    const parsed = registrySchema.parse(input);
    this.version = parsed.version;
    this.mints = parsed.mints;
    this.owners = parsed.owners;
    this.ownerPrograms = parsed.owner_programs;
    for (const [what, keys] of [
      ['mint', parsed.mints.map((m) => m.mint)],
      ['owner', parsed.owners.map((o) => o.address)],
      ['owner program', parsed.owner_programs.map((p) => p.program)],
    ] as const) {
      const dup = keys.find((k, i) => keys.indexOf(k) !== i);
      if (dup) throw new Error(`known Solana registry: ${what} ${dup} is listed twice`);
    }
  }

  /** The known mint at `mint` on this network. */
  mint(network: NetworkDef, mint: string): KnownMint | undefined {
    return this.mints.find((m) => m.mint === mint && appliesOn(m.networks, network));
  }

  /** Known mints of this network (other than `except`) whose symbol, name or an alias equals `text`. */
  imitatedBy(network: NetworkDef, text: string, except: string): KnownMint[] {
    const wanted = normalizeTokenText(text);
    if (!wanted) return [];
    return this.mints.filter(
      (m) =>
        m.mint !== except &&
        appliesOn(m.networks, network) &&
        [m.symbol, m.name, ...m.aliases].some((s) => normalizeTokenText(s) === wanted),
    );
  }

  /** A known owner by its own address. */
  owner(network: NetworkDef, owner: string): KnownOwner | undefined {
    return this.owners.find((o) => o.address === owner && appliesOn(o.networks, network));
  }

  /** A known program whose accounts own token accounts as a pool / locker does. */
  ownerProgram(network: NetworkDef, program: string): KnownOwnerProgram | undefined {
    return this.ownerPrograms.find((p) => p.program === program && appliesOn(p.networks, network));
  }
}

/** The built-in registry (solana.json), validated at load. */
export const SOLANA_KNOWN = new SolanaKnownRegistry(data);
/** Version of the built-in registry: stated in evidence and suppression reasons. */
export const SOLANA_KNOWN_VERSION = SOLANA_KNOWN.version;
