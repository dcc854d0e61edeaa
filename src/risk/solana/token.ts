import {
  getMetadataAccountDataSerializer,
  Key,
  MPL_TOKEN_METADATA_PROGRAM_ID,
} from '@metaplex-foundation/mpl-token-metadata';
import {
  getMintDecoder as getSplMintDecoder,
  getTokenDecoder as getSplTokenDecoder,
  identifyTokenAccount,
  TOKEN_PROGRAM_ADDRESS,
  TokenAccount,
} from '@solana-program/token';
import {
  AccountState,
  getMintDecoder as getToken2022MintDecoder,
  getTokenDecoder as getToken2022TokenDecoder,
  identifyToken2022Account,
  TOKEN_2022_PROGRAM_ADDRESS,
  Token2022Account,
  type Extension,
} from '@solana-program/token-2022';
import {
  address,
  getAddressEncoder,
  getProgramDerivedAddress,
  isAddress,
  isOption,
  unwrapOption,
  type Address,
  type Option,
} from '@solana/kit';
import { RpcError } from '../../chains/jsonrpc.js';
import { networkLabel } from '../../chains/registry.js';
import type { SolanaAccount, SolanaRpc, TokenAccountBalance } from '../../chains/solana.js';
import { AppError } from '../../platform/errors.js';
import { finding, suppress, type Evidence, type Finding, type Severity } from '../findings.js';
import {
  EXCLUDED_OWNER_KINDS,
  type KnownMint,
  type KnownOwnerKind,
  type OwnerLabel,
  type SolanaKnownRegistry,
} from '../known/solana.js';
import type { AnalyzeOptions, ChainAnalysis, TargetKind } from '../types.js';

/*
 * scan/token (and risk-v2 `token`) on Solana: one mint, read with at most three sequential provider round
 * trips on a cold scan —
 *   1. one JSON-RPC batch: getMultipleAccounts([mint, Metaplex metadata PDA]) + getTokenLargestAccounts(mint)
 *      (issued in the same tick, so the client sends them in one HTTP request);
 *   2. getMultipleAccounts of the largest token accounts, for their owners;
 *   3. getMultipleAccounts of those owners, to tell pool accounts (owned by a known AMM program) apart.
 * Account data is decoded from base64 by the SPL Token / Token-2022 / Metaplex codecs. The holder check may
 * fail on its own (getTokenLargestAccounts is refused or slow on some providers): the mint's findings still
 * stand, and the result says `complete: false` with a `check_incomplete` finding.
 */

export type TokenProgramName = 'spl-token' | 'token-2022';

export interface SolanaTokenOptions extends AnalyzeOptions {
  known: SolanaKnownRegistry;
}

/** API.md `token.metadata`. */
export interface TokenMetadataView {
  name: string;
  symbol: string;
  uri: string;
  update_authority: string | null;
  mutable: boolean;
  source: 'metaplex' | 'token-2022';
}

/** One Token-2022 mint extension, snake_case, u64 values as decimal strings, "no key" as null. */
export interface TokenExtensionView {
  type: string;
  [field: string]: unknown;
}

/** API.md `token`. */
export interface TokenView {
  decimals: number;
  /** Whole tokens, exact decimal string. */
  supply: string;
  supply_raw: string;
  mint_authority: string | null;
  freeze_authority: string | null;
  metadata: TokenMetadataView | null;
  extensions: TokenExtensionView[];
}

/** One of the largest token accounts (API.md `holders.largest[]`). */
export interface HolderView {
  /** The token account's owner (null: the account could not be read or decoded). */
  owner: string | null;
  token_account: string;
  amount_raw: string;
  /** Of the total supply. */
  share: number;
  /** A known owner (pool, locker, burn, exchange), else null. */
  label: string | null;
  label_kind: KnownOwnerKind | null;
  /** Left out of the concentration shares (pools, lockers, burn addresses). */
  excluded: boolean;
  /** The program owning the owner's own account (System for a wallet); null when unknown or no account. */
  owner_program: string | null;
}

/** API.md `holders`. Shares are fractions of the total supply, from the 20 largest token accounts. */
export interface HoldersView {
  /** The 10 largest owners (accounts grouped by owner, excluded owners left out); null when supply is 0. */
  top10_share: number | null;
  /** The largest single owner (not excluded; owner null if its account could not be read); null if none. */
  top_owner: { owner: string | null; share: number; accounts: number } | null;
  /** Held by pools, lockers and burn addresses among the largest accounts. */
  excluded_share: number | null;
  largest: HolderView[];
}

/** What the known-token registry says about this mint. */
export interface KnownTokenContext {
  symbol: string;
  name: string;
  issuer: string;
  category: KnownMint['category'];
  /**
   * expected: the authorities are the registry's; changed: one differs (authority_changed); unverified:
   * the registry does not know them; mismatch: program or decimals differ from the registry's.
   */
  authorities: 'expected' | 'changed' | 'unverified' | 'mismatch';
  registry_version: string;
}

export interface SolanaTokenAnalysis extends ChainAnalysis {
  status: 'mint';
  kind: 'token';
  tokenProgram: TokenProgramName;
  token: TokenView;
  /** null when the holder check did not finish (then `complete` is false). */
  holders: HoldersView | null;
  known: KnownTokenContext | null;
}

/** No account at the address (scan/token → 404 not_found). */
export interface SolanaTokenNotFound {
  status: 'not_found';
  kind: 'missing';
  dataAsOf: { slot: number };
}

/** An account that is not an SPL Token / Token-2022 mint (scan/token → 422 not_a_mint). */
export interface SolanaTokenNotAMint {
  status: 'not_a_mint';
  kind: Exclude<TargetKind, 'token' | 'missing'>;
  /** The program owning the account. */
  ownerProgram: string;
  dataAsOf: { slot: number };
}

export type SolanaTokenResult = SolanaTokenAnalysis | SolanaTokenNotFound | SolanaTokenNotAMint;

const SYSTEM_PROGRAM = '11111111111111111111111111111111';
/** The all-zero key: Token-2022's "none" in its OptionalNonZeroPubkey fields. */
const ZERO_KEY = SYSTEM_PROGRAM;
const METAPLEX_PROGRAM = address(MPL_TOKEN_METADATA_PROGRAM_ID);
const SHARE_SCALE = 1_000_000n;
const TOP = 10;
/** Grouping key prefix of a token account whose owner is unknown (it stands alone). */
const UNREAD = 'unread:';
const BPS_HIGH = 100; // > 1% → high

/** The token programs' codecs, built once: building a Token-2022 decoder (its extensions) is costly. */
const DECODERS = {
  splMint: getSplMintDecoder(),
  splToken: getSplTokenDecoder(),
  token2022Mint: getToken2022MintDecoder(),
  token2022Token: getToken2022TokenDecoder(),
};

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
 * Analyse one Solana mint. Throws AppError('provider_unavailable') when the mint itself cannot be read;
 * every other failure (holders) makes the result incomplete instead.
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
  const read = opts.signal ? { signal: opts.signal } : {};

  // Round trip 1: both calls are issued in this tick, so they travel in one batch request.
  const accountsCall = rpc.getMultipleAccounts([mint, metadataPda], read);
  const largestCall = settle(rpc.getTokenLargestAccounts(mint, read));
  let first: Awaited<typeof accountsCall>;
  try {
    first = await accountsCall;
  } catch (err) {
    const largest = await largestCall;
    // The whole batch failed (the provider may choke on getTokenLargestAccounts, a heavy index scan):
    // read the mint alone once, so the holder check fails on its own rather than the whole scan.
    if (largest.ok || largest.error instanceof RpcError || opts.signal?.aborted)
      throw providerError(err, rpc, 'getMultipleAccounts');
    first = await rpc
      .getMultipleAccounts([mint, metadataPda], read)
      .catch((retryErr: unknown) => Promise.reject(providerError(retryErr, rpc, 'getMultipleAccounts')));
  }
  const { slot } = first;
  const [mintAccount, metadataAccount] = first.accounts;
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

  const metadata = readMetadata(ctx, metadataAccount ?? null, metadataPda);
  const findings: Finding[] = [
    ...authorityFindings(ctx, evidence),
    ...extensionFindings(ctx, evidence),
    ...metadataFindings(ctx, metadata, opts, evidence),
  ];
  if (ctx.supply === 0n)
    findings.push(finding('zero_supply', 'No tokens exist: the supply is 0.', evidence({ supply_raw: '0' })));

  const holders = await readHolders(rpc, ctx, await largestCall, opts);
  if (holders.finding) findings.push(holders.finding);

  const known = applyKnownContext(ctx, findings, opts, evidence);
  const incomplete = [...(metadata.incomplete ? [metadata.incomplete] : []), ...holders.incomplete];
  for (const miss of incomplete) {
    findings.push(
      finding('check_incomplete', `${miss.check} did not finish: ${miss.reason}`, {
        method: miss.method,
        slot,
        value: { check: miss.check, reason: miss.reason },
      }),
    );
  }

  const token: TokenView = {
    decimals: ctx.decimals,
    supply: formatUnits(ctx.supply, ctx.decimals),
    supply_raw: ctx.supply.toString(),
    mint_authority: ctx.mintAuthority,
    freeze_authority: ctx.freezeAuthority,
    metadata: metadata.primary,
    extensions: ctx.extensions.filter((e) => e.__kind !== 'Uninitialized').map(extensionView),
  };
  const slots = [slot, ...holders.slots];
  return {
    status: 'mint',
    kind: 'token',
    tokenProgram: ctx.program,
    token,
    holders: holders.view,
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
      top10_share: holders.view?.top10_share ?? null,
      top_owner_share: holders.view ? (holders.view.top_owner?.share ?? 0) : null,
      known_token: known,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// The mint account

interface MintContext {
  mint: Address;
  slot: number;
  program: TokenProgramName;
  programAddress: string;
  decimals: number;
  supply: bigint;
  mintAuthority: string | null;
  freezeAuthority: string | null;
  extensions: Extension[];
}

type DecodedMint =
  | {
      status: 'mint';
      program: TokenProgramName;
      decimals: number;
      supply: bigint;
      mintAuthority: string | null;
      freezeAuthority: string | null;
      extensions: Extension[];
    }
  | { status: 'other'; kind: SolanaTokenNotAMint['kind'] };

/** Mint, token account, multisig or something else, by the owning program's own codecs. */
function decodeMintAccount(account: SolanaAccount): DecodedMint {
  const other = (kind: SolanaTokenNotAMint['kind']): DecodedMint => ({ status: 'other', kind });
  if (account.executable) return other('program');
  if (account.owner === TOKEN_PROGRAM_ADDRESS) {
    let type: TokenAccount;
    try {
      type = identifyTokenAccount(account.data);
    } catch {
      return other('account');
    }
    if (type === TokenAccount.Token) return other('token_account');
    if (type !== TokenAccount.Mint) return other('account');
    const m = DECODERS.splMint.decode(account.data);
    if (!m.isInitialized) return other('account');
    return {
      status: 'mint',
      program: 'spl-token',
      decimals: m.decimals,
      supply: m.supply,
      mintAuthority: optionalKey(m.mintAuthority),
      freezeAuthority: optionalKey(m.freezeAuthority),
      extensions: [],
    };
  }
  if (account.owner === TOKEN_2022_PROGRAM_ADDRESS) {
    const type = identifyToken2022(account.data);
    if (type === Token2022Account.Token) return other('token_account');
    if (type !== Token2022Account.Mint) return other('account');
    const m = DECODERS.token2022Mint.decode(account.data);
    if (!m.isInitialized) return other('account');
    return {
      status: 'mint',
      program: 'token-2022',
      decimals: m.decimals,
      supply: m.supply,
      mintAuthority: optionalKey(m.mintAuthority),
      freezeAuthority: optionalKey(m.freezeAuthority),
      extensions: unwrapOption(m.extensions) ?? [],
    };
  }
  if (account.owner === SYSTEM_PROGRAM && account.data.length === 0) return other('wallet');
  return other('account');
}

/**
 * Token-2022 accounts: the base sizes identify themselves; an extended account (longer than a token
 * account) is a mint if the mint codec accepts it (it checks the account-type marker), else a token
 * account if the token codec does.
 */
function identifyToken2022(data: Uint8Array): Token2022Account | undefined {
  try {
    return identifyToken2022Account(data);
  } catch {
    // not one of the base sizes
  }
  for (const [type, decoder] of [
    [Token2022Account.Mint, DECODERS.token2022Mint],
    [Token2022Account.Token, DECODERS.token2022Token],
  ] as const) {
    try {
      decoder.decode(data);
      return type;
    } catch {
      // not this type
    }
  }
  return undefined;
}

function authorityFindings(ctx: MintContext, evidence: (v: unknown) => Evidence): Finding[] {
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

function extensionOf<K extends Extension['__kind']>(
  ctx: MintContext,
  kind: K,
): Extract<Extension, { __kind: K }> | undefined {
  return ctx.extensions.find((e): e is Extract<Extension, { __kind: K }> => e.__kind === kind);
}

/** The Token-2022 extension findings of RISK.md, in a fixed order. */
function extensionFindings(ctx: MintContext, evidence: (v: unknown) => Evidence): Finding[] {
  const out: Finding[] = [];
  const raw = (e: Extension) => extensionView(e);

  const delegate = extensionOf(ctx, 'PermanentDelegate');
  const delegateKey = delegate && nonZero(delegate.delegate);
  if (delegate && delegateKey)
    out.push(
      finding(
        'permanent_delegate',
        `${delegateKey} is a permanent delegate: it can transfer or burn tokens from any holder's account, without their signature.`,
        evidence(raw(delegate)),
      ),
    );

  const hook = extensionOf(ctx, 'TransferHook');
  if (hook) {
    const program = nonZero(hook.programId);
    const authority = nonZero(hook.authority);
    if (program || authority)
      out.push(
        finding(
          'transfer_hook',
          program
            ? `Every transfer runs program ${program}${authority ? `, which ${authority} can replace` : ''}: it can block or alter transfers.`
            : `No hook program is set now, but ${authority} can set one that runs on every transfer.`,
          evidence(raw(hook)),
        ),
      );
  }

  const fee = extensionOf(ctx, 'TransferFeeConfig');
  if (fee) {
    const older = fee.olderTransferFee.transferFeeBasisPoints;
    const newer = fee.newerTransferFee.transferFeeBasisPoints;
    const highest = Math.max(older, newer);
    const authority = nonZero(fee.transferFeeConfigAuthority);
    const pct = (bps: number) => `${(bps / 100).toFixed(2)}%`;
    if (highest > 0) {
      const schedule =
        older === newer
          ? `${pct(older)} (${older} bps)`
          : `${pct(older)} (${older} bps) before epoch ${fee.newerTransferFee.epoch}, ${pct(newer)} (${newer} bps) from then on`;
      out.push(
        finding(
          'transfer_fee',
          `Every transfer pays a fee of ${schedule}${authority ? `; ${authority} can change it` : ''}.`,
          evidence(raw(fee)),
          { severity: highest > BPS_HIGH ? 'high' : 'medium' },
        ),
      );
    } else if (authority) {
      out.push(
        finding(
          'transfer_fee',
          `Transfers pay no fee now, but ${authority} can set one (up to 100%), effective two epochs later.`,
          evidence(raw(fee)),
        ),
      );
    }
  }

  const defaultState = extensionOf(ctx, 'DefaultAccountState');
  if (defaultState?.state === AccountState.Frozen)
    out.push(
      finding(
        'default_account_state_frozen',
        'Every new token account starts frozen: holders need the freeze authority to thaw them before they can move tokens.',
        evidence(raw(defaultState)),
      ),
    );

  const nonTransferable = extensionOf(ctx, 'NonTransferable');
  if (nonTransferable)
    out.push(
      finding(
        'non_transferable',
        'The tokens are non-transferable (soul-bound): holders can never sell or send them.',
        evidence(raw(nonTransferable)),
      ),
    );

  const pausable = extensionOf(ctx, 'PausableConfig');
  if (pausable) {
    const authority = optionalKey(pausable.authority);
    if (pausable.paused || authority)
      out.push(
        finding(
          'pausable',
          pausable.paused
            ? `Transfers, mints and burns are paused now${authority ? ` (by ${authority}, who can resume them)` : ' and no authority can resume them'}.`
            : `${authority} can pause every transfer, mint and burn.`,
          evidence(raw(pausable)),
        ),
      );
  }

  const close = extensionOf(ctx, 'MintCloseAuthority');
  const closeKey = close && nonZero(close.closeAuthority);
  if (close && closeKey)
    out.push(
      finding(
        'mint_close_authority',
        `${closeKey} can close the mint once its supply is 0 (and re-create a different mint at the same address).`,
        evidence(raw(close)),
      ),
    );

  const confidential = extensionOf(ctx, 'ConfidentialTransferMint');
  if (confidential) {
    const auditor = optionalKey(confidential.auditorElgamalPubkey);
    out.push(
      finding(
        'confidential_transfers',
        `Balances and transfer amounts can be encrypted${auditor ? ', readable by the auditor key' : ' with no auditor key'}${confidential.autoApproveNewAccounts ? '; new accounts are approved automatically' : ''}.`,
        evidence(raw(confidential)),
      ),
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Metadata

interface MetadataSource {
  view: TokenMetadataView;
  /** Who can change it (update authority, or the Token-2022 metadata pointer's authority). */
  changers: { update_authority: string | null; pointer_authority?: string | null };
}

interface MetadataRead {
  primary: TokenMetadataView | null;
  all: MetadataSource[];
  /** A Token-2022 metadata pointer to an account other than the mint and its Metaplex PDA (not read). */
  externalPointer: string | null;
  incomplete?: Incomplete;
}

/**
 * Metaplex metadata (the PDA) and Token-2022 metadata (in the mint). The one shown is the Token-2022 one
 * when the mint's metadata pointer points to itself (or there is no pointer), else Metaplex; both are
 * checked for mutability and copycat names.
 */
function readMetadata(ctx: MintContext, account: SolanaAccount | null, pda: Address): MetadataRead {
  const sources: MetadataSource[] = [];
  let incomplete: Incomplete | undefined;
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

function metadataFindings(
  ctx: MintContext,
  metadata: MetadataRead,
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

// ---------------------------------------------------------------------------------------------------------
// Holders

interface Incomplete {
  check: string;
  method: string;
  reason: string;
}

interface HoldersRead {
  view: HoldersView | null;
  finding?: Finding;
  incomplete: Incomplete[];
  /** Context slots of the reads used. */
  slots: number[];
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

async function readHolders(
  rpc: SolanaRpc,
  ctx: MintContext,
  largest: Settled<{ slot: number; accounts: TokenAccountBalance[] }>,
  opts: SolanaTokenOptions,
): Promise<HoldersRead> {
  const check = 'holder_concentration';
  const fail = (method: string, reason: string, slots: number[] = []): HoldersRead => ({
    view: null,
    incomplete: [{ check, method, reason }],
    slots,
  });
  if (!largest.ok) return fail('getTokenLargestAccounts', describe(largest.error));
  const { slot: largestSlot, accounts: top } = largest.value;
  const read = opts.signal ? { signal: opts.signal } : {};

  // Round trip 2: who owns the largest token accounts.
  let tokenAccounts: { slot: number; accounts: (SolanaAccount | null)[] };
  try {
    tokenAccounts = await rpc.getMultipleAccounts(
      top.map((t) => t.address),
      read,
    );
  } catch (err) {
    return fail('getMultipleAccounts', `the largest token accounts could not be read (${describe(err)})`, [
      largestSlot,
    ]);
  }
  const owners = top.map((_, i) => tokenOwner(ctx, tokenAccounts.accounts[i] ?? null));
  const labels = new Map<string, OwnerLabel>();
  for (const owner of owners) {
    const known = owner ? opts.known.owner(opts.network, owner) : undefined;
    if (owner && known) labels.set(owner, { label: known.label, kind: known.kind, matchedBy: 'address' });
  }

  // Round trip 3: the owners' own accounts, to recognise pools held through program-owned accounts.
  const unresolved = [...new Set(owners.filter((o): o is string => o !== null && !labels.has(o)))];
  const ownerPrograms = new Map<string, string | null>();
  const incomplete: Incomplete[] = [];
  const slots = [largestSlot];
  if (tokenAccounts.slot > 0) slots.push(tokenAccounts.slot);
  if (unresolved.length > 0) {
    try {
      const ownerAccounts = await rpc.getMultipleAccounts(unresolved, read);
      slots.push(ownerAccounts.slot);
      unresolved.forEach((owner, i) => {
        const account = ownerAccounts.accounts[i] ?? null;
        ownerPrograms.set(owner, account?.owner ?? null);
        const program =
          account && !account.executable ? opts.known.ownerProgram(opts.network, account.owner) : undefined;
        if (program)
          labels.set(owner, { label: program.label, kind: program.kind, matchedBy: 'owner_program' });
      });
    } catch (err) {
      incomplete.push({
        check,
        method: 'getMultipleAccounts',
        reason: `the owners of the largest token accounts could not be read (${describe(err)}); pools held through program-owned accounts may be counted as holders`,
      });
    }
  }

  const supply = ctx.supply;
  const share = (amount: bigint): number =>
    supply === 0n ? 0 : Number((amount * SHARE_SCALE) / supply) / Number(SHARE_SCALE);
  const largestView: HolderView[] = top.map((t, i) => {
    const owner = owners[i] ?? null;
    const label = owner ? labels.get(owner) : undefined;
    return {
      owner,
      token_account: t.address,
      amount_raw: t.amount.toString(),
      share: share(t.amount),
      label: label?.label ?? null,
      label_kind: label?.kind ?? null,
      excluded: label ? EXCLUDED_OWNER_KINDS.has(label.kind) : false,
      owner_program: owner ? (ownerPrograms.get(owner) ?? null) : null,
    };
  });

  // Accounts grouped by owner (an unreadable account stands alone), excluded owners left out.
  const byOwner = new Map<string, { amount: bigint; accounts: number }>();
  let excluded = 0n;
  for (const h of largestView) {
    const amount = BigInt(h.amount_raw);
    if (h.excluded) {
      excluded += amount;
      continue;
    }
    const key = h.owner ?? `${UNREAD}${h.token_account}`;
    const entry = byOwner.get(key) ?? { amount: 0n, accounts: 0 };
    entry.amount += amount;
    entry.accounts += 1;
    byOwner.set(key, entry);
  }
  const ranked = [...byOwner.entries()].sort(([ka, a], [kb, b]) =>
    a.amount === b.amount ? (ka < kb ? -1 : 1) : a.amount > b.amount ? -1 : 1,
  );
  const top10 = ranked.slice(0, TOP).reduce((sum, [, o]) => sum + o.amount, 0n);
  const [leaderKey, leader] = ranked[0] ?? [];
  const view: HoldersView = {
    top10_share: supply === 0n ? null : share(top10),
    top_owner:
      leaderKey !== undefined && leader
        ? {
            owner: leaderKey.startsWith(UNREAD) ? null : leaderKey,
            share: share(leader.amount),
            accounts: leader.accounts,
          }
        : null,
    excluded_share: supply === 0n ? null : share(excluded),
    largest: largestView,
  };

  let concentration: Finding | undefined;
  if (supply > 0n && ranked.length > 0) {
    const over = (amount: bigint, pct: bigint) => amount * 100n > supply * pct;
    const leaderAmount = leader?.amount ?? 0n;
    const severity: Severity | undefined =
      over(top10, 80n) || over(leaderAmount, 40n) ? 'high' : over(top10, 50n) ? 'medium' : undefined;
    if (severity) {
      const pct = (x: number | null | undefined) => `${((x ?? 0) * 100).toFixed(1)}%`;
      const parts = [
        `The ${Math.min(TOP, ranked.length)} largest holders hold ${pct(view.top10_share)} of the supply`,
      ];
      if (over(leaderAmount, 40n) && view.top_owner)
        parts.push(
          `one owner, ${view.top_owner.owner ?? 'unknown'}, holds ${pct(view.top_owner.share)}${view.top_owner.accounts > 1 ? ` across ${view.top_owner.accounts} token accounts` : ''}`,
        );
      const excludedNote =
        excluded > 0n
          ? ` (known pools, lockers and burn addresses, ${pct(view.excluded_share)}, left out)`
          : '';
      concentration = finding(
        'holder_concentration',
        `${parts.join('; ')}${excludedNote}; from the ${top.length} largest token accounts.`,
        {
          method: 'getTokenLargestAccounts',
          slot: largestSlot,
          value: {
            supply_raw: supply.toString(),
            top10_share: view.top10_share,
            top_owner: view.top_owner,
            excluded_share: view.excluded_share,
            accounts_considered: top.length,
            owners_read_with: 'getMultipleAccounts',
          },
        },
        { severity },
      );
    }
  }
  return { view, finding: concentration, incomplete, slots };
}

/** The owner of a token account of this mint, by the program's codec; null if it is not one. */
function tokenOwner(ctx: MintContext, account: SolanaAccount | null): string | null {
  if (!account || account.owner !== ctx.programAddress) return null;
  try {
    const token =
      ctx.program === 'spl-token'
        ? DECODERS.splToken.decode(account.data)
        : DECODERS.token2022Token.decode(account.data);
    return token.mint === ctx.mint ? token.owner : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Known-token context

function applyKnownContext(
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

// ---------------------------------------------------------------------------------------------------------
// Helpers

/** An Option<Address> (or a Token-2022 OptionalNonZeroPubkey) as an address or null. */
function optionalKey(value: Option<string> | string): string | null {
  const key = isOption(value) ? unwrapOption(value) : value;
  return key === null ? null : nonZero(key);
}

function nonZero(key: string): string | null {
  return key === ZERO_KEY ? null : key;
}

/** Metadata strings as the programs store them: NUL padding (Metaplex) stripped, whitespace trimmed. */
function clean(s: string): string {
  return s.replace(/\0/g, '').trim();
}

/** Raw u64 as an exact decimal string of whole tokens ("1000000", "1.5"). */
export function formatUnits(raw: bigint, decimals: number): string {
  if (decimals === 0) return raw.toString();
  const digits = raw.toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, -decimals);
  const fraction = digits.slice(-decimals).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}

const TEXT_FIELDS = new Set(['name', 'symbol', 'uri', 'additionalMetadata']);

/** One extension as API.md shows it; TransferFeeConfig gets the flat fields the API documents. */
export function extensionView(e: Extension): TokenExtensionView {
  if (e.__kind === 'TransferFeeConfig') {
    const fee = (f: typeof e.olderTransferFee) => ({
      epoch: f.epoch.toString(),
      fee_bps: f.transferFeeBasisPoints,
      max_fee_raw: f.maximumFee.toString(),
    });
    const older = fee(e.olderTransferFee);
    const newer = fee(e.newerTransferFee);
    const highest = older.fee_bps > newer.fee_bps ? older : newer;
    return {
      type: 'transfer_fee_config',
      fee_bps: highest.fee_bps,
      max_fee_raw: highest.max_fee_raw,
      authority: nonZero(e.transferFeeConfigAuthority),
      withdraw_withheld_authority: nonZero(e.withdrawWithheldAuthority),
      withheld_raw: e.withheldAmount.toString(),
      older_fee: older,
      newer_fee: newer,
    };
  }
  const { __kind, ...fields } = e;
  const view: TokenExtensionView = { type: snake(__kind) };
  for (const [key, value] of Object.entries(fields)) view[snake(key)] = plain(value, key);
  return view;
}

/** Codec output as JSON: Options unwrapped, u64 as strings, bytes as base64, zero keys as null. */
function plain(value: unknown, key: string): unknown {
  if (isOption(value)) return plain(unwrapOption(value), key);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') return !TEXT_FIELDS.has(key) && value === ZERO_KEY ? null : value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (value instanceof Map)
    return Object.fromEntries([...(value as Map<string, unknown>)].map(([k, v]) => [k, plain(v, key)]));
  if (Array.isArray(value)) return value.map((v) => plain(v, key));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [snake(k), plain(v, k)]));
  return value;
}

function snake(s: string): string {
  return s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

function describe(err: unknown): string {
  if (err instanceof RpcError)
    return `the node answered ${err.method} with error ${err.code}: ${err.rpcMessage}`;
  return err instanceof Error ? err.message : String(err);
}

/** Any failure to read the mint itself is the provider's: 503 provider_unavailable, retryable. */
function providerError(err: unknown, rpc: SolanaRpc, method: string): Error {
  if (err instanceof AppError) return err;
  if (err instanceof RpcError)
    return new AppError(
      'provider_unavailable',
      `The ${networkLabel(rpc.network)} node provider answered ${method} with error ${err.code}: ${err.rpcMessage}.`,
    );
  return err instanceof Error ? err : new Error(String(err));
}
