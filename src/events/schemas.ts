import { z } from 'zod';
import { SEVERITIES } from '../risk/findings.js';
import { RISK_LEVELS } from '../risk/scoring.js';

/*
 * The events' contract (docs/api.md, "Webhooks and events"): each event type and the zod schema of its
 * `data`, the same in a webhook delivery's body and in `GET /api/v1/events`. The producing feature builds
 * `data` with its presenter, typed by these schemas. The watchlist alert is declared here, below watchlists
 * and webhooks, because it is part of this contract: a `watchlist.alert` event's `data.alert` is the object
 * `GET /api/v1/watchlists/{id}/alerts` serves.
 */

// ---- the watchlist alert ------------------------------------------------------------------------------

/**
 * The changes a watchlist scan raises alerts for (src/watchlists/diff.ts says when each is raised;
 * `approval_granted`, a deep scan's new approval of an EVM wallet, src/watchlists/judge.ts).
 */
export const ALERT_TYPES = [
  'level_changed',
  'finding_added',
  'finding_removed',
  'authority_changed',
  'delegation_changed',
  'implementation_changed',
  'token_delegate_added',
  'balance_changed',
  'account_closed',
  'account_created',
  'approval_granted',
] as const;
export type AlertType = (typeof ALERT_TYPES)[number];

/** Where an alert stands: raised `open`, then `acknowledged` or `resolved` by the account. */
export const ALERT_STATUSES = ['open', 'acknowledged', 'resolved'] as const;
export type AlertStatus = (typeof ALERT_STATUSES)[number];

export const alertSchema = z
  .object({
    id: z.string(),
    watchlist_id: z.string(),
    entry_id: z.string(),
    target: z.string(),
    chain: z.string(),
    network: z.string(),
    type: z.string().meta({ override: { enum: [...ALERT_TYPES] } }),
    severity: z.string().meta({ override: { enum: [...SEVERITIES] } }),
    previous: z.unknown().meta({ description: 'The value before the change (null: none).' }),
    current: z.unknown().meta({ description: 'The value after the change (null: gone).' }),
    evidence: z.record(z.string(), z.unknown()),
    status: z.enum(ALERT_STATUSES),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'WatchlistAlert' });
export type AlertBody = z.infer<typeof alertSchema>;

// ---- the event types and their data -------------------------------------------------------------------

const level = z.enum(RISK_LEVELS).nullable();

export const watchlistAlertDataSchema = z
  .object({
    watchlist_id: z.string(),
    entry: z.object({ id: z.string(), target: z.string(), chain: z.string(), network: z.string() }),
    alert: alertSchema,
    risk: z
      .object({
        previous_level: level.meta({
          description: 'The entry’s level before this scan (null: never judged).',
        }),
        level: level.meta({
          description: 'Its level now (the previous one when this scan did not judge it).',
        }),
        score: z.int().nullable(),
      })
      .meta({ description: 'The entry’s risk around the change.' }),
  })
  .meta({ id: 'WatchlistAlertEventData' });

export const webhookTestDataSchema = z
  .object({ endpoint_id: z.string(), message: z.string() })
  .meta({ id: 'WebhookTestEventData' });

export const endpointDisabledDataSchema = z
  .object({
    endpoint_id: z.string(),
    url: z.string(),
    reason: z.string().meta({ description: 'Why riskwatch disabled it (410 Gone, or failing too long).' }),
    disabled_at: z.string(),
  })
  .meta({ id: 'WebhookEndpointDisabledEventData' });

// ---- the screening ------------------------------------------------------------------------------------

/**
 * A bulk screening as `GET /api/v1/screenings/{id}` serves it (declared here, below screenings, because a
 * `screening.completed` event's `data.screening` is that object).
 */
export const screeningSummarySchema = z
  .object({
    id: z.string(),
    status: z.enum(['queued', 'running', 'completed']).meta({
      description:
        '`queued` (waiting its turn: one `state`/`full` screening runs at a time per account), `running`, ' +
        '`completed`.',
    }),
    depth: z.enum(['lists', 'state', 'full']),
    total: z.int().meta({ description: 'Targets given.' }),
    invalid: z.int().meta({ description: 'Targets refused at submission (never screened).' }),
    processed: z.int().meta({ description: 'Valid targets screened so far (at most total − invalid).' }),
    progress: z.number().meta({ description: 'processed / (total − invalid), 0–1.' }),
    counts: z.object({
      by_level: z.object({ low: z.int(), medium: z.int(), high: z.int(), critical: z.int() }),
      by_decision: z.object({ allow: z.int(), warn: z.int(), block: z.int() }),
      incomplete: z.int().meta({ description: 'Results with `complete: false`.' }),
    }),
    created_by: z.string(),
    created_at: z.string(),
    started_at: z.string().nullable(),
    completed_at: z.string().nullable(),
  })
  .meta({ id: 'Screening' });

export const screeningCompletedDataSchema = z
  .object({ screening: screeningSummarySchema })
  .meta({ id: 'ScreeningCompletedEventData' });

/** Every event type with the schema of its `data`. */
export const EVENT_DATA = {
  'watchlist.alert': watchlistAlertDataSchema,
  'webhook.test': webhookTestDataSchema,
  'webhook.endpoint_disabled': endpointDisabledDataSchema,
  'screening.completed': screeningCompletedDataSchema,
} as const;
export type EventType = keyof typeof EVENT_DATA;
export const EVENT_TYPES = Object.keys(EVENT_DATA) as [EventType, ...EventType[]];
/** The `data` of an event of type `T`. */
export type EventData<T extends EventType = EventType> = z.infer<(typeof EVENT_DATA)[T]>;

// ---- the event log's routes ---------------------------------------------------------------------------

const eventOf = <T extends EventType>(type: T) =>
  z
    .object({
      id: z.string().meta({ description: 'Stable: the `webhook-id` of its deliveries.' }),
      seq: z.int().meta({ description: 'The account’s event number: 1, 2, 3… without gaps.' }),
      type: z.literal(type),
      created_at: z.string(),
      data: EVENT_DATA[type].meta({ description: 'The webhook payload’s `data`.' }),
    })
    .meta({ id: `Event_${type.replace('.', '_')}` });

export const eventSchema = z
  .discriminatedUnion('type', [
    eventOf('watchlist.alert'),
    eventOf('webhook.test'),
    eventOf('webhook.endpoint_disabled'),
    eventOf('screening.completed'),
  ])
  .meta({ id: 'Event', description: 'An event; `type` says what `data` holds.' });
export type EventBody = z.infer<typeof eventSchema>;

export const eventPageSchema = z
  .object({
    data: z.array(eventSchema).meta({ description: 'Oldest first.' }),
    next_cursor: z.string().meta({
      description:
        'Always set: pass it as `after` on the next call (the position after the last event read, or the ' +
        '`after` given when nothing new has arrived). Keep it to resume polling.',
    }),
    has_more: z.boolean().meta({ description: 'More events are waiting: call again at once.' }),
  })
  .meta({ id: 'EventPage' });
export type EventPageBody = z.infer<typeof eventPageSchema>;

export const eventsQuerySchema = z
  .object({
    after: z
      .string()
      .max(500)
      .optional()
      .meta({ description: 'Opaque: the `next_cursor` of the previous call. Absent: from the oldest kept.' }),
    types: z
      .string()
      .max(500)
      .optional()
      .transform((raw, ctx) => {
        if (raw === undefined) return undefined;
        const types = [...new Set(raw.split(',').map((t) => t.trim()))];
        const unknown = types.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
        if (unknown.length)
          ctx.addIssue({
            code: 'custom',
            message: `unknown event type ${unknown.map((t) => JSON.stringify(t)).join(', ')}; expected ${EVENT_TYPES.join(', ')}`,
          });
        return types;
      })
      .meta({
        description: `Comma-separated event types to keep: ${EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}.`,
      }),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  })
  .strict();
export type EventsQuery = z.output<typeof eventsQuerySchema>;
