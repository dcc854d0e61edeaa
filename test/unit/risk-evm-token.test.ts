import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { toFunctionSelector, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { capabilitiesOf, minimalProxyTarget } from '../../src/risk/evm/token/capabilities.js';
import { TRADE_PROBE_CODE } from '../../src/risk/evm/token/probe-code.js';
import { PROBE_ABI } from '../../src/risk/evm/token/trade.js';
import { mergeEvmTokenRegistry } from '../../src/risk/known/evm-tokens.js';
import { BUILT_IN_NETWORKS } from '../../src/chains/registry.js';
import { compileContracts, projectRoot } from '../support/evm/solidity.js';

/*
 * The ERC-20 scanner's pure parts: the committed trade probe is its source compiled, the capabilities
 * read from real OpenZeppelin bytecode, the EIP-1167 pattern, and the registry's merging rules.
 */

interface SolcOut {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<
    string,
    Record<string, { abi: unknown[]; evm: { deployedBytecode: { object: string } } }>
  >;
}

describe('the trade probe', () => {
  it('is TradeProbe.sol compiled with the settings probe-code.ts states (solc from package-lock)', () => {
    const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string };
    const source = readFileSync(join(projectRoot(), 'src/risk/evm/token/TradeProbe.sol'), 'utf8');
    const out = JSON.parse(
      solc.compile(
        JSON.stringify({
          language: 'Solidity',
          sources: { 'TradeProbe.sol': { content: source } },
          settings: {
            optimizer: { enabled: true, runs: 200 },
            evmVersion: 'paris',
            metadata: { appendCBOR: false },
            outputSelection: { '*': { TradeProbe: ['abi', 'evm.deployedBytecode.object'] } },
          },
        }),
      ),
    ) as SolcOut;
    expect(out.errors?.filter((e) => e.severity === 'error') ?? []).toEqual([]);
    const compiled = out.contracts['TradeProbe.sol']!.TradeProbe!;
    expect(`0x${compiled.evm.deployedBytecode.object}`, 'regenerate src/risk/evm/token/probe-code.ts').toBe(
      TRADE_PROBE_CODE,
    );
    const functions = (compiled.abi as { type: string; name?: string }[]).filter(
      (x) => x.type === 'function',
    );
    expect(functions.map((f) => f.name).sort()).toEqual(PROBE_ABI.map((f) => f.name).sort());
    // No PUSH0 (0x5f) as an opcode: the probe must run on pre-Shanghai networks too.
    expect(capabilitiesOf(TRADE_PROBE_CODE).selectors).toHaveLength(5);
  });
});

describe('capabilities from bytecode', () => {
  it('finds the owner functions of the OpenZeppelin-based test tokens, and nothing on a plain ERC-20', async () => {
    const contracts = await compileContracts();
    const of = (name: string) =>
      capabilitiesOf(contracts[name]!.deployedBytecode).capabilities.map((c) => c.capability);
    expect(of('CleanToken')).toEqual([]);
    expect(of('MintableToken')).toEqual(['mint', 'ownership']);
    expect(of('PausableToken')).toEqual(expect.arrayContaining(['pause', 'ownership']));
    expect(of('BlacklistToken')).toEqual(expect.arrayContaining(['freeze']));
    expect(of('FeeToken')).toEqual(expect.arrayContaining(['fee_setter']));
    expect(of('LimitsToken')).toEqual(expect.arrayContaining(['transfer_limits', 'trading_switch']));
    const mint = capabilitiesOf(contracts.MintableToken!.deployedBytecode).capabilities[0]!;
    expect(mint.functions).toEqual([
      { signature: 'mint(address,uint256)', selector: toFunctionSelector('mint(address,uint256)') },
    ]);
    expect(capabilitiesOf(contracts.CleanToken!.deployedBytecode)).toMatchObject({
      selfdestruct: false,
      delegatecall: false,
    });
  });

  it('cuts the CBOR metadata off before looking for opcodes, and sees DELEGATECALL and SELFDESTRUCT in code', () => {
    // PUSH1 0 DUP1 DELEGATECALL; then PUSH1 0 SELFDESTRUCT; then metadata a1 65 ... ff f4 with length 0x0008.
    const code = ('0x600080f4600' + '0ff' + 'a165627a7a7266f4' + '0008') as Hex;
    const found = capabilitiesOf(code);
    expect(found).toMatchObject({ delegatecall: true, selfdestruct: true });
    // Only in the metadata: not code.
    expect(capabilitiesOf(('0x00' + 'a1656262ff00f4ff' + '0008') as Hex)).toMatchObject({
      delegatecall: false,
      selfdestruct: false,
    });
  });

  it('recognises an EIP-1167 minimal proxy and its implementation', () => {
    const impl = 'bebebebebebebebebebebebebebebebebebebebe';
    expect(minimalProxyTarget(`0x363d3d373d3d3d363d73${impl}5af43d82803e903d91602b57fd5bf3`)).toBe(
      '0xBEbeBeBEbeBebeBeBEBEbebEBeBeBebeBeBebebe',
    );
    expect(minimalProxyTarget('0x6080')).toBeNull();
  });
});

describe('the router and known-token registry', () => {
  const ethereum = BUILT_IN_NETWORKS.find((n) => n.caip2 === 'eip155:1')!;
  const fork = { ...ethereum, chain: 'ethereum', network: 'demo', caip2: 'eip155:31337', forkOf: 'eip155:1' };
  it('ships Uniswap V2 on Ethereum, lets configuration replace it, and a fork inherits it', () => {
    expect(mergeEvmTokenRegistry().routerFor(ethereum)?.address).toBe(
      '0x7a250d5630B4cF539739dF2C5dAcb4c659F2488D',
    );
    const configured = mergeEvmTokenRegistry([
      { network: 'eip155:1', address: '0x00000000000000000000000000000000000000aa' },
    ]);
    expect(configured.routerFor(ethereum)).toMatchObject({
      name: 'configured router',
      source: 'configuration',
    });
    expect(configured.routerFor(fork)?.address).toBe('0x00000000000000000000000000000000000000AA');
    expect(configured.version).not.toBe(mergeEvmTokenRegistry().version);
  });
  it('knows USDC by address and symbol, and refuses a malformed entry naming it', () => {
    const registry = mergeEvmTokenRegistry();
    expect(registry.lookup(ethereum, '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48')).toMatchObject({
      issuer: 'Circle',
    });
    // Compared as the Solana registry compares: trimmed, case-folded, after NFKC (full-width letters fold).
    expect(registry.imitated(ethereum, { symbol: ' ｕｓｄｃ ', name: null })).toHaveLength(1);
    expect(registry.imitated(ethereum, { symbol: 'XYZ', name: 'Tether USD' }).map((t) => t.symbol)).toEqual([
      'USDT',
    ]);
    expect(() => mergeEvmTokenRegistry([], [{ network: 'eip155:1', address: '0x12' }])).toThrow(
      /risk\.evm\.known_tokens #0 is invalid: address/,
    );
  });
});
