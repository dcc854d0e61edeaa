import type { Context, Next } from 'koa';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../../platform/errors.js';
import { apiKeyOf } from '../state.js';

/**
 * Per-key limit of the entitlement's `rate_limit_per_min`, counted in Redis so every replica shares it.
 * Headers follow the IETF httpapi RateLimit draft: `RateLimit-Policy: "default";q=600;w=60` and
 * `RateLimit: "default";r=599;t=42`. Redis down → the call is refused with 503 (never unlimited).
 */
export function rateLimitMiddleware(redis: Redis, keyPrefix: string) {
  const limiters = new Map<number, RateLimiterRedis>();
  const limiterFor = (points: number) => {
    let limiter = limiters.get(points);
    if (!limiter) {
      limiter = new RateLimiterRedis({
        storeClient: redis,
        keyPrefix: `${keyPrefix}rl:${points}`,
        points,
        duration: 60,
        rejectIfRedisNotReady: true,
      });
      limiters.set(points, limiter);
    }
    return limiter;
  };

  return async (ctx: Context, next: Next) => {
    const principal = apiKeyOf(ctx);
    const quota = principal.rateLimitPerMin;
    let result: RateLimiterRes;
    let limited = false;
    try {
      result = await limiterFor(quota).consume(principal.keyId);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      result = err;
      limited = true;
    }
    const resetS = Math.max(1, Math.ceil(result.msBeforeNext / 1000));
    const headers = {
      'RateLimit-Policy': `"default";q=${quota};w=60`,
      RateLimit: `"default";r=${Math.max(0, result.remainingPoints)};t=${resetS}`,
    };
    if (limited)
      throw new AppError('rate_limited', `This key is limited to ${quota} requests per minute.`, {
        headers: { ...headers, 'Retry-After': String(resetS) },
      });
    ctx.set(headers);
    await next();
  };
}
