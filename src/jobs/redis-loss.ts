import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../platform/logger.js';

/** How often each worker process looks for the marker. */
const CHECK_MS = 5000;

/** The one key the watch needs: a single key, so it lives in one slot of a Redis Cluster too. */
export const redisMarkerKey = (prefix: string) => `${prefix}redis:marker`;

/** What a recovery re-enqueued, by kind (logged, and in the log line's fields). */
export type Recovered = Record<string, number>;

export interface RedisLossWatchDeps {
  /** Any client with SET … NX (a request-path client: it fails fast while Redis is down). */
  redis: {
    set(key: string, value: string, nx: 'NX'): Promise<'OK' | null>;
    status: string;
    once(event: 'ready', listener: () => void): unknown;
    off(event: 'ready', listener: () => void): unknown;
  };
  prefix: string;
  /** This process, written in the marker (who set it, for someone reading Redis by hand). */
  owner: string;
  logger: Logger;
  /** `riskwatch_redis_loss_detected_total` is registered here. */
  registry: Registry;
  /** Enqueues again, from PostgreSQL, the work whose jobs Redis held; the counts re-enqueued. */
  recover: () => Promise<Recovered>;
  checkMs?: number;
}

/**
 * Notices that Redis lost its data (flushed, or restarted empty: no persistence, a new node) and puts back
 * the jobs that went with it. BullMQ's jobs live only in Redis; what they were doing is in PostgreSQL
 * (screenings queued or running, rescans unfinished), so it can be enqueued again, and every job id is
 * deterministic, so enqueuing again never doubles a job that survived.
 *
 * Every worker process SETs a marker key NX every 5 s. While the marker is there the SET does nothing; the
 * one SET that finds it gone (the first after the loss, across all workers) re-creates it, and that
 * process alone recovers. A recovery that fails (PostgreSQL down) is tried again by the same process at
 * its next check. At start the marker may be missing too (the first worker ever, or Redis lost while no
 * worker ran): the same recovery runs then, logged at info unless it found work, and is not counted.
 *
 * What needs nothing from here: the scheduler's periodic jobs are node-cron timers in its own process (no
 * repeatable job lives in Redis), so its ticks go on; the webhook sweep among them enqueues every due
 * delivery's drain from PostgreSQL every few seconds. The usage drain makes its consumer group again
 * itself (src/usage/drain.ts).
 */
export function startRedisLossWatch(deps: RedisLossWatchDeps): () => Promise<void> {
  const key = redisMarkerKey(deps.prefix);
  const detected = new Counter({
    name: 'riskwatch_redis_loss_detected_total',
    help: 'Times this worker found Redis emptied (its marker key gone) and re-enqueued the lost work from PostgreSQL.',
    registers: [deps.registry],
  });
  let first = true;
  /** Set when this process won the marker and has not yet recovered successfully. */
  let pending: { detectedAt: number; atStart: boolean } | undefined;
  let running: Promise<void> | undefined;

  const check = async () => {
    const atStart = first;
    try {
      const won = await deps.redis.set(key, JSON.stringify({ set_by: deps.owner, at: new Date() }), 'NX');
      first = false;
      if (won === 'OK' && !pending) {
        pending = { detectedAt: Date.now(), atStart };
        if (!atStart) detected.inc();
      }
    } catch {
      // Redis unreachable: nothing to learn until it answers again (a recovery owed is still tried).
    }
    if (pending) await recover(pending);
  };

  const recover = async (loss: { detectedAt: number; atStart: boolean }) => {
    try {
      const counts = await deps.recover();
      pending = undefined;
      const fields = { ...counts, recovery_ms: Date.now() - loss.detectedAt };
      const found = Object.values(counts).some((n) => n > 0);
      if (!loss.atStart)
        deps.logger.warn(fields, 'Redis lost its data (marker gone): work re-enqueued from PostgreSQL');
      else if (found)
        deps.logger.warn(fields, 'Redis empty at start (marker missing): work re-enqueued from PostgreSQL');
      else deps.logger.info(fields, 'Redis marker set');
    } catch (err) {
      deps.logger.warn(
        { err: { message: (err as Error).message } },
        'Redis lost its data: re-enqueuing from PostgreSQL failed; tried again at the next check',
      );
    }
  };

  const tick = () => {
    // One check at a time: a slow recovery is not started twice.
    running ??= check().finally(() => (running = undefined));
  };
  // The first check waits for the connection: one sent before it would fail (no offline queue), and the
  // next one, 5 s later, would take a flush made meanwhile for the marker missing at start (not counted).
  let timer: NodeJS.Timeout | undefined;
  const start = () => {
    tick();
    timer = setInterval(tick, deps.checkMs ?? CHECK_MS);
    timer.unref();
  };
  if (deps.redis.status === 'ready') start();
  else deps.redis.once('ready', start);
  return async () => {
    deps.redis.off('ready', start);
    clearInterval(timer);
    await running;
  };
}
