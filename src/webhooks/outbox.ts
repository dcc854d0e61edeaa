import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../platform/ids.js';
import type { EventType } from './entities.js';

/*
 * The transactional outbox: events are appended inside the caller's transaction (the watchlist scan's, with
 * the alerts they tell of), numbered per account, and fanned out to a delivery per matching enabled endpoint
 * in the same statements. Nothing is sent here: after the commit the caller asks the workers to drain the
 * endpoints returned, and the periodic sweep finds whatever a crash between commit and enqueue left behind.
 */

export interface NewEvent {
  accountId: string;
  type: EventType;
  watchlistId: string | null;
  data: Record<string, unknown>;
}

/**
 * Appends `events` in `em`'s transaction; returns the endpoints that got a delivery. `onlyEndpoint` (a
 * `webhook.test`) delivers to that endpoint alone, whatever it subscribes to.
 */
export async function appendEvents(
  em: EntityManager,
  events: readonly NewEvent[],
  now = new Date(),
  onlyEndpoint?: string,
): Promise<string[]> {
  if (events.length === 0) return [];
  const byAccount = new Map<string, NewEvent[]>();
  for (const e of events) byAccount.set(e.accountId, [...(byAccount.get(e.accountId) ?? []), e]);

  const rows: Record<string, unknown>[] = [];
  for (const [accountId, list] of byAccount) {
    // The row lock on the account's counter orders concurrent writers: seq has no gaps once committed.
    const [counter] = await em.execute<{ last_seq: string }[]>(
      `insert into event_sequences (account_id, last_seq) values (?, ?)
       on conflict (account_id) do update set last_seq = event_sequences.last_seq + excluded.last_seq
       returning last_seq`,
      [accountId, list.length],
    );
    const first = Number(counter!.last_seq) - list.length + 1;
    list.forEach((e, i) =>
      rows.push({
        id: newId('evt', now.getTime()),
        account_id: accountId,
        seq: first + i,
        type: e.type,
        watchlist_id: e.watchlistId,
        data: e.data,
        created_at: now.toISOString(),
      }),
    );
  }
  await em.execute(
    `insert into events (id, account_id, seq, type, watchlist_id, data, created_at)
     select id, account_id, seq, type, watchlist_id, data, created_at
       from jsonb_to_recordset(?::jsonb) as r(id text, account_id text, seq bigint, type text, watchlist_id text,
            data jsonb, created_at timestamptz)`,
    [JSON.stringify(rows)],
    'run',
  );
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
