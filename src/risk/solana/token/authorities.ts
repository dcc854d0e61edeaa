import { finding, type Evidence, type Finding } from '../../findings.js';
import type { MintContext } from './types.js';

/** `mint_authority_enabled` and `freeze_authority_enabled`: who can still change the supply or freeze holders. */
export function authorityFindings(ctx: MintContext, evidence: (v: unknown) => Evidence): Finding[] {
  const out: Finding[] = [];
  if (ctx.mintAuthority)
    out.push(
      finding(
        'mint_authority_enabled',
        `${ctx.mintAuthority} can mint new tokens at any time, diluting every holder.`,
        evidence({ mint_authority: ctx.mintAuthority }),
      ),
    );
  if (ctx.freezeAuthority)
    out.push(
      finding(
        'freeze_authority_enabled',
        `${ctx.freezeAuthority} can freeze any holder's token account, so holders may be unable to sell.`,
        evidence({ freeze_authority: ctx.freezeAuthority }),
      ),
    );
  return out;
}
