import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventSubscriber, StoredEvent } from '../events/log.js';
import type { JobQueues } from '../jobs/queues.js';
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
    private readonly queues: Pick<JobQueues, 'enqueueOnce'>,
    private readonly settings: Pick<
      WebhooksSettings,
      'retry_schedule_s' | 'retry_jitter_pct' | 'retry_after_max_s'
    >,
  ) {}

  async fanOut(em: EntityManager, events: readonly StoredEvent[], now: Date) {
    const endpoints = await insertDeliveries(em, events, now);
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
    await em.execute('delete from webhook_attempts where attempted_at < ?', [before], 'run');
    await em.execute(
      "delete from webhook_deliveries where created_at < ? and status <> 'pending'",
      [before],
      'run',
    );
    const expired = await em.execute<{ affectedRows?: number }>(
      `update webhook_deliveries d set status = 'expired', next_attempt_at = null, last_error = 'event_expired'
         from events e
        where e.id = d.event_id and e.created_at < ? and d.status = 'pending'
          and coalesce(d.last_attempt_at, d.created_at) < ?`,
      [before, windowStart],
      'run',
    );
    return { expired: expired.affectedRows ?? 0 };
  }
}

/**
 * A delivery of each event to each enabled endpoint of its account subscribed to its type (and, for an
 * event of a watchlist, to that watchlist or all), in `em`'s transaction; returns the endpoints that got
 * one. `onlyEndpoint` (a `webhook.test`) delivers to that endpoint alone, whatever it subscribes to.
 */
export async function insertDeliveries(
  em: EntityManager,
  events: readonly StoredEvent[],
  now: Date,
  onlyEndpoint?: string,
): Promise<string[]> {
  if (events.length === 0) return [];
  const rows = events.map((e) => ({
    id: e.id,
    account_id: e.accountId,
    seq: e.seq,
    type: e.type,
    watchlist_id: e.watchlistId,
  }));
  const deliveries = await em.execute<{ endpoint_id: string }[]>(
    `insert into webhook_deliveries (id, account_id, endpoint_id, event_id, event_seq, status, attempts,
            next_attempt_at, created_at)
     select 'whd_' || substr(md5(w.id || e.id), 1, 28), e.account_id, w.id, e.id, e.seq, 'pending', 0,
            -- behind the endpoint's back-off while it fails: never sent before the deliveries it follows
            greatest(?::timestamptz, (select max(p.next_attempt_at) from webhook_deliveries p
                                       where p.endpoint_id = w.id and p.status = 'pending')),
            ?::timestamptz
       from jsonb_to_recordset(?::jsonb) as e(id text, account_id text, seq bigint, type text, watchlist_id text)
       join webhook_endpoints w on w.account_id = e.account_id and w.enabled
        and (case when ?::text is null
                  then w.events @> jsonb_build_array(e.type)
                   and (w.watchlist_ids is null or e.watchlist_id is null
                        or w.watchlist_ids @> jsonb_build_array(e.watchlist_id))
                  else w.id = ?::text end)
     on conflict (endpoint_id, event_id) do nothing
     returning endpoint_id`,
    [now.toISOString(), now.toISOString(), JSON.stringify(rows), onlyEndpoint ?? null, onlyEndpoint ?? null],
  );
  return [...new Set(deliveries.map((d) => d.endpoint_id))];
}

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
