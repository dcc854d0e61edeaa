import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Orm } from '../../src/db/orm.js';
import { newId } from '../../src/platform/ids.js';
import { appendEvents, eventLog } from './event-log.js';

/*
 * What the webhook delivery tests write directly: endpoints (a plaintext secret, as a row from before
 * encryption: it signs as it is until a worker seals it), events through the outbox the watchlist scanner
 * writes with, and the attempt log read back.
 */

export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

export interface AttemptRow {
  delivery_id: string;
  attempted_at: Date;
  status_code: number | null;
  error: string | null;
  response_body: string | null;
}

export function webhookFixtures(db: pg.Client, orm: Orm) {
  return {
    /** An enabled endpoint of `accountId` subscribed to `events`; its id. */
    async createEndpoint(
      accountId: string,
      url: string,
      secret: string,
      events = ['watchlist.alert'],
    ): Promise<string> {
      const id = newId('we');
      await db.query(
        `insert into webhook_endpoints (id, account_id, url, events, enabled, secret, created_at, updated_at)
         values ($1, $2, $3, $4, true, $5, now(), now())`,
        [id, accountId, url, JSON.stringify(events), secret],
      );
      return id;
    },

    /** `n` watchlist.alert events of `accountId` tagged `tag`, in one transaction; their ids in seq order. */
    async emit(accountId: string, n: number, tag: string): Promise<string[]> {
      await orm.em.fork().transactional((tx) =>
        appendEvents(
          eventLog(orm),
          tx,
          Array.from({ length: n }, (_, i) => ({
            accountId,
            type: 'watchlist.alert' as const,
            watchlistId: null,
            data: { tag, index: i },
          })),
        ),
      );
      const { rows } = await db.query<{ id: string }>(
        `select id from events where account_id = $1 and data->>'tag' = $2 order by seq`,
        [accountId, tag],
      );
      return rows.map((r) => r.id);
    },

    /** The endpoint's attempts, oldest first. */
    async attemptsOf(endpointId: string): Promise<AttemptRow[]> {
      const { rows } = await db.query<AttemptRow>(
        `select delivery_id, attempted_at, status_code, error, response_body from webhook_attempts
          where endpoint_id = $1 order by attempted_at`,
        [endpointId],
      );
      return rows;
    },
  };
}
