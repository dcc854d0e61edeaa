import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { ReservingRateLimiter, type RateDecision } from '../../src/http/middleware/rate-limit.js';
import { REDIS_URL } from '../support/env.js';
import { fileRedis } from '../support/redis.js';

const { redis, prefix } = fileRedis();

/** A connected client that counts the limiter's Redis calls (its script runs as EVALSHA/EVAL). */
async function counting(client: Redis): Promise<{ client: Redis; calls: () => number }> {
  await client.ping();
  let n = 0;
  const send = client.sendCommand.bind(client);
  client.sendCommand = (cmd, stream) => {
    if (/^eval/i.test(cmd.name)) n++;
    return send(cmd, stream);
  };
  return { client, calls: () => n };
}

async function takeAll(
  replicas: ReservingRateLimiter[],
  key: string,
  quota: number,
  calls: number,
): Promise<RateDecision[]> {
  const out: RateDecision[] = [];
  for (let i = 0; i < calls; i++) out.push(await replicas[i % replicas.length]!.take(key, quota));
  return out;
}

describe('ReservingRateLimiter (real Redis, replicas sharing one count)', () => {
  it('counts a small quota call by call across replicas: exact remaining, then refusals', async () => {
    const a = new ReservingRateLimiter(redis, prefix);
    const b = new ReservingRateLimiter(redis, prefix);
    const decisions = await takeAll([a, b], 'key_small', 3, 5);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(decisions.slice(0, 3).map((d) => d.remaining)).toEqual([2, 1, 0]);
    for (const d of decisions) {
      expect(d.resetMs).toBeGreaterThan(0);
      expect(d.resetMs).toBeLessThanOrEqual(60_000);
    }
  });

  it('never admits more than the quota in a window, however the calls are spread over three replicas', async () => {
    const replicas = [0, 1, 2].map(() => new ReservingRateLimiter(redis, prefix));
    const quota = 10_000;
    // Uneven: replica 0 gets half the calls, so the others hold reservations they do not use up.
    const order = (i: number) => replicas[i % 4 === 0 || i % 4 === 1 ? 0 : (i % 4) - 1]!;
    let allowed = 0;
    for (let i = 0; i < quota + 500; i++) if ((await order(i).take('key_big', quota)).allowed) allowed++;
    expect(allowed).toBeLessThanOrEqual(quota);
    // What is held unused ends with the window: at most 1 % per replica is lost to the others.
    expect(allowed).toBeGreaterThanOrEqual(quota - 3 * (quota / 100));
    // Calls on every replica until each has used its points: then exactly the quota was admitted.
    for (const r of replicas) while ((await r.take('key_big', quota)).allowed) allowed++;
    expect(allowed).toBe(quota);
  });

  it('asks Redis about once per 50 calls for a large quota, and concurrent calls share one reservation', async () => {
    const { client, calls } = await counting(new Redis(REDIS_URL));
    try {
      const limiter = new ReservingRateLimiter(client, prefix);
      const burst = await Promise.all(
        Array.from({ length: 500 }, () => Promise.resolve(limiter.take('key_busy', 1_000_000))),
      );
      expect(burst.every((d) => d.allowed)).toBe(true);
      // 10 reservations of 50, and the refill ahead the last one asked for.
      expect(calls()).toBe(11);
      const remaining = burst.map((d) => d.remaining).sort((x, y) => y - x);
      expect(remaining[0]).toBe(1_000_000 - 1);
      expect(remaining.at(-1)).toBe(1_000_000 - 500);
    } finally {
      client.disconnect();
    }
  });

  it('refills a large quota ahead: a steady stream of calls is served from memory, never waiting on Redis', async () => {
    const { client, calls } = await counting(new Redis(REDIS_URL));
    try {
      const limiter = new ReservingRateLimiter(client, prefix);
      expect((await limiter.take('key_steady', 1_000_000)).allowed).toBe(true);
      let waited = 0;
      for (let i = 0; i < 300; i++) {
        const decision = limiter.take('key_steady', 1_000_000);
        if (decision instanceof Promise) waited++;
        expect((await decision).allowed).toBe(true);
        await new Promise((r) => setTimeout(r, 1)); // calls spread over time, as traffic is
      }
      expect(waited).toBe(0);
      expect(calls()).toBeGreaterThanOrEqual(6); // the reservations were still asked for, 50 at a time
    } finally {
      client.disconnect();
    }
  });

  it('grants only up to the quota when a reservation made on stale knowledge overshoots it', async () => {
    const quota = 10_030;
    const b = new ReservingRateLimiter(redis, prefix);
    const other = new ReservingRateLimiter(redis, prefix);
    // b reserves 50 (count 50) and believes 9 980 are left.
    expect(await b.take('key_stale', quota)).toMatchObject({ allowed: true, remaining: quota - 1 });
    // Meanwhile the same key under another quota (another entitlement) brings the count to 10 000: 9 900
    // calls, and the 50 its refill ahead holds.
    for (let i = 0; i < 9_900; i++) expect((await other.take('key_stale', 1_000_000_000)).allowed).toBe(true);
    // b serves its 49 and, half-way, reserves 50 more on stale knowledge: Redis says 10 050; only 30 were left.
    let allowed = 1;
    while ((await b.take('key_stale', quota)).allowed) allowed++;
    expect(allowed).toBe(1 + 49 + 30);
    expect((await new ReservingRateLimiter(redis, prefix).take('key_stale', quota)).allowed).toBe(false);
  });

  it('refuses from memory once refused, until the window ends; a raised quota keeps the count', async () => {
    const { client, calls } = await counting(new Redis(REDIS_URL));
    const clock = vi.spyOn(performance, 'now');
    try {
      const limiter = new ReservingRateLimiter(client, prefix);
      expect((await limiter.take('key_tight', 1)).allowed).toBe(true);
      const refused = await limiter.take('key_tight', 1);
      expect(refused.allowed).toBe(false);
      const asked = calls();
      for (let i = 0; i < 20; i++) expect((await limiter.take('key_tight', 1)).allowed).toBe(false);
      expect(calls()).toBe(asked);
      // The entitlement was raised: Redis is asked at once, and the window's 2 calls still count.
      expect(await limiter.take('key_tight', 100)).toMatchObject({ allowed: true, remaining: 97 });
      // The window ends (Redis expires the count; this replica's clock passes the reset): allowed again.
      await client.del(`${prefix}rl:key_tight`);
      // Past the reset by a margin: the reservation's reset is reckoned from when Redis's answer arrived,
      // which on a busy machine can be a few ms after the refusal's own `resetMs` was measured.
      const later = performance.now() + refused.resetMs + 1_000;
      clock.mockReturnValue(later);
      expect(await limiter.take('key_tight', 1)).toMatchObject({ allowed: true, remaining: 0 });
      expect(calls()).toBe(asked + 2);
    } finally {
      clock.mockRestore();
      client.disconnect();
    }
  });

  it('Redis unreachable: the error reaches the caller (503 upstream), never an unlimited pass', async () => {
    const down = new Redis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    down.on('error', () => undefined);
    try {
      const limiter = new ReservingRateLimiter(down, prefix);
      // Concurrent calls wait for one reservation and all get its error.
      const calls = Array.from({ length: 5 }, () => Promise.resolve(limiter.take('key_down', 1_000_000)));
      for (const call of calls) await expect(call).rejects.toThrow(/not ready/);
    } finally {
      down.disconnect();
    }
  });
});
