/**
 * Requests whose free strings (path segments, chain and network names, intents, target types, list names,
 * query values) are the names every plain object inherits from `Object.prototype`. Looked up as keys of a
 * plain object, they find something (`ASSETS['constructor']` is the `Object` function) where a real key
 * finds nothing: each must be answered like any other unknown name, never with a 500.
 */
export const PROTOTYPE_NAMES = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  '__defineGetter__',
  '__lookupGetter__',
] as const;

/**
 * Node provider URLs that nothing listens on: the networks are configured, so chain and network names are
 * resolved and the checks behind them (target type, intent) are reached, and no case here reads the chain.
 */
export const UNREACHABLE_RPC_ENV = {
  RISKWATCH_RPC_ETHEREUM_MAINNET: 'http://127.0.0.1:9',
  RISKWATCH_RPC_SOLANA_MAINNET: 'http://127.0.0.1:9',
};

export interface PrototypeKeyCase {
  name: string;
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  /** JSON body (sent as application/json). */
  body?: Record<string, unknown>;
  /** The credential the route takes. */
  auth: 'none' | 'key' | 'jwt';
  status: number;
  /** The problem code expected (4xx answers only). */
  code?: string;
}

const EVM = '0x1234567890abcdef1234567890abcdef12345678';
const SOLANA_MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';

/** Every route taking a free string, with each prototype name where that string is used as a key. */
export function prototypeKeyCases(): PrototypeKeyCase[] {
  const cases: PrototypeKeyCase[] = [];
  const seg = encodeURIComponent;
  for (const p of PROTOTYPE_NAMES) {
    const notFound = { status: 404, code: 'not_found' };
    const unsupportedChain = { status: 400, code: 'unsupported_chain' };
    cases.push(
      { name: `docs asset ${p}`, method: 'GET', path: `/docs/${seg(p)}`, auth: 'none', ...notFound },
      { name: `top-level path ${p}`, method: 'GET', path: `/${seg(p)}`, auth: 'none', ...notFound },
      {
        name: `list ${p} (read)`,
        method: 'GET',
        path: `/api/v1/lists/${seg(p)}/entries`,
        auth: 'key',
        ...notFound,
      },
      {
        name: `list ${p} (add)`,
        method: 'POST',
        path: `/api/v1/lists/${seg(p)}/entries`,
        body: { target: EVM },
        auth: 'key',
        ...notFound,
      },
      {
        name: `list entry ${p}`,
        method: 'DELETE',
        path: `/api/v1/lists/allow/entries/${seg(p)}`,
        auth: 'key',
        ...notFound,
      },
      {
        name: `list entry chain ${p}`,
        method: 'POST',
        path: '/api/v1/lists/allow/entries',
        body: { target: EVM, chain: p },
        auth: 'key',
        ...unsupportedChain,
      },
      {
        name: `list entry network ${p}`,
        method: 'POST',
        path: '/api/v1/lists/deny/entries',
        body: { target: EVM, network: p },
        auth: 'key',
        ...unsupportedChain,
      },
      {
        name: `list entries by target ${p}`,
        method: 'GET',
        path: `/api/v1/lists/allow/entries?target=${seg(p)}`,
        auth: 'key',
        status: 200,
      },
      {
        name: `api key ${p}`,
        method: 'DELETE',
        path: `/api/account/api-keys/${seg(p)}`,
        auth: 'jwt',
        ...notFound,
      },
      {
        name: `scan network ${p}`,
        method: 'POST',
        path: '/api/v1/scan/token',
        body: { mint: SOLANA_MINT, network: p },
        auth: 'key',
        ...unsupportedChain,
      },
      {
        name: `preflight chain ${p}`,
        method: 'POST',
        path: '/api/v1/shield/preflight',
        body: { target: EVM, intent: 'transfer', chain: p },
        auth: 'key',
        ...unsupportedChain,
      },
      {
        name: `preflight network ${p}`,
        method: 'POST',
        path: '/api/v1/shield/preflight',
        body: { target: EVM, intent: 'sign', chain: 'ethereum', network: p },
        auth: 'key',
        ...unsupportedChain,
      },
      {
        name: `preflight intent ${p}`,
        method: 'POST',
        path: '/api/v1/shield/preflight',
        body: { target: EVM, intent: p },
        auth: 'key',
        status: 400,
        code: 'unsupported_intent',
      },
      {
        name: `preflight target ${p}`,
        method: 'POST',
        path: '/api/v1/shield/preflight',
        body: { target: p, intent: 'transfer' },
        auth: 'key',
        status: 400,
        code: 'invalid_address',
      },
      {
        name: `risk-v2 chain ${p}`,
        method: 'POST',
        path: '/api/web3/risk-v2',
        body: { target: EVM, chain: p, target_type: 'wallet' },
        auth: 'jwt',
        ...unsupportedChain,
      },
      {
        name: `risk-v2 network ${p}`,
        method: 'POST',
        path: '/api/web3/risk-v2',
        body: { target: SOLANA_MINT, chain: 'solana', network: p, target_type: 'token' },
        auth: 'jwt',
        ...unsupportedChain,
      },
      {
        name: `risk-v2 target type ${p}`,
        method: 'POST',
        path: '/api/web3/risk-v2',
        body: { target: EVM, chain: 'ethereum', target_type: p },
        auth: 'jwt',
        status: 400,
        code: 'unsupported_target_type',
      },
      {
        name: `usage group_by ${p}`,
        method: 'GET',
        path: `/api/v1/usage?group_by=${seg(p)}`,
        auth: 'key',
        status: 400,
        code: 'invalid_request',
      },
      {
        name: `usage endpoint ${p}`,
        method: 'GET',
        path: `/api/v1/usage?endpoint=${seg(p)}&api_key_id=${seg(p)}`,
        auth: 'key',
        status: 200,
      },
      {
        name: `usage query key ${p}`,
        method: 'GET',
        path: `/api/v1/usage?${seg(p)}=1`,
        auth: 'key',
        status: 400,
        code: 'invalid_request',
      },
    );
  }
  return cases;
}
