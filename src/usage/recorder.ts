import type { Context, Next } from 'koa';
import type { Redis } from 'ioredis';
import { apiKeyOf } from '../http/state.js';
import { newId } from '../platform/ids.js';
import type { Logger } from '../platform/logger.js';

export interface UsageEntry {
  id: string;
  account_id: string;
  api_key_id: string;
  api_key_prefix: string;
  method: string;
  endpoint: string;
  status: number;
  latency_ms: number;
  request_id: string;
  at: string;
}

export const usageStreamKey = (prefix: string) => `${prefix}usage:stream`;

/**
 * The API side of usage recording: one XADD to a Redis stream when a call finishes, after the response
 * is on its way, so recording adds no database write to the request path. The worker's UsageDrain moves
 * entries into PostgreSQL. An XADD that fails (Redis blip) is kept in memory and retried; `flush()` on
 * graceful shutdown waits until every entry is in the stream.
 */
export class UsageRecorder {
  private readonly inflight = new Set<Promise<void>>();
  private readonly retry: UsageEntry[] = [];
  private readonly timer: NodeJS.Timeout;
  private static readonly RETRY_MAX = 100_000;

  constructor(
    private readonly redis: Redis,
    private readonly streamKey: string,
    private readonly logger: Logger,
  ) {
    this.timer = setInterval(() => this.retryFailed(), 1000);
    this.timer.unref();
  }

  record(entry: UsageEntry): void {
    const write = this.redis
      .xadd(this.streamKey, '*', 'r', JSON.stringify(entry))
      .then(() => undefined)
      .catch((err: Error) => {
        if (this.retry.length < UsageRecorder.RETRY_MAX) this.retry.push(entry);
        else this.logger.error({ usage_id: entry.id }, 'usage retry buffer full; entry dropped');
        this.logger.warn({ err: { message: err.message } }, 'usage record deferred: Redis write failed');
      })
      .finally(() => this.inflight.delete(write));
    this.inflight.add(write);
  }

  private retryFailed(): void {
    for (const entry of this.retry.splice(0, 1000)) this.record(entry);
  }

  get backlog(): number {
    return this.inflight.size + this.retry.length;
  }

  /** Waits until every recorded call is in the stream (or the deadline passes). */
  async flush(deadlineMs: number): Promise<void> {
    const until = Date.now() + deadlineMs;
    while (this.backlog > 0 && Date.now() < until) {
      this.retryFailed();
      await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, 200))]);
    }
    clearInterval(this.timer);
    if (this.backlog > 0)
      this.logger.error({ lost: this.backlog }, 'usage entries not recorded before shutdown');
  }

  /** Koa middleware for `/api/v1/*`: records each authenticated call with its final status. */
  middleware() {
    return async (ctx: Context, next: Next) => {
      const principal = apiKeyOf(ctx);
      const started = ctx.state.startedAt;
      ctx.res.once('close', () => {
        this.record({
          id: newId('use'),
          account_id: principal.accountId,
          api_key_id: principal.keyId,
          api_key_prefix: principal.keyPrefix,
          method: ctx.method,
          endpoint: ctx.state.route ?? ctx.path,
          status: ctx.status,
          latency_ms: Math.round(performance.now() - started),
          request_id: ctx.state.requestId,
          at: new Date().toISOString(),
        });
      });
      await next();
    };
  }
}
