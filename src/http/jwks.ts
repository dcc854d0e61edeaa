import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { AppError } from '../platform/errors.js';
import { GuardedHttpClient } from '../platform/http-client.js';
import type { Logger } from '../platform/logger.js';

/** A JWKS document is a few keys; anything this large is not one. */
const MAX_JWKS_BYTES = 1024 * 1024;
const FETCH_TIMEOUT_MS = 3000;

export interface JwksOptions {
  url: string;
  /** Timed refresh. */
  refreshMs: number;
  /** An unknown `kid` refetches the set at most this often. */
  minRefreshMs: number;
  logger?: Logger;
}

/**
 * The identity provider's signing keys, kept in memory: fetched at start, again every `refreshMs`, and on
 * an unknown `kid` at most once per `minRefreshMs` (concurrent look-ups share that one fetch). Between
 * refreshes an unknown `kid` is answered from memory with no network call, so tokens with made-up `kid`s
 * cost nothing and cannot crowd out valid ones. A failed fetch keeps the keys already held.
 */
export class JwksKeySet {
  private keys = new Map<string, KeyObject>();
  private loaded = false;
  private lastFetchAt = -Infinity;
  private inflight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly http = new GuardedHttpClient();

  constructor(private readonly options: JwksOptions) {}

  /** First fetch (not awaited by callers on the start-up path) and the refresh timer. */
  start(): Promise<void> {
    this.timer ??= setInterval(() => void this.refresh(), this.options.refreshMs).unref();
    return this.refresh();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.http.close();
  }

  /**
   * The key a token names (`kid`; a token without one is accepted only while the set holds exactly one
   * key). Undefined: not published. Throws `dependency_unavailable` while no key set was ever fetched.
   */
  async key(kid: string | undefined): Promise<KeyObject | undefined> {
    let key = this.find(kid);
    if (key) return key;
    if (performance.now() - this.lastFetchAt >= this.options.minRefreshMs || this.inflight) {
      await this.refresh();
      key = this.find(kid);
    }
    if (!key && !this.loaded)
      throw new AppError(
        'dependency_unavailable',
        "The identity provider's signing keys (JWKS) could not be fetched; retry shortly.",
      );
    return key;
  }

  private find(kid: string | undefined): KeyObject | undefined {
    if (kid !== undefined) return this.keys.get(kid);
    return this.keys.size === 1 ? this.keys.values().next().value : undefined;
  }

  private refresh(): Promise<void> {
    this.inflight ??= this.fetchKeys().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async fetchKeys(): Promise<void> {
    this.lastFetchAt = performance.now();
    try {
      // Redirects are not followed: a 3xx is a failed fetch like any other non-2xx.
      const res = await this.http.request(this.options.url, {
        method: 'GET',
        headers: { accept: 'application/json' },
        timeoutMs: FETCH_TIMEOUT_MS,
        maxBytes: MAX_JWKS_BYTES,
      });
      if (res.status < 200 || res.status >= 300) throw new Error(`HTTP ${res.status}`);
      if (res.text === undefined) throw new Error('answer over 1 MiB');
      const text = res.text;
      const keys = parseJwks(text);
      if (keys.size === 0) throw new Error('no usable signing key in the set');
      this.keys = keys;
      this.loaded = true;
    } catch (err) {
      const e = err as Error & { code?: string };
      this.options.logger?.warn(
        { reason: e.code ?? e.message, keys_held: this.keys.size },
        'JWKS fetch failed; keeping the keys already held',
      );
    }
  }
}

/** The signing keys of a JWKS document by `kid` (keys for encryption, or that do not parse, are skipped). */
export function parseJwks(text: string): Map<string, KeyObject> {
  const doc = JSON.parse(text) as { keys?: unknown };
  if (!Array.isArray(doc.keys)) throw new Error('not a JWKS document (no "keys" array)');
  const out = new Map<string, KeyObject>();
  doc.keys.forEach((jwk: unknown, index) => {
    if (typeof jwk !== 'object' || jwk === null) return;
    const { kid, use } = jwk as { kid?: unknown; use?: unknown };
    if (use !== undefined && use !== 'sig') return;
    try {
      const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
      out.set(typeof kid === 'string' ? kid : `#${index}`, key);
    } catch {
      // an unsupported key type or a malformed key: not one riskwatch can verify with
    }
  });
  return out;
}
