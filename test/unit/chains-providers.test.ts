import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainProviders, networksFromConfig } from '../../src/chains/providers.js';
import { loadConfig } from '../../src/config.js';
import { JsonRpcStub } from '../support/jsonrpc-stub.js';
import { capturingLogger } from '../support/logs.js';

describe('ChainProviders', () => {
  let solanaStub: JsonRpcStub;
  let evmStub: JsonRpcStub;
  let deadUrl: string;
  let providers: ChainProviders;
  let registry: Registry;

  beforeAll(async () => {
    solanaStub = await JsonRpcStub.start({
      getSlot: () => 312345678,
      getBalance: () => ({ context: { slot: 312345678 }, value: 5 }),
    });
    evmStub = await JsonRpcStub.start({ eth_blockNumber: () => '0x1406f40' });
    const dead = await JsonRpcStub.start();
    deadUrl = dead.url('/v1/DEAD-KEY');
    await dead.close();
    const config = loadConfig({
      RISKWATCH_RPC_SOLANA_MAINNET: `${solanaStub.url('/SOL-KEY')},${deadUrl}`,
      RISKWATCH_RPC_BASE_MAINNET: evmStub.url('/EVM-KEY'),
    });
    registry = new Registry();
    providers = new ChainProviders(networksFromConfig(config.chains), { metrics: registry });
  });
  afterAll(async () => {
    await Promise.all([solanaStub.close(), evmStub.close()]);
  });

  it('serves typed clients for configured networks only', async () => {
    const solana = providers.solana(providers.resolve('solana', 'mainnet'));
    await expect(solana.getBalance('11111111111111111111111111111111')).resolves.toEqual({
      slot: 312345678,
      lamports: 5n,
    });
    const base = providers.evm(providers.resolve('eip155:8453', undefined));
    await expect(base.blockNumber()).resolves.toBe(21000000n);
    expect(() => providers.resolve('ethereum', 'mainnet')).toThrow(/not configured/);
  });

  it('probes every provider URL for the health check, naming providers, never URLs', async () => {
    const health = await providers.health(1000);
    expect(health).toEqual([
      {
        network: 'solana/mainnet',
        provider: 'solana/mainnet#0',
        status: 'pass',
        head: 312345678,
        latency_ms: expect.any(Number) as number,
        circuit: 'closed',
      },
      {
        network: 'solana/mainnet',
        provider: 'solana/mainnet#1',
        status: 'fail',
        error: expect.stringMatching(/network error/) as string,
        latency_ms: expect.any(Number) as number,
        circuit: 'closed',
      },
      {
        network: 'base/mainnet',
        provider: 'base/mainnet#0',
        status: 'pass',
        head: 21000000,
        latency_ms: expect.any(Number) as number,
        circuit: 'closed',
      },
    ]);
    const text = JSON.stringify(health) + (await registry.metrics());
    for (const secret of ['SOL-KEY', 'EVM-KEY', 'DEAD-KEY', '127.0.0.1']) expect(text).not.toContain(secret);
    expect(text).toContain('riskwatch_rpc_circuit_open{provider="solana/mainnet#1"} 0');
  });
});

describe('ChainProviders start-up warnings', () => {
  it('warns once per plain-http provider outside loopback, naming the provider and never the URL', () => {
    const { logger, lines } = capturingLogger('info');
    const config = loadConfig({
      RISKWATCH_RPC_SOLANA_MAINNET: 'https://rpc.example/SOL-KEY,http://10.0.0.7:8899/IN-VPC-KEY',
      RISKWATCH_RPC_ETHEREUM_MAINNET: 'http://127.0.0.1:8545/LOCAL,http://localhost:8545/',
    });
    ChainProviders.fromConfig(config.chains, { logger });
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as { level: number; provider: string; msg: string };
    expect(line).toMatchObject({ level: 40, provider: 'solana/mainnet#1' });
    expect(line.msg).toMatch(/plain http:\/\//);
    expect(lines[0]).not.toMatch(/10\.0\.0\.7|IN-VPC-KEY|SOL-KEY/);
  });
});
