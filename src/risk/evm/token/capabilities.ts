import { contractInfo } from 'evmole';
import { getAddress, toFunctionSelector, type Address, type Hex } from 'viem';

/*
 * What a token contract's bytecode lets someone do (docs/risk.md#erc-20-tokens), from its function
 * selectors as evmole finds them (no source, no online signature look-up) and its opcodes. A selector
 * says a function exists, not who may call it: the owner check (owner(), renounced, roles) is the
 * analyzer's. A capability whose function is named differently is not seen: bytecode proves presence,
 * never absence. Opcodes are read by a linear pass over the code (PUSH data skipped).
 */

export const CAPABILITIES = [
  'mint',
  'burn_from_any',
  'freeze',
  'pause',
  'fee_setter',
  'transfer_limits',
  'trading_switch',
  'ownership',
  'roles',
  'upgrade',
  'multicall',
] as const;
export type Capability = (typeof CAPABILITIES)[number];

/** The signatures each capability is recognised by (the common names of OpenZeppelin, FiatToken, Tether and token launchers). */
const SIGNATURES: Record<Capability, readonly string[]> = {
  mint: [
    'mint(address,uint256)',
    'mint(uint256)',
    'mintTo(address,uint256)',
    'issue(uint256)',
    'configureMinter(address,uint256)',
    'addMinter(address)',
  ],
  burn_from_any: [
    'burn(address,uint256)',
    'destroyBlackFunds(address)',
    'adminBurn(address,uint256)',
    'forceBurn(address,uint256)',
    'wipeFrozenAddress(address)',
  ],
  freeze: [
    'blacklist(address)',
    'addBlackList(address)',
    'addToBlacklist(address)',
    'setBlacklist(address,bool)',
    'blacklistAddress(address,bool)',
    'setBots(address[])',
    'setBot(address,bool)',
    'freeze(address)',
    'freezeAccount(address,bool)',
    'freezeAccount(address)',
    'setWhitelist(address,bool)',
    'addToWhitelist(address)',
  ],
  pause: ['pause()', 'unpause()'],
  fee_setter: [
    'setFee(uint256)',
    'setFees(uint256,uint256)',
    'setTaxFee(uint256)',
    'setTax(uint256)',
    'setTaxes(uint256,uint256)',
    'setBuyFee(uint256)',
    'setSellFee(uint256)',
    'setBuyTax(uint256)',
    'setSellTax(uint256)',
    'setBuyFees(uint256,uint256,uint256)',
    'setSellFees(uint256,uint256,uint256)',
    'updateFees(uint256,uint256)',
    'updateBuyFees(uint256,uint256,uint256)',
    'updateSellFees(uint256,uint256,uint256)',
    'setTaxFeePercent(uint256)',
    'setLiquidityFeePercent(uint256)',
    'setParams(uint256,uint256)',
  ],
  transfer_limits: [
    'setMaxTxAmount(uint256)',
    'setMaxTxPercent(uint256)',
    'setMaxTransactionAmount(uint256)',
    'updateMaxTxnAmount(uint256)',
    'setMaxWalletSize(uint256)',
    'setMaxWallet(uint256)',
    'updateMaxWalletAmount(uint256)',
    'setMaxWalletAmount(uint256)',
  ],
  trading_switch: [
    'enableTrading()',
    'openTrading()',
    'startTrading()',
    'setTradingEnabled(bool)',
    'setTrading(bool)',
    'setTradingOpen(bool)',
  ],
  ownership: ['transferOwnership(address)', 'renounceOwnership()'],
  roles: ['grantRole(bytes32,address)', 'hasRole(bytes32,address)'],
  upgrade: ['upgradeTo(address)', 'upgradeToAndCall(address,bytes)'],
  multicall: ['multicall(bytes[])'],
};

const SELECTORS: ReadonlyMap<string, { capability: Capability; signature: string }> = new Map(
  CAPABILITIES.flatMap((capability) =>
    SIGNATURES[capability].map((signature) => [
      toFunctionSelector(signature).slice(2),
      { capability, signature },
    ]),
  ),
);

/** One capability as found: the functions (signature and 4-byte selector) that give it. */
export interface FoundCapability {
  capability: Capability;
  functions: { signature: string; selector: Hex }[];
}

export interface CodeCapabilities {
  /** Set when the code was not analysed (too large): why. */
  skipped?: string;
  /** Every selector evmole found, sorted (4-byte hex without 0x). */
  selectors: string[];
  capabilities: FoundCapability[];
  selfdestruct: boolean;
  delegatecall: boolean;
}

/**
 * The most code analysed: twice EIP-7907's proposed 48 KiB, well above EIP-170's 24 KiB. evmole runs on
 * the event loop and its work grows with the code: a provider (or a chain) serving megabytes of "code"
 * must not stall the process.
 */
export const MAX_CODE_BYTES = 96 * 1024;

/** The capabilities of one contract's runtime code (an empty code gives none). */
export function capabilitiesOf(code: Hex): CodeCapabilities {
  const body = withoutMetadata(code);
  const none = { selectors: [], capabilities: [], selfdestruct: false, delegatecall: false };
  if (body === '0x') return none;
  const bytes = (body.length - 2) / 2;
  if (bytes > MAX_CODE_BYTES)
    return { ...none, skipped: `the code is ${bytes} bytes, over the ${MAX_CODE_BYTES} analysed` };
  const info = contractInfo(body, { selectors: true });
  const selectors = [...new Set((info.functions ?? []).map((f) => f.selector.toLowerCase()))].sort();
  const byCapability = new Map<Capability, FoundCapability>();
  for (const selector of selectors) {
    const known = SELECTORS.get(selector);
    if (!known) continue;
    const found = byCapability.get(known.capability) ?? { capability: known.capability, functions: [] };
    found.functions.push({ signature: known.signature, selector: `0x${selector}` });
    byCapability.set(known.capability, found);
  }
  return {
    selectors,
    capabilities: CAPABILITIES.flatMap((c) => byCapability.get(c) ?? []),
    ...opcodesIn(body),
  };
}

/** SELFDESTRUCT (0xff) and DELEGATECALL (0xf4) as opcodes: a linear pass that skips PUSH1–PUSH32 data. */
function opcodesIn(body: Hex): { selfdestruct: boolean; delegatecall: boolean } {
  const bytes = Buffer.from(body.slice(2), 'hex');
  let selfdestruct = false;
  let delegatecall = false;
  for (let i = 0; i < bytes.length; i++) {
    const op = bytes[i]!;
    if (op === 0xff) selfdestruct = true;
    else if (op === 0xf4) delegatecall = true;
    else if (op >= 0x60 && op <= 0x7f) i += op - 0x5f;
  }
  return { selfdestruct, delegatecall };
}

/** Two analyses together (a proxy and the implementation behind it). */
export function mergeCapabilities(a: CodeCapabilities, b: CodeCapabilities): CodeCapabilities {
  const byCapability = new Map<Capability, FoundCapability>();
  for (const found of [...a.capabilities, ...b.capabilities]) {
    const into = byCapability.get(found.capability) ?? { capability: found.capability, functions: [] };
    for (const f of found.functions)
      if (!into.functions.some((g) => g.selector === f.selector)) into.functions.push(f);
    byCapability.set(found.capability, into);
  }
  const skipped = a.skipped ?? b.skipped;
  return {
    ...(skipped ? { skipped } : {}),
    selectors: [...new Set([...a.selectors, ...b.selectors])].sort(),
    capabilities: CAPABILITIES.flatMap((c) => byCapability.get(c) ?? []),
    selfdestruct: a.selfdestruct || b.selfdestruct,
    delegatecall: a.delegatecall || b.delegatecall,
  };
}

/**
 * Solidity appends CBOR metadata (`a1`–`a4` map … length in the last two bytes) after the code. It is
 * data, not code: a linear disassembly of it could read a SELFDESTRUCT or DELEGATECALL byte that never
 * runs, so it is cut off when the trailer describes it.
 */
function withoutMetadata(code: Hex): Hex {
  const hex = code.slice(2);
  if (hex.length < 4) return code;
  const length = parseInt(hex.slice(-4), 16);
  const start = hex.length - 4 - length * 2;
  if (length < 2 || start < 0) return code;
  const first = parseInt(hex.slice(start, start + 2), 16);
  return first >= 0xa1 && first <= 0xa4 ? `0x${hex.slice(0, start)}` : code;
}

/** EIP-1167 minimal proxy: `363d3d373d3d3d363d73` ‖ implementation ‖ `5af43d82803e903d91602b57fd5bf3`. */
export function minimalProxyTarget(code: Hex): Address | null {
  const m = /^0x363d3d373d3d3d363d73([0-9a-f]{40})5af43d82803e903d91602b57fd5bf3$/.exec(code.toLowerCase());
  return m ? getAddress(`0x${m[1]!}`) : null;
}
