import { getAddress, type Address } from 'viem';
import {
  decodeTokenEvent,
  sameAddress as same,
  type DecodedCall,
  type EvmLog,
  type TokenEvent,
} from './evm-abi.js';
import { readKey, type PlannedRead, type Reads } from './evm-reads.js';
import type {
  Approval,
  Asset,
  AssetChange,
  AuthorityChange,
  EvmSimulated,
  EvmTransaction,
  PayloadCounterparty,
} from './types.js';

/*
 * An executed EVM simulation (eth_simulateV1 or debug_traceCall) read for `from`
 * (docs/risk.md#before-the-user-signs): net asset changes from the token events and the balance reads,
 * the approvals it leaves (the reads after the transaction winning over the events), and the
 * counterparties the preflight judges. Pure: the logs and reads come in.
 */

const ZERO: Address = '0x0000000000000000000000000000000000000000';
const UNLIMITED_256 = 2n ** 255n;
const UNLIMITED_160 = 2n ** 159n;
/** Most asset changes answered (from's first): a swap through many pools moves many balances. */
const MAX_ASSET_CHANGES = 100;

interface Executed {
  method: 'eth_simulateV1' | 'debug_traceCall';
  block: bigint | null;
  reverted: boolean;
  error: string | undefined;
  logs: EvmLog[];
  reads: { before: Reads; after: Reads | null };
  authorities: AuthorityChange[];
}

/** The effects of an executed simulation: asset changes, approvals and counterparties of `from`. */
export function effects(
  tx: EvmTransaction,
  decoded: DecodedCall | null,
  plan: PlannedRead[],
  run: Executed,
): EvmSimulated {
  const events = run.logs.map(decodeTokenEvent).filter((e): e is TokenEvent => e !== null);
  const { before, after } = run.reads;
  const standards = new Map<string, Asset['type']>();
  // ApprovalForAll is the same event in ERC-721 and ERC-1155: it does not tell the standard.
  for (const e of events)
    if ('token' in e && e.kind !== 'permit2_approval' && e.kind !== 'approval_for_all')
      standards.set(e.token.toLowerCase(), assetTypeOf(e));
  const calledToken = plan[0]?.asset;
  if (calledToken && !standards.has(calledToken.toLowerCase()))
    standards.set(
      calledToken.toLowerCase(),
      before.values.get(readKey({ asset: calledToken, kind: 'erc1155' })) === true
        ? 'erc1155'
        : before.values.has(readKey({ asset: calledToken, kind: 'decimals' }))
          ? 'erc20'
          : decoded?.fn === 'setApprovalForAll' || decoded?.fn === 'safeTransferFrom'
            ? 'erc721'
            : 'erc20',
    );
  const assetOf = (token: Address, tokenId?: bigint): Asset => {
    const type = standards.get(token.toLowerCase()) ?? 'erc20';
    const symbol = before.values.get(readKey({ asset: token, kind: 'symbol' }));
    const decimals = before.values.get(readKey({ asset: token, kind: 'decimals' }));
    return {
      type,
      address: token,
      ...(tokenId !== undefined ? { tokenId } : {}),
      ...(typeof symbol === 'string' && symbol.length <= 64 ? { symbol } : {}),
      ...(typeof decimals === 'number' && type === 'erc20' ? { decimals } : {}),
    };
  };

  // Net changes per owner and asset, from the logs.
  const net = new Map<string, AssetChange>();
  const add = (owner: Address, asset: Asset, amount: bigint) => {
    if (amount === 0n || same(owner, ZERO)) return;
    const key = `${owner.toLowerCase()}|${asset.type}|${asset.address?.toLowerCase() ?? ''}|${asset.tokenId ?? ''}`;
    const entry = net.get(key) ?? { owner: getAddress(owner), asset, amount: 0n };
    entry.amount += amount;
    net.set(key, entry);
  };
  const native: Asset = { type: 'native' };
  for (const e of events) {
    if (e.kind === 'native') {
      add(e.from, native, -e.amount);
      add(e.to, native, e.amount);
    } else if (e.kind === 'transfer') {
      const asset = assetOf(e.token, e.standard === 'erc721' ? e.tokenId : undefined);
      add(e.from, asset, -e.amount);
      add(e.to, asset, e.amount);
    } else if (e.kind === 'transfer1155') {
      e.ids.forEach((id, i) => {
        const asset: Asset = { type: 'erc1155', address: e.token, tokenId: id };
        add(e.from, asset, -e.amounts[i]!);
        add(e.to, asset, e.amounts[i]!);
      });
    } else if (e.kind === 'weth') {
      add(e.owner, assetOf(e.token), e.amount);
    }
  }
  // `from`'s own balances as read before and after win over the logs (internal moves the trace missed).
  const fromKey = tx.from.toLowerCase();
  if (after && before.native !== null && after.native !== null) {
    net.delete(`${fromKey}|native||`);
    add(tx.from, native, after.native - before.native);
  }
  if (after && calledToken && standards.get(calledToken.toLowerCase()) === 'erc20') {
    const b = before.values.get(readKey({ asset: calledToken, kind: 'balance' }));
    const a = after.values.get(readKey({ asset: calledToken, kind: 'balance' }));
    if (typeof b === 'bigint' && typeof a === 'bigint') {
      net.delete(`${fromKey}|erc20|${calledToken.toLowerCase()}|`);
      add(tx.from, assetOf(calledToken), a - b);
    }
  }
  const changes = [...net.values()].filter((c) => c.amount !== 0n);
  changes.sort((x, y) => Number(same(y.owner, tx.from)) - Number(same(x.owner, tx.from)));

  const approvals = approvalsOf(tx, events, assetOf, before, after, plan, decoded);
  const unresolved = new Set<string>();
  for (const c of changes)
    if (c.asset.type === 'erc20' && c.asset.address && c.asset.decimals === undefined)
      unresolved.add(getAddress(c.asset.address));
  for (const a of approvals)
    if (
      a.asset.type === 'erc20' &&
      a.asset.address &&
      (a.asset.decimals === undefined || a.coversBalance === null)
    )
      unresolved.add(getAddress(a.asset.address));

  return {
    simulation: {
      status: run.reverted ? 'reverted' : 'success',
      method: run.method,
      ...(run.block !== null ? { block: Number(run.block) } : {}),
      ...(run.error ? { error: run.error } : {}),
      assetChanges: changes.slice(0, MAX_ASSET_CHANGES),
      approvals,
      authorityChanges: run.authorities,
    },
    block: run.block,
    // A reverted transaction grants nothing, but the spender it names is still judged (lists, EOA).
    counterparties: counterpartiesOf(
      tx,
      run.reverted && decoded && tx.to ? calldataApprovals(tx, decoded) : approvals,
      changes,
      run.authorities,
      run.block,
      run.method,
      decoded,
    ),
    unresolvedTokens: [...unresolved] as Address[],
  };
}

function assetTypeOf(e: TokenEvent): Asset['type'] {
  if (e.kind === 'transfer1155') return 'erc1155';
  if (e.kind === 'transfer' || e.kind === 'approval') return e.standard;
  if (e.kind === 'approval_for_all') return 'erc721';
  return 'erc20';
}

/** `from`'s approvals after the transaction: the last event per (asset, spender), reads winning. */
function approvalsOf(
  tx: EvmTransaction,
  events: TokenEvent[],
  assetOf: (token: Address, tokenId?: bigint) => Asset,
  before: Reads,
  after: Reads | null,
  plan: PlannedRead[],
  decoded: DecodedCall | null,
): Approval[] {
  const byKey = new Map<string, Approval>();
  const base = {
    owner: getAddress(tx.from),
    coversBalance: null,
    expiresAt: null,
    source: 'transaction' as const,
  };
  for (const e of events) {
    if (e.kind === 'approval' && same(e.owner, tx.from)) {
      const key = `${e.token.toLowerCase()}|${e.spender.toLowerCase()}|${e.tokenId ?? ''}`;
      if (e.standard === 'erc721')
        byKey.set(key, {
          ...base,
          asset: assetOf(e.token, e.tokenId),
          spender: e.spender,
          amount: 1n,
          unlimited: false,
          coversBalance: true,
          all: false,
        });
      else
        byKey.set(key, {
          ...base,
          asset: assetOf(e.token),
          spender: e.spender,
          amount: e.amount,
          unlimited: e.amount >= UNLIMITED_256,
          all: false,
        });
    } else if (e.kind === 'approval_for_all' && same(e.owner, tx.from)) {
      const key = `${e.token.toLowerCase()}|${e.operator.toLowerCase()}|all`;
      const asset = assetOf(e.token);
      // ERC-20 has no ApprovalForAll: a collection whose standard nothing else showed is an ERC-721.
      if (asset.type === 'erc20') {
        asset.type = 'erc721';
        delete asset.decimals;
      }
      byKey.set(key, {
        ...base,
        asset,
        spender: e.operator,
        amount: e.approved ? 2n ** 256n - 1n : 0n,
        unlimited: e.approved,
        coversBalance: e.approved,
        all: true,
      });
    } else if (e.kind === 'permit2_approval' && same(e.owner, tx.from)) {
      const key = `permit2|${e.token.toLowerCase()}|${e.spender.toLowerCase()}`;
      byKey.set(key, {
        ...base,
        asset: assetOf(e.token),
        spender: e.spender,
        amount: e.amount,
        unlimited: e.amount >= UNLIMITED_160,
        all: false,
        expiresAt: new Date(e.expiration * 1000),
      });
    }
  }
  // The allowance read after the transaction is the truth for the one the calldata asked for.
  if (after && decoded && (decoded.fn === 'approve' || decoded.fn === 'increaseAllowance')) {
    const token = plan[0]!.asset;
    const read = after.values.get(readKey({ asset: token, kind: 'allowance', spender: decoded.spender }));
    const key = `${token.toLowerCase()}|${decoded.spender.toLowerCase()}|`;
    if (typeof read === 'bigint') {
      if (read === 0n) byKey.delete(key);
      else
        byKey.set(key, {
          ...base,
          asset: assetOf(token),
          spender: decoded.spender,
          amount: read,
          unlimited: read >= UNLIMITED_256,
          all: false,
        });
    }
  }
  if (after && decoded?.fn === 'setApprovalForAll') {
    const token = plan[0]!.asset;
    const read = after.values.get(readKey({ asset: token, kind: 'operator', spender: decoded.operator }));
    const key = `${token.toLowerCase()}|${decoded.operator.toLowerCase()}|all`;
    if (read === true && !byKey.has(key))
      byKey.set(key, {
        ...base,
        asset: assetOf(token),
        spender: decoded.operator,
        amount: 2n ** 256n - 1n,
        unlimited: true,
        coversBalance: true,
        all: true,
      });
  }
  const approvals = [...byKey.values()].filter((a) => a.amount > 0n);
  for (const a of approvals) {
    if (a.all || a.asset.type !== 'erc20' || !a.asset.address) continue;
    const balance = before.values.get(readKey({ asset: a.asset.address as Address, kind: 'balance' }));
    // Nothing held is nothing covered: an exact approve of a token not held yet is still exact.
    if (typeof balance === 'bigint') a.coversBalance = a.unlimited || (balance > 0n && a.amount >= balance);
    else if (a.unlimited) a.coversBalance = true;
  }
  return approvals;
}

/** Who the transaction gives something to: spenders and operators, recipients of `from`'s assets, new code. */
export function counterpartiesOf(
  tx: EvmTransaction,
  approvals: Approval[],
  changes: AssetChange[],
  authorities: AuthorityChange[],
  block: bigint | null,
  method: string,
  decoded: DecodedCall | null,
): PayloadCounterparty[] {
  const out = new Map<string, PayloadCounterparty>();
  const at = block !== null ? { block: Number(block) } : {};
  const put = (address: string, role: PayloadCounterparty['role'], value: unknown) => {
    if (same(address, tx.from) || same(address, ZERO)) return;
    const key = address.toLowerCase();
    if (!out.has(key))
      out.set(key, { address: getAddress(address), role, evidence: { method, ...at, value } });
  };
  for (const a of approvals)
    put(a.spender, a.all ? 'operator' : 'spender', {
      asset: a.asset.address ?? null,
      amount: a.unlimited ? 'unlimited' : a.amount.toString(),
    });
  for (const c of authorities)
    if (same(c.account, tx.from) && c.to) put(c.to, 'authority', { account: c.account, delegate: c.to });
  // Recipients: the owners whose balance grows in an asset `from` loses.
  const lost = new Set(
    changes.filter((c) => same(c.owner, tx.from) && c.amount < 0n).map((c) => assetId(c.asset)),
  );
  for (const c of changes)
    if (c.amount > 0n && lost.has(assetId(c.asset)))
      put(c.owner, 'recipient', { asset: c.asset.address ?? 'native', amount: c.amount.toString() });
  // The recipient the calldata names, even when the simulation reverted or did not run.
  if (decoded && 'to' in decoded && (!('from' in decoded) || same(decoded.from, tx.from)))
    put(decoded.to, 'recipient', { calldata: decoded.fn, token: tx.to });
  return [...out.values()];
}

const assetId = (a: Asset) => `${a.type}|${a.address?.toLowerCase() ?? ''}|${a.tokenId ?? ''}`;

/** The approvals a token-standard call asks for, from the calldata alone. */
export function calldataApprovals(tx: EvmTransaction, call: DecodedCall): Approval[] {
  const base = { owner: tx.from, coversBalance: null, expiresAt: null, source: 'transaction' as const };
  const token = tx.to!;
  switch (call.fn) {
    case 'approve':
    case 'increaseAllowance':
      if (call.amount === 0n) return [];
      return [
        {
          ...base,
          asset: { type: 'erc20', address: token },
          spender: call.spender,
          amount: call.amount,
          unlimited: call.amount >= UNLIMITED_256,
          all: false,
        },
      ];
    case 'setApprovalForAll':
      if (!call.approved) return [];
      return [
        {
          ...base,
          asset: { type: 'erc721', address: token },
          spender: call.operator,
          amount: 2n ** 256n - 1n,
          unlimited: true,
          coversBalance: true,
          all: true,
        },
      ];
    case 'permit2_approve':
      if (call.amount === 0n) return [];
      return [
        {
          ...base,
          asset: { type: 'erc20', address: call.token },
          spender: call.spender,
          amount: call.amount,
          unlimited: call.amount >= UNLIMITED_160,
          all: false,
          expiresAt: new Date(call.expiration * 1000),
        },
      ];
    default:
      return [];
  }
}
