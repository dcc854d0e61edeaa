import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventSubscriber, StoredEvent } from '../events/log.js';
import type { JobQueues } from '../jobs/queues.js';
import type { DeliveryRows } from './repository/deliveries.js';
import { retryWindowMs, type WebhooksSettings } from './settings.js';

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
   * Drops finished deliveries older than `before`, and such attempts outside day partitions (the days
   * themselves go whole: `dropPartitions`). A delivery pending inside its retry window
   * (the window after its last attempt, or its creation if none: a delivery held behind an older failing one
   * is attempted once that one ends) keeps its event; one pending past its window (its endpoint was
   * disabled, or re-enabled long after) is closed as `expired` and its event dropped. A delivery closed here
   * stays in the log until the next prune.
   */
  async prune(em: EntityManager, before: Date, now: Date): Promise<{ expired: number }> {
    const windowStart = new Date(now.getTime() - retryWindowMs(this.settings));
    return { expired: await this.deliveries.prune(em, before, windowStart) };
  }

  /**
   * After the prune's transaction: drops each day of attempts older than both `before` (the retention)
   * and the retry window, unless one of its attempts is of a delivery still pending.
   */
  dropPartitions(before: Date, now: Date): Promise<string[]> {
    const windowStart = now.getTime() - retryWindowMs(this.settings);
    return this.deliveries.dropAttemptDays(new Date(Math.min(before.getTime(), windowStart)));
  }
}
