import type { Page } from '../platform/cursor.js';
import type {
  CreatedEndpointBody,
  DeliveryBody,
  DeliveryPageBody,
  EndpointBody,
  EndpointPageBody,
  RecoveredBody,
  RotatedSecretBody,
  TestAcceptedBody,
} from './schemas.js';
import type { DeliveryView } from './deliveries.js';
import type { CreatedEndpointView, EndpointView, RotatedSecret, TestSent } from './views.js';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** An endpoint as every answer but creation shows it: never with its secret. */
export const presentEndpoint = (e: EndpointView): EndpointBody => ({
  id: e.id,
  url: e.url,
  events: e.events,
  watchlist_ids: e.watchlistIds,
  description: e.description,
  enabled: e.enabled,
  disabled_reason: e.disabledReason,
  disabled_at: iso(e.disabledAt),
  failing_since: iso(e.failingSince),
  previous_secret_expires_at: iso(e.previousSecretExpiresAt),
  created_at: e.createdAt.toISOString(),
  updated_at: e.updatedAt.toISOString(),
  stats: { ...e.stats },
});

/** The creation answer: the endpoint and its secret, shown this once. */
export const presentCreatedEndpoint = (e: CreatedEndpointView): CreatedEndpointBody => ({
  ...presentEndpoint(e),
  secret: e.secret,
});

export const presentEndpointPage = (page: Page<EndpointView>): EndpointPageBody => ({
  data: page.items.map(presentEndpoint),
  next_cursor: page.nextCursor,
});

export const presentRotatedSecret = (r: RotatedSecret): RotatedSecretBody => ({
  secret: r.secret,
  previous_secret_expires_at: r.previousSecretExpiresAt.toISOString(),
});

export const presentTestSent = (t: TestSent): TestAcceptedBody => ({
  event_id: t.eventId,
  delivery_id: t.deliveryId,
});

export const presentRecovered = (recovered: number): RecoveredBody => ({ recovered });

export const presentDelivery = (d: DeliveryView): DeliveryBody => ({
  id: d.id,
  endpoint_id: d.endpointId,
  event_id: d.eventId,
  event_type: d.eventType,
  event_seq: d.eventSeq,
  status: d.status,
  attempts: d.attempts,
  next_attempt_at: iso(d.nextAttemptAt),
  last_attempt_at: iso(d.lastAttemptAt),
  last_status_code: d.lastStatusCode,
  last_error: d.lastError,
  created_at: d.createdAt.toISOString(),
  succeeded_at: iso(d.succeededAt),
  attempt_log: d.attemptLog.map((a) => ({
    attempted_at: a.attemptedAt.toISOString(),
    status_code: a.statusCode,
    latency_ms: a.latencyMs,
    error: a.error,
    response_body: a.responseBody,
  })),
});

export const presentDeliveryPage = (page: Page<DeliveryView>): DeliveryPageBody => ({
  data: page.items.map(presentDelivery),
  next_cursor: page.nextCursor,
});
