import { z } from 'zod';
import { pageQuery } from '../http/route.js';
import type { EventType } from '../events/schemas.js';
import { DELIVERY_STATUSES } from './entities.js';

/*
 * What webhooks look like outside the services: the requests and bodies of the webhook endpoint and
 * delivery routes (the event log's: src/events/schemas.ts) (docs/api.md, "Webhooks and events"). Routes validate and document
 * with these objects; the types below are derived from them.
 */

/** What an endpoint may subscribe to. `webhook.test` needs no subscription: the test call sends it. */
export const SUBSCRIBABLE_EVENT_TYPES = [
  'watchlist.alert',
  'webhook.endpoint_disabled',
  'screening.completed',
] as const satisfies EventType[];

const rfc3339 = z.iso
  .datetime({ offset: true })
  .transform((s) => new Date(s))
  // Years PostgreSQL's timestamptz round-trips.
  .refine((d) => d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999, 'year must be 0001–9999 (UTC)');

const id = z.string().min(1).max(40);

const nextCursor = z
  .string()
  .nullable()
  .meta({ description: 'Pass as `cursor` for the next page; null on the last page.' });

// ---- endpoints --------------------------------------------------------------------------------------

const urlField = z
  .string()
  .max(2048)
  .meta({
    description:
      'Where events are POSTed: `https://` (plain `http://` only when the operator allows it), a public ' +
      'address or a name (an in-VPC receiver only inside the operator’s allow list), no user or password. ' +
      'Refused with `invalid_webhook_url` and the reason. Stored in normalised form.',
    examples: ['https://hooks.example.com/riskwatch'],
  });

const eventsField = z
  .array(z.enum(SUBSCRIBABLE_EVENT_TYPES))
  .min(1)
  .max(10)
  .transform((types) => [...new Set(types)])
  .meta({
    description:
      'The event types delivered here (at least one; repeats are ignored). `webhook.test` is always ' +
      'delivered by `POST …/endpoints/{id}/test`, whatever this says.',
  });

const watchlistIdsField = z
  .array(id)
  .min(1)
  .max(100)
  .nullable()
  .optional()
  .meta({
    description:
      'Only `watchlist.alert` events of these watchlists of the account (each must exist: else ' +
      '`invalid_request` naming its index). Null or absent: every watchlist.',
  });

const descriptionField = z.string().trim().max(500).nullable().optional();

export const newEndpointSchema = z
  .object({
    url: urlField,
    events: eventsField,
    watchlist_ids: watchlistIdsField,
    description: descriptionField,
    enabled: z.boolean().optional().meta({ description: 'Default true.' }),
  })
  .strict()
  .meta({ id: 'NewWebhookEndpoint' });
export type NewEndpoint = z.output<typeof newEndpointSchema>;

export const updateEndpointSchema = z
  .object({
    url: urlField.optional(),
    events: eventsField.optional(),
    watchlist_ids: watchlistIdsField,
    description: descriptionField,
    enabled: z
      .boolean()
      .optional()
      .meta({
        description:
          '`false` stops deliveries (events meanwhile get none: read them with `GET /api/v1/events`); ' +
          '`true` on a disabled endpoint clears `disabled_at`, `disabled_reason` and `failing_since`.',
      }),
  })
  .strict()
  .meta({ id: 'WebhookEndpointUpdate' });
export type EndpointUpdate = z.output<typeof updateEndpointSchema>;

const endpointShape = {
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  watchlist_ids: z.array(z.string()).nullable().meta({ description: 'Null: every watchlist.' }),
  description: z.string().nullable(),
  enabled: z.boolean(),
  disabled_reason: z.string().nullable().meta({
    description: 'Why it is disabled: by the account, or because every attempt failed for too long.',
  }),
  disabled_at: z.string().nullable(),
  failing_since: z
    .string()
    .nullable()
    .meta({
      description:
        'Since when every attempt has failed (null while deliveries succeed); past ' +
        '`webhooks.disable_after_failing_s` the endpoint is disabled.',
    }),
  previous_secret_expires_at: z.string().nullable().meta({
    description: 'After `rotate-secret`: until when the previous secret also signs. Null: one secret signs.',
  }),
  created_at: z.string(),
  updated_at: z.string(),
  stats: z
    .object({ pending: z.int(), succeeded: z.int(), failed: z.int(), expired: z.int() })
    .meta({ description: 'Its deliveries by status (those kept: `webhooks.event_retention_days`).' }),
};

export const endpointSchema = z.object(endpointShape).meta({ id: 'WebhookEndpoint' });
export type EndpointBody = z.infer<typeof endpointSchema>;

export const createdEndpointSchema = z
  .object({
    ...endpointShape,
    secret: z.string().meta({
      description:
        'The signing secret (`whsec_` + base64 of 24 random bytes), shown in this answer only: keep it. ' +
        'Receivers check `webhook-signature` with it (Standard Webhooks).',
    }),
  })
  .meta({ id: 'CreatedWebhookEndpoint' });
export type CreatedEndpointBody = z.infer<typeof createdEndpointSchema>;

export const endpointPageSchema = z
  .object({ data: z.array(endpointSchema), next_cursor: nextCursor })
  .meta({ id: 'WebhookEndpointPage' });
export type EndpointPageBody = z.infer<typeof endpointPageSchema>;

export const endpointParamsSchema = z.object({ id });
export const listEndpointsQuerySchema = z.object({ ...pageQuery }).strict();

export const rotatedSecretSchema = z
  .object({
    secret: z.string().meta({ description: 'The new signing secret, shown in this answer only.' }),
    previous_secret_expires_at: z
      .string()
      .meta({ description: 'Until then the previous secret signs too (a second `v1,` signature).' }),
  })
  .meta({ id: 'WebhookSecretRotated' });
export type RotatedSecretBody = z.infer<typeof rotatedSecretSchema>;

export const testAcceptedSchema = z
  .object({
    event_id: z.string().meta({ description: 'The `webhook.test` event (also in `GET /api/v1/events`).' }),
    delivery_id: z.string().meta({ description: 'Its delivery to this endpoint.' }),
  })
  .meta({ id: 'WebhookTestAccepted' });
export type TestAcceptedBody = z.infer<typeof testAcceptedSchema>;

export const recoverSchema = z
  .object({
    since: rfc3339.meta({
      description: 'Every `failed` delivery of the endpoint created at or after this time is sent again.',
      examples: ['2026-11-20T00:00:00Z'],
    }),
  })
  .strict()
  .meta({ id: 'WebhookRecover' });
export type Recover = z.output<typeof recoverSchema>;

export const recoveredSchema = z
  .object({ recovered: z.int().meta({ description: 'Deliveries set back to `pending`.' }) })
  .meta({ id: 'WebhookRecovered' });
export type RecoveredBody = z.infer<typeof recoveredSchema>;

// ---- deliveries -------------------------------------------------------------------------------------

/** The attempts of a delivery shown with it (newest first). */
export const ATTEMPT_LOG_SIZE = 10;

export const attemptSchema = z
  .object({
    attempted_at: z.string(),
    status_code: z.int().nullable().meta({ description: 'The receiver’s HTTP status; null: no answer.' }),
    latency_ms: z.int(),
    error: z.string().nullable().meta({
      description: '`timeout`, `ssrf_blocked`, `connection_refused`, `http_500`…; null on success.',
    }),
    response_body: z.string().nullable().meta({ description: 'The first characters of the answer.' }),
  })
  .meta({ id: 'WebhookAttempt' });
export type AttemptBody = z.infer<typeof attemptSchema>;

export const deliverySchema = z
  .object({
    id: z.string(),
    endpoint_id: z.string(),
    event_id: z.string().meta({ description: 'Also the `webhook-id` header: the same on every retry.' }),
    event_type: z.string().nullable(),
    event_seq: z.int(),
    status: z.enum(DELIVERY_STATUSES).meta({
      description:
        '`pending` until it succeeds, `failed` once its retry schedule is spent (or the receiver answered ' +
        '410), `expired` when its event was pruned (`webhooks.event_retention_days`) before it was delivered.',
    }),
    attempts: z.int(),
    next_attempt_at: z.string().nullable().meta({ description: 'When it is tried next (`pending`).' }),
    last_attempt_at: z.string().nullable(),
    last_status_code: z.int().nullable(),
    last_error: z.string().nullable(),
    created_at: z.string(),
    succeeded_at: z.string().nullable(),
    attempt_log: z
      .array(attemptSchema)
      .meta({ description: `The last ${ATTEMPT_LOG_SIZE} attempts, newest first.` }),
  })
  .meta({ id: 'WebhookDelivery' });
export type DeliveryBody = z.infer<typeof deliverySchema>;

export const deliveryPageSchema = z
  .object({ data: z.array(deliverySchema), next_cursor: nextCursor })
  .meta({ id: 'WebhookDeliveryPage' });
export type DeliveryPageBody = z.infer<typeof deliveryPageSchema>;

export const deliveryParamsSchema = z.object({ id });

export const deliveriesQuerySchema = z
  .object({
    endpoint_id: id.optional().meta({ description: 'Only the deliveries to this endpoint.' }),
    status: z.enum(DELIVERY_STATUSES).optional(),
    event_id: id.optional().meta({ description: 'Only the deliveries of this event.' }),
    limit: z.coerce.number().int().min(1).max(100).default(50),
    cursor: pageQuery.cursor,
  })
  .strict();
export type DeliveriesQuery = z.output<typeof deliveriesQuerySchema>;
