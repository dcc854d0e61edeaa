import { hexToBigInt, isHex, numberToHex, type Address, type Hex } from 'viem';
import { AppError } from '../platform/errors.js';
import type { CallOptions, JsonRpcClient } from './jsonrpc.js';
import { networkLabel, type NetworkDef } from './registry.js';

/** Ethereum JSON-RPC methods with their own metrics label (any other is counted as `other`). */
export const EVM_METHODS = [
  'eth_blockNumber',
  'eth_call',
  'eth_chainId',
  'eth_getBalance',
  'eth_getBlockByNumber',
  'eth_getCode',
  'eth_getLogs',
  'eth_getStorageAt',
  'eth_getTransactionByHash',
  'eth_getTransactionCount',
  'eth_getTransactionReceipt',
  'eth_simulateV1',
  'debug_traceCall',
  'net_version',
  'web3_clientVersion',
] as const;

/** A block number (pinned reads: every value of one assessment comes from the same block) or a tag. */
export type BlockRef = bigint | 'latest' | 'safe' | 'finalized';

/** What one address looks like at one block, read in a single batch request. */
export interface EvmAccountState {
  block: bigint;
  /** `0x` for an EOA; `0xef0100` ‖ address for an EIP-7702 delegated EOA; else contract bytecode. */
  code: Hex;
  balance: bigint;
  nonce: number;
  /** Each storage slot asked for, by slot (32-byte words as returned). */
  storage: Record<Hex, Hex>;
}

/**
 * Typed Ethereum JSON-RPC over a JsonRpcClient. Reads take an explicit block, so that one assessment's
 * values come from one chain state; calls made together share one HTTP batch request.
 */
export class EvmRpc {
  constructor(
    readonly rpc: JsonRpcClient,
    readonly network: NetworkDef,
  ) {}

  async blockNumber(options: CallOptions = {}): Promise<bigint> {
    return hexToBigInt(await this.hex('eth_blockNumber', [], options));
  }

  /** Number and timestamp of a block (`latest` by default): one call where both are needed. */
  async blockHeader(
    block: BlockRef = 'latest',
    options: CallOptions = {},
  ): Promise<{ number: bigint; timestamp: bigint }> {
    const header = await this.rpc.call<{ number?: unknown; timestamp?: unknown } | null>(
      'eth_getBlockByNumber',
      [blockParam(block), false],
      options,
    );
    if (!header || typeof header !== 'object' || !isHex(header.number) || !isHex(header.timestamp))
      throw new AppError(
        'provider_unavailable',
        `The ${networkLabel(this.network)} node provider answered eth_getBlockByNumber without a block.`,
      );
    return { number: hexToBigInt(header.number), timestamp: hexToBigInt(header.timestamp) };
  }

  async chainId(options: CallOptions = {}): Promise<number> {
    return Number(hexToBigInt(await this.hex('eth_chainId', [], options)));
  }

  getCode(address: Address, block: BlockRef, options: CallOptions = {}): Promise<Hex> {
    return this.hex('eth_getCode', [address, blockParam(block)], options);
  }

  getStorageAt(address: Address, slot: Hex, block: BlockRef, options: CallOptions = {}): Promise<Hex> {
    return this.hex('eth_getStorageAt', [address, slot, blockParam(block)], options);
  }

  async getBalance(address: Address, block: BlockRef, options: CallOptions = {}): Promise<bigint> {
    return hexToBigInt(await this.hex('eth_getBalance', [address, blockParam(block)], options));
  }

  async getTransactionCount(address: Address, block: BlockRef, options: CallOptions = {}): Promise<number> {
    return Number(
      hexToBigInt(await this.hex('eth_getTransactionCount', [address, blockParam(block)], options)),
    );
  }

  /** `eth_call` (read-only contract call); the ABI encoding and decoding is the caller's (viem). */
  call(
    tx: { to: Address; data: Hex; from?: Address },
    block: BlockRef,
    options: CallOptions = {},
  ): Promise<Hex> {
    return this.hex('eth_call', [tx, blockParam(block)], options);
  }

  /**
   * Code, balance, nonce and the given storage slots of `address` at one block, as one batch request.
   * Without `block`, the current head is read first (shared with concurrent callers) and pinned.
   */
  async readAccount(
    address: Address,
    options: CallOptions & { block?: bigint; storageSlots?: readonly Hex[] } = {},
  ): Promise<EvmAccountState> {
    const call = { deadlineMs: options.deadlineMs, signal: options.signal };
    const block = options.block ?? (await this.blockNumber(call));
    const slots = options.storageSlots ?? [];
    // Issued in the same tick, so they leave as one batch array.
    const [code, balance, nonce, words] = await Promise.all([
      this.getCode(address, block, call),
      this.getBalance(address, block, call),
      this.getTransactionCount(address, block, call),
      Promise.all(slots.map((slot) => this.getStorageAt(address, slot, block, call))),
    ]);
    return {
      block,
      code,
      balance,
      nonce,
      storage: Object.fromEntries(slots.map((slot, i) => [slot, words[i]!])),
    };
  }

  private async hex(method: string, params: unknown[], options: CallOptions): Promise<Hex> {
    const result = await this.rpc.call(method, params, options);
    if (typeof result !== 'string' || !isHex(result))
      throw new AppError(
        'provider_unavailable',
        `The ${networkLabel(this.network)} node provider answered ${method} with something other than hex.`,
      );
    return result;
  }
}

function blockParam(block: BlockRef): string {
  return typeof block === 'bigint' ? numberToHex(block) : block;
}
