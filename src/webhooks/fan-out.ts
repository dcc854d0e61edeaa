import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventSubscriber, StoredEvent } from '../events/log.js';
import type { JobQueues } from '../jobs/queues.js';
import type { DeliveryRows } from './repository/deliveries.js';
import type { WebhooksSettings } from './settings.js';

/*
 * Webhooks as a subscriber of the event log (src/events/log.ts), registered at composition: every appended
 * event becomes a delivery per matching enabled endpoint, in the event's own transaction; once it has
 * committed, the workers are asked to drain those endpoints (`webhook-drain`), and the periodic sweep finds
 * whatever a crash between the commit and that request left behind. The prune drops deliveries and attempts
 * past the retention with their events, and keeps an event while a delivery of it may still be attempted.
 */
export class WebhookFanOut implements EventSubscriber {
  /** An event with a delivery still pending is kept past the retention (see `prune`). */
  readonly retains =
    "exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending')";

  constructor(
    private readonly deliveries: DeliveryRows,
    private readonly queues: Pick<JobQueues, 'enqueueOnce'>,
    private readonly settings: Pick<
      WebhooksSettings,
      'retry_schedule_s' | 'retry_jitter_pct' | 'retry_after_max_s'
    >,
  ) {}

  async fanOut(em: EntityManager, events: readonly StoredEvent[], now: Date) {
    const endpoints = await this.deliveries.insertFor(em, events, now);
    if (endpoints.length === 0) return undefined;
    return async () => {
      for (const id of endpoints) await this.requestDrain(id);
    };
  }

  /** Asks the workers to drain the endpoint (one pending drain per endpoint: the job id is the endpoint's). */
  requestDrain(endpointId: string): Promise<void> {
    return this.queues.enqueueOnce('webhook-drain', { endpoint_id: endpointId }, endpointId);
  }

  /**
   * Drops attempts and finished deliveries older than `before`. A delivery pending inside its retry window
   * (the window after its last attempt, or its creation if none: a delivery held behind an older failing one
   * is attempted once that one ends) keeps its event; one pending past its window (its endpoint was
   * disabled, or re-enabled long after) is closed as `expired` and its event dropped. A delivery closed here
   * stays in the log until the next prune.
   */
  async prune(em: EntityManager, before: Date, now: Date): Promise<{ expired: number }> {
    const windowStart = new Date(now.getTime() - retryWindowMs(this.settings));
    return { expired: await this.deliveries.prune(em, before, windowStart) };
  }
}

/**
 * How long a pending delivery may wait for its next attempt, at most: every wait of the schedule at its
 * longest (with jitter, or a receiver's capped Retry-After, whichever is longer), added up. Retention keeps
 * an event while a delivery of it is pending and was attempted (or created) within this.
 */
function retryWindowMs(
  s: Pick<WebhooksSettings, 'retry_schedule_s' | 'retry_jitter_pct' | 'retry_after_max_s'>,
): number {
  const longest = (wait: number) => Math.max(wait * (1 + s.retry_jitter_pct / 100), s.retry_after_max_s);
  return s.retry_schedule_s.reduce((sum, wait) => sum + longest(wait), 0) * 1000;
}
