import type { WebhookDeliverer } from '../src/webhooks/delivery.js';
import type { JobHandler } from './job-handler.js';

/* The webhook jobs (src/webhooks/delivery.ts): the sweep finds endpoints with deliveries due, a drain sends them. */

export const webhooksSweep =
  (deliverer: WebhookDeliverer): JobHandler<'webhooks-sweep'> =>
  async () => ({ endpoints: await deliverer.sweep() });

export const webhookDrain =
  (deliverer: WebhookDeliverer): JobHandler<'webhook-drain'> =>
  (payload) =>
    deliverer.drain(payload.endpoint_id);

export const eventsPrune =
  (deliverer: WebhookDeliverer): JobHandler<'events-prune'> =>
  () =>
    deliverer.prune();
