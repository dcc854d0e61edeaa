import { finding, suppress, type Evidence, type Finding } from '../../findings.js';
import type { KnownTokenContext, MintContext, SolanaTokenOptions } from './types.js';

/**
 * What the known-token registry says about this mint, applied to its findings in place: the issuer's
 * expected authorities (and, for tokens that do not track supply, a zero supply) are suppressed with the
 * reason; an authority other than the expected one raises `authority_changed`. null for an unknown mint.
 */
export function applyKnownContext(
  ctx: MintContext,
  findings: Finding[],
  opts: SolanaTokenOptions,
  evidence: (v: unknown) => Evidence,
): KnownTokenContext | null {
  const known = opts.known.mint(opts.network, ctx.mint);
  if (!known) return null;
  const version = opts.known.version;
  const base = {
    symbol: known.symbol,
    name: known.name,
    issuer: known.issuer,
    category: known.category,
    registry_version: version,
  };
  if (known.program !== ctx.program || known.decimals !== ctx.decimals)
    return { ...base, authorities: 'mismatch' };

  const replace = (code: Finding['code'], reason: string) => {
    const i = findings.findIndex((f) => f.code === code);
    const found = findings[i];
    if (found) findings[i] = suppress(found, reason);
  };
  const who = `${known.symbol} (${known.name}, issued by ${known.issuer})`;
  if (!known.supply_tracked)
    replace(
      'zero_supply',
      `${who} does not track its circulating amount in the mint's supply (known-token registry ${version}).`,
    );
  if (known.authorities === 'unverified') return { ...base, authorities: 'unverified' };

  const expected = known.authorities;
  const changes: { authority: 'mint' | 'freeze'; expected: string | null; actual: string | null }[] = [];
  for (const [kind, code, actual, wanted] of [
    ['mint', 'mint_authority_enabled', ctx.mintAuthority, expected.mint],
    ['freeze', 'freeze_authority_enabled', ctx.freezeAuthority, expected.freeze],
  ] as const) {
    if (actual === wanted)
      replace(
        code,
        `${who}: ${actual} is the issuer's expected ${kind} authority (known-token registry ${version}).`,
      );
    else changes.push({ authority: kind, expected: wanted, actual });
  }
  if (changes.length === 0) {
    replace(
      'metadata_mutable',
      `${who}: the issuer controls the metadata of its own token, whose authorities are the expected ones (known-token registry ${version}).`,
    );
    return { ...base, authorities: 'expected' };
  }
  const onlyRevoked = changes.every((c) => c.actual === null);
  findings.push(
    finding(
      'authority_changed',
      changes
        .map((c) =>
          c.actual === null
            ? `The ${c.authority} authority of ${who} was revoked (expected ${c.expected}).`
            : `The ${c.authority} authority of ${who} is ${c.actual}, not the expected ${c.expected ?? 'none'}.`,
        )
        .join(' ') +
        (onlyRevoked
          ? ' Less control than expected, but the registry entry may be out of date.'
          : ' The token may be compromised or migrated: treat it as unverified.'),
      evidence({ changes, registry_version: version }),
      // Someone else holding an authority is the alarm; an authority given up is worth a look, not a block.
      { severity: onlyRevoked ? 'low' : 'high' },
    ),
  );
  return { ...base, authorities: 'changed' };
}
