import { Redis, type RedisOptions } from 'ioredis';

/**
 * One factory for every Redis connection. Commands fail fast while Redis is down (no offline queue on
 * request-path clients) so the API answers 503 instead of hanging; ioredis keeps reconnecting in the
 * background and the service recovers without a restart.
 */
export function createRedis(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, {
    lazyConnect: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    ...options,
  });
}

/** BullMQ workers block on Redis and must retry forever (BullMQ requires maxRetriesPerRequest: null). */
export function createBullConnection(url: string): Redis {
  return createRedis(url, { maxRetriesPerRequest: null, enableOfflineQueue: true });
}
