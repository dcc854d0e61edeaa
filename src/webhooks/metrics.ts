import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What the webhook backlog gauges read at scrape time (cached briefly: one query for both). */
export interface WebhookBacklog {
  /** Seconds the oldest due pending delivery has waited past its due time (0 when none is due). */
  oldestDueS: number;
  pending: number;
  endpointsDisabled: number;
}

const BACKLOG_TTL_MS = 5_000;

/** Webhook delivery metrics of a worker process; the backlog gauges are the same on every worker. */
export class WebhookMetrics {
  readonly attempts: Counter<'outcome'>;
  readonly latency: Histogram;
  readonly eventToReceipt: Histogram;
  readonly disabled: Counter;
  readonly deferred: Counter;

  constructor(registry: Registry, backlog: () => Promise<WebhookBacklog>) {
    let cached: { at: number; value: Promise<WebhookBacklog> } | undefined;
    const read = (): Promise<WebhookBacklog> => {
      if (!cached || Date.now() - cached.at > BACKLOG_TTL_MS) cached = { at: Date.now(), value: backlog() };
      return cached.value;
    };
    const gauge = (name: string, help: string, pick: (b: WebhookBacklog) => number) =>
      new Gauge({
        name,
        help,
        registers: [registry],
        async collect() {
          this.set(pick(await read()));
        },
      });
    gauge(
      'riskwatch_webhook_oldest_due_seconds',
      'Seconds the oldest due webhook delivery has waited past its due time (0: none is waiting).',
      (b) => b.oldestDueS,
    );
    gauge(
      'riskwatch_webhook_pending_deliveries',
      'Webhook deliveries not yet succeeded nor given up.',
      (b) => b.pending,
    );
    gauge(
      'riskwatch_webhook_endpoints_disabled',
      'Webhook endpoints disabled (410, or failing too long).',
      (b) => b.endpointsDisabled,
    );
    this.attempts = new Counter({
      name: 'riskwatch_webhook_attempts_total',
      help: 'Webhook delivery attempts, by outcome (succeeded, gone, http_429, http_3xx/4xx/5xx, timeout, ssrf_blocked, connection_refused, …).',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.latency = new Histogram({
      name: 'riskwatch_webhook_attempt_duration_seconds',
      help: 'Duration of one webhook delivery attempt, until the receiver answered (or the attempt failed).',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
      registers: [registry],
    });
    this.eventToReceipt = new Histogram({
      name: 'riskwatch_webhook_event_to_receipt_seconds',
      help: 'From an event being written to its successful delivery.',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400],
      registers: [registry],
    });
    this.disabled = new Counter({
      name: 'riskwatch_webhook_endpoint_disablements_total',
      help: 'Webhook endpoints disabled by the deliverer (410 Gone, or failing longer than the setting).',
      registers: [registry],
    });
    this.deferred = new Counter({
      name: 'riskwatch_webhook_drains_deferred_total',
      help: 'Endpoint drains put back for half a second because their account held its share of the drain slots.',
      registers: [registry],
    });
  }
}
