import type { ExampleCall, ExamplesFile } from '../src/accounts/bootstrap.js';
import type { DemoPayload, DemoTarget } from './chain.js';

/**
 * The calls the banner shows on the demo chain, each with the answer it gets. `riskwatch bootstrap
 * --examples FILE` prints them as curl lines (it holds the new API key and the demo JWT), and
 * test/e2e/quickstart.test.ts runs every printed line and checks the answer against the comment.
 */
export function demoExamples(
  targets: readonly DemoTarget[],
  urls: { solana: string; evm: string },
  payloads: readonly DemoPayload[] = [],
): ExamplesFile {
  const at = (name: string): string => {
    const target = targets.find((t) => t.name === name);
    if (!target) throw new Error(`no demo target ${name}`);
    return target.address;
  };
  const scan = (name: string, say: string, level: string): ExampleCall => ({
    say,
    method: 'POST',
    path: '/api/v1/scan/token',
    auth: 'api_key',
    body: { mint: at(name), network: 'demo' },
    expect: { status: 200, field: 'risk_level', equals: level },
  });
  const preflight = (
    name: string,
    chain: string,
    intent: string,
    say: string,
    decision: string,
  ): ExampleCall => ({
    say,
    method: 'POST',
    path: '/api/v1/shield/preflight',
    auth: 'api_key',
    body: { target: at(name), intent, chain, network: 'demo' },
    expect: { status: 200, field: 'decision', equals: decision },
  });
  const assess = (
    name: string,
    chain: string,
    targetType: string,
    say: string,
    level: string,
  ): ExampleCall => ({
    say,
    method: 'POST',
    path: '/api/web3/risk-v2',
    auth: 'jwt',
    body: { target: at(name), chain, network: 'demo', target_type: targetType },
    expect: { status: 200, field: 'risk_level', equals: level },
  });

  /** Before the user signs: a preflight with a payload (the transaction or signature itself). */
  const signing = (p: DemoPayload): ExampleCall => ({
    say: `Before the user signs: ${p.what}? (${p.decision === 'block' ? 'blocked' : p.decision === 'warn' ? 'warned' : 'allowed'})`,
    method: 'POST',
    path: '/api/v1/shield/preflight',
    auth: 'api_key',
    body: { intent: p.intent, chain: p.chain, network: 'demo', ...p.body },
    expect: { status: 200, field: 'decision', equals: p.decision },
  });

  return {
    notice: [
      'DEMO CHAIN: the networks solana/demo and ethereum/demo are local simulations, not mainnet:',
      `  solana/demo   = LiteSVM state behind a JSON-RPC at ${urls.solana} (real SPL Token / Token-2022 programs)`,
      `  ethereum/demo = anvil at ${urls.evm} (chain id 31337)`,
      'For a real chain instead: RISKWATCH_RPC_SOLANA_MAINNET=https://… RISKWATCH_RPC_ETHEREUM_MAINNET=https://… bash deploy/local.sh',
      '(public endpoints and their limits: config/README.md, "Node providers").',
    ],
    calls: [
      scan('stablecoin', 'Is this token a trap? USDC, its issuer holding the expected authorities', 'low'),
      scan('rug-token', 'live mint and freeze authorities, one wallet holding 70%', 'high'),
      scan('trap-token', 'Token-2022 with a permanent delegate and a transfer hook', 'critical'),
      scan('copycat-token', 'a copycat: another mint calling itself USD Coin / USDC', 'high'),
      preflight(
        'trap-token',
        'solana',
        'approve',
        'Should the user approve this token? (blocked: critical)',
        'block',
      ),
      preflight(
        'rug-token',
        'solana',
        'interact',
        'Should the user buy into the rug-style token? (warned)',
        'warn',
      ),
      preflight('clean-token', 'solana', 'interact', 'and a clean one (allowed)', 'allow'),
      preflight(
        'delegated-eoa',
        'ethereum',
        'transfer',
        'Send to an EOA whose code is delegated (EIP-7702) to a contract? (warned)',
        'warn',
      ),
      preflight('fresh-address', 'ethereum', 'transfer', 'Send to an address never seen on chain?', 'warn'),
      preflight('funded-eoa', 'ethereum', 'transfer', 'Send to an ordinary funded wallet?', 'allow'),
      ...payloads.map(signing),
      assess(
        'delegated-wallet',
        'solana',
        'wallet',
        'How risky is this wallet? (a token delegate can move its tokens)',
        'medium',
      ),
      assess(
        'proxy',
        'ethereum',
        'contract',
        'How risky is this contract? (an EIP-1967 upgradeable proxy)',
        'medium',
      ),
    ],
  };
}
