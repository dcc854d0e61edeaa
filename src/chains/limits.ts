import type { RedisClient } from '../platform/redis.js';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** A counting semaphore whose waiters give up at a deadline. Slots pass to waiters in arrival order. */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly limit: number) {}

  get inFlight(): number {
    return this.active;
  }

  /** Resolves true once a slot is held, false if none was free before `deadlineAt` (epoch ms). */
  acquire(deadlineAt: number): Promise<boolean> {
    if (this.active < this.limit) {
      this.active++;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const grant = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(false);
      }, deadlineAt - Date.now());
      this.waiters.push(grant);
    });
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.active--;
  }
}

/** Admission by rate: `take(n)` resolves true when n units may be spent now, false if not before the deadline. */
export interface RateGate {
  take(n: number, deadlineAt: number): Promise<boolean>;
}

/** Told of each `take` that had to wait for the rate, with the seconds it waited in all (metrics). */
export type RateWaitObserver = (seconds: number) => void;

export const unlimited: RateGate = { take: () => Promise.resolve(true) };

/**
 * A local token bucket (capacity = one second's worth). A caller reserves its tokens at once, going into
 * debt if needed, and waits for the debt to be repaid: callers are served in arrival order without a queue.
 * A caller that could not be served before its deadline reserves nothing.
 */
export class TokenBucket implements RateGate {
  private tokens: number;
  private last = performance.now();

  constructor(
    private readonly perSecond: number,
    private readonly onWait?: RateWaitObserver,
  ) {
    this.tokens = perSecond;
  }

  async take(n: number, deadlineAt: number): Promise<boolean> {
    const units = Math.min(n, this.perSecond);
    const now = performance.now();
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.last) * this.perSecond) / 1000);
    this.last = now;
    const waitMs = this.tokens >= units ? 0 : ((units - this.tokens) * 1000) / this.perSecond;
    if (waitMs > 0 && Date.now() + waitMs >= deadlineAt) return false;
    this.tokens -= units;
    if (waitMs > 0) {
      const slept = performance.now();
      await sleep(waitMs);
      this.onWait?.((performance.now() - slept) / 1000);
    }
    return true;
  }
}

/**
 * A per-second window counted in Redis, so every replica draws from one budget per provider URL. While
 * Redis is unreachable the same limit applies per process (the insurance limiter): provider calls keep
 * flowing rather than failing on a dependency they do not need.
 */
export class RedisRateGate implements RateGate {
  private readonly limiter: RateLimiterRedis;

  constructor(
    redis: RedisClient,
    keyPrefix: string,
    private readonly key: string,
    private readonly perSecond: number,
    private readonly onWait?: RateWaitObserver,
  ) {
    this.limiter = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix,
      points: perSecond,
      duration: 1,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new RateLimiterMemory({ points: perSecond, duration: 1 }),
    });
  }

  async take(n: number, deadlineAt: number): Promise<boolean> {
    const units = Math.min(n, this.perSecond);
    let waitedMs = 0;
    try {
      for (;;) {
        try {
          await this.limiter.consume(this.key, units);
          return true;
        } catch (err) {
          if (!(err instanceof RateLimiterRes)) throw err;
          // A few ms of jitter so that waiting replicas do not all hit the next window's first instant.
          const waitMs = err.msBeforeNext + Math.random() * 20;
          if (Date.now() + waitMs >= deadlineAt) return false;
          const slept = performance.now();
          await sleep(waitMs);
          waitedMs += performance.now() - slept;
        }
      }
    } finally {
      if (waitedMs > 0) this.onWait?.(waitedMs / 1000);
    }
  }
}

export type CircuitState = 'closed' | 'open' | 'half_open';

/**
 * Per provider URL: opens after `threshold` consecutive failures; after a cool-down one probe may pass
 * (half-open); its success closes the circuit, its failure opens it again for twice the last cool-down.
 * The first cool-down is short (`cooldownMinMs`) so a provider that comes back is used again within about
 * that long; one that stays down is probed ever less often, never more than once per `cooldownMaxMs`.
 */
export class CircuitBreaker {
  private current: CircuitState = 'closed';
  private failures = 0;
  private openUntil = 0;
  private probing = false;
  /** Cool-downs in a row without a success: the next one lasts min × 2^opens, capped at max. */
  private opens = 0;

  constructor(
    private readonly threshold: number,
    private readonly cooldown: { cooldownMinMs: number; cooldownMaxMs: number },
    private readonly onChange: (state: CircuitState) => void,
  ) {}

  get state(): CircuitState {
    return this.current;
  }

  /** Whether a request may go now; in half-open state this admits the single probe. */
  tryPass(now: number): boolean {
    if (this.current === 'closed') return true;
    if (this.probing || now < this.openUntil) return false;
    this.set('half_open');
    this.probing = true;
    return true;
  }

  /** When a request could pass next (Infinity while a probe is out). */
  nextPassAt(now: number): number {
    if (this.current === 'closed') return now;
    return this.probing ? Infinity : Math.max(now, this.openUntil);
  }

  success(): void {
    this.failures = 0;
    this.opens = 0;
    this.probing = false;
    this.set('closed');
  }

  failure(now: number): void {
    this.failures++;
    this.probing = false;
    if (this.current === 'half_open' || this.failures >= this.threshold) {
      const { cooldownMinMs, cooldownMaxMs } = this.cooldown;
      this.openUntil = now + Math.min(cooldownMaxMs, cooldownMinMs * 2 ** Math.min(this.opens, 30));
      this.opens++;
      this.set('open');
    }
  }

  /** A passed request that proved nothing (rate limited, or never sent): the next one may probe. */
  release(): void {
    this.probing = false;
  }

  private set(state: CircuitState): void {
    if (state === this.current) return;
    this.current = state;
    this.onChange(state);
  }
}
