import type { CallOutcome } from './rpc-metrics.js';
import type { CappedResponse, GuardedHttpClient } from '../platform/http-client.js';

/** The JSON-RPC wire: one HTTP exchange and what its answer means (JsonRpcClient decides what to do). */

/**
 * A JSON-RPC error object the node answered with. It is an answer, not a provider failure: never retried,
 * and analyzers can tell "not found / invalid params" (this) from "provider down" (`provider_unavailable`).
 */
export class RpcError extends Error {
  override readonly name = 'RpcError';

  constructor(
    readonly method: string,
    readonly code: number,
    readonly rpcMessage: string,
    readonly data: unknown,
    /** The configured provider name (`solana/mainnet#0`), never its URL. */
    readonly provider: string,
  ) {
    super(`${method} failed on ${provider}: ${rpcMessage} (code ${code})`);
  }
}

export interface Failure {
  outcome: Exclude<CallOutcome, 'ok' | 'rpc_error'>;
  reason: string;
  retryAfterMs?: number;
  /** 429s say "slow down", not "broken": they do not count towards opening the circuit. */
  countsForCircuit: boolean;
  /** The same request to the same URL would fail the same way (an oversized answer): only failover helps. */
  final?: boolean;
}

export interface RpcResponse {
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export type Exchange = { ok: true; responses: Map<number, RpcResponse> } | { ok: false; failure: Failure };

/**
 * One HTTP exchange carrying a JSON-RPC request or batch, classified: the answers by id, or the failure
 * (timeout, network, redirect, oversized or undecodable answer, HTTP status, garbled JSON-RPC).
 */
export async function sendJsonRpc(
  http: GuardedHttpClient,
  url: string,
  body: unknown,
  limits: { timeoutMs: number; maxResponseBytes: number; retryAfterMaxMs: number },
): Promise<Exchange> {
  const { timeoutMs } = limits;
  let response: CappedResponse;
  try {
    response = await http.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
      timeoutMs,
      maxBytes: limits.maxResponseBytes,
    });
  } catch (err) {
    const e = err as Error & { code?: string };
    if (e.name === 'TimeoutError') return failed('timeout', `no answer within ${timeoutMs} ms`);
    if (e.code === 'EENCODING' || e.code?.startsWith('Z_'))
      return failed('bad_response', `the answer could not be decoded (${e.code})`);
    // Only the error code: messages may quote the URL.
    return failed('network_error', `network error (${e.code ?? e.name})`);
  }
  const { status, text } = response;
  // A JSON-RPC endpoint has no reason to redirect; following one could lead anywhere.
  if (status >= 300 && status < 400)
    return failed('http_3xx', `HTTP ${status}: a redirect, which is never followed`);
  if (response.dropped === 'too_large')
    return {
      ok: false,
      failure: {
        outcome: 'too_large',
        reason: `the answer exceeded ${limits.maxResponseBytes} bytes (chains.defaults.max_response_mib)`,
        countsForCircuit: true,
        final: true,
      },
    };
  // Not the provider's fault, and transient: other answers were holding the process budget.
  if (response.dropped === 'over_budget' || text === undefined)
    return failed(
      'too_large',
      'answers being read at once exceeded the process budget (chains.defaults.max_buffered_mib)',
      undefined,
      false,
    );
  const retryAfter = parseRetryAfter(headerValue(response.headers['retry-after']));
  const retryAfterMs = retryAfter === undefined ? undefined : Math.min(retryAfter, limits.retryAfterMaxMs);
  if (status === 429)
    return failed('http_429', 'HTTP 429 (rate limited by the provider)', retryAfterMs, false);
  if (status >= 500 || status === 408) return failed('http_5xx', `HTTP ${status}`, retryAfterMs);
  const parsed = parseResponses(text, Array.isArray(body) ? undefined : (body as { id: number }).id);
  if (status >= 200 && status < 300)
    return parsed ?? failed('bad_response', 'the answer was not valid JSON-RPC (garbled or truncated)');
  // Some providers answer a JSON-RPC error with a 4xx status: still an answer when it parses as one.
  if (parsed?.ok && parsed.responses.size > 0) return parsed;
  return failed('http_4xx', `HTTP ${status}`);
}

export function failed(
  outcome: Failure['outcome'],
  reason: string,
  retryAfterMs?: number,
  countsForCircuit = true,
): Exchange {
  return { ok: false, failure: { outcome, reason, retryAfterMs, countsForCircuit } };
}

const headerValue = (value: string | string[] | undefined): string | null =>
  (Array.isArray(value) ? value[0] : value) ?? null;

/** `Retry-After` as delay-seconds or an HTTP date, in ms; undefined when absent or unreadable. */
export function parseRetryAfter(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * JSON with integers beyond 2^53 kept exact as bigint (Solana's u64 lamports and amounts are JSON
 * numbers). Uses the reviver's source text (Node 22+).
 */
export function parseJson(text: string): unknown {
  const revive = (_key: string, value: unknown, context?: { source?: string }): unknown =>
    typeof value === 'number' &&
    !Number.isSafeInteger(value) &&
    context?.source !== undefined &&
    /^-?\d+$/.test(context.source)
      ? BigInt(context.source)
      : value;
  return JSON.parse(text, revive);
}

/**
 * The responses of a JSON-RPC body, by id; undefined when the body is not JSON-RPC. `singleId` is the id
 * of a lone (non-batch) request: an error answered with `id: null` (a parse or invalid-request error)
 * belongs to it.
 */
function parseResponses(text: string, singleId?: number): Exchange | undefined {
  let body: unknown;
  try {
    body = parseJson(text);
  } catch {
    return undefined;
  }
  const items = Array.isArray(body) ? body : [body];
  if (singleId === undefined && !Array.isArray(body)) return undefined;
  const responses = new Map<number, RpcResponse>();
  for (const item of items) {
    if (typeof item !== 'object' || item === null) return undefined;
    const r = item as { id?: unknown; result?: unknown; error?: unknown };
    const id = r.id === null && singleId !== undefined ? singleId : r.id;
    if (typeof id !== 'number') continue;
    if (r.error !== undefined && r.error !== null) {
      const e = r.error as { code?: unknown; message?: unknown; data?: unknown } | null;
      if (typeof e?.code !== 'number') return undefined;
      responses.set(id, {
        error: { code: e.code, message: typeof e.message === 'string' ? e.message : '', data: e.data },
      });
    } else if ('result' in r) {
      responses.set(id, { result: r.result });
    }
  }
  return { ok: true, responses };
}

/** Params as canonical JSON (object keys sorted): the single-flight key. */
export function canonicalJson(value: unknown): string {
  if (typeof value === 'bigint') return `"${value}n"`;
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
