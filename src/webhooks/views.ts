import { time, timeOrNull, type Time } from '../db/sql.js';

/*
 * Webhook endpoints as the service hands them to presenters (views), their rows as raw queries return
 * them, and the mapping from one to the other.
 */

export interface DeliveryStats {
  pending: number;
  succeeded: number;
  failed: number;
  expired: number;
}

export interface EndpointView {
  id: string;
  url: string;
  events: string[];
  watchlistIds: string[] | null;
  description: string | null;
  enabled: boolean;
  disabledReason: string | null;
  disabledAt: Date | null;
  failingSince: Date | null;
  /** Null when the previous secret no longer signs (never rotated, or past its overlap). */
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  stats: DeliveryStats;
}

export interface CreatedEndpointView extends EndpointView {
  secret: string;
}

export interface RotatedSecret {
  secret: string;
  previousSecretExpiresAt: Date;
}

export interface TestSent {
  eventId: string;
  deliveryId: string;
}

export interface EndpointRow {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  watchlist_ids: string[] | null;
  enabled: boolean;
  disabled_at: Time | null;
  disabled_reason: string | null;
  failing_since: Time | null;
  previous_secret_expires_at: Time | null;
  created_at: Time;
  updated_at: Time;
}

export const emptyStats = (): DeliveryStats => ({ pending: 0, succeeded: 0, failed: 0, expired: 0 });

export function endpointOf(r: EndpointRow, stats: DeliveryStats = emptyStats()): EndpointView {
  const previousExpires = timeOrNull(r.previous_secret_expires_at);
  return {
    id: r.id,
    url: r.url,
    events: r.events,
    watchlistIds: r.watchlist_ids,
    description: r.description,
    enabled: r.enabled,
    disabledReason: r.disabled_reason,
    disabledAt: timeOrNull(r.disabled_at),
    failingSince: timeOrNull(r.failing_since),
    previousSecretExpiresAt: previousExpires && previousExpires > new Date() ? previousExpires : null,
    createdAt: time(r.created_at),
    updatedAt: time(r.updated_at),
    stats,
  };
}
