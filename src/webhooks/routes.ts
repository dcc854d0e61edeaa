import { actorOf } from '../audit/actor.js';
import { defineRoute } from '../http/route.js';
import { apiKeyOf } from '../http/state.js';
import {
  presentCreatedEndpoint,
  presentDelivery,
  presentDeliveryPage,
  presentEndpoint,
  presentEndpointPage,
  presentRecovered,
  presentRotatedSecret,
  presentTestSent,
} from './present.js';
import {
  createdEndpointSchema,
  deliveriesQuerySchema,
  deliveryPageSchema,
  deliveryParamsSchema,
  deliverySchema,
  endpointPageSchema,
  endpointParamsSchema,
  endpointSchema,
  listEndpointsQuerySchema,
  newEndpointSchema,
  recoveredSchema,
  recoverSchema,
  rotatedSecretSchema,
  testAcceptedSchema,
  updateEndpointSchema,
} from './schemas.js';
import type { WebhookDeliveriesService } from './deliveries.js';
import type { WebhookEndpointsService } from './endpoints.js';

const TAG = 'Developer API';
const ENDPOINT_404 = 'Not found: no such webhook endpoint of the account (another account’s included)';
const DELIVERY_404 = 'Not found: no such delivery of the account (another account’s included)';
const DISABLED_409 = '`conflict`: the endpoint is disabled; enable it first (`PATCH { "enabled": true }`)';
const BAD_ENDPOINT =
  '`invalid_webhook_url`: the URL is refused (the detail and `errors[]` say why: scheme, credentials, a ' +
  'private, loopback, link-local or metadata address, a local-only name); `invalid_request`: a malformed ' +
  'field, an unknown event type, or a `watchlist_ids` item that is not a watchlist of the account ' +
  '(`errors[]` names its index)';
const NO_SECRETS_KEY =
  '`secrets_key_missing`: secrets are stored encrypted, and the operator has configured no key ' +
  '(`RISKWATCH_SECRETS_KEY`); or `dependency_unavailable`';

/**
 * The key's account's webhook endpoints, and their deliveries (API key + entitlement), every
 * call scoped to that account.
 */
export function webhookRoutes(endpoints: WebhookEndpointsService, deliveries: WebhookDeliveriesService) {
  const account = (ctx: Parameters<typeof apiKeyOf>[0]) => apiKeyOf(ctx).accountId;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/webhooks/endpoints',
      operationId: 'createWebhookEndpoint',
      summary: 'Create a webhook endpoint',
      description:
        'Events of the types in `events` are POSTed to `url`, signed with the endpoint’s secret (Standard ' +
        'Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`). The secret is in this answer ' +
        'only. At most 50 endpoints per account (`409 limit_exceeded`).',
      tag: TAG,
      auth: 'api_key',
      body: newEndpointSchema,
      responses: {
        201: { description: 'Created; `secret` is shown this once', schema: createdEndpointSchema },
        400: { description: BAD_ENDPOINT },
        409: { description: '`limit_exceeded`: the account has 50 endpoints' },
        503: { description: NO_SECRETS_KEY },
      },
      handler: async (ctx, { body }) => ({
        status: 201 as const,
        body: presentCreatedEndpoint(await endpoints.createEndpoint(account(ctx), body, actorOf(ctx))),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/webhooks/endpoints',
      operationId: 'listWebhookEndpoints',
      summary: 'List the account’s webhook endpoints',
      description:
        'Newest first, paginated with `limit` and the opaque `next_cursor`. Secrets are never shown.',
      tag: TAG,
      auth: 'api_key',
      query: listEndpointsQuerySchema,
      responses: { 200: { description: 'One page of endpoints', schema: endpointPageSchema } },
      handler: async (ctx, { query }) => ({
        body: presentEndpointPage(await endpoints.listEndpoints(account(ctx), query)),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/webhooks/endpoints/{id}',
      operationId: 'getWebhookEndpoint',
      summary: 'Get a webhook endpoint',
      description: 'With its delivery counts by status (`stats`). The secret is never shown again.',
      tag: TAG,
      auth: 'api_key',
      params: endpointParamsSchema,
      responses: {
        200: { description: 'The endpoint', schema: endpointSchema },
        404: { description: ENDPOINT_404 },
      },
      handler: async (ctx, { params }) => ({
        body: presentEndpoint(await endpoints.getEndpoint(account(ctx), params.id)),
      }),
    }),
    defineRoute({
      method: 'patch',
      path: '/api/v1/webhooks/endpoints/{id}',
      operationId: 'updateWebhookEndpoint',
      summary: 'Change a webhook endpoint',
      description:
        'Changes the fields given: `url` (checked again), `events`, `watchlist_ids` (null: every ' +
        'watchlist), `description`, `enabled`. Enabling a disabled endpoint clears `disabled_at`, ' +
        '`disabled_reason` and `failing_since`, and sends its pending deliveries.',
      tag: TAG,
      auth: 'api_key',
      params: endpointParamsSchema,
      body: updateEndpointSchema,
      responses: {
        200: { description: 'The endpoint as it is now', schema: endpointSchema },
        400: { description: BAD_ENDPOINT },
        404: { description: ENDPOINT_404 },
      },
      handler: async (ctx, { params, body }) => ({
        body: presentEndpoint(await endpoints.updateEndpoint(account(ctx), params.id, body, actorOf(ctx))),
      }),
    }),
    defineRoute({
      method: 'delete',
      path: '/api/v1/webhooks/endpoints/{id}',
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete a webhook endpoint with its deliveries',
      description: 'Its deliveries and their attempts go with it; the events stay in the event log.',
      tag: TAG,
      auth: 'api_key',
      params: endpointParamsSchema,
      responses: {
        200: { description: 'The deleted endpoint', schema: endpointSchema },
        404: { description: ENDPOINT_404 },
      },
      handler: async (ctx, { params }) => ({
        body: presentEndpoint(await endpoints.deleteEndpoint(account(ctx), params.id, actorOf(ctx))),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/webhooks/endpoints/{id}/rotate-secret',
      operationId: 'rotateWebhookSecret',
      summary: 'Rotate an endpoint’s signing secret',
      description:
        'Returns a new secret (shown this once). Until `previous_secret_expires_at` (24 h by default) ' +
        'deliveries carry two signatures, one per secret, so receivers can switch without missing one. A ' +
        'second rotation within that time drops the oldest secret.',
      tag: TAG,
      auth: 'api_key',
      params: endpointParamsSchema,
      responses: {
        200: { description: 'The new secret', schema: rotatedSecretSchema },
        404: { description: ENDPOINT_404 },
        503: { description: NO_SECRETS_KEY },
      },
      handler: async (ctx, { params }) => ({
        body: presentRotatedSecret(await endpoints.rotateSecret(account(ctx), params.id, actorOf(ctx))),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/webhooks/endpoints/{id}/test',
      operationId: 'testWebhookEndpoint',
      summary: 'Send a signed test event to an endpoint',
      description:
        'Writes a `webhook.test` event (in the event log like any other) delivered to this endpoint only, ' +
        'whatever it subscribes to, and answers at once: follow it in `GET /api/v1/webhooks/deliveries`.',
      tag: TAG,
      auth: 'api_key',
      params: endpointParamsSchema,
      responses: {
        202: { description: 'Queued for delivery', schema: testAcceptedSchema },
        404: { description: ENDPOINT_404 },
        409: { description: DISABLED_409 },
      },
      handler: async (ctx, { params }) => ({
        status: 202 as const,
        body: presentTestSent(await endpoints.sendTest(account(ctx), params.id, actorOf(ctx))),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/webhooks/endpoints/{id}/recover',
      operationId: 'recoverWebhookEndpoint',
      summary: 'Send again every failed delivery of an endpoint since a time',
      description:
        'Every `failed` delivery of the endpoint created at or after `since` becomes `pending` and is sent ' +
        'again (its earlier attempts stay in its log). Events written while the endpoint was disabled have ' +
        'no delivery: read them with `GET /api/v1/events`.',
      tag: TAG,
      auth: 'api_key',
      params: endpointParamsSchema,
      body: recoverSchema,
      responses: {
        202: { description: 'The deliveries set to be sent again', schema: recoveredSchema },
        404: { description: ENDPOINT_404 },
        409: { description: DISABLED_409 },
      },
      handler: async (ctx, { params, body }) => ({
        status: 202 as const,
        body: presentRecovered(await deliveries.recover(account(ctx), params.id, body.since, actorOf(ctx))),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/webhooks/deliveries',
      operationId: 'listWebhookDeliveries',
      summary: 'The delivery log',
      description:
        'The account’s deliveries, newest first, each with its status and its last 10 attempts (time, ' +
        'HTTP status, latency, error, the start of the answer). Filters `endpoint_id`, `status`, ' +
        '`event_id`; `limit` 1–100 (default 50) and the opaque `next_cursor`.',
      tag: TAG,
      auth: 'api_key',
      query: deliveriesQuerySchema,
      responses: { 200: { description: 'One page of deliveries', schema: deliveryPageSchema } },
      handler: async (ctx, { query }) => ({
        body: presentDeliveryPage(await deliveries.listDeliveries(account(ctx), query)),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/webhooks/deliveries/{id}/redeliver',
      operationId: 'redeliverWebhookDelivery',
      summary: 'Send one delivery again',
      description:
        'The delivery becomes `pending` and is sent at once, whatever its status was; its attempts and their ' +
        'log are kept. The event keeps its id (`webhook-id`), so receivers can tell a repeat. Asked for by ' +
        'hand, it is the one exception to the order of an endpoint’s deliveries: it goes ahead of those ' +
        'waiting behind the endpoint’s back-off.',
      tag: TAG,
      auth: 'api_key',
      params: deliveryParamsSchema,
      responses: {
        202: { description: 'The delivery, queued', schema: deliverySchema },
        404: { description: DELIVERY_404 },
        409: { description: DISABLED_409 },
      },
      handler: async (ctx, { params }) => ({
        status: 202 as const,
        body: presentDelivery(await deliveries.redeliver(account(ctx), params.id, actorOf(ctx))),
      }),
    }),
  ];
}
