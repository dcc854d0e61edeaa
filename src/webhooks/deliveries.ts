import type { Actor } from '../audit/actor.js';
import { time, timeOrNull } from '../db/sql.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { notFound } from '../platform/errors.js';
import { clip } from '../chains/registry.js';
import { auditRecovered, auditRedelivered } from './audit.js';
import type { DeliveryStatus } from './entities.js';
import { endpointDisabled, endpointNotFound, requestDrain, type DrainRequests } from './endpoints.js';
import type { WebhookRepository } from './repository.js';
import type { DeliveryRow } from './repository/deliveries.js';
import { ATTEMPT_LOG_SIZE, type DeliveriesQuery } from './schemas.js';

/*
 * An account's delivery log (webhook_deliveries with their webhook_attempts), redelivery and recovery. The
 * deliveries are written by webhooks' fan-out (fan-out.ts) and moved on by the delivery workers
 * (delivery.ts); here they are read and made due again, and the workers are asked to drain the endpoint.
 * Every query names the caller's account, so another account's id is simply not found. Both changes are
 * audited (audit.ts) in their transaction.
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

const deliveryNotFound = (id: string) => notFound(`Webhook delivery "${clip(id)}"`);

/** The delivery log of an account, redelivery and recovery. Every query is scoped to the account. */
export class WebhookDeliveriesService {
  constructor(
    private readonly repo: WebhookRepository,
    /** Where drains are asked for; absent where nothing is to be sent. */
    private readonly drains?: DrainRequests,
  ) {}

  /** One page of the account's deliveries, newest first, each with its last attempts. Two queries. */
  async listDeliveries(accountId: string, q: DeliveriesQuery): Promise<Page<DeliveryView>> {
    const rows = await this.repo.deliveries.page(accountId, q);
    return keysetPage(await this.withAttempts(rows), q.limit, (d) => ({
      at: d.createdAt.toISOString(),
      id: d.id,
    }));
  }

  /**
   * Sends a delivery again: `pending`, due now (its attempts and their log are kept), and the workers are
   * asked to drain its endpoint. A delivery of a disabled endpoint is a conflict.
   */
  async redeliver(accountId: string, deliveryId: string, actor: Actor): Promise<DeliveryView> {
    const now = new Date();
    const updated = await this.repo.transactional(async (em) => {
      const found = await this.repo.deliveries.lockForRedelivery(em, accountId, deliveryId);
      if (!found) throw deliveryNotFound(deliveryId);
      if (!found.enabled) throw endpointDisabled(found.endpoint_id, found.disabled_reason ?? '');
      await this.repo.deliveries.redeliver(em, deliveryId, now);
      await auditRedelivered(em, actor, accountId, found);
      return found;
    });
    await requestDrain(this.drains, updated.endpoint_id);
    const row = await this.repo.deliveries.get(accountId, deliveryId);
    if (!row) throw deliveryNotFound(deliveryId); // deleted with its endpoint meanwhile
    return (await this.withAttempts([row]))[0]!;
  }

  /**
   * Every `failed` delivery of the endpoint created at or after `since` back to `pending`, due now (one
   * statement); the workers are asked to drain the endpoint. A disabled endpoint is a conflict.
   */
  async recover(accountId: string, endpointId: string, since: Date, actor: Actor): Promise<number> {
    const n = await this.repo.transactional(async (em) => {
      const endpoint = await this.repo.endpoints.state(accountId, endpointId, em);
      if (!endpoint) throw endpointNotFound(endpointId);
      if (!endpoint.enabled) throw endpointDisabled(endpointId, endpoint.disabled_reason ?? '');
      const recovered = await this.repo.deliveries.recover(em, accountId, endpointId, since, new Date());
      if (recovered > 0) await auditRecovered(em, actor, accountId, endpointId, { since, recovered });
      return recovered;
    });
    if (n > 0) await requestDrain(this.drains, endpointId);
    return n;
  }

  /** The deliveries with their last attempts, newest first: one query for all of them. */
  private async withAttempts(rows: readonly DeliveryRow[]): Promise<DeliveryView[]> {
    const byDelivery = new Map<string, AttemptView[]>();
    if (rows.length > 0) {
      const attempts = await this.repo.deliveries.attempts(
        rows.map((r) => r.id),
        ATTEMPT_LOG_SIZE,
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
