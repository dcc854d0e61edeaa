import { defineRoute } from '../http/route.js';
import { apiKeyOf } from '../http/state.js';
import type { EventLog } from './log.js';
import { presentEventPage } from './present.js';
import { eventPageSchema, eventsQuerySchema, EVENT_TYPES } from './schemas.js';

/** The key's account's event log (API key + entitlement). */
export function eventRoutes(events: EventLog) {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/events',
      operationId: 'listEvents',
      summary: 'The account’s event log',
      description:
        `Every event (${EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}), oldest first, after ` +
        'the cursor `after`: poll it instead of receiving webhooks, or fill a gap. `next_cursor` is always ' +
        'set (the same `after` when nothing new arrived): keep it and pass it as `after`. `seq` numbers an ' +
        'account’s events 1, 2, 3… without gaps. Events are kept `webhooks.event_retention_days` (30). ' +
        '`data` depends on `type` (one schema per type).',
      tag: 'Developer API',
      auth: 'api_key',
      query: eventsQuerySchema,
      responses: { 200: { description: 'The next events', schema: eventPageSchema } },
      handler: async (ctx, { query }) => ({
        body: presentEventPage(await events.list(apiKeyOf(ctx).accountId, query)),
      }),
    }),
  ];
}
