import {
  getMetadataAccountDataSerializer,
  Key,
  MPL_TOKEN_METADATA_PROGRAM_ID,
} from '@metaplex-foundation/mpl-token-metadata';
import { address, getAddressEncoder, getProgramDerivedAddress, type Address } from '@solana/kit';
import type { SolanaAccount } from '../../../chains/solana.js';
import { finding, type Evidence, type Finding } from '../../findings.js';
import type { KnownMint } from '../../known/solana.js';
import { optionalKey } from './decode.js';
import { extensionOf } from './extensions.js';
import type { IncompleteCheck, MintContext, SolanaTokenOptions, TokenMetadataView } from './types.js';

const METAPLEX_PROGRAM = address(MPL_TOKEN_METADATA_PROGRAM_ID);

interface MetadataSource {
  view: TokenMetadataView;
  /** Who can change it (update authority, or the Token-2022 metadata pointer's authority). */
  changers: { update_authority: string | null; pointer_authority?: string | null };
}

export interface TokenMetadata {
  primary: TokenMetadataView | null;
  all: MetadataSource[];
  /** A Token-2022 metadata pointer to an account other than the mint and its Metaplex PDA (not read). */
  externalPointer: string | null;
  incomplete?: IncompleteCheck;
}

/** The Metaplex Metadata PDA of a mint: seeds ["metadata", program id, mint]. */
export async function metaplexMetadataAddress(mint: Address): Promise<Address> {
  const encoder = getAddressEncoder();
  const [pda] = await getProgramDerivedAddress({
    programAddress: METAPLEX_PROGRAM,
    seeds: ['metadata', encoder.encode(METAPLEX_PROGRAM), encoder.encode(mint)],
  });
  return pda;
}

/**
 * Metaplex metadata (the PDA) and Token-2022 metadata (in the mint). The one shown is the Token-2022 one
 * when the mint's metadata pointer points to itself (or there is no pointer), else Metaplex; both are
 * checked for mutability and copycat names.
 */
export function decodeMetadata(ctx: MintContext, account: SolanaAccount | null, pda: Address): TokenMetadata {
  const sources: MetadataSource[] = [];
  let incomplete: IncompleteCheck | undefined;
  const pointer = extensionOf(ctx, 'MetadataPointer');
  const pointerTarget = pointer ? optionalKey(pointer.metadataAddress) : null;
  const pointerAuthority = pointer ? optionalKey(pointer.authority) : null;

  const embedded = extensionOf(ctx, 'TokenMetadata');
  let t22: MetadataSource | undefined;
  if (embedded && (!pointer || pointerTarget === ctx.mint)) {
    const updateAuthority = optionalKey(embedded.updateAuthority);
    t22 = {
      view: {
        name: clean(embedded.name),
        symbol: clean(embedded.symbol),
        uri: clean(embedded.uri),
        update_authority: updateAuthority,
        mutable: updateAuthority !== null || pointerAuthority !== null,
        source: 'token-2022',
      },
      changers: { update_authority: updateAuthority, pointer_authority: pointerAuthority },
    };
  }

  let metaplex: MetadataSource | undefined;
  if (account && account.owner === METAPLEX_PROGRAM) {
    try {
      const [m] = getMetadataAccountDataSerializer().deserialize(account.data);
      if (m.key !== Key.MetadataV1 || String(m.mint) !== ctx.mint)
        throw new Error('not the Metadata account of this mint');
      metaplex = {
        view: {
          name: clean(m.name),
          symbol: clean(m.symbol),
          uri: clean(m.uri),
          update_authority: m.updateAuthority,
          mutable: m.isMutable,
          source: 'metaplex',
        },
        changers: { update_authority: m.isMutable ? m.updateAuthority : null },
      };
    } catch (err) {
      incomplete = {
        check: 'metadata',
        method: 'getMultipleAccounts',
        reason: `the Metaplex metadata account ${pda} could not be decoded (${(err as Error).message}); metadata_mutable and copycat_symbol were checked without it`,
      };
    }
  }

  if (t22) sources.push(t22);
  if (metaplex) sources.push(metaplex);
  const externalPointer =
    pointerTarget && pointerTarget !== ctx.mint && pointerTarget !== pda ? pointerTarget : null;
  return {
    primary: (t22 ?? metaplex)?.view ?? null,
    all: sources,
    externalPointer,
    incomplete,
  };
}

/** `metadata_mutable` and `copycat_symbol` (a name or symbol of a well-known token, on another mint). */
export function metadataFindings(
  ctx: MintContext,
  metadata: TokenMetadata,
  opts: SolanaTokenOptions,
  evidence: (v: unknown) => Evidence,
): Finding[] {
  const out: Finding[] = [];
  const mutable = metadata.all.filter((s) => s.view.mutable);
  if (mutable.length > 0) {
    const who = [
      ...new Set(mutable.flatMap((s) => [s.changers.update_authority, s.changers.pointer_authority ?? null])),
    ].filter((a): a is string => a !== null);
    out.push(
      finding(
        'metadata_mutable',
        `${who.join(' and ') || 'The update authority'} can change the token's name, symbol and image (${mutable.map((s) => s.view.source).join(', ')} metadata).`,
        evidence(mutable.map((s) => ({ source: s.view.source, mutable: true, ...s.changers }))),
      ),
    );
  }

  const imitated = new Map<string, { known: KnownMint; fields: Set<string> }>();
  const seen: Record<string, string>[] = [];
  for (const source of metadata.all) {
    for (const field of ['symbol', 'name'] as const) {
      const text = source.view[field];
      for (const known of opts.known.imitatedBy(opts.network, text, ctx.mint)) {
        const entry = imitated.get(known.mint) ?? { known, fields: new Set<string>() };
        entry.fields.add(`${field} "${text}"`);
        imitated.set(known.mint, entry);
        seen.push({ source: source.view.source, field, value: text });
      }
    }
  }
  if (imitated.size > 0) {
    const targets = [...imitated.values()];
    out.push(
      finding(
        'copycat_symbol',
        targets
          .map(
            (t) =>
              `Its ${[...t.fields].join(' and ')} ${t.fields.size > 1 ? 'are' : 'is'} those of ${t.known.symbol} (${t.known.name}, ${t.known.issuer}), whose mint is ${t.known.mint}.`,
          )
          .join(' '),
        evidence({
          matched: seen,
          imitates: targets.map((t) => ({ mint: t.known.mint, symbol: t.known.symbol, name: t.known.name })),
          registry_version: opts.known.version,
        }),
      ),
    );
  }
  return out;
}

/** Metadata strings as the programs store them: NUL padding (Metaplex) stripped, whitespace trimmed. */
function clean(s: string): string {
  return s.replace(/\0/g, '').trim();
}
