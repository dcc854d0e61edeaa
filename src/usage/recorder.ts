import type { FinishedCall } from '../http/app.js';
import type { RedisClient } from '../platform/redis.js';
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
  /**
   * The id the response carried (X-Request-Id): the client's own when it sent a well-formed one, the id the
   * customer knows. Log lines show the server-minted id beside it (`request_id` + `client_request_id`).
   */
  request_id: string;
  at: string;
  /**
   * What the call was about (`ctx.state.usageDetail`), only when its handler said: the target of a risk
   * call with its chain and network, the number of targets of a bulk call. Entries written before these
   * fields existed have none; the drain stores null then.
   */
  target?: string;
  chain?: string;
  network?: string;
  targets?: number;
}

export const usageStreamKey = (prefix: string) => `${prefix}usage:stream`;

/** Stream entry field of a batch: a JSON array of UsageEntry. */
export const BATCH_FIELD = 'b';
/** Calls are gathered this long (or up to BATCH_MAX) before one XADD carries them all. */
const FLUSH_MS = 20;
const BATCH_MAX = 200;
const RETRY_MAX = 100_000;
/**
 * Batches sent per second while retrying. Failed batches are merged up to BATCH_MAX entries first: calls
 * made one by one while Redis was down are as many batches of one, and were sent 10 a second (78 calls
 * took 11.8 s to reach the stream after Redis returned); merged, 100,000 entries take 20 s at most.
 */
const RETRY_BATCHES_PER_S = 25;
/** usage_records.targets is an int. */
const INT_MAX = 2 ** 31 - 1;

/**
 * The API side of usage recording. Each finished API-key call becomes an entry in memory; every 20 ms (or
 * 200 calls) one XADD puts the gathered entries on a Redis stream as one batch, so recording adds no
 * database write and no Redis command per request. The worker's UsageDrain moves them into PostgreSQL.
 * A batch whose XADD fails (Redis blip) is kept in memory and retried every second, merged with the other
 * failed ones; `flush()` on graceful shutdown waits until every entry is in the stream. A crash (SIGKILL)
 * loses at most the last 20 ms.
 */
export class UsageRecorder {
  private buffer: UsageEntry[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly inflight = new Map<Promise<void>, number>();
  private readonly retry: UsageEntry[][] = [];
  private retrying = 0;
  private readonly retryTimer: NodeJS.Timeout;

  constructor(
    private readonly redis: RedisClient,
    private readonly streamKey: string,
    private readonly logger: Logger,
  ) {
    this.retryTimer = setInterval(() => this.retryFailed(), 1000);
    this.retryTimer.unref();
  }

  /** Records a finished call of an API-key route; its id and time are minted now. */
  recordCall(call: FinishedCall): void {
    const entry: UsageEntry = {
      id: newId('use'),
      account_id: call.accountId,
      api_key_id: call.apiKeyId,
      api_key_prefix: call.apiKeyPrefix,
      method: call.method,
      endpoint: call.endpoint,
      status: call.status,
      latency_ms: Math.round(call.latencyMs),
      request_id: call.requestId,
      at: new Date().toISOString(),
    };
    const d = call.detail;
    if (d) {
      // Fields set only when given: a call about nothing stays the entry it always was.
      if (d.target) entry.target = d.target;
      if (d.chain) entry.chain = d.chain;
      if (d.network) entry.network = d.network;
      const n = d.targets;
      if (n !== undefined && Number.isInteger(n) && n >= 0 && n <= INT_MAX) entry.targets = n;
    }
    this.record(entry);
  }

  record(entry: UsageEntry): void {
    this.buffer.push(entry);
    if (this.buffer.length >= BATCH_MAX) this.sendBuffer();
    else if (!this.flushTimer) {
      this.flushTimer = setTimeout(() => this.sendBuffer(), FLUSH_MS);
      this.flushTimer.unref();
    }
  }

  private sendBuffer(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    this.send(batch);
  }

  private send(batch: UsageEntry[]): void {
    const write = this.redis
      .xadd(this.streamKey, '*', BATCH_FIELD, JSON.stringify(batch))
      .then(() => undefined)
      .catch((err: Error) => {
        if (this.retrying + batch.length <= RETRY_MAX) {
          this.retry.push(batch);
          this.retrying += batch.length;
        } else this.logger.error({ lost: batch.length }, 'usage retry buffer full; entries dropped');
        this.logger.warn({ err: { message: err.message } }, 'usage record deferred: Redis write failed');
      })
      .finally(() => this.inflight.delete(write));
    this.inflight.set(write, batch.length);
  }

  /** Sends the failed batches again, oldest first, merged into batches of up to BATCH_MAX entries. */
  private retryFailed(): void {
    for (let sent = 0; sent < RETRY_BATCHES_PER_S && this.retry.length > 0; sent++) {
      let take = 0;
      let entries = 0;
      // At least one batch, however large (a batch is at most BATCH_MAX anyway).
      do entries += this.retry[take++]!.length;
      while (take < this.retry.length && entries + this.retry[take]!.length <= BATCH_MAX);
      const merged = this.retry.splice(0, take).flat();
      this.retrying -= merged.length;
      this.send(merged);
    }
  }

  /** Calls not yet in the stream: gathered, being written, or waiting to be retried. */
  get backlog(): number {
    let writing = 0;
    for (const n of this.inflight.values()) writing += n;
    return this.buffer.length + writing + this.retrying;
  }

  /** Waits until every recorded call is in the stream (or the deadline passes). */
  async flush(deadlineMs: number): Promise<void> {
    const until = Date.now() + deadlineMs;
    this.sendBuffer();
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    while (this.backlog > 0 && Date.now() < until) {
      this.retryFailed();
      await Promise.race([Promise.allSettled([...this.inflight.keys()]), pause(200)]);
      // Redis refusing at once (it is down): try again in a moment, not in a tight loop.
      if (this.retry.length > 0) await pause(200);
    }
    clearInterval(this.retryTimer);
    if (this.backlog > 0)
      this.logger.error({ lost: this.backlog }, 'usage entries not recorded before shutdown');
  }
}
