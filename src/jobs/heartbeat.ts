import type { RedisClient } from '../platform/redis.js';

const TTL_MS = 15_000;
const key = (prefix: string) => `${prefix}workers:alive`;

/** Each worker process stamps a sorted set every 5 s; members older than 15 s count as gone. */
export function startHeartbeat(redis: RedisClient, prefix: string, id: string): () => Promise<void> {
  const beat = () => redis.zadd(key(prefix), Date.now(), id).catch(() => undefined);
  void beat();
  const timer = setInterval(beat, 5000);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await redis.zrem(key(prefix), id).catch(() => undefined);
  };
}

export async function aliveWorkers(redis: RedisClient, prefix: string): Promise<number> {
  const cutoff = Date.now() - TTL_MS;
  await redis.zremrangebyscore(key(prefix), '-inf', cutoff);
  return redis.zcount(key(prefix), cutoff, '+inf');
}
