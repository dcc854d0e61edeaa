import { DelayedError } from 'bullmq';
import type { EventLog } from '../src/events/log.js';
import type { WebhookDeliverer } from '../src/webhooks/delivery.js';
import type { JobHandler } from './job-handler.js';

/* The webhook jobs (src/webhooks/delivery.ts): the sweep finds endpoints with deliveries due, a drain sends them. */

export const webhooksSweep =
  (deliverer: WebhookDeliverer): JobHandler<'webhooks-sweep'> =>
  async () => ({ endpoints: await deliverer.sweep() });

/** A drain deferred for fairness (its account holds its share of the slots) is tried again this soon. */
const DEFER_MS = 500;

export const webhookDrain =
  (deliverer: WebhookDeliverer): JobHandler<'webhook-drain'> =>
  async (payload, job, token) => {
    const result = await deliverer.drain(payload.endpoint_id);
    if (result !== 'deferred') return result;
    // The same job, later: its deduplication id stays held, so no second drain of the endpoint is made.
    await job.moveToDelayed(Date.now() + DEFER_MS + Math.floor(Math.random() * DEFER_MS), token);
    throw new DelayedError();
  };

/** The event log's retention: events with the webhooks' deliveries and attempts of them (src/events/log.ts). */
export const eventsPrune =
  (events: EventLog): JobHandler<'events-prune'> =>
  () =>
    events.prune();
