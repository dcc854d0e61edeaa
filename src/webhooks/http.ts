import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import { GuardedHttpClient } from '../platform/http-client.js';
import { createGuardedLookup, SsrfBlockedError, type Resolver, type WebhookUrlPolicy } from './ssrf.js';

export { SsrfBlockedError } from './ssrf.js';

/** Why a delivery attempt failed before a status arrived; stable, for the delivery log and the API. */
export type DeliveryErrorCode =
  | 'ssrf_blocked'
  | 'invalid_webhook_url'
  | 'timeout'
  | 'connection_refused'
  | 'dns_failed'
  | 'tls_error'
  | 'network_error'
  | 'aborted';

/** A delivery attempt that got no HTTP status; `cause` is the underlying error. */
export class WebhookDeliveryError extends Error {
  constructor(
    readonly code: Exclude<DeliveryErrorCode, 'ssrf_blocked'>,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'WebhookDeliveryError';
  }
}

/** No complete answer within the attempt's deadline (DNS, connection, TLS, request and response together). */
export class TimeoutError extends WebhookDeliveryError {
  constructor(timeoutMs: number, options?: { cause?: unknown }) {
    super('timeout', `the receiver did not answer within ${timeoutMs} ms`, options);
    this.name = 'TimeoutError';
  }
}

/** What `deliver` throws: both carry a stable `code`. */
export type DeliveryFailure = SsrfBlockedError | WebhookDeliveryError;

export const isDeliveryFailure = (err: unknown): err is DeliveryFailure =>
  err instanceof SsrfBlockedError || err instanceof WebhookDeliveryError;

export const DEFAULT_DELIVERY_TIMEOUT_MS = 15_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 4096;

export interface DeliveryRequest {
  /** Default POST. */
  method?: 'POST' | 'GET';
  headers?: Record<string, string>;
  body?: string;
  /** The whole attempt, DNS to last body byte. Default 15 s. */
  timeoutMs?: number;
  /** The response body read, in decoded bytes; the rest is not read (the connection is closed). Default 4 KiB. */
  maxResponseBytes?: number;
  signal?: AbortSignal;
}

export interface DeliveryResult {
  /** Any status, 3xx included: a redirect is an answer, never followed; the caller decides what succeeded. */
  status: number;
  headers: IncomingHttpHeaders;
  /** The response body, cut at `maxResponseBytes` (UTF-8; a character cut in half becomes U+FFFD). */
  body: string;
  truncated: boolean;
  latencyMs: number;
}

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME', 'ENODATA']);
const REFUSED_CODES = new Set(['ECONNREFUSED']);
const TLS_CODE =
  /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_OSSL_|HOSTNAME_MISMATCH)|^EPROTO$/;

function errorCode(err: unknown): string | undefined {
  if (err instanceof AggregateError) return errorCode(err.errors[0]);
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The stable failure for an error node:http, TLS or DNS raised. */
export function toDeliveryFailure(err: unknown, timeoutMs: number, signal?: AbortSignal): DeliveryFailure {
  if (isDeliveryFailure(err)) return err;
  if (err instanceof AggregateError) {
    const blocked = err.errors.find((e) => e instanceof SsrfBlockedError);
    if (blocked) return blocked;
  }
  if (signal?.aborted && err === signal.reason)
    return new WebhookDeliveryError('aborted', 'the delivery was aborted', { cause: err });
  if ((err as Error | null)?.name === 'TimeoutError') return new TimeoutError(timeoutMs, { cause: err });
  const code = errorCode(err) ?? '';
  const message = (err as Error | null)?.message ?? String(err);
  if (REFUSED_CODES.has(code))
    return new WebhookDeliveryError('connection_refused', `connection refused: ${message}`, { cause: err });
  if (DNS_CODES.has(code))
    return new WebhookDeliveryError('dns_failed', `the host name did not resolve: ${message}`, {
      cause: err,
    });
  if (TLS_CODE.test(code))
    return new WebhookDeliveryError('tls_error', `TLS failed: ${message}`, { cause: err });
  return new WebhookDeliveryError('network_error', message, { cause: err });
}

/**
 * The HTTP client of webhook delivery: {@link GuardedHttpClient} (node:http/https — decoded-byte cap,
 * redirects returned and never followed, a deadline per exchange, keep-alive) with the SSRF guard on every
 * connection it opens. One per process; `close()` at shutdown.
 *
 * Every `deliver` re-runs `policy.checkUrl` (scheme, credentials, local names, and IP-literal hosts, for
 * which Node calls no `lookup`); host names are resolved by the guarded lookup, which refuses the
 * connection if any address DNS returns is refused. A pooled keep-alive connection is reused only for the
 * host and port it was opened to, after its addresses were checked.
 */
export class WebhookHttpClient {
  private readonly http: GuardedHttpClient;

  constructor(
    private readonly policy: WebhookUrlPolicy,
    options: { resolver?: Resolver } = {},
  ) {
    this.http = new GuardedHttpClient(undefined, { lookup: createGuardedLookup(policy, options.resolver) });
  }

  /**
   * One delivery attempt. Resolves with any HTTP answer (2xx, 3xx, 4xx, 5xx alike); rejects with
   * {@link SsrfBlockedError} (`ssrf_blocked`), {@link TimeoutError} (`timeout`) or
   * {@link WebhookDeliveryError} (`invalid_webhook_url`, `connection_refused`, `dns_failed`, `tls_error`,
   * `network_error`, `aborted`).
   */
  async deliver(url: string | URL, request: DeliveryRequest = {}): Promise<DeliveryResult> {
    const timeoutMs = request.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;
    const href = typeof url === 'string' ? url : url.href;
    const check = this.policy.checkUrl(href);
    if (!check.ok) {
      const host = URL.canParse(href) ? new URL(href).hostname : href;
      if (check.range !== undefined)
        throw new SsrfBlockedError({
          host,
          address: check.address,
          range: check.range,
          reason: check.reason,
        });
      throw new WebhookDeliveryError('invalid_webhook_url', check.reason);
    }
    const started = performance.now();
    try {
      const response = await this.http.request(check.url.href, {
        method: request.method ?? 'POST',
        headers: { 'accept-encoding': 'identity', ...request.headers },
        body: request.body,
        timeoutMs,
        maxBytes: request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
        onTooLarge: 'truncate',
        signal: request.signal,
      });
      return {
        status: response.status,
        headers: response.headers,
        body: response.text ?? '',
        truncated: response.truncated === true || response.dropped !== undefined,
        latencyMs: Math.round(performance.now() - started),
      };
    } catch (err) {
      throw toDeliveryFailure(err, timeoutMs, request.signal);
    }
  }

  /** Closes idle keep-alive connections (at shutdown). */
  close(): void {
    this.http.close();
  }
}
