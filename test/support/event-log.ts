import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../../src/db/orm.js';
import { EventLog, type NewEvent } from '../../src/events/log.js';
import { WebhookFanOut } from '../../src/webhooks/fan-out.js';
import { WebhookRepository } from '../../src/webhooks/repository.js';
import type { WebhooksSettings } from '../../src/webhooks/settings.js';

/** Any event as a test writes it: `data` need not follow its type's schema (fixtures tag events freely). */
export type LooseEvent = Omit<NewEvent, 'type' | 'data'> & { type: NewEvent['type']; data: object };

/**
 * The event log as the runtime composes it (webhooks' fan-out subscribed), for tests that write events
 * straight through the outbox. Drains are not requested: the tests sweep, or drive the deliverer.
 */
export function eventLog(
  orm: Orm,
  settings: Pick<
    WebhooksSettings,
    'event_retention_days' | 'retry_schedule_s' | 'retry_jitter_pct' | 'retry_after_max_s'
  > = { event_retention_days: 30, retry_schedule_s: [5], retry_jitter_pct: 0, retry_after_max_s: 0 },
): EventLog {
  const log = new EventLog(orm, settings.event_retention_days);
  log.subscribe(
    new WebhookFanOut(
      new WebhookRepository(orm).deliveries,
      { enqueueOnce: () => Promise.resolve() },
      settings,
    ),
  );
  return log;
}

/** Appends `events` in `em`'s transaction, as the watchlist scan does (deliveries fanned out with them). */
export async function appendEvents(
  log: EventLog,
  em: EntityManager,
  events: readonly LooseEvent[],
  now = new Date(),
) {
  return (await log.append(em, events as readonly NewEvent[], now)).events;
}
