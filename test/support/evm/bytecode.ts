import { concat, keccak256, numberToHex, pad, size, toHex, type Address, type Hex } from 'viem';

/*
 * A tiny EVM assembler and the few contracts the fixtures deploy. There is no solc here (and solcjs would
 * be a 9 MB dependency for four contracts of a few dozen bytes), so the bytecode is written out by hand,
 * with labels resolved by the assembler rather than by counting bytes.
 */

const OPCODES = {
  SUB: 0x03,
  ADDRESS: 0x30,
  CALLDATASIZE: 0x36,
  CALLDATACOPY: 0x37,
  CODESIZE: 0x38,
  CODECOPY: 0x39,
  RETURNDATASIZE: 0x3d,
  RETURNDATACOPY: 0x3e,
  MLOAD: 0x51,
  MSTORE: 0x52,
  SLOAD: 0x54,
  SSTORE: 0x55,
  JUMPI: 0x57,
  GAS: 0x5a,
  JUMPDEST: 0x5b,
  DUP1: 0x80,
  LOG1: 0xa1,
  LOG2: 0xa2,
  RETURN: 0xf3,
  DELEGATECALL: 0xf4,
  REVERT: 0xfd,
} as const;
type Opcode = keyof typeof OPCODES;

/** One assembly item: an opcode; a PUSH (smallest width, or `width` bytes); a jump target; a push of one. */
export type AsmItem =
  Opcode | { push: bigint | number | Hex; width?: number } | { label: string } | { pushLabel: string };

/** Assemble items into bytecode. Label pushes are always PUSH2, so one pass sizes and a second fills. */
export function assemble(items: readonly AsmItem[]): Hex {
  const labels = new Map<string, number>();
  const emit = (resolve: (name: string) => number): number[] => {
    const out: number[] = [];
    for (const item of items) {
      if (typeof item === 'string') {
        out.push(OPCODES[item]);
      } else if ('label' in item) {
        labels.set(item.label, out.length);
        out.push(OPCODES.JUMPDEST);
      } else if ('pushLabel' in item) {
        const at = resolve(item.pushLabel);
        out.push(0x61, (at >> 8) & 0xff, at & 0xff);
      } else {
        const value = typeof item.push === 'string' ? BigInt(item.push) : BigInt(item.push);
        let hex = value.toString(16);
        if (hex.length % 2) hex = `0${hex}`;
        const width = item.width ?? Math.max(1, hex.length / 2);
        if (width < 1 || width > 32 || hex.length / 2 > width) throw new Error(`cannot PUSH${width} ${hex}`);
        out.push(0x5f + width, ...Buffer.from(hex.padStart(width * 2, '0'), 'hex'));
      }
    }
    return out;
  };
  emit(() => 0);
  const bytes = emit((name) => {
    const at = labels.get(name);
    if (at === undefined) throw new Error(`undefined label ${name}`);
    return at;
  });
  return toHex(Uint8Array.from(bytes));
}

/** keccak256(label) − 1, the EIP-1967 rule that puts the slots where no Solidity layout will land. */
function eip1967Slot(label: string): Hex {
  return numberToHex(BigInt(keccak256(toHex(label))) - 1n, { size: 32 });
}

/** EIP-1967 implementation slot, `bytes32(uint256(keccak256('eip1967.proxy.implementation')) - 1)`. */
export const EIP1967_IMPLEMENTATION_SLOT: Hex =
  '0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc';
/** EIP-1967 admin slot, `bytes32(uint256(keccak256('eip1967.proxy.admin')) - 1)`. */
export const EIP1967_ADMIN_SLOT: Hex = '0xb53127684a568b3173ae13b9f8a6016e243e63b6e8ee1178d6a717850b5d6103';
if (
  eip1967Slot('eip1967.proxy.implementation') !== EIP1967_IMPLEMENTATION_SLOT ||
  eip1967Slot('eip1967.proxy.admin') !== EIP1967_ADMIN_SLOT
) {
  throw new Error('EIP-1967 slot constants do not match their definition');
}
/** Events EIP-1967 proxies emit when the slots are set (explorers and indexers key on them). */
export const UPGRADED_TOPIC = keccak256(toHex('Upgraded(address)'));
export const ADMIN_CHANGED_TOPIC = keccak256(toHex('AdminChanged(address,address)'));

/**
 * Init code = `prologue`, then copy `runtime` (appended right after this code) to memory and return it as
 * the deployed code; `args` (constructor arguments, Solidity-style) are appended after the runtime.
 */
export function initCode(runtime: Hex, prologue: readonly AsmItem[] = [], args: Hex = '0x'): Hex {
  const tail = (offset: number): AsmItem[] => [
    { push: size(runtime), width: 2 },
    'DUP1',
    { push: offset, width: 2 },
    { push: 0 },
    'CODECOPY', // memory[0..len] = code[offset..offset+len]
    { push: 0 },
    'RETURN',
  ];
  const headerSize = size(assemble([...prologue, ...tail(0)]));
  return concat([assemble([...prologue, ...tail(headerSize)]), runtime, args]);
}

/**
 * Runtime of every plain contract here: ignores calldata and value, returns `abi.encode(magic,
 * address(this))`. The magic says WHICH code ran, `address(this)` in WHOSE context — through a proxy
 * (DELEGATECALL) or a 7702-delegated EOA it is the proxy's / EOA's address, called directly its own.
 */
export function identityRuntime(magic: Hex): Hex {
  return assemble([
    { push: magic, width: 32 },
    { push: 0 },
    'MSTORE',
    'ADDRESS',
    { push: 0x20 },
    'MSTORE',
    { push: 0x40 },
    { push: 0 },
    'RETURN',
  ]);
}

/** What identityRuntime returns when `magic` code runs in the context of `self`. */
export function identityResult(magic: Hex, self: Address): Hex {
  return concat([pad(magic, { size: 32 }), pad(self.toLowerCase() as Hex, { size: 32 })]);
}

/**
 * Minimal EIP-1967 proxy runtime: forward calldata with DELEGATECALL to the address in the
 * implementation slot and bubble up its return data or revert (what OpenZeppelin's `Proxy._delegate`
 * does, without the transparent admin dispatch, which the risk checks never look at).
 */
export function eip1967ProxyRuntime(): Hex {
  return assemble([
    'CALLDATASIZE',
    { push: 0 },
    { push: 0 },
    'CALLDATACOPY', // memory[0..cds] = calldata
    { push: 0 }, // retSize (copied below instead)
    { push: 0 }, // retOffset
    'CALLDATASIZE', // argsSize
    { push: 0 }, // argsOffset
    { push: EIP1967_IMPLEMENTATION_SLOT, width: 32 },
    'SLOAD', // implementation
    'GAS',
    'DELEGATECALL',
    'RETURNDATASIZE',
    { push: 0 },
    { push: 0 },
    'RETURNDATACOPY', // memory[0..rds] = return data
    { pushLabel: 'ok' },
    'JUMPI',
    'RETURNDATASIZE',
    { push: 0 },
    'REVERT',
    { label: 'ok' },
    'RETURNDATASIZE',
    { push: 0 },
    'RETURN',
  ]);
}

/**
 * Init code of the proxy: its CONSTRUCTOR writes the EIP-1967 implementation and admin slots from its
 * two constructor arguments (appended as 32-byte words, as solc does) and emits `Upgraded` and
 * `AdminChanged`, so the slots are set by a real deployment rather than by `anvil_setStorageAt`.
 */
export function eip1967ProxyInitCode(implementation: Address, admin: Address): Hex {
  const prologue: AsmItem[] = [
    { push: 0x40 }, // size
    { push: 0x40 },
    'CODESIZE',
    'SUB', // offset = codesize - 64: the two arguments
    { push: 0 }, // dest
    'CODECOPY', // memory[0x00] = implementation, memory[0x20] = admin
    { push: 0 },
    'MLOAD',
    { push: EIP1967_IMPLEMENTATION_SLOT, width: 32 },
    'SSTORE',
    { push: 0x20 },
    'MLOAD',
    { push: EIP1967_ADMIN_SLOT, width: 32 },
    'SSTORE',
    // emit Upgraded(implementation) — implementation is indexed, no data
    { push: 0 },
    'MLOAD',
    { push: UPGRADED_TOPIC, width: 32 },
    { push: 0 },
    { push: 0 },
    'LOG2',
    // emit AdminChanged(address(0), admin) — data = memory[0x40..0x80] = (0, admin)
    { push: 0x20 },
    'MLOAD',
    { push: 0x60 },
    'MSTORE',
    { push: ADMIN_CHANGED_TOPIC, width: 32 },
    { push: 0x40 },
    { push: 0x40 },
    'LOG1',
  ];
  const args = concat([pad(implementation, { size: 32 }), pad(admin, { size: 32 })]);
  return initCode(eip1967ProxyRuntime(), prologue, args);
}
