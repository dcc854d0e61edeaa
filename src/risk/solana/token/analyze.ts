import { isAddress } from '@solana/kit';
import type { SolanaRpc } from '../../../chains/solana.js';
import { AppError } from '../../../platform/errors.js';
import { finding, type Evidence, type Finding } from '../../findings.js';
import { incompleteFinding } from '../../incomplete.js';
import { authorityFindings } from './authorities.js';
import { decodeMintAccount, formatUnits } from './decode.js';
import { extensionFindings, extensionView } from './extensions.js';
import { holderConcentration } from './holders.js';
import { applyKnownContext } from './known-context.js';
import { decodeMetadata, metadataFindings, metaplexMetadataAddress } from './metadata.js';
import { readLargestHolders, readMint } from './reads.js';
import type { MintContext, SolanaTokenOptions, SolanaTokenResult, TokenView } from './types.js';

/**
 * scan/token (and risk-v2 `token`) on Solana: one mint, read with at most three sequential provider round
 * trips on a cold scan (reads.ts), its account data decoded by the SPL Token / Token-2022 / Metaplex codecs.
 * The holder check may fail on its own (getTokenLargestAccounts is refused or slow on some providers): the
 * mint's findings still stand, and the result says `complete: false` with a `check_incomplete` finding.
 *
 * Throws AppError('provider_unavailable') when the mint itself cannot be read.
 */
export async function analyzeSolanaToken(
  rpc: SolanaRpc,
  mintAddress: string,
  opts: SolanaTokenOptions,
): Promise<SolanaTokenResult> {
  if (!isAddress(mintAddress))
    throw new AppError('invalid_address', `${mintAddress} is not a Solana address.`);
  const mint = mintAddress;
  const metadataPda = await metaplexMetadataAddress(mint);
  const { slot, mintAccount, metadataAccount, largest } = await readMint(rpc, mint, metadataPda, opts);
  if (!mintAccount) return { status: 'not_found', kind: 'missing', dataAsOf: { slot } };

  const decoded = decodeMintAccount(mintAccount);
  if (decoded.status !== 'mint') {
    return { status: 'not_a_mint', kind: decoded.kind, ownerProgram: mintAccount.owner, dataAsOf: { slot } };
  }

  const ctx: MintContext = {
    mint,
    slot,
    program: decoded.program,
    programAddress: mintAccount.owner,
    decimals: decoded.decimals,
    supply: decoded.supply,
    mintAuthority: decoded.mintAuthority,
    freezeAuthority: decoded.freezeAuthority,
    extensions: decoded.extensions,
  };
  const evidence = (value: unknown): Evidence => ({ method: 'getMultipleAccounts', slot, value });

  const metadata = decodeMetadata(ctx, metadataAccount, metadataPda);
  const findings: Finding[] = [
    ...authorityFindings(ctx, evidence),
    ...extensionFindings(ctx, evidence),
    ...metadataFindings(ctx, metadata, opts, evidence),
  ];
  if (ctx.supply === 0n)
    findings.push(finding('zero_supply', 'No tokens exist: the supply is 0.', evidence({ supply_raw: '0' })));

  const holdersRead = await readLargestHolders(rpc, ctx, await largest, opts);
  const holders = holdersRead.largest
    ? holderConcentration({ supply: ctx.supply, ...holdersRead.largest })
    : null;
  if (holders?.finding) findings.push(holders.finding);

  const known = applyKnownContext(ctx, findings, opts, evidence);
  const incomplete = [...(metadata.incomplete ? [metadata.incomplete] : []), ...holdersRead.incomplete];
  for (const miss of incomplete)
    findings.push(incompleteFinding(miss.method, miss.check, miss.reason, slot, { check: miss.check }));

  const token: TokenView = {
    decimals: ctx.decimals,
    supply: formatUnits(ctx.supply, ctx.decimals),
    supply_raw: ctx.supply.toString(),
    mint_authority: ctx.mintAuthority,
    freeze_authority: ctx.freezeAuthority,
    metadata: metadata.primary,
    extensions: ctx.extensions.filter((e) => e.__kind !== 'Uninitialized').map(extensionView),
  };
  const slots = [slot, ...holdersRead.slots];
  return {
    status: 'mint',
    kind: 'token',
    tokenProgram: ctx.program,
    token,
    holders: holders?.view ?? null,
    known,
    findings,
    complete: incomplete.length === 0,
    dataAsOf: { slot: Math.min(...slots) },
    listInputs: {},
    facts: {
      exists: true,
      kind: 'token',
      owner_program: ctx.programAddress,
      token_program: ctx.program,
      decimals: ctx.decimals,
      supply: token.supply,
      supply_raw: token.supply_raw,
      mint_authority: ctx.mintAuthority,
      freeze_authority: ctx.freezeAuthority,
      extensions: token.extensions.map((e) => e.type),
      metadata_source: metadata.incomplete ? null : (metadata.primary?.source ?? 'none'),
      metadata_pointer: metadata.externalPointer,
      top10_share: holders?.view.top10_share ?? null,
      top_owner_share: holders ? (holders.view.top_owner?.share ?? 0) : null,
      known_token: known,
    },
  };
}
