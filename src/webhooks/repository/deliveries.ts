import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../../db/orm.js';
import { dropPartitionsBefore, rowPrunedPartitions, WEBHOOK_ATTEMPTS } from '../../db/partitions.js';
import { run, textArray, Where, type Time } from '../../db/sql.js';
import type { StoredEvent } from '../../events/log.js';
import type { EventData, EventType } from '../../events/schemas.js';
import type { DeliveryStatus } from '../entities.js';
import type { DeliveriesQuery } from '../schemas.js';

/** A delivery with its event's type (null once the event is pruned). */
export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string | null;
  event_seq: string | number;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Time | null;
  last_attempt_at: Time | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Time;
  succeeded_at: Time | null;
}

export interface AttemptRow {
  delivery_id: string;
  attempted_at: Time;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  response_body: string | null;
}

/** A delivery due, with its event (type null: the event was pruned). */
export interface DueRow {
  id: string;
  event_id: string;
  attempts: number;
  type: EventType | null;
  data: EventData;
  event_created_at: Date;
}

/** A delivery about to be sent again, and whether its endpoint is enabled. */
export interface RedeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  status: DeliveryStatus;
  enabled: boolean;
  disabled_reason: string | null;
}

/** An attempt as the delivery log records it, and where it leaves its delivery. */
export interface AttemptRecord {
  id: string;
  accountId: string;
  deliveryId: string;
  endpointId: string;
  at: Date;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  responseBody: string | null;
  status: DeliveryStatus;
  /** When the next attempt is due (null: none). */
  nextAttemptAt: Date | null;
}

const DELIVERY_SELECT =
  'select d.id, d.endpoint_id, d.event_id, e.type as event_type, d.event_seq, d.status, d.attempts, ' +
  'd.next_attempt_at, d.last_attempt_at, d.last_status_code, d.last_error, d.created_at, d.succeeded_at ' +
  'from webhook_deliveries d left join events e on e.id = d.event_id';

/**
 * The webhook_deliveries and webhook_attempts tables (a delivery's event is read from the event log's
 * table, src/events). The API's statements name the account; the workers' go by endpoint or delivery.
 */
export class DeliveryRows {
  constructor(private readonly orm: Orm) {}

  // ---- the API's side ---------------------------------------------------------------------------------

  /** Delivery counts by endpoint and status: one grouped query. */
  countsOf(
    accountId: string,
    endpointIds: readonly string[],
    em?: EntityManager,
  ): Promise<{ endpoint_id: string; status: DeliveryStatus; n: number }[]> {
    return run(
      em ?? this.orm,
      `select endpoint_id, status, count(*)::int as n from webhook_deliveries
        where account_id = ? and endpoint_id in (select jsonb_array_elements_text(?::jsonb))
        group by endpoint_id, status`,
      [accountId, JSON.stringify(endpointIds)],
    );
  }

  /** The delivery of an event to an endpoint (a test event's). */
  async idOf(em: EntityManager, eventId: string, endpointId: string): Promise<string | undefined> {
    const [row] = await em.execute<{ id: string }[]>(
      'select id from webhook_deliveries where event_id = ? and endpoint_id = ?',
      [eventId, endpointId],
    );
    return row?.id;
  }

  /** One page of the account's deliveries, newest first, filtered (`limit + 1` rows). */
  page(accountId: string, q: DeliveriesQuery): Promise<DeliveryRow[]> {
    const where = new Where('d.account_id = ?', accountId)
      .andIf(q.endpoint_id, 'd.endpoint_id = ?')
      .andIf(q.status, 'd.status = ?')
      .andIf(q.event_id, 'd.event_id = ?')
      .before(q.cursor, 'whd', 'd.created_at', 'd.id');
    return run<DeliveryRow[]>(
      this.orm,
      `${DELIVERY_SELECT} where ${where.sql} order by d.created_at desc, d.id desc limit ?`,
      [...where.params, q.limit + 1],
    );
  }

  async get(accountId: string, deliveryId: string): Promise<DeliveryRow | undefined> {
    const [row] = await run<DeliveryRow[]>(
      this.orm,
      `${DELIVERY_SELECT} where d.id = ? and d.account_id = ?`,
      [deliveryId, accountId],
    );
    return row;
  }

  /**
   * The account's delivery as it is, with whether its endpoint is enabled and why not: the delivery locked
   * FOR UPDATE and its endpoint FOR SHARE in `em`'s transaction, for a redelivery.
   */
  async lockForRedelivery(
    em: EntityManager,
    accountId: string,
    deliveryId: string,
  ): Promise<RedeliveryRow | undefined> {
    const [row] = await em.execute<RedeliveryRow[]>(
      `select d.id, d.endpoint_id, d.event_id, d.status, w.enabled, w.disabled_reason
         from webhook_deliveries d
         join webhook_endpoints w on w.id = d.endpoint_id and w.account_id = d.account_id
        where d.id = ? and d.account_id = ?
        for update of d for share of w`,
      [deliveryId, accountId],
    );
    return row;
  }

  /** The delivery made pending and due at `now` (its endpoint checked by lockForRedelivery). */
  async redeliver(em: EntityManager, deliveryId: string, now: Date): Promise<void> {
    await em.execute(
      `update webhook_deliveries set status = 'pending', next_attempt_at = ?::timestamptz where id = ?`,
      [now.toISOString(), deliveryId],
      'run',
    );
  }

  /** Every `failed` delivery of the endpoint created since `since`, pending and due at `now`: how many. */
  async recover(
    em: EntityManager,
    accountId: string,
    endpointId: string,
    since: Date,
    now: Date,
  ): Promise<number> {
    const [row] = await run<{ n: number }[]>(
      em,
      `with recovered as (
         update webhook_deliveries set status = 'pending', next_attempt_at = ?::timestamptz
          where endpoint_id = ? and account_id = ? and status = 'failed' and created_at >= ?::timestamptz
          returning 1)
       select count(*)::int as n from recovered`,
      [now.toISOString(), endpointId, accountId, since.toISOString()],
    );
    return row?.n ?? 0;
  }

  /** The last `n` attempts of each delivery, newest first: one query for all of them. */
  attempts(deliveryIds: readonly string[], n: number): Promise<AttemptRow[]> {
    return run<AttemptRow[]>(
      this.orm,
      `select d.id as delivery_id, a.attempted_at, a.status_code, a.latency_ms, a.error, a.response_body
         from jsonb_array_elements_text(?::jsonb) as d(id)
         cross join lateral (
           select attempted_at, status_code, latency_ms, error, response_body from webhook_attempts
            where delivery_id = d.id order by attempted_at desc, id desc limit ?) a`,
      [JSON.stringify(deliveryIds), n],
    );
  }

  // ---- the fan-out and the prune ------------------------------------------------------------------------

  /**
   * A delivery of each event to each enabled endpoint of its account subscribed to its type (and, for an
   * event of a watchlist, to that watchlist or all), in `em`'s transaction; `onlyEndpoint`: to that one
   * alone. Returns the endpoints that got one.
   */
  async insertFor(
    em: EntityManager,
    events: readonly StoredEvent[],
    now: Date,
    onlyEndpoint?: string,
  ): Promise<string[]> {
    if (events.length === 0) return [];
    const matched = events.map((e) => ({
      id: e.id,
      account_id: e.accountId,
      seq: e.seq,
      type: e.type,
      watchlist_id: e.watchlistId,
    }));
    const rows = await em.execute<{ endpoint_id: string }[]>(
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
      [
        now.toISOString(),
        now.toISOString(),
        JSON.stringify(matched),
        onlyEndpoint ?? null,
        onlyEndpoint ?? null,
      ],
    );
    return [...new Set(rows.map((r) => r.endpoint_id))];
  }

  /**
   * Drops finished deliveries created before `before`, and attempts made before it of deliveries no longer
   * pending from the partitions pruned row by row (historical, default); closes as `expired` the pending
   * deliveries of events created before it whose last attempt (or creation) is before `windowStart`. How
   * many it closed.
   */
  async prune(em: EntityManager, before: Date, windowStart: Date): Promise<number> {
    for (const partition of await rowPrunedPartitions(em, WEBHOOK_ATTEMPTS))
      await em.execute(
        `delete from "${partition}" a where a.attempted_at < ?
            and not exists (select 1 from webhook_deliveries d where d.id = a.delivery_id and d.status = 'pending')`,
        [before],
        'run',
      );
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
    return expired.affectedRows ?? 0;
  }

  /**
   * Drops, oldest first, each day partition of attempts (and the historical one) wholly before `cutoff`,
   * unless an attempt in it is of a delivery still pending (read from the few pending deliveries, each
   * one index probe into the partition). The names dropped.
   */
  dropAttemptDays(cutoff: Date): Promise<string[]> {
    return dropPartitionsBefore(this.orm, WEBHOOK_ATTEMPTS, cutoff, {
      keep: async (em, p) => {
        const [row] = await em.execute<{ held: boolean }[]>(
          `select exists (select 1 from webhook_deliveries d where d.status = 'pending'
                     and exists (select 1 from "${p.name}" a where a.delivery_id = d.id)) as held`,
        );
        return row?.held === true;
      },
    });
  }

  // ---- the workers' side --------------------------------------------------------------------------------

  /** Pending deliveries, the oldest due time of an enabled endpoint's, and the disabled endpoints. */
  async backlog(): Promise<{ pending: number; oldestDue: Date | null; disabled: number }> {
    const [row] = await run<{ pending: string; oldest_due: Date | null; disabled: string }[]>(
      this.orm,
      `select (select count(*) from webhook_deliveries where status = 'pending') as pending,
              (select min(next_attempt_at) from webhook_deliveries d join webhook_endpoints w on w.id = d.endpoint_id
                where d.status = 'pending' and w.enabled and d.next_attempt_at <= now()) as oldest_due,
              (select count(*) from webhook_endpoints where not enabled) as disabled`,
    );
    return {
      pending: Number(row?.pending ?? 0),
      oldestDue: row?.oldest_due ? new Date(row.oldest_due) : null,
      disabled: Number(row?.disabled ?? 0),
    };
  }

  /** The enabled endpoints with a delivery due at `now`. */
  async endpointsDue(now: Date): Promise<string[]> {
    const rows = await run<{ endpoint_id: string }[]>(
      this.orm,
      `select distinct d.endpoint_id from webhook_deliveries d
         join webhook_endpoints w on w.id = d.endpoint_id and w.enabled
        where d.status = 'pending' and d.next_attempt_at <= ?`,
      [now],
    );
    return rows.map((r) => r.endpoint_id);
  }

  /** Up to `limit` of the endpoint's deliveries due now, in the order of their events. */
  due(endpointId: string, limit: number): Promise<DueRow[]> {
    return run<DueRow[]>(
      this.orm,
      `select d.id, d.event_id, d.attempts, e.type, e.data, e.created_at as event_created_at
         from webhook_deliveries d left join events e on e.id = d.event_id
        where d.endpoint_id = ? and d.status = 'pending' and d.next_attempt_at <= now()
        order by d.event_seq limit ${limit}`,
      [endpointId],
    );
  }

  /** Closes pending deliveries whose event is gone (pruned) as `expired`. */
  async expire(deliveryIds: readonly string[]): Promise<void> {
    await run(
      this.orm,
      `update webhook_deliveries set status = 'expired', next_attempt_at = null, last_error = 'event_expired'
        where id = any(?::text[]) and status = 'pending'`,
      [textArray(deliveryIds)],
      'run',
    );
  }

  /**
   * An attempt logged and its delivery moved on, in `em`'s transaction. `holdUntil`: the endpoint is
   * failing, and its other due deliveries wait with this one until then, in order.
   */
  async record(em: EntityManager, a: AttemptRecord, holdUntil: Date | null): Promise<void> {
    await em.execute(
      `insert into webhook_attempts (id, account_id, delivery_id, endpoint_id, attempted_at, status_code, latency_ms,
              error, response_body)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        a.id,
        a.accountId,
        a.deliveryId,
        a.endpointId,
        a.at,
        a.statusCode,
        a.latencyMs,
        a.error,
        a.responseBody,
      ],
      'run',
    );
    await em.execute(
      `update webhook_deliveries
          set attempts = attempts + 1, last_attempt_at = ?, last_status_code = ?, last_error = ?,
              status = ?, next_attempt_at = ?, succeeded_at = ?
        where id = ?`,
      [
        a.at,
        a.statusCode,
        a.error,
        a.status,
        a.nextAttemptAt,
        a.status === 'succeeded' ? a.at : null,
        a.deliveryId,
      ],
      'run',
    );
    if (holdUntil)
      await em.execute(
        `update webhook_deliveries set next_attempt_at = ?
          where endpoint_id = ? and status = 'pending' and id <> ? and next_attempt_at < ?`,
        [holdUntil, a.endpointId, a.deliveryId, holdUntil],
        'run',
      );
  }
}
