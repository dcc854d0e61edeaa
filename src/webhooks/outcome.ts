import type { DeliveryResult } from './http.js';

/*
 * What an attempt's answer means (README, "Webhooks and the event log"): pure functions of the receiver's
 * status, headers and body, used by the deliverer (delivery.ts).
 */

/** Characters of the receiver's answer kept in the delivery log. */
const LOGGED_BODY = 1000;

export type Outcome =
  { kind: 'succeeded' } | { kind: 'gone' } | { kind: 'retry'; afterMs?: number; error: string };

/**
 * The receiver's answer as the delivery log keeps it: its first LOGGED_BODY characters, as text PostgreSQL
 * accepts whatever the receiver sent (a NUL, which `text` refuses, and a UTF-16 half left by the cut
 * become U+FFFD; invalid UTF-8 was already replaced when the answer was decoded).
 */
export function loggedBody(body: string): string {
  return body.slice(0, LOGGED_BODY).replaceAll('\u0000', '\uFFFD').toWellFormed();
}

/** What an attempt's answer (or the error of one that got none) means for the delivery. */
export function classify(
  result: DeliveryResult | undefined,
  error: string | undefined,
  retryAfterMaxS: number,
): Outcome {
  if (!result) return { kind: 'retry', error: error ?? 'network_error' };
  const { status } = result;
  if (status >= 200 && status < 300) return { kind: 'succeeded' };
  if (status === 410) return { kind: 'gone' };
  if (status === 429 || status === 503) {
    const after = retryAfterMs(result.headers['retry-after']);
    if (after !== undefined)
      return { kind: 'retry', afterMs: Math.min(after, retryAfterMaxS * 1000), error: `http_${status}` };
  }
  return { kind: 'retry', error: status >= 300 && status < 400 ? 'http_3xx' : `http_${status}` };
}

/** `Retry-After` as delay-seconds or an HTTP date, in ms from now. */
function retryAfterMs(value: string | string[] | undefined): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return undefined;
  if (/^\d+$/.test(raw.trim())) return Number(raw.trim()) * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** The `outcome` label of the attempts metric. */
export function outcomeLabel(result: DeliveryResult | undefined, error: string | undefined): string {
  if (!result) return error ?? 'network_error';
  const s = result.status;
  return s >= 200 && s < 300
    ? 'succeeded'
    : s === 410
      ? 'gone'
      : s === 429
        ? 'http_429'
        : `http_${Math.floor(s / 100)}xx`;
}
