import type { Context } from 'koa';
import type { RedisClient } from '../../platform/redis.js';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { AppError } from '../../platform/errors.js';
import { apiKeyOf } from '../state.js';

/** Points a replica may take from Redis at once for one key. */
const MAX_RESERVATION = 50;
/** A reservation is at most this share of what Redis last said was left in the window. */
const RESERVATION_SHARE = 100;

export interface RateDecision {
  allowed: boolean;
  /** What is left of the key's quota in this window, as this replica knows it. */
  remaining: number;
  /** Milliseconds until the window resets. */
  resetMs: number;
}

interface Reservation {
  /** Points taken from Redis and not yet handed to a request. */
  left: number;
  /** The size of the last reservation: a refill is asked for once fewer than half of it are left. */
  size: number;
  /** What Redis said was left for everyone after the reservation. */
  redisRemaining: number;
  /** performance.now() when the Redis window (and with it the reservation) ends. */
  resetAt: number;
  /** Redis refused this window: every call is refused until it ends. */
  refused: boolean;
}

/** Calls counted per key and window in Redis; the quota is applied here, so a changed quota keeps the count. */
const NO_LIMIT = 2 ** 31 - 1;
/** Reservations this large are refilled ahead, in the background; smaller ones (small quotas) are not. */
const REFILL_AHEAD_MIN = 10;
/** Two answers of Redis whose window ends this close together are about the same window. */
const SAME_WINDOW_MS = 1000;

/**
 * Per-key fixed one-minute windows counted in Redis (rate-limiter-flexible's atomic INCRBY + TTL script),
 * so every replica shares one count.
 *
 * A replica does not ask Redis once per request: it reserves a few points at a time — 1 % of what Redis last
 * said was left in the window, between 1 and 50 — and hands them out from memory until they are used or
 * the window ends. Near the limit the reservations shrink to single points, so a small quota (3/min) is
 * counted call by call and a large one costs one Redis round trip per ≤ 50 calls. A reservation of 10 or
 * more is refilled ahead: once fewer than half its points are left, the next one is asked for in the
 * background, so a steady stream of calls never waits on Redis. A reservation that overshoots the limit is
 * granted only up to the limit, so all replicas together never admit more than the quota; what a replica
 * holds unused when its traffic stops is at most 1 % of the remaining quota (twice that with a refill in
 * hand) and ends with the window. Concurrent requests of one key wait for one reservation instead of racing,
 * and a key Redis refused is refused from memory until its window ends (a fixed window cannot reopen
 * earlier). The count is per key whatever the quota: a quota lowered mid-window counts what was already used.
 * Redis unreachable → the error reaches every waiting request (503); only points already reserved are served.
 */
export class ReservingRateLimiter {
  private readonly counter: RateLimiterRedis;
  private readonly reservations = new Map<string, Reservation>();
  private readonly pending = new Map<string, Promise<RateDecision>>();
  private nextSweep = 0;

  constructor(redis: RedisClient, keyPrefix: string) {
    this.counter = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${keyPrefix}rl`,
      points: NO_LIMIT,
      duration: 60,
      rejectIfRedisNotReady: true,
    });
  }

  /** Takes one point of `quota` per minute for `key`: from memory when a reservation has one, else from Redis. */
  take(key: string, quota: number): RateDecision | Promise<RateDecision> {
    // Remembered per quota: a raised quota asks Redis again at once instead of staying refused.
    const id = `${quota}:${key}`;
    const now = performance.now();
    const r = this.reservations.get(id);
    if (r && r.resetAt > now) {
      if (r.refused) return { allowed: false, remaining: 0, resetMs: r.resetAt - now };
      if (r.left > 0) {
        r.left--;
        if (r.size >= REFILL_AHEAD_MIN && r.left < r.size / 2 && !this.pending.has(id))
          this.refill(key, quota, id, r);
        return { allowed: true, remaining: r.redisRemaining + r.left, resetMs: r.resetAt - now };
      }
    }
    return this.reserve(key, quota, id, r);
  }

  private async reserve(
    key: string,
    quota: number,
    id: string,
    previous: Reservation | undefined,
  ): Promise<RateDecision> {
    const waiting = this.pending.get(id);
    if (waiting) {
      await waiting; // a failed reservation fails its waiters too: one Redis error, not one per request
      return this.take(key, quota);
    }
    const fetching = this.fetch(key, quota, id, previous, true);
    this.pending.set(id, fetching);
    try {
      return await fetching;
    } finally {
      this.pending.delete(id);
    }
  }

  /** The next reservation, asked for in the background; calls that run out meanwhile wait for it. */
  private refill(key: string, quota: number, id: string, current: Reservation): void {
    const fetching = this.fetch(key, quota, id, current, false);
    this.pending.set(id, fetching);
    fetching.then(
      () => this.pending.delete(id),
      () => this.pending.delete(id), // its waiters get the error; nobody else is waiting on it
    );
  }

  /**
   * Reserves points in Redis. With `forRequest`, one of them goes to the request asking; the rest join the
   * key's reservation when Redis still counts the same window, or replace it when a new window began.
   */
  private async fetch(
    key: string,
    quota: number,
    id: string,
    previous: Reservation | undefined,
    forRequest: boolean,
  ): Promise<RateDecision> {
    const known = previous && previous.resetAt > performance.now() ? previous.redisRemaining : quota;
    const size = Math.max(1, Math.min(MAX_RESERVATION, Math.floor(known / RESERVATION_SHARE)));
    const res = await this.counter.consume(key, size);
    const now = performance.now();
    // Redis added `size` to the count; whatever went past the quota is not granted.
    const granted = Math.max(0, Math.min(size, quota - (res.consumedPoints - size)));
    const redisRemaining = Math.max(0, quota - res.consumedPoints);
    const resetAt = now + res.msBeforeNext;
    const mine = forRequest && granted > 0 ? 1 : 0;
    if (now >= this.nextSweep) this.sweep(now);
    const current = this.reservations.get(id);
    if (current && current.resetAt > now && Math.abs(current.resetAt - resetAt) < SAME_WINDOW_MS) {
      current.left += granted - mine;
      current.size = size;
      current.redisRemaining = redisRemaining;
      current.refused = current.left === 0 && granted === 0;
    } else
      this.reservations.set(id, {
        left: granted - mine,
        size,
        redisRemaining,
        resetAt,
        refused: granted === 0,
      });
    const left = this.reservations.get(id)!.left;
    if (forRequest && granted === 0) return { allowed: false, remaining: 0, resetMs: res.msBeforeNext };
    return { allowed: true, remaining: redisRemaining + left, resetMs: res.msBeforeNext };
  }

  /**
   * Takes `points` more at once (a bulk call's cost beyond its first point). When they do not fit in what
   * is left of the window they are given back and the call is refused: a refused call costs nothing more.
   */
  async takeMore(key: string, quota: number, points: number): Promise<RateDecision> {
    const res = await this.counter.consume(key, points);
    if (res.consumedPoints <= quota)
      return { allowed: true, remaining: quota - res.consumedPoints, resetMs: res.msBeforeNext };
    await this.counter.reward(key, points);
    return { allowed: false, remaining: 0, resetMs: res.msBeforeNext };
  }

  /** Forgets ended windows, at most once a minute. */
  private sweep(now: number): void {
    this.nextSweep = now + 60_000;
    for (const [id, r] of this.reservations) if (r.resetAt <= now) this.reservations.delete(id);
  }
}

/**
 * The entitlement's `rate_limit_per_min` per API key. Headers follow the IETF httpapi RateLimit draft:
 * `RateLimit-Policy: "default";q=600;w=60` and `RateLimit: "default";r=599;t=42`. Redis down → 503
 * (never unlimited).
 */
export function rateLimiter(limiter: ReservingRateLimiter) {
  const apply = (ctx: Context, quota: number, decision: RateDecision): void => {
    const resetS = Math.max(1, Math.ceil(decision.resetMs / 1000));
    const policy = `"default";q=${quota};w=60`;
    const state = `"default";r=${decision.remaining};t=${resetS}`;
    if (!decision.allowed)
      throw new AppError('rate_limited', `This key is limited to ${quota} requests per minute.`, {
        headers: { 'RateLimit-Policy': policy, RateLimit: state, 'Retry-After': String(resetS) },
      });
    ctx.set('RateLimit-Policy', policy);
    ctx.set('RateLimit', state);
  };
  return {
    /** A step of a route's handler (src/http/app.ts): synchronous while the key's reservation lasts. */
    take: (ctx: Context): void | Promise<void> => {
      const principal = apiKeyOf(ctx);
      const quota = principal.rateLimitPerMin;
      const taken = limiter.take(principal.keyId, quota);
      if (taken instanceof Promise) return taken.then((decision) => apply(ctx, quota, decision));
      apply(ctx, quota, taken);
    },
    /** The extra points of a route with a `rateCost`, once its body is validated. */
    takeMore: async (ctx: Context, points: number): Promise<void> => {
      const principal = apiKeyOf(ctx);
      const quota = principal.rateLimitPerMin;
      apply(ctx, quota, await limiter.takeMore(principal.keyId, quota, points));
    },
  };
}
