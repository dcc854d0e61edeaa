import { z } from 'zod';
import { csv, int, slug, type EnvVars } from '../platform/config.js';
import { BUILT_IN_NETWORKS, CAIP2_PATTERN, familyOfCaip2 } from './registry.js';

/** A node provider URL. Its path or query often carries an API key: messages never quote the value. */
const rpcUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s):// URL' });

/** One network's providers; every tuning key falls back to `chains.defaults`. */
const networkSettings = z.strictObject({
  rpc_urls: csv.pipe(z.array(rpcUrl)),
  rate_per_s: int(0, 100000).optional(),
  concurrency: int(1, 1024).optional(),
  timeout_ms: int(50, 120000).optional(),
  batch_max: int(1, 1000).optional(),
  caip2: z.string().regex(CAIP2_PATTERN, 'expected a CAIP-2 id such as eip155:1').optional(),
  aliases: csv.pipe(z.array(slug)).optional(),
  /** A network that is not built in but copies one (a local fork, the demo chain): its CAIP-2 id. */
  fork_of: z.string().regex(CAIP2_PATTERN, 'expected a CAIP-2 id such as eip155:1').optional(),
});

/** The `chains` section: provider defaults, and each network's URLs and overrides. */
export const chainsSettings = z
  .object({
    defaults: z.object({
      deadline_ms: int(100, 120000),
      timeout_ms: int(50, 120000),
      retries: int(0, 10),
      backoff_base_ms: int(1, 60000),
      backoff_max_ms: int(1, 300000),
      rate_per_s: int(0, 100000),
      concurrency: int(1, 1024),
      batch_max: int(1, 1000),
      circuit_failures: int(1, 1000),
      circuit_cooldown_min_ms: int(50, 3600000),
      circuit_cooldown_ms: int(100, 3600000),
      max_response_mib: int(1, 1024),
      max_buffered_mib: int(1, 16384),
      retry_after_max_ms: int(0, 3600000),
    }),
    networks: z.record(slug, z.record(slug, networkSettings)),
  })
  .superRefine((chains, ctx) => {
    checkNetworks(chains, ctx);
    if (chains.defaults.max_buffered_mib < chains.defaults.max_response_mib)
      ctx.addIssue({
        code: 'custom',
        path: ['defaults', 'max_buffered_mib'],
        message: 'must be at least chains.defaults.max_response_mib',
      });
    if (chains.defaults.backoff_max_ms < chains.defaults.backoff_base_ms)
      ctx.addIssue({
        code: 'custom',
        path: ['defaults', 'backoff_max_ms'],
        message: 'must be at least chains.defaults.backoff_base_ms',
      });
  });

export type ChainsConfig = z.infer<typeof chainsSettings>;

/**
 * Built-in networks keep their CAIP-2 id; any other network must bring one in a namespace riskwatch
 * has a client for (`solana:` or `eip155:`). Names, aliases and CAIP-2 ids must not collide.
 */
function checkNetworks(chains: ChainsConfig, ctx: z.RefinementCtx): void {
  const seenCaip2 = new Map(BUILT_IN_NETWORKS.map((n) => [n.caip2, `${n.chain}.${n.network}`]));
  const namesOf = new Map<string, Set<string>>();
  for (const n of BUILT_IN_NETWORKS) {
    const names = namesOf.get(n.chain) ?? new Set<string>();
    for (const s of [n.network, ...n.aliases]) names.add(s);
    namesOf.set(n.chain, names);
  }
  for (const [chain, networks] of Object.entries(chains.networks)) {
    for (const [network, settings] of Object.entries(networks)) {
      const path = ['networks', chain, network];
      const builtIn = BUILT_IN_NETWORKS.find((n) => n.chain === chain && n.network === network);
      const issue = (key: string, message: string) =>
        ctx.addIssue({ code: 'custom', path: [...path, key], message });
      if (builtIn) {
        if (settings.caip2 !== undefined && settings.caip2 !== builtIn.caip2)
          issue('caip2', `${chain}/${network} is built in as ${builtIn.caip2}; leave caip2 out`);
        if (settings.fork_of !== undefined)
          issue('fork_of', `${chain}/${network} is built in: leave fork_of out`);
      } else if (settings.caip2 === undefined) {
        issue('caip2', `${chain}/${network} is not built in: give its CAIP-2 id (solana:… or eip155:…)`);
      } else if (!familyOfCaip2(settings.caip2)) {
        issue('caip2', 'only the solana: and eip155: namespaces have a client');
      } else if (seenCaip2.has(settings.caip2)) {
        issue('caip2', `${settings.caip2} is already ${seenCaip2.get(settings.caip2)}`);
      } else {
        seenCaip2.set(settings.caip2, `${chain}.${network}`);
        const original = BUILT_IN_NETWORKS.find((n) => n.caip2 === settings.fork_of);
        if (settings.fork_of !== undefined && original?.family !== familyOfCaip2(settings.caip2))
          issue('fork_of', `expected the CAIP-2 id of a built-in ${familyOfCaip2(settings.caip2)} network`);
      }
      const names = namesOf.get(chain) ?? new Set<string>();
      if (!builtIn) {
        if (names.has(network)) issue('aliases', `${network} is already an alias on ${chain}`);
        names.add(network);
      }
      for (const alias of settings.aliases ?? []) {
        if (names.has(alias)) issue('aliases', `${alias} already names a ${chain} network`);
        names.add(alias);
      }
      namesOf.set(chain, names);
    }
  }
}

/** Environment variable holding the RPC URLs of a network: `RISKWATCH_RPC_SOLANA_MAINNET`. */
export const rpcEnvName = (chain: string, network: string): string =>
  `RISKWATCH_RPC_${chain}_${network}`.toUpperCase().replaceAll('-', '_');

export const CHAINS_ENV_VARS: EnvVars = {
  RISKWATCH_RPC_DEADLINE_MS: 'chains.defaults.deadline_ms',
  RISKWATCH_RPC_TIMEOUT_MS: 'chains.defaults.timeout_ms',
  RISKWATCH_RPC_RETRIES: 'chains.defaults.retries',
  RISKWATCH_RPC_BACKOFF_BASE_MS: 'chains.defaults.backoff_base_ms',
  RISKWATCH_RPC_BACKOFF_MAX_MS: 'chains.defaults.backoff_max_ms',
  RISKWATCH_RPC_RATE_PER_S: 'chains.defaults.rate_per_s',
  RISKWATCH_RPC_CONCURRENCY: 'chains.defaults.concurrency',
  RISKWATCH_RPC_BATCH_MAX: 'chains.defaults.batch_max',
  RISKWATCH_RPC_CIRCUIT_FAILURES: 'chains.defaults.circuit_failures',
  RISKWATCH_RPC_CIRCUIT_COOLDOWN_MIN_MS: 'chains.defaults.circuit_cooldown_min_ms',
  RISKWATCH_RPC_CIRCUIT_COOLDOWN_MS: 'chains.defaults.circuit_cooldown_ms',
  RISKWATCH_RPC_MAX_RESPONSE_MIB: 'chains.defaults.max_response_mib',
  RISKWATCH_RPC_MAX_BUFFERED_MIB: 'chains.defaults.max_buffered_mib',
  RISKWATCH_RPC_RETRY_AFTER_MAX_MS: 'chains.defaults.retry_after_max_ms',
  ...Object.fromEntries(
    BUILT_IN_NETWORKS.map((n) => [
      rpcEnvName(n.chain, n.network),
      `chains.networks.${n.chain}.${n.network}.rpc_urls`,
    ]),
  ),
};
