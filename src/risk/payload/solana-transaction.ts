import {
  getAccountMetasFromCompiledTransactionMessage,
  isWritableRole,
  getBase58Decoder,
  getBase58Encoder,
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
  parseAssignInstruction,
  parseAssignWithSeedInstruction,
  parseTransferSolInstruction,
  SystemInstruction,
} from '@solana-program/system';
import {
  AuthorityType,
  getTokenDecoder,
  identifyTokenInstruction,
  parseApproveCheckedInstruction,
  parseApproveInstruction,
  parseCloseAccountInstruction,
  parseSetAuthorityInstruction,
  TokenInstruction,
} from '@solana-program/token';
import { RpcError } from '../../chains/jsonrpc.js';
import type { SolanaAccount, SolanaRpc } from '../../chains/solana.js';
import { AppError, invalidRequest } from '../../platform/errors.js';
import { finding, type Finding } from '../findings.js';
import { BPF_LOADER_UPGRADEABLE, SYSTEM_PROGRAM, TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from '../solana/kind.js';
import type { Approval, AssetChange, AuthorityChange, PayloadCounterparty, Simulation } from './types.js';

/*
 * A Solana wire transaction, before it is signed (docs/risk.md#simulation): decoded with @solana/kit (legacy
 * and v0; address lookup tables read from the node), then simulated with `simulateTransaction`
 * (`sigVerify: false`; `replaceRecentBlockhash` unless it carries a durable nonce) in the same batch as
 * the pre-state of the accounts it writes. The difference between the two gives `from`'s balance changes,
 * the delegates its token accounts get and the owners they move to; the instructions (outer and inner,
 * through the @solana-program parsers) give what the state cannot say on its own: whose mint or program
 * authority moves, where a closed account's rent goes, a durable nonce.
 */

const COMPUTE_BUDGET = 'ComputeBudget111111111111111111111111111111';
/** Builtin programs: the runtime's default compute reservation for their instructions is 3,000 units. */
const BUILTINS: ReadonlySet<string> = new Set([
  SYSTEM_PROGRAM,
  COMPUTE_BUDGET,
  'AddressLookupTab1e1111111111111111111111111',
  'Stake11111111111111111111111111111111111111',
  'Vote111111111111111111111111111111111111111',
  'Config1111111111111111111111111111111111111',
  'BPFLoader1111111111111111111111111111111111',
  'BPFLoader2111111111111111111111111111111111',
  BPF_LOADER_UPGRADEABLE,
  'LoaderV411111111111111111111111111111111111',
  'KeccakSecp256k11111111111111111111111111111',
  'Ed25519SigVerify111111111111111111111111111',
  'Secp256r1SigVerify1111111111111111111111111',
  'ZkE1Gama1Proof11111111111111111111111111111',
]);
/** An SPL token account's base layout (Token-2022 accounts append extensions after it). */
const TOKEN_ACCOUNT_SIZE = 165;
/** Lamports per signature, the runtime's base fee. */
const LAMPORTS_PER_SIGNATURE = 5000n;
const UNLIMITED_U64 = 2n ** 63n;
/** Most writable accounts whose pre/post state is compared (a transaction holds at most 256 keys). */
const MAX_STATE_ACCOUNTS = 128;
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

/** What the instructions themselves say (outer and inner), beyond what the state diff shows. */
interface InstructionEffects {
  approvals: Approval[];
  authorities: AuthorityChange[];
  closes: { account: string; destination: string; owner: string }[];
  /** System transfers out of `from`: their destinations are recipients even when the simulation fails. */
  payees: string[];
}

function instructionEffects(
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
function innerInstructionsOf(
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
function parsedEffect(p: ParsedInner, from: string, out: InstructionEffects): void {
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

export interface SolanaSimulated {
  simulation: Simulation;
  counterparties: PayloadCounterparty[];
  findings: Finding[];
  failure?: unknown;
}

interface TokenState {
  mint: string;
  owner: string;
  amount: bigint;
  delegate: string | null;
  delegatedAmount: bigint;
  closeAuthority: string | null;
}

function tokenState(account: SolanaAccount | null): TokenState | null {
  if (!account || (account.owner !== TOKEN_PROGRAM && account.owner !== TOKEN_2022_PROGRAM)) return null;
  if (
    account.data.length < TOKEN_ACCOUNT_SIZE ||
    (account.owner === TOKEN_PROGRAM && account.data.length !== TOKEN_ACCOUNT_SIZE)
  )
    return null;
  try {
    const t = getTokenDecoder().decode(account.data.subarray(0, TOKEN_ACCOUNT_SIZE));
    return {
      mint: t.mint,
      owner: t.owner,
      amount: t.amount,
      delegate: t.delegate.__option === 'Some' ? t.delegate.value : null,
      delegatedAmount: t.delegatedAmount,
      closeAuthority: t.closeAuthority.__option === 'Some' ? t.closeAuthority.value : null,
    };
  } catch {
    return null;
  }
}

/** The fee the fee payer pays (base fee per signature + priority fee): not an asset change. */
function feeOf(decoded: DecodedSolanaTransaction): bigint {
  let price = 0n;
  let limit: bigint | null = null;
  // Without SetComputeUnitLimit the runtime reserves 3,000 units per builtin instruction and 200,000 per
  // other one (Agave's compute-budget defaults), capped at 1.4 M: the priority fee is paid on that.
  let requested = 0n;
  for (const ix of decoded.instructions) {
    requested += BUILTINS.has(ix.programAddress) ? 3_000n : 200_000n;
    if (ix.programAddress !== COMPUTE_BUDGET || !ix.data || ix.data.length < 1) continue;
    const view = new DataView(ix.data.buffer, ix.data.byteOffset, ix.data.length);
    if (ix.data[0] === 2 && ix.data.length >= 5) limit = BigInt(view.getUint32(1, true));
    if (ix.data[0] === 3 && ix.data.length >= 9) price = view.getBigUint64(1, true);
  }
  const units = limit ?? (requested > 1_400_000n ? 1_400_000n : requested);
  const priority = (price * units + 999_999n) / 1_000_000n;
  return LAMPORTS_PER_SIGNATURE * BigInt(decoded.message.header.numSignerAccounts) + priority;
}

/** The simulation of a decoded transaction for `from`; never throws for a node that cannot simulate. */
export async function simulateSolanaTransaction(
  rpc: SolanaRpc,
  decoded: DecodedSolanaTransaction,
  from: string,
  options: { signal?: AbortSignal; deadlineMs: number },
): Promise<SolanaSimulated> {
  const addresses = [from, ...[...decoded.writable].filter((a) => a !== from)].slice(0, MAX_STATE_ACCOUNTS);
  const call = { signal: options.signal, deadlineMs: options.deadlineMs };
  const wire = Buffer.from(decoded.wire).toString('base64');
  const [pre, post] = await Promise.allSettled([
    rpc.getMultipleAccounts(addresses, call),
    rpc.simulateTransaction(wire, {
      ...call,
      addresses,
      replaceRecentBlockhash: decoded.durableNonce === null,
    }),
  ]);
  const extra: Finding[] = [];
  const preAccounts = pre.status === 'fulfilled' ? pre.value.accounts : null;
  const owners = new Map<string, string>();
  preAccounts?.forEach((a, i) => {
    const t = tokenState(a);
    if (t) owners.set(`mint:${addresses[i]}`, t.mint);
  });
  // Inner instructions (CPI) count too: a program may hand over authority on the user's signature.
  const inner =
    post.status === 'fulfilled'
      ? innerInstructionsOf(post.value.innerInstructions, decoded.accountKeys)
      : { resolved: [], parsed: [] };
  const effects = instructionEffects([...decoded.instructions, ...inner.resolved], from, owners);
  for (const p of inner.parsed) parsedEffect(p, from, effects);
  const slot =
    post.status === 'fulfilled' ? post.value.slot : pre.status === 'fulfilled' ? pre.value.slot : undefined;
  const at = slot !== undefined ? { slot } : {};

  if (decoded.durableNonce)
    extra.push(
      finding(
        'durable_nonce',
        `This transaction uses the durable nonce account ${decoded.durableNonce.account} (authority ${decoded.durableNonce.authority}) ` +
          'instead of a recent blockhash: it does not expire, so whoever holds the signed copy can send it at any time, long after the user forgot it.',
        { method: 'simulateTransaction', ...at, value: decoded.durableNonce },
      ),
    );
  for (const close of effects.closes)
    if (close.owner === from && close.destination !== from)
      extra.push(
        finding(
          'close_to_other',
          `Token account ${close.account} is closed and its rent goes to ${close.destination}, not to ${from}.`,
          { method: 'simulateTransaction', ...at, value: close },
        ),
      );

  if (post.status === 'rejected' || pre.status === 'rejected') {
    const failure: unknown = post.status === 'rejected' ? post.reason : (pre as PromiseRejectedResult).reason;
    const simulation: Simulation = {
      status: 'unavailable',
      method: 'decode',
      ...at,
      error: `simulateTransaction: ${failure instanceof RpcError ? failure.rpcMessage : failure instanceof Error ? failure.message : 'no answer'}`,
      assetChanges: [],
      approvals: effects.approvals,
      authorityChanges: effects.authorities.filter((c) => c.from === from || c.account === from),
    };
    return {
      simulation,
      counterparties: counterpartiesOf(simulation, from, at, effects.payees),
      findings: extra,
      failure,
    };
  }
  const result = post.value;
  const before = pre.value.accounts;
  const reverted = result.err !== null;
  const assetChanges: AssetChange[] = [];
  const approvals: Approval[] = [];
  const authorities: AuthorityChange[] = [];
  if (!reverted) {
    const feePayer = decoded.accountKeys[0];
    const native = new Map<string, bigint>();
    const tokens = new Map<string, { owner: string; mint: string; amount: bigint }>();
    addresses.forEach((address, i) => {
      const a = before[i] ?? null;
      const b = result.accounts[i] ?? null;
      let lamports = (b?.lamports ?? 0n) - (a?.lamports ?? 0n);
      if (address === feePayer) lamports += feeOf(decoded);
      const ta = tokenState(a);
      const tb = tokenState(b);
      if (ta || tb) {
        const owner = (tb ?? ta)!.owner;
        const mint = (tb ?? ta)!.mint;
        const delta = (tb?.amount ?? 0n) - (ta?.amount ?? 0n);
        if (delta !== 0n) {
          const key = `${owner}|${mint}`;
          const entry = tokens.get(key) ?? { owner, mint, amount: 0n };
          entry.amount += delta;
          tokens.set(key, entry);
        }
        if (ta && ta.owner === from && tb) {
          if (
            tb.delegate &&
            (tb.delegate !== ta.delegate || tb.delegatedAmount !== ta.delegatedAmount) &&
            tb.delegatedAmount > 0n
          )
            approvals.push({
              owner: from,
              asset: { type: 'spl', address: tb.mint },
              spender: tb.delegate,
              amount: tb.delegatedAmount,
              unlimited: tb.delegatedAmount >= UNLIMITED_U64,
              coversBalance: ta.amount > 0n && tb.delegatedAmount >= ta.amount,
              all: false,
              expiresAt: null,
              source: 'transaction',
            });
          if (tb.owner !== ta.owner)
            authorities.push({
              account: address,
              authorityType: 'account_owner',
              from: ta.owner,
              to: tb.owner,
            });
          if (tb.closeAuthority !== ta.closeAuthority && tb.closeAuthority && tb.closeAuthority !== from)
            authorities.push({
              account: address,
              authorityType: 'close_account',
              from: ta.closeAuthority ?? from,
              to: tb.closeAuthority,
            });
        }
        // A token account's own lamports are its rent: they follow the account, not the owner's wallet.
        return;
      }
      if (lamports !== 0n) native.set(address, lamports);
      if (address === from && a && b && a.owner !== b.owner)
        authorities.push({ account: from, authorityType: 'program_owner', from: a.owner, to: b.owner });
    });
    for (const [owner, amount] of native) assetChanges.push({ owner, asset: { type: 'native' }, amount });
    for (const t of tokens.values())
      if (t.amount !== 0n)
        assetChanges.push({ owner: t.owner, asset: { type: 'spl', address: t.mint }, amount: t.amount });
    assetChanges.sort((x, y) => Number(y.owner === from) - Number(x.owner === from));
  }
  // Authorities only the instructions reveal (mints, programs), and all of them when the state could not show it.
  for (const c of effects.authorities) {
    const involvesFrom = c.from === from || c.account === from;
    const seen = authorities.some((x) => x.account === c.account && x.authorityType === c.authorityType);
    if (
      involvesFrom &&
      !seen &&
      (reverted || !['account_owner', 'close_account', 'program_owner'].includes(c.authorityType))
    )
      authorities.push(c);
  }
  const simulation: Simulation = {
    status: reverted ? 'reverted' : 'success',
    method: 'simulateTransaction',
    slot: result.slot,
    ...(reverted
      ? {
          error: `${JSON.stringify(result.err)}${result.logs.length ? ` (${result.logs.slice(-2).join(' | ').slice(0, 300)})` : ''}`,
        }
      : {}),
    assetChanges,
    approvals: reverted ? effects.approvals : approvals,
    authorityChanges: authorities,
  };
  return {
    simulation,
    counterparties: counterpartiesOf(simulation, from, { slot: result.slot }, payeesOf(effects, from)),
    findings: extra.map((f) => ({ ...f, evidence: { ...f.evidence, slot: result.slot } })),
  };
}

/** Who gets `from`'s lamports by instruction: System transfer destinations, a closed account's rent. */
const payeesOf = (effects: InstructionEffects, from: string): string[] => [
  ...effects.payees,
  ...effects.closes.filter((c) => c.owner === from).map((c) => c.destination),
];

/** Delegates, new authorities and the owners that gain what `from` loses. */
function counterpartiesOf(
  simulation: Simulation,
  from: string,
  at: { slot?: number },
  payees: string[],
): PayloadCounterparty[] {
  const out = new Map<string, PayloadCounterparty>();
  const put = (address: string, role: PayloadCounterparty['role'], value: unknown) => {
    if (address === from || address === SYSTEM_PROGRAM || out.has(address)) return;
    out.set(address, { address, role, evidence: { method: simulation.method, ...at, value } });
  };
  for (const c of simulation.authorityChanges)
    if (c.to && c.authorityType !== 'program_owner')
      put(c.to, 'authority', { account: c.account, authority_type: c.authorityType });
  for (const a of simulation.approvals)
    put(a.spender, 'spender', {
      asset: a.asset.address ?? null,
      amount: a.unlimited ? 'unlimited' : a.amount.toString(),
    });
  const lost = new Set(
    simulation.assetChanges
      .filter((c) => c.owner === from && c.amount < 0n)
      .map((c) => c.asset.address ?? 'native'),
  );
  for (const c of simulation.assetChanges)
    if (c.amount > 0n && lost.has(c.asset.address ?? 'native'))
      put(c.owner, 'recipient', { asset: c.asset.address ?? 'native', amount: c.amount.toString() });
  // The destinations of from's System transfers, even when the simulation failed.
  for (const payee of payees) put(payee, 'recipient', { instruction: 'transferSol' });
  return [...out.values()];
}
