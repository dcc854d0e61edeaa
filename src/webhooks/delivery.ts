import { Webhook } from 'standardwebhooks';
import type { EventLog } from '../events/log.js';
import { newId } from '../platform/ids.js';
import type { Logger } from '../platform/logger.js';
import { isDeliveryFailure, type DeliveryResult, type WebhookHttpClient } from './http.js';
import type { WebhookBacklog, WebhookMetrics } from './metrics.js';
import type { DrainRequests } from './endpoints.js';
import type { WebhookRepository } from './repository.js';
import type { DueRow } from './repository/deliveries.js';
import type { SendingEndpointRow } from './repository/endpoints.js';
import { DrainSlots } from './drain-slots.js';
import { endpointSecretContext, SecretOpenError, type SecretBox } from './secrets.js';
import { classify, loggedBody, outcomeLabel, type Outcome } from './outcome.js';
import type { WebhooksSettings } from './settings.js';

/*
 * Sending (README, "Webhooks and the event log"). The sweep (every few seconds) asks for a drain of every
 * endpoint with deliveries due; a drain sends one endpoint's due deliveries one after the other in the order
 * of their events' sequence, so a slow endpoint holds one worker slot and never another endpoint's
 * deliveries. Every attempt carries the Standard Webhooks headers (`webhook-id` = the event's id, the same
 * on every attempt, so receivers de-duplicate), is logged, and ends as:
 *
 *   2xx                → succeeded
 *   410 Gone           → the endpoint is disabled (the receiver says it is gone for good)
 *   429 / 503          → retried after its Retry-After (capped), else the schedule
 *   anything else      → retried on the schedule (`webhooks.retry_schedule_s`, with jitter); past its end,
 *                        failed (redeliver or recover it by hand)
 *
 * When an attempt fails, the endpoint's other due deliveries wait for the same time (it is down: they would
 * fail too, and this keeps them in order). An endpoint whose every attempt failed for
 * `webhooks.disable_after_failing_s` is disabled with a `webhook.endpoint_disabled` event.
 */

/** Deliveries read per round of a drain. */
const DRAIN_BATCH = 50;

export interface WebhookDelivererDeps {
  /** Webhooks' tables. */
  repo: WebhookRepository;
  /** Where the sweep asks for drains (webhooks' fan-out). */
  drains: DrainRequests;
  http: WebhookHttpClient;
  logger: Logger;
  settings: WebhooksSettings;
  userAgent: string;
  /** Opens the signing secrets, stored sealed (secrets.ts). */
  secrets: SecretBox;
  /** Where a `webhook.endpoint_disabled` event is appended. */
  events: EventLog;
}

/** An endpoint as a drain uses it: its secrets opened. */
type EndpointRow = SendingEndpointRow;

/** A delivery due whose event is still in the log. */
type LiveDueRow = DueRow & { type: NonNullable<DueRow['type']> };

export class WebhookDeliverer {
  private metrics: WebhookMetrics | undefined;
  /** The secrets problems already logged by this process: each is logged once. */
  private readonly warned = new Set<string>();
  private readonly slots: DrainSlots;

  constructor(private readonly deps: WebhookDelivererDeps) {
    this.slots = new DrainSlots(deps.settings.delivery_concurrency);
  }

  /** Metrics of this process (workers only). */
  useMetrics(metrics: WebhookMetrics): void {
    this.metrics = metrics;
  }

  /** The backlog gauges' numbers. */
  async backlog(): Promise<WebhookBacklog> {
    const { pending, oldestDue, disabled } = await this.deps.repo.deliveries.backlog();
    const oldest = oldestDue ? oldestDue.getTime() : Date.now();
    return { pending, oldestDueS: Math.max(0, (Date.now() - oldest) / 1000), endpointsDisabled: disabled };
  }

  /** Every enabled endpoint with a delivery due gets one pending drain. */
  async sweep(now = new Date()): Promise<number> {
    const endpoints = await this.deps.repo.deliveries.endpointsDue(now);
    for (const id of endpoints) await this.deps.drains.requestDrain(id);
    return endpoints.length;
  }

  /**
   * Sends the endpoint's due deliveries in sequence order until none is due or one fails. It re-reads what is
   * due after each batch, so events written while it runs are sent by it (their own drain request is folded
   * into this job); one committed just as it finishes waits for the next sweep. A delivery whose event was
   * pruned meanwhile is closed as `expired`, never left pending.
   *
   * Fair between accounts: a drain holds one of this process's `delivery_concurrency` slots while it runs.
   * An account's first drain starts whenever a slot is free; a second and further ones of the same account
   * only while more than a quarter of the slots stay free for other accounts. A drain that may not start
   * answers `deferred` (the worker runs it again shortly), so endpoints that answer slowly hold at most
   * three quarters of the slots, and another account's deliveries always find one.
   */
  async drain(endpointId: string): Promise<{ attempted: number; succeeded: number } | 'deferred'> {
    const first = await this.endpoint(endpointId);
    if (!first?.enabled) return { attempted: 0, succeeded: 0 };
    if (!this.slots.take(first.account_id)) {
      this.metrics?.deferred.inc();
      return 'deferred';
    }
    try {
      return await this.send(endpointId);
    } finally {
      this.slots.release(first.account_id);
    }
  }

  private async send(endpointId: string): Promise<{ attempted: number; succeeded: number }> {
    let attempted = 0;
    let succeeded = 0;
    for (;;) {
      const endpoint = await this.endpoint(endpointId);
      if (!endpoint?.enabled) break;
      const due = await this.deps.repo.deliveries.due(endpointId, DRAIN_BATCH);
      if (due.length === 0) break;
      let stop = false;
      for (const delivery of due) {
        if (delivery.type === null) {
          await this.deps.repo.deliveries.expire([delivery.id]);
          continue;
        }
        attempted++;
        const outcome = await this.attempt(endpoint, delivery as LiveDueRow);
        if (outcome.kind === 'succeeded') {
          succeeded++;
          continue;
        }
        stop = true;
        break;
      }
      if (stop) break;
    }
    return { attempted, succeeded };
  }

  private async endpoint(id: string): Promise<EndpointRow | undefined> {
    const row = await this.deps.repo.endpoints.forSending(id);
    if (!row) return undefined;
    const secret = this.opened(row.secret, id, 'webhook deliveries held: the secret cannot be opened');
    if (secret === undefined) return undefined;
    const { previous_secret: stored, previous_secret_expires_at: expires } = row;
    const previous =
      stored !== null && expires !== null && new Date(expires) > new Date()
        ? this.opened(stored, id, 'webhook previous secret left out: it cannot be opened')
        : undefined;
    return { ...row, secret, previous_secret: previous ?? null };
  }

  /** A stored secret opened, or undefined with a warning (once per process and problem). */
  private opened(stored: string, endpointId: string, consequence: string): string | undefined {
    try {
      return this.deps.secrets.open(stored, endpointSecretContext(endpointId));
    } catch (err) {
      if (!(err instanceof SecretOpenError)) throw err;
      const key = `${consequence}\n${err.message}`;
      if (!this.warned.has(key)) {
        this.warned.add(key);
        this.deps.logger.warn({ endpoint: endpointId, kid: err.kid, reason: err.message }, consequence);
      }
      return undefined;
    }
  }

  /** One attempt of one delivery: send, log, and move the delivery (and the endpoint) on. */
  private async attempt(endpoint: EndpointRow, delivery: LiveDueRow): Promise<Outcome> {
    const now = new Date();
    const body = JSON.stringify({
      type: delivery.type,
      timestamp: new Date(delivery.event_created_at).toISOString(),
      data: delivery.data,
    });
    const headers = {
      'content-type': 'application/json',
      'user-agent': this.deps.userAgent,
      'webhook-id': delivery.event_id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': this.signatures(endpoint, delivery.event_id, now, body),
    };
    let result: DeliveryResult | undefined;
    let error: string | undefined;
    const started = performance.now();
    try {
      result = await this.deps.http.deliver(endpoint.url, {
        headers,
        body,
        timeoutMs: this.deps.settings.timeout_ms,
        maxResponseBytes: this.deps.settings.max_response_bytes,
      });
    } catch (err) {
      if (!isDeliveryFailure(err)) throw err;
      error = err.code;
    }
    const latencyMs = Math.round(result?.latencyMs ?? performance.now() - started);
    const outcome = classify(result, error, this.deps.settings.retry_after_max_s);
    this.metrics?.attempts.inc({ outcome: outcomeLabel(result, error) });
    this.metrics?.latency.observe(latencyMs / 1000);
    if (outcome.kind === 'succeeded')
      this.metrics?.eventToReceipt.observe(
        (Date.now() - new Date(delivery.event_created_at).getTime()) / 1000,
      );
    await this.record(endpoint, delivery, now, { result, error, latencyMs, outcome });
    return outcome;
  }

  /** `v1,<sig>`, and during a rotation a second one with the previous secret, space-separated. */
  private signatures(endpoint: EndpointRow, msgId: string, at: Date, body: string): string {
    const secrets = [endpoint.secret];
    if (
      endpoint.previous_secret &&
      endpoint.previous_secret_expires_at &&
      new Date(endpoint.previous_secret_expires_at) > at
    )
      secrets.push(endpoint.previous_secret);
    return secrets.map((s) => new Webhook(s).sign(msgId, at, body)).join(' ');
  }

  private async record(
    endpoint: EndpointRow,
    delivery: LiveDueRow,
    now: Date,
    a: { result?: DeliveryResult; error?: string; latencyMs: number; outcome: Outcome },
  ): Promise<void> {
    const { schedule, failing } = this.nextStep(delivery.attempts + 1, a.outcome, now);
    const error =
      a.outcome.kind === 'succeeded' ? null : a.outcome.kind === 'gone' ? 'http_410' : a.outcome.error;
    const failingSince = a.outcome.kind === 'succeeded' ? null : (endpoint.failing_since ?? now);
    const disable =
      a.outcome.kind === 'gone'
        ? 'the receiver answered 410 Gone'
        : failingSince &&
            now.getTime() - new Date(failingSince).getTime() >=
              this.deps.settings.disable_after_failing_s * 1000
          ? `every attempt failed for ${Math.round(this.deps.settings.disable_after_failing_s / 3600)} hours`
          : undefined;
    const succeeded = a.outcome.kind === 'succeeded';
    const afterCommit = await this.deps.repo.transactional(async (em) => {
      await this.deps.repo.deliveries.record(
        em,
        {
          id: newId('wha', now.getTime()),
          accountId: endpoint.account_id,
          deliveryId: delivery.id,
          endpointId: endpoint.id,
          at: now,
          statusCode: a.result?.status ?? null,
          latencyMs: a.latencyMs,
          error,
          responseBody: a.result ? loggedBody(a.result.body) : null,
          status: succeeded ? 'succeeded' : failing ? 'failed' : 'pending',
          nextAttemptAt: succeeded || failing ? null : schedule,
        },
        // The endpoint is failing: its other due deliveries wait with this one, in order.
        !succeeded && schedule ? schedule : null,
      );
      // Only a change of state touches the endpoint row: a healthy endpoint's deliveries never contend on it.
      if ((failingSince === null) !== (endpoint.failing_since === null)) {
        await this.deps.repo.endpoints.setFailingSince(em, endpoint.id, failingSince);
        endpoint.failing_since = failingSince;
      }
      if (!disable) return undefined;
      await this.deps.repo.endpoints.disable(em, endpoint.id, disable, now);
      this.metrics?.disabled.inc();
      this.deps.logger.warn({ endpoint: endpoint.id, reason: disable }, 'webhook endpoint disabled');
      const appended = await this.deps.events.append(
        em,
        [
          {
            accountId: endpoint.account_id,
            type: 'webhook.endpoint_disabled',
            watchlistId: null,
            data: {
              endpoint_id: endpoint.id,
              url: endpoint.url,
              reason: disable,
              disabled_at: now.toISOString(),
            },
          },
        ],
        now,
      );
      return appended.afterCommit;
    });
    await afterCommit?.();
  }

  /** When the next attempt is due, or that there is none (`failing`: the schedule is spent, or 410). */
  private nextStep(
    attemptsDone: number,
    outcome: Outcome,
    now: Date,
  ): { schedule: Date | null; failing: boolean } {
    if (outcome.kind === 'succeeded') return { schedule: null, failing: false };
    if (outcome.kind === 'gone') return { schedule: null, failing: true };
    const waits = this.deps.settings.retry_schedule_s;
    if (attemptsDone > waits.length) return { schedule: null, failing: true };
    const base = waits[attemptsDone - 1]! * 1000;
    const jitter = (base * this.deps.settings.retry_jitter_pct) / 100;
    const wait = outcome.afterMs ?? Math.max(0, base + (Math.random() * 2 - 1) * jitter);
    return { schedule: new Date(now.getTime() + wait), failing: false };
  }
}
