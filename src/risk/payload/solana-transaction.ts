import { getTokenDecoder } from '@solana-program/token';
import { RpcError } from '../../chains/jsonrpc.js';
import type { SolanaAccount, SolanaRpc } from '../../chains/solana.js';
import { finding, type Finding } from '../findings.js';
import { BPF_LOADER_UPGRADEABLE, SYSTEM_PROGRAM, TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from '../solana/kind.js';
import type { Approval, AssetChange, AuthorityChange, PayloadCounterparty, Simulation } from './types.js';
import type { DecodedSolanaTransaction } from './solana-decode.js';
import {
  innerInstructionsOf,
  instructionEffects,
  parsedEffect,
  type InstructionEffects,
} from './solana-instructions.js';

/*
 * A decoded Solana transaction (solana-decode.ts), simulated before it is signed
 * (docs/risk.md#before-the-user-signs): `simulateTransaction` (`sigVerify: false`; `replaceRecentBlockhash`
 * unless it carries a durable nonce) in the same batch as the pre-state of the accounts it writes. The
 * difference between the two gives `from`'s balance changes (the fee excluded), the delegates its token
 * accounts get and the owners they move to; the instructions (solana-instructions.ts) give what the state
 * cannot say on its own: whose mint or program authority moves, where a closed account's rent goes, a
 * durable nonce.
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
