import { z } from 'zod';
import { bool, csv, int, type EnvVars } from '../platform/config.js';
import { parseSecretsKey } from './secrets.js';
import { parseAllowList } from './ssrf.js';

/** A key of the secrets box (secrets.ts): the message says what is wrong, never the value. */
const checkKey = (key: string, ctx: z.RefinementCtx, path: PropertyKey[] = []) => {
  try {
    parseSecretsKey(key);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message, path });
  }
};

/**
 * Webhook delivery: the retry schedule, the receiver limits, the SSRF allow list, the event retention, and
 * the keys the signing secrets are sealed under.
 */
const webhooksFields = z.object({
  /**
   * Seconds to wait before each retry after a failed attempt (the first attempt is at once). The default,
   * 5 s · 5 min · 30 min · 2 h · 5 h · 10 h · 10 h · 10 h, is 9 attempts over about 37.5 hours.
   */
  retry_schedule_s: z.preprocess(
    (v) => (typeof v === 'string' ? v.split(',').map((x) => Number(x.trim())) : v),
    z.array(z.number().int().min(0).max(604_800)).min(1).max(50),
  ),
  /** Each wait is moved by up to this share of itself, at random, so retries of many events spread out. */
  retry_jitter_pct: int(0, 100),
  /** A `Retry-After` (429, 503) delays the next attempt at most this long. */
  retry_after_max_s: int(0, 604_800),
  /** One attempt's deadline: connect, send, and the answer's headers and body. */
  timeout_ms: int(100, 60_000),
  /** The most of a receiver's answer read (and the first 1,000 characters kept in the delivery log). */
  max_response_bytes: int(0, 1_048_576),
  /** An endpoint whose every attempt failed for this long is disabled (`webhook.endpoint_disabled`). */
  disable_after_failing_s: int(60, 31_536_000),
  /** After `rotate-secret`, the old secret signs beside the new one this long. */
  secret_overlap_s: int(0, 2_592_000),
  /** Receivers inside these CIDRs pass the SSRF guard (in-VPC receivers); every other private range is refused. */
  allow_cidrs: csv.superRefine((cidrs, ctx) => {
    try {
      parseAllowList(cidrs);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  }),
  /** Accept `http://` endpoint URLs (an in-VPC receiver without TLS); `https://` only when false. */
  allow_http: bool,
  /** Delivery jobs (one endpoint's due deliveries each) a worker process runs at once. */
  delivery_concurrency: int(1, 1024),
  /** Days events are kept for `GET /api/v1/events` (and deliveries with their attempts). */
  event_retention_days: int(1, 3650),
  /**
   * The key signing secrets are sealed under at rest (AES-256-GCM): 32 bytes, hex or base64. Empty: no
   * endpoint can be created or rotated (503 `secrets_key_missing`) and sealed secrets cannot sign.
   */
  secrets_key: z.string().superRefine((key, ctx) => {
    if (key !== '') checkKey(key, ctx);
  }),
  /** Keys before the current one, during a key rotation: they open secrets, never seal them. */
  secrets_previous_keys: csv.superRefine((keys, ctx) => keys.forEach((key, i) => checkKey(key, ctx, [i]))),
});

/**
 * Retention drops a day of webhook attempts only once it is past the retry window too (src/db/partitions.ts):
 * a retention shorter than the window would say one thing and do another, so it is refused at start-up.
 */
export const webhooksSettings = webhooksFields.superRefine((s, ctx) => {
  const windowDays = retryWindowMs(s) / 86_400_000;
  if (s.event_retention_days < windowDays)
    ctx.addIssue({
      code: 'custom',
      path: ['event_retention_days'],
      message:
        `${s.event_retention_days} days is shorter than the webhook retry window (${windowDays.toFixed(1)} days: ` +
        'the retry schedule at its longest, with jitter or the capped Retry-After): raise it, or shorten ' +
        'RISKWATCH_WEBHOOK_RETRY_SCHEDULE_S',
    });
});

export type WebhooksSettings = z.infer<typeof webhooksFields>;

/**
 * How long a pending delivery may wait for its next attempt, at most: every wait of the schedule at its
 * longest (with jitter, or a receiver's capped Retry-After, whichever is longer), added up. Retention keeps
 * an event while a delivery of it is pending and was attempted (or created) within this.
 */
export function retryWindowMs(
  s: Pick<WebhooksSettings, 'retry_schedule_s' | 'retry_jitter_pct' | 'retry_after_max_s'>,
): number {
  const longest = (wait: number) => Math.max(wait * (1 + s.retry_jitter_pct / 100), s.retry_after_max_s);
  return s.retry_schedule_s.reduce((sum, wait) => sum + longest(wait), 0) * 1000;
}

export const WEBHOOKS_ENV_VARS: EnvVars = {
  RISKWATCH_WEBHOOK_RETRY_SCHEDULE_S: 'webhooks.retry_schedule_s',
  RISKWATCH_WEBHOOK_RETRY_JITTER_PCT: 'webhooks.retry_jitter_pct',
  RISKWATCH_WEBHOOK_RETRY_AFTER_MAX_S: 'webhooks.retry_after_max_s',
  RISKWATCH_WEBHOOK_TIMEOUT_MS: 'webhooks.timeout_ms',
  RISKWATCH_WEBHOOK_MAX_RESPONSE_BYTES: 'webhooks.max_response_bytes',
  RISKWATCH_WEBHOOK_DISABLE_AFTER_FAILING_S: 'webhooks.disable_after_failing_s',
  RISKWATCH_WEBHOOK_SECRET_OVERLAP_S: 'webhooks.secret_overlap_s',
  RISKWATCH_WEBHOOK_ALLOW_CIDRS: 'webhooks.allow_cidrs',
  RISKWATCH_WEBHOOK_ALLOW_HTTP: 'webhooks.allow_http',
  RISKWATCH_WEBHOOK_DELIVERY_CONCURRENCY: 'webhooks.delivery_concurrency',
  RISKWATCH_EVENT_RETENTION_DAYS: 'webhooks.event_retention_days',
  RISKWATCH_SECRETS_KEY: 'webhooks.secrets_key',
  RISKWATCH_SECRETS_PREVIOUS_KEYS: 'webhooks.secrets_previous_keys',
};
