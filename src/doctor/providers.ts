import { JsonRpcClient } from '../chains/jsonrpc.js';
import { networksFromConfig } from '../chains/providers.js';
import { BUILT_IN_NETWORKS, networkLabel, type NetworkDef } from '../chains/registry.js';
import type { ChainsConfig } from '../chains/settings.js';
import type { Finding, Status } from './report.js';
import { withTimeout } from './timeout.js';

type Probe =
  { ok: true; result: unknown; latencyMs: number } | { ok: false; error: string; latencyMs: number };

/** What a node says of itself: its EVM chain id or its Solana genesis hash, and its head. */
interface Answers {
  provider: string;
  identity: Probe;
  head: Probe;
}

/** A node that answered with a JSON-RPC error object is reachable: it just lacks the method. */
const answered = (p: Probe) => p.ok || p.error.startsWith('RPC error');

/**
 * Each provider URL of each configured network: does it answer, and is it the network it is configured
 * for? The identity is the node's own (EVM `eth_chainId`, Solana `getGenesisHash`) against the network's
 * CAIP-2 id. One call per method per URL, through the service's JSON-RPC client (its size caps, its
 * redirect refusal, its error texts, which never quote the URL: URLs carry API keys and are never shown).
 */
export async function checkProviders(chains: ChainsConfig, timeoutMs: number): Promise<Finding[]> {
  const configured = networksFromConfig(chains).filter((n) => n.urls.length > 0);
  if (configured.length === 0)
    return [
      {
        check: 'providers',
        status: 'warn',
        detail:
          'no network has an RPC URL: every risk call is refused (unsupported_chain); set ' +
          'RISKWATCH_RPC_<CHAIN>_<NETWORK> (config/README.md)',
      },
    ];
  const perNetwork = await Promise.all(
    configured.map(async ({ def, urls, tuning }) => {
      const client = new JsonRpcClient({ ...tuning, retries: 0, network: networkLabel(def), urls });
      try {
        const [identityMethod, headMethod] =
          def.family === 'solana' ? ['getGenesisHash', 'getSlot'] : ['eth_chainId', 'eth_blockNumber'];
        const probe = (provider: string, method: string): Promise<Probe> =>
          withTimeout(client.probe(provider, method, [], timeoutMs), timeoutMs + 100).catch(
            (err: unknown): Probe => ({ ok: false, error: (err as Error).message, latencyMs: timeoutMs }),
          );
        const answers = await Promise.all(
          client.providers.map(async (provider): Promise<Answers> => ({
            provider,
            identity: await probe(provider, identityMethod),
            head: await probe(provider, headMethod),
          })),
        );
        const anyReachable = answers.some((a) => answered(a.identity) || answered(a.head));
        return answers.map((a) => providerFinding(def, a, anyReachable));
      } finally {
        client.close();
      }
    }),
  );
  return perNetwork.flat();
}

function providerFinding(def: NetworkDef, a: Answers, siblingReachable: boolean): Finding {
  const check = `provider:${a.provider}`;
  if (!answered(a.identity) && !answered(a.head)) {
    const error = a.head.ok ? '' : a.head.error;
    return siblingReachable
      ? {
          check,
          status: 'warn',
          detail: `no answer (${error}); ${networkLabel(def)} fails over to its other URLs`,
        }
      : {
          check,
          status: 'fail',
          detail: `no answer (${error}): no URL of ${networkLabel(def)} answers, its risk calls fail (503 provider_unavailable)`,
        };
  }
  const identity = def.family === 'solana' ? judgeGenesis(def, a.identity) : judgeChainId(def, a.identity);
  const head = parseHead(a.head.ok ? a.head.result : undefined);
  const headText =
    head !== undefined
      ? `head ${head} (${a.head.latencyMs} ms)`
      : `but ${def.family === 'solana' ? 'getSlot' : 'eth_blockNumber'} failed (${a.head.ok ? 'not a height' : a.head.error})`;
  const status: Status = head === undefined && identity.status !== 'fail' ? 'warn' : identity.status;
  return { check, status, detail: `${identity.text}; ${headText}` };
}

function parseHead(result: unknown): number | undefined {
  if (typeof result === 'number' && Number.isSafeInteger(result) && result >= 0) return result;
  if (typeof result === 'string' && /^0x[0-9a-fA-F]{1,13}$/.test(result)) return Number.parseInt(result, 16);
  return undefined;
}

interface Judgement {
  status: Status;
  text: string;
}

const builtInWith = (predicate: (n: NetworkDef) => boolean) => BUILT_IN_NETWORKS.find(predicate);
const isBuiltIn = (def: NetworkDef) => builtInWith((n) => n.caip2 === def.caip2) !== undefined;

/** The node's `eth_chainId` against the chain id of the network's CAIP-2 id (`eip155:<id>`). */
export function judgeChainId(def: NetworkDef, probe: Probe): Judgement {
  if (!probe.ok) return { status: 'fail', text: `eth_chainId failed (${probe.error})` };
  const raw = probe.result;
  if (typeof raw !== 'string' || !/^0x[0-9a-fA-F]{1,13}$/.test(raw))
    return {
      status: 'fail',
      text: `eth_chainId answered ${JSON.stringify(raw)?.slice(0, 40)}, not a chain id`,
    };
  const got = Number.parseInt(raw, 16);
  const expected = def.chainId;
  if (expected === undefined)
    return { status: 'info', text: `chain id ${got}, not compared: ${def.caip2} names no chain id` };
  if (got === expected) return { status: 'ok', text: `chain id ${got} matches ${def.caip2}` };
  const other = builtInWith((n) => n.chainId === got);
  const that = other ? ` (that is ${networkLabel(other)})` : '';
  if (def.forkOf !== undefined && other?.caip2 === def.forkOf)
    return {
      status: 'warn',
      text:
        `chain id ${got}${that}, the network it forks, not ${expected} (${def.caip2}): payloads are judged ` +
        `against chain id ${expected}; start the fork with --chain-id ${expected}`,
    };
  return {
    status: 'fail',
    text:
      `chain id ${got}${that}, but ${networkLabel(def)} is chain id ${expected} (${def.caip2}): ` +
      'this URL serves another network',
  };
}

/** A Solana CAIP-2 reference is the first 32 characters (base58) of the cluster's genesis hash. */
const GENESIS_PREFIX = /^[1-9A-HJ-NP-Za-km-z]{32}$/;

/**
 * The node's `getGenesisHash` against the network's CAIP-2 reference. Built-in clusters must match; a
 * custom network is compared only when its reference reads as a genesis-hash prefix (the demo's
 * `solana:riskwatch-demo` names none: "not compared").
 */
export function judgeGenesis(def: NetworkDef, probe: Probe): Judgement {
  const reference = def.caip2.split(':')[1] ?? '';
  const comparable = isBuiltIn(def) || GENESIS_PREFIX.test(reference);
  if (!probe.ok || typeof probe.result !== 'string') {
    const why = probe.ok ? 'not a hash' : probe.error;
    return comparable
      ? { status: 'warn', text: `getGenesisHash failed (${why}): the cluster is not verified` }
      : {
          status: 'info',
          text: `not compared: custom network ${def.caip2} names no genesis hash (getGenesisHash: ${why})`,
        };
  }
  const genesis = probe.result;
  if (comparable && genesis.startsWith(reference))
    return { status: 'ok', text: `genesis ${genesis} matches ${def.caip2}` };
  const other = builtInWith((n) => n.family === 'solana' && genesis.startsWith(n.caip2.split(':')[1] ?? '-'));
  const that = other ? ` (that is ${networkLabel(other)})` : '';
  if (!comparable)
    return {
      status: 'info',
      text: `not compared: custom network ${def.caip2} names no genesis hash (the node's is ${genesis}${that})`,
    };
  if (!isBuiltIn(def))
    return {
      status: 'warn',
      text: `genesis ${genesis}${that} does not begin with ${reference} (${def.caip2}): another cluster, or a made-up CAIP-2 id`,
    };
  return {
    status: 'fail',
    text: `genesis ${genesis}${that}, but ${networkLabel(def)} is ${def.caip2}: this URL serves another cluster`,
  };
}
