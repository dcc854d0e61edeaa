import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { REDIS_URL, testRedisPrefix } from './env.js';

/** A connected Redis client and a key prefix of this test file's own; its keys are deleted after the file. */
export function fileRedis(): { redis: Redis; prefix: string } {
  const redis = new Redis(REDIS_URL);
  const prefix = testRedisPrefix();
  beforeAll(async () => {
    await redis.ping();
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });
  return { redis, prefix };
}
