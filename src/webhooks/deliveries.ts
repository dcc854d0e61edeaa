import type { Orm } from '../db/orm.js';
import { run, time, timeOrNull, Where, type Time } from '../db/sql.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { notFound } from '../platform/errors.js';
import { clip } from '../chains/registry.js';
import type { DeliveryStatus } from './entities.js';
import { endpointDisabled, endpointNotFound, requestDrain, type DrainRequests } from './endpoints.js';
import { ATTEMPT_LOG_SIZE, type DeliveriesQuery } from './schemas.js';

/*
 * An account's delivery log (webhook_deliveries with their webhook_attempts), redelivery and recovery. The
 * deliveries are written by webhooks' fan-out (fan-out.ts) and moved on by the delivery workers
 * (delivery.ts); here they are read and made due again, and the workers are asked to drain the endpoint.
 * Every query names the caller's account, so another account's id is simply not found.
 */

export interface AttemptView {
  attemptedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  responseBody: string | null;
}

export interface DeliveryView {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string | null;
  eventSeq: number;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: Date;
  succeededAt: Date | null;
  /** The last ATTEMPT_LOG_SIZE attempts, newest first. */
  attemptLog: AttemptView[];
}

interface DeliveryRow {
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

interface AttemptRow {
  delivery_id: string;
  attempted_at: Time;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  response_body: string | null;
}

/** A delivery with its event's type (the event log's row, gone once pruned). */
const DELIVERY_SELECT =
  'select d.id, d.endpoint_id, d.event_id, e.type as event_type, d.event_seq, d.status, d.attempts, ' +
  'd.next_attempt_at, d.last_attempt_at, d.last_status_code, d.last_error, d.created_at, d.succeeded_at ' +
  'from webhook_deliveries d left join events e on e.id = d.event_id';

const deliveryNotFound = (id: string) => notFound(`Webhook delivery "${clip(id)}"`);

/** The delivery log of an account, redelivery and recovery. Every query is scoped to the account. */
export class WebhookDeliveriesService {
  constructor(
    private readonly orm: Orm,
    /** Where drains are asked for; absent where nothing is to be sent. */
    private readonly drains?: DrainRequests,
  ) {}

  /** One page of the account's deliveries, newest first, each with its last attempts. Two queries. */
  async listDeliveries(accountId: string, q: DeliveriesQuery): Promise<Page<DeliveryView>> {
    const where = new Where('d.account_id = ?', accountId)
      .andIf(q.endpoint_id, 'd.endpoint_id = ?')
      .andIf(q.status, 'd.status = ?')
      .andIf(q.event_id, 'd.event_id = ?')
      .before(q.cursor, 'whd', 'd.created_at', 'd.id');
    const rows = await run<DeliveryRow[]>(
      this.orm,
      `${DELIVERY_SELECT} where ${where.sql} order by d.created_at desc, d.id desc limit ?`,
      [...where.params, q.limit + 1],
    );
    return keysetPage(await this.withAttempts(rows), q.limit, (d) => ({
      at: d.createdAt.toISOString(),
      id: d.id,
    }));
  }

  /**
   * Sends a delivery again: `pending`, due now (its attempts and their log are kept), and the workers are
   * asked to drain its endpoint. A delivery of a disabled endpoint is a conflict.
   */
  async redeliver(accountId: string, deliveryId: string): Promise<DeliveryView> {
    const now = new Date();
    const [updated] = await run<{ id: string; endpoint_id: string }[]>(
      this.orm,
      `update webhook_deliveries d set status = 'pending', next_attempt_at = ?::timestamptz
         from webhook_endpoints w
        where d.id = ? and d.account_id = ? and w.id = d.endpoint_id and w.account_id = d.account_id
          and w.enabled
        returning d.id, d.endpoint_id`,
      [now.toISOString(), deliveryId, accountId],
    );
    if (!updated) {
      const [found] = await run<{ endpoint_id: string; disabled_reason: string | null }[]>(
        this.orm,
        `select d.endpoint_id, w.disabled_reason from webhook_deliveries d
           join webhook_endpoints w on w.id = d.endpoint_id
          where d.id = ? and d.account_id = ?`,
        [deliveryId, accountId],
      );
      if (!found) throw deliveryNotFound(deliveryId);
      throw endpointDisabled(found.endpoint_id, found.disabled_reason ?? '');
    }
    await requestDrain(this.drains, updated.endpoint_id);
    const rows = await run<DeliveryRow[]>(
      this.orm,
      `${DELIVERY_SELECT} where d.id = ? and d.account_id = ?`,
      [deliveryId, accountId],
    );
    const [view] = await this.withAttempts(rows);
    if (!view) throw deliveryNotFound(deliveryId); // deleted with its endpoint meanwhile
    return view;
  }

  /**
   * Every `failed` delivery of the endpoint created at or after `since` back to `pending`, due now (one
   * statement); the workers are asked to drain the endpoint. A disabled endpoint is a conflict.
   */
  async recover(accountId: string, endpointId: string, since: Date): Promise<number> {
    const [endpoint] = await run<{ enabled: boolean; disabled_reason: string | null }[]>(
      this.orm,
      'select enabled, disabled_reason from webhook_endpoints where id = ? and account_id = ?',
      [endpointId, accountId],
    );
    if (!endpoint) throw endpointNotFound(endpointId);
    if (!endpoint.enabled) throw endpointDisabled(endpointId, endpoint.disabled_reason ?? '');
    const [counted] = await run<{ n: number }[]>(
      this.orm,
      `with recovered as (
         update webhook_deliveries set status = 'pending', next_attempt_at = ?::timestamptz
          where endpoint_id = ? and account_id = ? and status = 'failed' and created_at >= ?::timestamptz
          returning 1)
       select count(*)::int as n from recovered`,
      [new Date().toISOString(), endpointId, accountId, since.toISOString()],
    );
    const n = counted?.n ?? 0;
    if (n > 0) await requestDrain(this.drains, endpointId);
    return n;
  }

  /** The deliveries with their last attempts, newest first: one query for all of them. */
  private async withAttempts(rows: readonly DeliveryRow[]): Promise<DeliveryView[]> {
    const byDelivery = new Map<string, AttemptView[]>();
    if (rows.length > 0) {
      const attempts = await run<AttemptRow[]>(
        this.orm,
        `select d.id as delivery_id, a.attempted_at, a.status_code, a.latency_ms, a.error, a.response_body
           from jsonb_array_elements_text(?::jsonb) as d(id)
           cross join lateral (
             select attempted_at, status_code, latency_ms, error, response_body from webhook_attempts
              where delivery_id = d.id order by attempted_at desc, id desc limit ?) a`,
        [JSON.stringify(rows.map((r) => r.id)), ATTEMPT_LOG_SIZE],
      );
      for (const a of attempts) {
        const log = byDelivery.get(a.delivery_id) ?? [];
        log.push({
          attemptedAt: time(a.attempted_at),
          statusCode: a.status_code,
          latencyMs: a.latency_ms,
          error: a.error,
          responseBody: a.response_body,
        });
        byDelivery.set(a.delivery_id, log);
      }
    }
    return rows.map((r) => ({
      id: r.id,
      endpointId: r.endpoint_id,
      eventId: r.event_id,
      eventType: r.event_type,
      eventSeq: Number(r.event_seq),
      status: r.status,
      attempts: r.attempts,
      nextAttemptAt: timeOrNull(r.next_attempt_at),
      lastAttemptAt: timeOrNull(r.last_attempt_at),
      lastStatusCode: r.last_status_code,
      lastError: r.last_error,
      createdAt: time(r.created_at),
      succeededAt: timeOrNull(r.succeeded_at),
      attemptLog: byDelivery.get(r.id) ?? [],
    }));
  }
}
