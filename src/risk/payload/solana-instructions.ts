import { getBase58Encoder, type Address, type ResolvedInstruction } from '@solana/kit';
import {
  identifySystemInstruction,
  parseAssignInstruction,
  parseAssignWithSeedInstruction,
  parseTransferSolInstruction,
  SystemInstruction,
} from '@solana-program/system';
import {
  AuthorityType,
  identifyTokenInstruction,
  parseApproveCheckedInstruction,
  parseApproveInstruction,
  parseCloseAccountInstruction,
  parseSetAuthorityInstruction,
  TokenInstruction,
} from '@solana-program/token';
import { BPF_LOADER_UPGRADEABLE, SYSTEM_PROGRAM, TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from '../solana/kind.js';
import type { Approval, AuthorityChange } from './types.js';

/*
 * What a Solana transaction's instructions say (docs/risk.md#before-the-user-signs), outer and inner,
 * through the @solana-program parsers — and the node's own parsed form of inner instructions: authorities
 * handed over (System Assign, SPL SetAuthority, the upgradeable loader's SetAuthority), closes, approvals,
 * System transfers out of `from`. What the state difference cannot say on its own.
 */

const UNLIMITED_U64 = 2n ** 63n;

/** What the instructions themselves say (outer and inner), beyond what the state diff shows. */
export interface InstructionEffects {
  approvals: Approval[];
  authorities: AuthorityChange[];
  closes: { account: string; destination: string; owner: string }[];
  /** System transfers out of `from`: their destinations are recipients even when the simulation fails. */
  payees: string[];
}

export function instructionEffects(
  instructions: ResolvedInstruction[],
  from: string,
  accountOwners: Map<string, string>,
): InstructionEffects {
  const out: InstructionEffects = { approvals: [], authorities: [], closes: [], payees: [] };
  for (const ix of instructions) {
    if (!ix.data || !ix.accounts) continue;
    const input = ix as Parameters<typeof parseAssignInstruction>[0];
    try {
      if (ix.programAddress === SYSTEM_PROGRAM) {
        const kind = identifySystemInstruction(ix.data);
        if (kind === SystemInstruction.TransferSol) {
          const p = parseTransferSolInstruction(input);
          if (p.accounts.source.address === from) out.payees.push(p.accounts.destination.address);
        } else if (kind === SystemInstruction.Assign) {
          const p = parseAssignInstruction(input);
          out.authorities.push({
            account: p.accounts.account.address,
            authorityType: 'program_owner',
            from: SYSTEM_PROGRAM,
            to: p.data.programAddress,
          });
        } else if (kind === SystemInstruction.AssignWithSeed) {
          const p = parseAssignWithSeedInstruction(input);
          out.authorities.push({
            account: p.accounts.account.address,
            authorityType: 'program_owner',
            from: SYSTEM_PROGRAM,
            to: p.data.programAddress,
          });
        }
      } else if (ix.programAddress === TOKEN_PROGRAM || ix.programAddress === TOKEN_2022_PROGRAM) {
        const kind = identifyTokenInstruction(ix.data);
        if (kind === TokenInstruction.SetAuthority) {
          const p = parseSetAuthorityInstruction(input);
          const type = {
            [AuthorityType.MintTokens]: 'mint_tokens',
            [AuthorityType.FreezeAccount]: 'freeze_account',
            [AuthorityType.AccountOwner]: 'account_owner',
            [AuthorityType.CloseAccount]: 'close_account',
          }[p.data.authorityType] as AuthorityChange['authorityType'];
          const to = p.data.newAuthority.__option === 'Some' ? p.data.newAuthority.value : null;
          out.authorities.push({
            account: p.accounts.owned.address,
            authorityType: type,
            from: p.accounts.owner.address,
            to,
          });
        } else if (kind === TokenInstruction.CloseAccount) {
          const p = parseCloseAccountInstruction(input);
          out.closes.push({
            account: p.accounts.account.address,
            destination: p.accounts.destination.address,
            owner: p.accounts.owner.address,
          });
        } else if (kind === TokenInstruction.Approve || kind === TokenInstruction.ApproveChecked) {
          const p =
            kind === TokenInstruction.Approve
              ? parseApproveInstruction(input)
              : parseApproveCheckedInstruction(input);
          if (p.accounts.owner.address !== from) continue;
          const mint =
            kind === TokenInstruction.ApproveChecked
              ? parseApproveCheckedInstruction(input).accounts.mint.address
              : accountOwners.get(`mint:${p.accounts.source.address}`);
          out.approvals.push({
            owner: from,
            asset: { type: 'spl', ...(mint ? { address: mint } : {}) },
            spender: p.accounts.delegate.address,
            amount: BigInt(p.data.amount),
            unlimited: BigInt(p.data.amount) >= UNLIMITED_U64,
            coversBalance: null,
            all: false,
            expiresAt: null,
            source: 'transaction',
          });
        }
      } else if (ix.programAddress === BPF_LOADER_UPGRADEABLE && ix.data.length >= 4) {
        // The upgradeable loader's SetAuthority (4) / SetAuthorityChecked (7): [programdata, current, new?].
        // No maintained codec for this program is published for this kit; its instruction tag is a u32.
        const tag = new DataView(ix.data.buffer, ix.data.byteOffset, 4).getUint32(0, true);
        if ((tag === 4 || tag === 7) && ix.accounts.length >= 2)
          out.authorities.push({
            account: ix.accounts[0]!.address,
            authorityType: 'upgrade_authority',
            from: ix.accounts[1]!.address,
            to: ix.accounts[2]?.address ?? null,
          });
      }
    } catch {
      // an instruction these parsers do not know (another layout, a Token-2022 extension): not judged here
    }
  }
  return out;
}

type ParsedInner = { program: string; type: string; info: Record<string, unknown> };

/**
 * The inner instructions in the forms a node renders them: compiled and partially decoded ones become
 * instructions for the @solana-program parsers; parsed ones (the node decoded them) are kept as such.
 */
export function innerInstructionsOf(
  groups: { index: number; instructions: unknown[] }[],
  keys: string[],
): { resolved: ResolvedInstruction[]; parsed: ParsedInner[] } {
  const resolved: ResolvedInstruction[] = [];
  const parsed: ParsedInner[] = [];
  const encoder = getBase58Encoder();
  for (const raw of groups.flatMap((g) => g.instructions)) {
    if (!raw || typeof raw !== 'object') continue;
    const ix = raw as Record<string, unknown>;
    try {
      if (ix.parsed && typeof ix.parsed === 'object' && typeof ix.program === 'string') {
        const p = ix.parsed as { type?: unknown; info?: unknown };
        if (typeof p.type === 'string' && p.info && typeof p.info === 'object')
          parsed.push({ program: ix.program, type: p.type, info: p.info as Record<string, unknown> });
        continue;
      }
      if (typeof ix.data !== 'string' || !Array.isArray(ix.accounts)) continue;
      const program =
        typeof ix.programIdIndex === 'number'
          ? keys[ix.programIdIndex]
          : typeof ix.programId === 'string'
            ? ix.programId
            : undefined;
      const addresses = (ix.accounts as unknown[]).map((a) =>
        typeof a === 'number' ? keys[a] : typeof a === 'string' ? a : undefined,
      );
      if (!program || addresses.some((a) => a === undefined)) continue;
      const accounts = addresses.map((address) => ({ address: address as Address, role: 0 as const }));
      const data = new Uint8Array(encoder.encode(ix.data));
      resolved.push({
        programAddress: program as Address,
        ...(accounts.length ? { accounts } : {}),
        ...(data.length ? { data } : {}),
      });
    } catch {
      // an inner instruction that does not decode is not judged
    }
  }
  return { resolved, parsed };
}

const AUTHORITY_NAMES: Record<string, AuthorityChange['authorityType']> = {
  mintTokens: 'mint_tokens',
  freezeAccount: 'freeze_account',
  accountOwner: 'account_owner',
  closeAccount: 'close_account',
};

/** A node-parsed inner instruction (System, SPL Token) into the same effects as a decoded one. */
export function parsedEffect(p: ParsedInner, from: string, out: InstructionEffects): void {
  const str = (k: string) => (typeof p.info[k] === 'string' ? p.info[k] : null);
  if (
    p.program === 'system' &&
    (p.type === 'assign' || p.type === 'assignWithSeed') &&
    str('account') &&
    str('owner')
  )
    out.authorities.push({
      account: str('account')!,
      authorityType: 'program_owner',
      from: SYSTEM_PROGRAM,
      to: str('owner'),
    });
  if (!p.program.startsWith('spl-token')) return;
  if (p.type === 'setAuthority' && str('authorityType') && AUTHORITY_NAMES[str('authorityType')!]) {
    const account = str('account') ?? str('mint');
    const authority = str('authority') ?? str('multisigAuthority');
    if (account && authority)
      out.authorities.push({
        account,
        authorityType: AUTHORITY_NAMES[str('authorityType')!]!,
        from: authority,
        to: str('newAuthority'),
      });
  }
  if (p.type === 'closeAccount' && str('account') && str('destination') && str('owner'))
    out.closes.push({ account: str('account')!, destination: str('destination')!, owner: str('owner')! });
  if ((p.type === 'approve' || p.type === 'approveChecked') && str('owner') === from && str('delegate')) {
    const amount = BigInt(
      str('amount') ?? (p.info.tokenAmount as { amount?: string } | undefined)?.amount ?? '0',
    );
    out.approvals.push({
      owner: from,
      asset: { type: 'spl', ...(str('mint') ? { address: str('mint')! } : {}) },
      spender: str('delegate')!,
      amount,
      unlimited: amount >= UNLIMITED_U64,
      coversBalance: null,
      all: false,
      expiresAt: null,
      source: 'transaction',
    });
  }
}
