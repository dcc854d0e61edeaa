import { parseEther, type Address, type Hex } from 'viem';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/platform/errors.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import { testEvmRpc } from '../support/rpc-clients.js';
import { JsonRpcStub } from '../support/jsonrpc-stub.js';

const EIP1967_IMPLEMENTATION_SLOT: Hex = '0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc';
const EIP1967_ADMIN_SLOT: Hex = '0xb53127684a568b3173ae13b9f8a6016e243e63b6e8ee1178d6a717850b5d6103';
const ZERO_WORD: Hex = `0x${'0'.repeat(64)}`;

const evmClient = (url: string) => testEvmRpc(url);

describe('EvmRpc against a stub', () => {
  let stub: JsonRpcStub;
  afterEach(() => stub.close());

  it('pins every read of readAccount to one block and sends them as one batch', async () => {
    stub = await JsonRpcStub.start({
      eth_blockNumber: () => '0x1234',
      eth_getCode: () => '0x',
      eth_getBalance: () => '0xde0b6b3a7640000',
      eth_getTransactionCount: () => '0x5',
      eth_getStorageAt: (params: [string, Hex]) =>
        params[1] === EIP1967_ADMIN_SLOT ? `0x${'0'.repeat(63)}1` : ZERO_WORD,
    });
    const evm = evmClient(stub.url());
    const address: Address = '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045';
    const state = await evm.readAccount(address, {
      storageSlots: [EIP1967_IMPLEMENTATION_SLOT, EIP1967_ADMIN_SLOT],
    });

    expect(state).toEqual({
      block: 0x1234n,
      code: '0x',
      balance: 10n ** 18n,
      nonce: 5,
      storage: { [EIP1967_IMPLEMENTATION_SLOT]: ZERO_WORD, [EIP1967_ADMIN_SLOT]: `0x${'0'.repeat(63)}1` },
    });
    expect(stub.requests).toHaveLength(2);
    expect(stub.requests[0]!.calls.map((c) => c.method)).toEqual(['eth_blockNumber']);
    const batch = stub.requests[1]!;
    expect(batch.batch).toBe(true);
    expect(batch.calls.map((c) => c.method)).toEqual([
      'eth_getCode',
      'eth_getBalance',
      'eth_getTransactionCount',
      'eth_getStorageAt',
      'eth_getStorageAt',
    ]);
    for (const call of batch.calls) expect((call.params as unknown[]).at(-1)).toBe('0x1234');
  });

  it('reads at a given block without asking for the head; non-hex answers are provider failures', async () => {
    stub = await JsonRpcStub.start({
      eth_getCode: () => '0xef0100' + 'ab'.repeat(20),
      eth_getBalance: () => '0x0',
      eth_getTransactionCount: () => 'zero',
    });
    const evm = evmClient(stub.url());
    const address: Address = '0x0000000000000000000000000000000000000001';
    await expect(evm.getCode(address, 99n)).resolves.toBe('0xef0100' + 'ab'.repeat(20));
    expect(stub.calls[0]!.params).toEqual([address, '0x63']);
    const err = await evm.readAccount(address, { block: 100n }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('provider_unavailable');
    expect(stub.calls.map((c) => c.method)).not.toContain('eth_blockNumber');
  });
});

describe('EvmRpc against anvil (a real node)', () => {
  let anvil: RunningAnvil;
  beforeAll(async () => {
    anvil = await startAnvil();
  });
  afterAll(() => anvil?.stop());

  it('reads head, chain id and a funded account in batches the node accepts', async () => {
    const evm = evmClient(anvil.url);
    const [head, chainId] = await Promise.all([evm.blockNumber(), evm.chainId()]);
    expect(head).toBeGreaterThanOrEqual(0n);
    expect(chainId).toBe(1);
    const state = await evm.readAccount(anvil.accounts[0]!.address, {
      storageSlots: [EIP1967_IMPLEMENTATION_SLOT],
    });
    expect(state.block).toBe(head);
    expect(state.code).toBe('0x');
    expect(state.balance).toBe(parseEther('10000'));
    expect(state.nonce).toBe(0);
    expect(state.storage[EIP1967_IMPLEMENTATION_SLOT]).toBe(ZERO_WORD);
  });
});
