import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/*
 * Webhooks (README, "Webhooks and the event log"): an account's endpoints, a delivery per event of the log
 * (src/events) and matching endpoint, written in the event's own transaction by webhooks' fan-out, and each
 * attempt of a delivery. The workers attempt a delivery until it succeeds or its retry schedule ends.
 */

/** `expired`: its event was pruned (retention) before it could be delivered. */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'expired'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * Where an account's events go. The secret signs (Standard Webhooks); it is shown once, at creation, and
 * stored sealed under the operator's key (secrets.ts), as is the previous one.
 */
export const WebhookEndpointSchema = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  indexes: [{ properties: ['accountId', 'createdAt', 'id'] }],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    url: p.string().length(2048),
    description: p.string().length(500).nullable(),
    /** Event types delivered here. */
    events: p.json<string[]>(),
    /** Only alerts of these watchlists (null: every watchlist). */
    watchlistIds: p.json<string[]>().nullable(),
    enabled: p.boolean(),
    secret: p.string().length(255),
    /** The secret before the last rotation: it keeps signing beside the new one until it expires. */
    previousSecret: p.string().length(255).nullable(),
    previousSecretExpiresAt: p.datetime().nullable(),
    disabledAt: p.datetime().nullable(),
    disabledReason: p.string().length(200).nullable(),
    /** Since when every attempt failed (null while deliveries succeed): past the limit, it is disabled. */
    failingSince: p.datetime().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type WebhookEndpoint = InferEntity<typeof WebhookEndpointSchema>;

/** One event to one endpoint, and where its attempts stand. */
export const WebhookDeliverySchema = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  uniques: [{ properties: ['endpointId', 'eventId'] }],
  indexes: [
    { properties: ['endpointId', 'status', 'nextAttemptAt'] },
    { properties: ['accountId', 'createdAt', 'id'] },
    { properties: ['status', 'nextAttemptAt'] },
  ],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    endpointId: p.string().length(40),
    eventId: p.string().length(40),
    eventSeq: p.bigint('number'),
    status: p.enum(DELIVERY_STATUSES),
    attempts: p.integer(),
    nextAttemptAt: p.datetime().nullable(),
    lastAttemptAt: p.datetime().nullable(),
    lastStatusCode: p.integer().nullable(),
    lastError: p.string().length(200).nullable(),
    createdAt: p.datetime(),
    succeededAt: p.datetime().nullable(),
  },
});
export type WebhookDelivery = InferEntity<typeof WebhookDeliverySchema>;

/** Each attempt of a delivery: the delivery log (day partitions, migration 20261128120000). */
export const WebhookAttemptSchema = defineEntity({
  name: 'WebhookAttempt',
  tableName: 'webhook_attempts',
  indexes: [{ properties: ['deliveryId', 'attemptedAt'] }],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    deliveryId: p.string().length(40),
    endpointId: p.string().length(40),
    /** Part of the key: the table is partitioned by day on it (src/db/partitions.ts). */
    attemptedAt: p.datetime().primary(),
    /** HTTP status, or null when no answer came (timeout, refused, blocked). */
    statusCode: p.integer().nullable(),
    latencyMs: p.integer(),
    /** `timeout`, `ssrf_blocked`, `connection_refused`, `http_3xx`… null on success. */
    error: p.string().length(200).nullable(),
    /** The first bytes of the receiver's answer. */
    responseBody: p.string().length(1000).nullable(),
  },
});
export type WebhookAttempt = InferEntity<typeof WebhookAttemptSchema>;
