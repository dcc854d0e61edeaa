import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainProviders, networksFromConfig } from '../../src/chains/providers.js';
import { BUILT_IN_NETWORKS, resolveNetwork, type NetworkDef } from '../../src/chains/registry.js';
import { ENV_VARS, loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/platform/config.js';
import { AppError } from '../../src/platform/errors.js';
import { SOLANA_KNOWN } from '../../src/risk/known/solana.js';

const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';

function thrown<T extends Error>(fn: () => unknown, type: new (...args: never[]) => T): T {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(type);
    return err as T;
  }
  throw new Error('expected an error, but nothing was thrown');
}

const label = (n: NetworkDef) => `${n.chain}/${n.network}`;

describe('resolveNetwork', () => {
  it.each([
    ['solana', 'mainnet', 'solana/mainnet'],
    ['solana', 'mainnet-beta', 'solana/mainnet'],
    ['Solana', 'SOLANA-MAINNET', 'solana/mainnet'],
    ['solana', undefined, 'solana/mainnet'],
    ['solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', undefined, 'solana/mainnet'],
    ['solana', 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', 'solana/devnet'],
    [undefined, 'solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z', 'solana/testnet'],
    ['ethereum', 'sepolia', 'ethereum/sepolia'],
    ['eip155:8453', undefined, 'base/mainnet'],
    ['eip155:1', 'mainnet', 'ethereum/mainnet'],
    ['ethereum', 'eip155:11155111', 'ethereum/sepolia'],
    ['ethereum', '1', 'ethereum/mainnet'],
    ['42161', undefined, 'arbitrum/mainnet'],
    ['bsc', 'mainnet', 'bsc/mainnet'],
  ])('%s + %s → %s', (chain, network, expected) => {
    expect(label(resolveNetwork(chain, network))).toBe(expected);
  });

  it.each([
    ['dogecoin', 'mainnet'],
    ['solana', 'localnet'],
    ['eip155:999999', undefined],
    ['ethereum', 'eip155:10'],
    ['ethereum', '8453'],
    ['base', 'sepolia'],
    [undefined, undefined],
  ])('%s + %s → unsupported_chain listing what is configured', (chain, network) => {
    const configured = BUILT_IN_NETWORKS.filter((n) => n.chain === 'solana' && n.network === 'mainnet');
    const err = thrown(
      () => resolveNetwork(chain, network, { networks: BUILT_IN_NETWORKS, configured }),
      AppError,
    );
    expect(err.code).toBe('unsupported_chain');
    expect(err.message).toContain(
      'Configured networks: solana/mainnet (solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp).',
    );
    expect(err.extra.errors?.[0]?.path).toMatch(/^(chain|network)$/);
  });

  it('refuses a known network that has no RPC URL, saying so', () => {
    const [mainnet, devnet] = BUILT_IN_NETWORKS;
    const err = thrown(
      () => resolveNetwork('solana', 'devnet', { networks: BUILT_IN_NETWORKS, configured: [mainnet!] }),
      AppError,
    );
    expect(devnet!.network).toBe('devnet');
    expect(err.code).toBe('unsupported_chain');
    expect(err.message).toMatch(/^solana\/devnet is not configured on this installation/);
    expect(err.message).toContain('Configured networks: solana/mainnet');
  });
});

describe('chains configuration', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'rw-chains-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('has an RPC URL variable for every built-in network and sensible defaults', () => {
    for (const n of BUILT_IN_NETWORKS) {
      const name = `RISKWATCH_RPC_${n.chain.toUpperCase()}_${n.network.toUpperCase()}`;
      expect(ENV_VARS[name]).toBe(`chains.networks.${n.chain}.${n.network}.rpc_urls`);
    }
    const config = loadConfig({});
    expect(config.chains.defaults).toEqual({
      deadline_ms: 5000,
      timeout_ms: 3000,
      retries: 2,
      backoff_base_ms: 100,
      backoff_max_ms: 2000,
      rate_per_s: 20,
      concurrency: 16,
      batch_max: 50,
      circuit_failures: 5,
      circuit_cooldown_min_ms: 250,
      circuit_cooldown_ms: 3000,
      max_response_mib: 32,
      max_buffered_mib: 96,
      retry_after_max_ms: 60000,
    });
    const providers = ChainProviders.fromConfig(config.chains);
    for (const def of providers.networks)
      expect(() => providers.resolve(def.chain, def.network)).toThrow(/Configured networks: none/);
  });

  it('takes comma-separated URLs from RISKWATCH_RPC_<CHAIN>_<NETWORK>', () => {
    const config = loadConfig({
      RISKWATCH_RPC_SOLANA_MAINNET: 'https://a.example/KEY1, https://b.example/?api-key=KEY2',
      RISKWATCH_RPC_ETHEREUM_SEPOLIA: 'http://127.0.0.1:8545',
      RISKWATCH_RPC_RETRIES: '4',
    });
    expect(config.chains.networks.solana!.mainnet!.rpc_urls).toEqual([
      'https://a.example/KEY1',
      'https://b.example/?api-key=KEY2',
    ]);
    expect(config.chains.defaults.retries).toBe(4);
    const providers = ChainProviders.fromConfig(config.chains);
    const configured = providers.networks.filter((def) => {
      try {
        return providers.resolve(def.chain, def.network) === def;
      } catch {
        return false;
      }
    });
    expect(configured.map(label)).toEqual(['solana/mainnet', 'ethereum/sepolia']);
    expect(providers.client(providers.resolve('solana', 'mainnet-beta')).providers).toEqual([
      'solana/mainnet#0',
      'solana/mainnet#1',
    ]);
    const err = thrown(() => providers.resolve('base', 'mainnet'), AppError);
    expect(err.message).toContain(
      'Configured networks: solana/mainnet (solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp), ethereum/sepolia (eip155:11155111).',
    );
    expect(thrown(() => providers.evm(providers.resolve('solana', 'mainnet')), AppError).code).toBe(
      'unsupported_chain',
    );
  });

  it('refuses a bad URL in one line naming the variable, without echoing the URL', () => {
    const err = thrown(
      () => loadConfig({ RISKWATCH_RPC_BASE_MAINNET: 'wss://base.example/SECRETKEY,https://ok.example' }),
      ConfigError,
    );
    expect(err.lines).toEqual([
      expect.stringMatching(
        /^config: RISKWATCH_RPC_BASE_MAINNET \(chains\.networks\.base\.mainnet\.rpc_urls/,
      ),
    ]);
    expect(err.message).not.toContain('SECRETKEY');
  });

  it.each([
    ['RISKWATCH_RPC_TIMEOUT_MS', '10'],
    ['RISKWATCH_RPC_RETRIES', '11'],
    ['RISKWATCH_RPC_BATCH_MAX', '0'],
    ['RISKWATCH_RPC_CONCURRENCY', 'many'],
    ['RISKWATCH_RPC_CIRCUIT_COOLDOWN_MS', '-1'],
  ])('%s=%s is refused naming the variable', (name, value) => {
    const err = thrown(() => loadConfig({ [name]: value }), ConfigError);
    expect(err.lines).toEqual([expect.stringMatching(new RegExp(`^config: ${name} \\(${ENV_VARS[name]}`))]);
  });

  it('refuses a backoff cap below its base', () => {
    const err = thrown(
      () => loadConfig({ RISKWATCH_RPC_BACKOFF_BASE_MS: '500', RISKWATCH_RPC_BACKOFF_MAX_MS: '100' }),
      ConfigError,
    );
    expect(err.lines).toEqual([
      expect.stringMatching(/^config: RISKWATCH_RPC_BACKOFF_MAX_MS .*backoff_base_ms/),
    ]);
  });

  it('applies per-network overrides and accepts custom networks with a CAIP-2 id', () => {
    const file = join(tmp, 'custom.yaml');
    writeFileSync(
      file,
      [
        'chains:',
        '  networks:',
        '    solana:',
        '      mainnet:',
        '        rpc_urls: [https://sol.example/KEY]',
        '        rate_per_s: 40',
        '        timeout_ms: 900',
        '        aliases: [mainnet-primary]',
        '    ethereum:',
        '      holesky:',
        '        caip2: eip155:17000',
        '        rpc_urls: [https://holesky.example/KEY]',
        '        batch_max: 1',
      ].join('\n'),
    );
    const config = loadConfig({ RISKWATCH_CONFIG: file });
    const networks = networksFromConfig(config.chains);
    const mainnet = networks.find((n) => label(n.def) === 'solana/mainnet')!;
    expect(mainnet.tuning).toMatchObject({ ratePerS: 40, timeoutMs: 900, concurrency: 16, batchMax: 50 });
    expect(mainnet.def.aliases).toEqual(['mainnet-beta', 'solana-mainnet', 'mainnet-primary']);
    const holesky = networks.find((n) => label(n.def) === 'ethereum/holesky')!;
    expect(holesky.def).toEqual({
      chain: 'ethereum',
      network: 'holesky',
      caip2: 'eip155:17000',
      family: 'evm',
      chainId: 17000,
      aliases: [],
    });
    expect(holesky.tuning.batchMax).toBe(1);
    expect(holesky.def.forkOf).toBeUndefined();

    const providers = new ChainProviders(networks);
    expect(label(providers.resolve('solana', 'mainnet-primary'))).toBe('solana/mainnet');
    expect(label(providers.resolve('eip155:17000', undefined))).toBe('ethereum/holesky');
    expect(label(providers.resolve('ethereum', '17000'))).toBe('ethereum/holesky');
    expect(providers.evm(providers.resolve('ethereum', 'holesky')).network.caip2).toBe('eip155:17000');
  });

  it('lets a fork of a built-in network use its known-good context (fork_of)', () => {
    const file = join(tmp, 'fork.yaml');
    writeFileSync(
      file,
      [
        'chains:',
        '  networks:',
        '    solana:',
        '      demo:',
        '        caip2: solana:riskwatch-demo',
        '        fork_of: solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
        '        rpc_urls: [http://127.0.0.1:8899]',
      ].join('\n'),
    );
    const networks = networksFromConfig(loadConfig({ RISKWATCH_CONFIG: file }).chains);
    const demo = networks.find((n) => label(n.def) === 'solana/demo')!.def;
    expect(demo.forkOf).toBe('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp');
    const devnet = BUILT_IN_NETWORKS.find((n) => label(n) === 'solana/devnet')!;
    expect(SOLANA_KNOWN.mint(demo, USDC)?.symbol).toBe('USDC');
    expect(SOLANA_KNOWN.imitatedBy(demo, 'usdc', 'other')).toHaveLength(1);
    expect(SOLANA_KNOWN.mint(devnet, USDC)).toBeUndefined();
    expect(SOLANA_KNOWN.mint({ ...demo, forkOf: undefined }, USDC)).toBeUndefined();
  });

  it.each([
    [
      'a custom network without caip2',
      'ethereum:\n      holesky:\n        rpc_urls: []',
      /caip2.*not built in/,
    ],
    [
      'a built-in network with another caip2',
      'ethereum:\n      mainnet:\n        rpc_urls: []\n        caip2: eip155:5',
      /built in as eip155:1/,
    ],
    [
      'a namespace without a client',
      'cosmos:\n      hub:\n        caip2: cosmos:cosmoshub-4\n        rpc_urls: []',
      /namespaces have a client/,
    ],
    [
      'a CAIP-2 id used twice',
      'base:\n      copy:\n        caip2: eip155:8453\n        rpc_urls: []',
      /already base/,
    ],
    [
      'an alias naming another network',
      'solana:\n      devnet:\n        rpc_urls: []\n        aliases: [mainnet-beta]',
      /already names a solana network/,
    ],
    ['a misspelt key', 'solana:\n      mainnet:\n        rpc_url: [https://x.example]', /rpc_url/],
    [
      'fork_of on a built-in network',
      'solana:\n      devnet:\n        rpc_urls: []\n        fork_of: solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      /fork_of.*built in/,
    ],
    [
      'fork_of naming a network of another family',
      'ethereum:\n      fork:\n        caip2: eip155:31337\n        rpc_urls: []\n        fork_of: solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      /fork_of.*built-in evm network/,
    ],
  ])('refuses %s', (_what, networksYaml, message) => {
    const file = join(tmp, `bad-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, `chains:\n  networks:\n    ${networksYaml}\n`);
    const err = thrown(() => loadConfig({ RISKWATCH_CONFIG: file }), ConfigError);
    expect(err.lines).toHaveLength(1);
    expect(err.lines[0]).toMatch(/^config: .*chains\.networks\./);
    expect(err.lines[0]).toMatch(message);
  });
});
