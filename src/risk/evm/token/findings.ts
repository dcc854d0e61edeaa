import { formatUnits, keccak256, type Address, type Hex } from 'viem';
import { networkLabel, type NetworkDef } from '../../../chains/registry.js';
import { finding, suppress, type Evidence, type Finding, type FindingCode } from '../../findings.js';
import type { EvmTokenRegistry, ExpectedCapability, KnownEvmToken } from '../../known/evm-tokens.js';
import type { EvmTokenView, KnownTokenContext } from '../../schemas.js';
import type { Capability, CodeCapabilities } from './capabilities.js';
import { LATER_S, type TradeCheck } from './trade.js';

/*
 * What an ERC-20's reads prove, as catalog findings (docs/risk.md#erc-20-tokens): its code's capabilities
 * weighed by who holds them, the registry's word on it, and the trade simulation's outcome. Pure: the
 * analyzer (analyze.ts) reads, this module judges.
 */

/** Capabilities only an owner (or a role) can use, and the finding each one is. */
const GATED: Partial<Record<Capability, FindingCode>> = {
  mint: 'mint_authority_enabled',
  freeze: 'freeze_authority_enabled',
  pause: 'pausable',
  burn_from_any: 'burn_from_any',
  fee_setter: 'fee_modifiable',
  transfer_limits: 'transfer_limits',
  trading_switch: 'trading_switch',
};
const EXPECTED_OF: Partial<Record<Capability, ExpectedCapability>> = {
  mint: 'mint',
  freeze: 'freeze',
  pause: 'pause',
  burn_from_any: 'burn_from_any',
  fee_setter: 'fee_setter',
};
const WHAT: Partial<Record<Capability, string>> = {
  mint: 'mint new supply at will, diluting every holder',
  freeze: 'blacklist or freeze any holder, whose tokens then cannot move',
  pause: 'pause every transfer',
  burn_from_any: "burn tokens out of any holder's wallet",
  fee_setter: 'change the tax taken on transfers, buys or sells (up to 100% unless the code caps it)',
  transfer_limits: 'cap how much a transfer or a wallet may hold, which can stop a sale',
  trading_switch: 'switch trading off, after which buyers cannot sell',
};

/** The capabilities of a token's code as findings (and as the token view lists them). */
export function codeFindings(input: {
  target: Address;
  block: number;
  code: Hex;
  implementation: Address | null;
  capabilities: CodeCapabilities;
  owner: Address | null;
  ownerKind: EvmTokenView['owner_kind'];
  known: KnownEvmToken | null;
  /** The contract is a recognised proxy (EIP-1967, beacon or EIP-1167): its DELEGATECALL is expected. */
  proxy: boolean;
}): { findings: Finding[]; views: EvmTokenView['capabilities'] } {
  const { target, block, code, implementation, capabilities, owner, ownerKind, known, proxy } = input;
  const renounced = ownerKind === 'renounced';
  const roles = capabilities.capabilities.some((c) => c.capability === 'roles');
  const findings: Finding[] = [];
  const codeEvidence = (extra: Record<string, unknown>): Evidence => ({
    method: 'eth_getCode',
    block,
    value: { code_hash: keccak256(code), ...(implementation ? { implementation } : {}), ...extra },
  });
  const views: EvmTokenView['capabilities'] = [];
  for (const found of capabilities.capabilities) {
    const gated = GATED[found.capability];
    const live = !(renounced && !roles);
    views.push({ capability: found.capability, functions: found.functions, live });
    if (!gated) continue;
    const who =
      owner && !renounced
        ? `its owner ${owner}`
        : roles
          ? 'holders of its roles'
          : 'whoever the contract lets call it';
    let f = finding(
      gated,
      `${target} has ${found.functions.map((x) => x.signature).join(', ')}: ${who} can ${WHAT[found.capability]}.`,
      codeEvidence({ functions: found.functions, owner }),
    );
    if (!live)
      f = suppress(
        {
          ...f,
          severity: 'info',
          loweredFrom: f.severity,
          detail: `${f.detail} Ownership is renounced (owner ${owner}), so nobody can.`,
        },
        `owner renounced (${owner})`,
      );
    else if (
      known &&
      EXPECTED_OF[found.capability] &&
      known.expected.includes(EXPECTED_OF[found.capability]!)
    )
      f = suppress(f, `expected of ${known.issuer}'s ${known.symbol} (${known.source})`);
    findings.push(f);
  }
  if (capabilities.selfdestruct)
    findings.push(
      finding(
        'selfdestruct',
        `${target}'s code contains SELFDESTRUCT. Since EIP-6780 (Cancun) it only sends the contract's ether away ` +
          'unless called in the transaction that created it, so the code and balances stay.',
        codeEvidence({ opcode: 'SELFDESTRUCT' }),
      ),
    );
  const recognisedProxy =
    proxy ||
    capabilities.capabilities.some((c) => c.capability === 'upgrade' || c.capability === 'multicall');
  if (capabilities.delegatecall && !recognisedProxy)
    findings.push(
      finding(
        'arbitrary_delegatecall',
        `${target}'s code contains DELEGATECALL outside a recognised proxy pattern (EIP-1967, beacon, EIP-1167, ` +
          'UUPS upgrade, multicall): code at another address can run with this token’s storage and balances. ' +
          'Bytecode cannot tell whether that address is fixed or chosen by the caller.',
        codeEvidence({ opcode: 'DELEGATECALL' }),
      ),
    );
  return { findings, views };
}

/** The registry's word on this token: expected authorities, a changed owner or admin, a copycat symbol. */
export function knownFindings(
  opts: { network: NetworkDef; registry: EvmTokenRegistry },
  target: Address,
  block: number,
  symbol: string | null,
  name: string | null,
  known: KnownEvmToken | null,
  owner: Address | null,
  admin: Address | null,
): Finding[] {
  const out: Finding[] = [];
  if (known) {
    const changed: string[] = [];
    if (known.owner && owner?.toLowerCase() !== known.owner.toLowerCase())
      changed.push(`owner ${owner ?? 'none'} (expected ${known.owner})`);
    if (known.proxyAdmin && admin?.toLowerCase() !== known.proxyAdmin.toLowerCase())
      changed.push(`proxy admin ${admin ?? 'none'} (expected ${known.proxyAdmin})`);
    if (changed.length)
      out.push(
        finding(
          'authority_changed',
          `${target} is ${known.issuer}'s ${known.symbol}, but its ${changed.join(' and ')} differs from what the ` +
            `registry expects (${known.source}): control of a well-known token may have moved.`,
          {
            method: 'eth_call,eth_getStorageAt',
            block,
            value: {
              owner,
              admin,
              expected: { owner: known.owner ?? null, admin: known.proxyAdmin ?? null },
            },
          },
        ),
      );
    return out;
  }
  const imitated = opts.registry
    .imitated(opts.network, { symbol, name })
    .filter((t) => t.address.toLowerCase() !== target.toLowerCase());
  if (imitated.length)
    out.push(
      finding(
        'copycat_symbol',
        `${target} calls itself ${[symbol, name].filter(Boolean).join(' / ')}, like ` +
          `${imitated.map((t) => `${t.issuer}'s ${t.name} (${t.symbol}) at ${t.address}`).join(', ')} ` +
          `on ${networkLabel(opts.network)}, but it is a different contract.`,
        { method: 'eth_call', block, value: { symbol, name, imitates: imitated.map((t) => t.address) } },
      ),
    );
  return out;
}

export function knownContext(known: KnownEvmToken, version: string, findings: Finding[]): KnownTokenContext {
  return {
    symbol: known.symbol,
    name: known.name,
    issuer: known.issuer,
    category: known.category,
    authorities: findings.some((f) => f.code === 'authority_changed')
      ? 'changed'
      : known.owner || known.proxyAdmin
        ? 'expected'
        : 'unverified',
    registry_version: version,
  };
}

/** What the trade simulation proves (or could not). */
export function tradeFindings(
  target: Address,
  block: number,
  trade: TradeCheck,
  decimals: number | null,
): Finding[] {
  const evidence: Evidence = { method: trade.method ?? 'eth_simulateV1', block, value: tradeView(trade) };
  const fmt = (raw: bigint) => (decimals === null ? `${raw} (raw)` : formatUnits(raw, decimals));
  switch (trade.status) {
    case 'no_router':
    case 'failed':
    case 'buy_reverted':
      return [
        finding(
          'check_incomplete',
          `The honeypot and tax simulation of ${target} did not run to the end: ${trade.status === 'buy_reverted' ? `the buy through ${trade.router?.name} reverted: ${trade.reason}` : trade.reason}. ` +
            'Unknown is not "no risk": whether it can be sold is not known.',
          evidence,
        ),
      ];
    case 'no_pool':
      return [
        finding(
          'no_liquidity',
          `${target} cannot be sold on ${trade.router!.name} (${trade.router!.address}): ${trade.reason}. Liquidity ` +
            'elsewhere (another exchange) was not checked.',
          evidence,
        ),
      ];
    case 'transfer_reverted':
    case 'sell_reverted': {
      const step =
        trade.status === 'transfer_reverted'
          ? `moving them to a second fresh address${trade.delayed ? ' an hour later' : ''} reverted`
          : `selling them back${trade.delayed ? ' an hour later' : ''} reverted`;
      const bought = `A simulated buy of ${target} through ${trade.router!.name} worked (${fmt(trade.buy!.received)} tokens for 0.01 of the native coin), but ${step}: ${trade.reason}.`;
      // In one eth_call (no eth_simulateV1) the buy, the transfer and the sell share a block and a
      // transaction: a launch-time "one trade per block" rule reverts there too. Not proof of a honeypot.
      if (!trade.delayed && trade.status === 'transfer_reverted')
        return [
          finding(
            'check_incomplete',
            `${bought} The node cannot simulate separate blocks (no eth_simulateV1), and a per-block trading ` +
              'limit would also revert a transfer in the same transaction: whether it can be sold is not known.',
            evidence,
          ),
        ];
      return [
        finding(
          'cannot_sell',
          trade.delayed
            ? `${bought} Buyers cannot get out.`
            : `${bought} Simulated in one transaction (the node has no eth_simulateV1): a per-block trading limit could ` +
                'also cause it, so this is high, not critical.',
          evidence,
          trade.delayed ? {} : { severity: 'high' },
        ),
      ];
    }
    case 'measured': {
      if (trade.sell!.received === 0n)
        return [
          finding(
            'cannot_sell',
            `A simulated sell of ${target} returned nothing: ${fmt(trade.sell!.amount)} tokens sold for 0. Buyers cannot get out.`,
            evidence,
          ),
        ];
      const { buy, sell, transfer } = trade.taxes;
      const worst = Math.max(buy ?? 0, sell ?? 0, transfer ?? 0);
      if (worst === 0) return [];
      const pct = (x: number | null) => (x === null ? 'not measured' : `${(x * 100).toFixed(2)}%`);
      return [
        finding(
          'transfer_fee',
          `Simulated on ${trade.router!.name}: buy tax ${pct(buy)}, transfer tax ${pct(transfer)}, sell tax ${pct(sell)}` +
            `${trade.delayed ? ' (transfer and sell one hour after the buy)' : ''}.`,
          evidence,
          { severity: worst > 0.1 ? 'high' : 'medium' },
        ),
      ];
    }
  }
}

export function tradeView(t: TradeCheck): NonNullable<EvmTokenView['trade']> {
  return {
    status: t.status,
    method: t.method,
    router: t.router ? { address: t.router.address, name: t.router.name, source: t.router.source } : null,
    pair: t.pool && BigInt(t.pool.pair) !== 0n ? t.pool.pair : null,
    delayed_s: t.delayed ? LATER_S : 0,
    buy: t.buy
      ? {
          paid_wei: t.buy.paid.toString(),
          quoted_raw: t.buy.quoted.toString(),
          received_raw: t.buy.received.toString(),
        }
      : null,
    transfer: t.transfer
      ? { sent_raw: t.transfer.sent.toString(), arrived_raw: t.transfer.arrived.toString() }
      : null,
    sell: t.sell
      ? {
          amount_raw: t.sell.amount.toString(),
          quoted_wei: t.sell.quoted.toString(),
          received_wei: t.sell.received.toString(),
        }
      : null,
    reason: t.reason,
  };
}

export function incompleteAt(method: string, block: number, check: string, reason: unknown): Finding {
  const why = reason instanceof Error ? reason.message : String(reason);
  return finding(
    'check_incomplete',
    `${check}: ${why}. Unknown is not "no risk": this check counts as not done.`,
    {
      method,
      block,
      value: { reason: why },
    },
  );
}
