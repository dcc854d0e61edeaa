import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { DEMO_EVM_CHAIN_ID, DEMO_SOLANA_CAIP2, startDemoChain } from './chain.js';
import { demoExamples } from './examples.js';

/*
 * `node dist/demo/main.js [--solana-port 8899] [--evm-port 8545] [--out DIR]`: start the demo chain and keep
 * it running until SIGINT/SIGTERM. With --out, it writes into DIR:
 *   riskwatch.yaml  a configuration file (RISKWATCH_CONFIG) naming the two networks solana/demo, ethereum/demo
 *   examples.json   the calls the banner shows (`riskwatch bootstrap --examples DIR/examples.json`)
 * examples.json is written last (by rename), once both chains answer: its presence means ready.
 * deploy/local.sh starts and stops it with the service when no node provider is configured.
 */

const { values } = parseArgs({
  options: {
    'solana-port': { type: 'string', default: '8899' },
    'evm-port': { type: 'string', default: '8545' },
    out: { type: 'string' },
  },
});
const port = (name: string, raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`--${name}: expected a port, got ${raw}`);
  return n;
};

const started = Date.now();
const demo = await startDemoChain({
  solanaPort: port('solana-port', values['solana-port']),
  evmPort: port('evm-port', values['evm-port']),
});

if (values.out) {
  const dir = values.out;
  mkdirSync(dir, { recursive: true });
  const config = {
    chains: {
      networks: {
        solana: {
          demo: {
            caip2: DEMO_SOLANA_CAIP2,
            fork_of: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
            rpc_urls: [demo.solanaUrl],
          },
        },
        ethereum: {
          demo: { caip2: `eip155:${DEMO_EVM_CHAIN_ID}`, fork_of: 'eip155:1', rpc_urls: [demo.evmUrl] },
        },
      },
    },
  };
  writeFileSync(
    join(dir, 'riskwatch.yaml'),
    `# Written by the demo chain (demo/main.ts): its two local networks. Not for production.\n${stringify(config)}`,
  );
  const examples = join(dir, 'examples.json');
  writeFileSync(
    `${examples}.tmp`,
    JSON.stringify(
      demoExamples(demo.targets, { solana: demo.solanaUrl, evm: demo.evmUrl }, demo.payloads),
      null,
      2,
    ),
  );
  renameSync(`${examples}.tmp`, examples);
}

console.log(
  `demo chain ready in ${((Date.now() - started) / 1000).toFixed(1)} s (not mainnet: a local simulation)`,
);
console.log(`  solana/demo    ${demo.solanaUrl}`);
console.log(`  ethereum/demo  ${demo.evmUrl}  (chain id ${DEMO_EVM_CHAIN_ID})`);
for (const t of demo.targets)
  console.log(`  ${t.chain.padEnd(8)} ${t.name.padEnd(17)} ${t.address}  ${t.what}`);
for (const p of demo.payloads)
  console.log(`  ${p.chain.padEnd(8)} ${p.name.padEnd(24)} ${p.what} → ${p.decision}`);

let closing = false;
const stop = () => {
  if (closing) return;
  closing = true;
  void demo.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
