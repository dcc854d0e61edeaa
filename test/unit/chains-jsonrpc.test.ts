import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { JsonRpcClient, RpcError, type JsonRpcClientOptions } from '../../src/chains/jsonrpc.js';
import { SOLANA_METHODS } from '../../src/chains/solana.js';
import { AppError } from '../../src/platform/errors.js';
import { ByteBudget } from '../../src/platform/http-client.js';
import { REDIS_URL, testRedisPrefix } from '../support/env.js';
import { gzipBomb, JsonRpcStub, oversizedAnswer, StubRpcError, toJson } from '../support/jsonrpc-stub.js';
import { capturingLogger } from '../support/logs.js';

const TUNING = {
  deadlineMs: 3000,
  timeoutMs: 2000,
  retries: 2,
  backoffBaseMs: 10,
  backoffMaxMs: 50,
  ratePerS: 0,
  concurrency: 16,
  batchMax: 50,
  circuitFailures: 100,
  // min ≥ max: a fixed cool-down of circuitCooldownMs, unless a test sets both.
  circuitCooldownMinMs: 1000,
  circuitCooldownMs: 1000,
  maxResponseBytes: 32 * 1024 * 1024,
  retryAfterMaxMs: 60_000,
};

function client(urls: string[], over: Partial<JsonRpcClientOptions> = {}): JsonRpcClient {
  return new JsonRpcClient({
    ...TUNING,
    network: 'solana/mainnet',
    urls,
    knownMethods: SOLANA_METHODS,
    ...over,
  });
}

/** The error `promise` rejects with; fails the test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection, but the promise resolved');
}

function expectUnavailable(err: Error): AppError {
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe('provider_unavailable');
  return err as AppError;
}

const stubs: JsonRpcStub[] = [];
async function stub(): Promise<JsonRpcStub> {
  const s = await JsonRpcStub.start({
    getSlot: () => 4242,
    getBalance: (params) => ({ context: { slot: 7 }, value: (params as string[])[0]!.length }),
    getHealth: () => 'ok',
  });
  stubs.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(stubs.splice(0).map((s) => s.close()));
});

describe('JsonRpcClient batching and single-flight', () => {
  it('sends the calls of one tick as one batch array and matches answers by id', async () => {
    const s = await stub();
    // Answers in reverse order: the client must match them by id, not position.
    s.reply = (req) => ({ body: toJson(req.calls.map((c) => s.answer(c)).reverse()) });
    const c = client([s.url()]);
    const results = await Promise.all([
      c.call('getSlot'),
      c.call('getBalance', ['a']),
      c.call('getBalance', ['bbb']),
      c.call('getHealth'),
    ]);
    expect(results).toEqual([
      4242,
      { context: { slot: 7 }, value: 1 },
      { context: { slot: 7 }, value: 3 },
      'ok',
    ]);
    expect(s.requests).toHaveLength(1);
    expect(s.requests[0]!.batch).toBe(true);
    expect(s.requests[0]!.calls.map((call) => call.method)).toEqual([
      'getSlot',
      'getBalance',
      'getBalance',
      'getHealth',
    ]);
  });

  it('sends a lone call as a plain request object', async () => {
    const s = await stub();
    await expect(client([s.url()]).call('getSlot')).resolves.toBe(4242);
    expect(s.requests[0]!.batch).toBe(false);
    expect(s.requests[0]!.calls[0]).toMatchObject({ method: 'getSlot', params: [] });
  });

  it('caps a batch at batchMax calls', async () => {
    const s = await stub();
    const c = client([s.url()], { batchMax: 3 });
    await Promise.all(Array.from({ length: 7 }, (_, i) => c.call('getBalance', [`k${i}`])));
    expect(s.requests.map((r) => r.calls.length).sort()).toEqual([1, 3, 3]);
  });

  it('shares one upstream call among identical calls in flight, then forgets it', async () => {
    const s = await stub();
    s.delayMs = 50;
    const c = client([s.url()]);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        // Same params whatever the key order: the key is canonical JSON.
        c.call('getBalance', [
          'same',
          i % 2
            ? { commitment: 'confirmed', encoding: 'base64' }
            : { encoding: 'base64', commitment: 'confirmed' },
        ]),
      ),
    );
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);
    expect(s.calls).toHaveLength(1);
    await c.call('getBalance', ['same', { encoding: 'base64', commitment: 'confirmed' }]);
    expect(s.calls).toHaveLength(2);
  });

  it('keeps integers beyond 2^53 exact (bigint)', async () => {
    const s = await stub();
    s.methods.getBalance = () => ({ context: { slot: 1 }, value: 18446744073709551615n });
    const answer = await client([s.url()]).call<{ value: unknown }>('getBalance', ['x']);
    expect(answer.value).toBe(18446744073709551615n);
  });
});

describe('JsonRpcClient deadlines', () => {
  it('fails a call against a hanging provider within its deadline', async () => {
    const s = await stub();
    s.reply = () => ({ hang: true });
    const started = Date.now();
    const err = expectUnavailable(await rejection(client([s.url()], { deadlineMs: 300 }).call('getSlot')));
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(600);
    expect(err.message).toMatch(/no answer within/);
  });

  it('takes a per-call deadline and a caller abort signal', async () => {
    const s = await stub();
    s.reply = () => ({ hang: true });
    const c = client([s.url()], { deadlineMs: 5000 });
    let started = Date.now();
    expectUnavailable(await rejection(c.call('getSlot', [], { deadlineMs: 150 })));
    expect(Date.now() - started).toBeLessThan(450);

    const controller = new AbortController();
    started = Date.now();
    setTimeout(() => controller.abort(), 100);
    expectUnavailable(await rejection(c.call('getHealth', [], { signal: controller.signal })));
    expect(Date.now() - started).toBeLessThan(400);
  });

  it('lets a joined caller give up without failing the shared call', async () => {
    const s = await stub();
    s.delayMs = 300;
    const c = client([s.url()]);
    const controller = new AbortController();
    const first = c.call('getSlot');
    const second = c.call('getSlot', [], { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    expectUnavailable(await rejection(second));
    await expect(first).resolves.toBe(4242);
    expect(s.calls).toHaveLength(1);
  });
});

describe('JsonRpcClient retries and failover', () => {
  it('retries a 500 and succeeds', async () => {
    const s = await stub();
    s.reply = (req) => (req.index === 0 ? { status: 500, body: 'upstream exploded' } : undefined);
    await expect(client([s.url()]).call('getSlot')).resolves.toBe(4242);
    expect(s.requests).toHaveLength(2);
  });

  it('honours Retry-After on 429: no second attempt before it', async () => {
    const s = await stub();
    s.reply = (req) => (req.index === 0 ? { status: 429, headers: { 'retry-after': '1' } } : undefined);
    await expect(client([s.url()]).call('getSlot')).resolves.toBe(4242);
    expect(s.requests).toHaveLength(2);
    expect(s.requests[1]!.at - s.requests[0]!.at).toBeGreaterThanOrEqual(1000);
  });

  it('fails at once when Retry-After is beyond the deadline, passing the wait on', async () => {
    const s = await stub();
    s.reply = () => ({ status: 429, headers: { 'retry-after': '30' } });
    const started = Date.now();
    const err = expectUnavailable(await rejection(client([s.url()], { deadlineMs: 2000 }).call('getSlot')));
    expect(Date.now() - started).toBeLessThan(500);
    expect(err.extra.retryAfterS).toBe(30);
    expect(s.requests).toHaveLength(1);
  });

  it('fails over to the next URL, and to it at once after a 429', async () => {
    const down = await stub();
    down.reply = () => ({ status: 503 });
    const up = await stub();
    await expect(client([down.url(), up.url()]).call('getSlot')).resolves.toBe(4242);
    expect(down.requests).toHaveLength(1);
    expect(up.requests).toHaveLength(1);

    const limited = await stub();
    limited.reply = () => ({ status: 429, headers: { 'retry-after': '5' } });
    const started = Date.now();
    await expect(client([limited.url(), up.url()]).call('getHealth')).resolves.toBe('ok');
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('fails over when the first URL refuses connections', async () => {
    const gone = await stub();
    const deadUrl = gone.url();
    await gone.close();
    stubs.splice(stubs.indexOf(gone), 1);
    const up = await stub();
    await expect(client([deadUrl, up.url()]).call('getSlot')).resolves.toBe(4242);
  });

  it('gives up after `retries` attempts with provider_unavailable', async () => {
    const s = await stub();
    s.reply = () => ({ status: 502 });
    const err = expectUnavailable(await rejection(client([s.url()], { retries: 2 }).call('getSlot')));
    expect(s.requests).toHaveLength(3);
    expect(err.message).toMatch(/HTTP 502/);
  });

  it('treats garbage or truncated JSON as a transient provider failure', async () => {
    const s = await stub();
    s.reply = (req) => ({
      body: req.index === 0 ? '<html>bad gateway</html>' : '{"jsonrpc":"2.0","id":1,"res',
    });
    const err = expectUnavailable(await rejection(client([s.url()], { retries: 1 }).call('getSlot')));
    expect(s.requests).toHaveLength(2);
    expect(err.message).toMatch(/not valid JSON-RPC/);
  });

  it('surfaces a JSON-RPC error object as RpcError, never retried, next to the successes of its batch', async () => {
    const s = await stub();
    s.methods.getAccountInfo = () => {
      throw new StubRpcError(-32602, 'Invalid param: WrongSize', { why: 'size' });
    };
    const c = client([s.url()]);
    const [failed, ok] = await Promise.allSettled([c.call('getAccountInfo', ['short']), c.call('getSlot')]);
    expect(ok).toEqual({ status: 'fulfilled', value: 4242 });
    const err = (failed as PromiseRejectedResult).reason as RpcError;
    expect(err).toBeInstanceOf(RpcError);
    expect(err).toMatchObject({
      code: -32602,
      rpcMessage: 'Invalid param: WrongSize',
      data: { why: 'size' },
      method: 'getAccountInfo',
      provider: 'solana/mainnet#0',
    });
    expect(s.requests).toHaveLength(1);
    expect(c.status()).toEqual([{ provider: 'solana/mainnet#0', circuit: 'closed' }]);
  });
});

describe('JsonRpcClient circuit breaker', () => {
  it('opens after N consecutive failures, fails fast while open, and closes after a successful probe', async () => {
    const s = await stub();
    let healthy = false;
    s.reply = () => (healthy ? undefined : { status: 500 });
    const registry = new Registry();
    const c = client([s.url()], {
      retries: 0,
      circuitFailures: 3,
      circuitCooldownMs: 400,
      metrics: registry,
    });
    for (let i = 0; i < 3; i++) expectUnavailable(await rejection(c.call('getSlot')));
    expect(s.requests).toHaveLength(3);
    expect(c.status()[0]!.circuit).toBe('open');
    expect(await registry.metrics()).toContain('riskwatch_rpc_circuit_open{provider="solana/mainnet#0"} 1');

    const started = Date.now();
    const err = expectUnavailable(await rejection(c.call('getSlot')));
    expect(Date.now() - started).toBeLessThan(100);
    expect(err.message).toMatch(/circuit open/);
    expect(s.requests).toHaveLength(3);

    healthy = true;
    await new Promise((r) => setTimeout(r, 450));
    await expect(c.call('getSlot')).resolves.toBe(4242);
    expect(c.status()[0]!.circuit).toBe('closed');
    expect(await registry.metrics()).toContain('riskwatch_rpc_circuit_open{provider="solana/mainnet#0"} 0');
  });

  it('reopens when the half-open probe fails, and skips an open URL in favour of the next', async () => {
    const bad = await stub();
    bad.reply = () => ({ status: 500 });
    const good = await stub();
    const c = client([bad.url(), good.url()], { retries: 1, circuitFailures: 2, circuitCooldownMs: 300 });
    await c.call('getSlot');
    await c.call('getHealth');
    expect(bad.requests).toHaveLength(2);
    expect(c.status()[0]!.circuit).toBe('open');
    await c.call('getBalance', ['x']);
    expect(bad.requests).toHaveLength(2); // skipped while open
    await new Promise((r) => setTimeout(r, 350));
    await c.call('getBalance', ['y']); // the probe goes to #0, fails, #1 answers
    expect(bad.requests).toHaveLength(3);
    expect(c.status()[0]!.circuit).toBe('open');
  });
});

describe('JsonRpcClient limits', () => {
  it('never has more than `concurrency` requests in flight per URL', async () => {
    const s = await stub();
    s.delayMs = 40;
    const c = client([s.url()], { concurrency: 2, batchMax: 1 });
    await Promise.all(Array.from({ length: 8 }, (_, i) => c.call('getBalance', [`k${i}`])));
    expect(s.requests).toHaveLength(8);
    expect(s.maxInFlight).toBe(2);
  });

  it('spaces calls to rate_per_s with the local token bucket', async () => {
    const s = await stub();
    const c = client([s.url()], { ratePerS: 5, batchMax: 1 });
    const started = Date.now();
    await Promise.all(Array.from({ length: 10 }, (_, i) => c.call('getBalance', [`k${i}`])));
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(s.requests.filter((r) => r.at - started < 150)).toHaveLength(5);
  });

  describe('shared through Redis', () => {
    let redis: Redis;
    beforeAll(async () => {
      redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
      await redis.connect();
    });
    afterAll(async () => {
      await redis.quit();
    });

    it('holds two client instances (two replicas) to one rate together', async () => {
      const s = await stub();
      const prefix = testRedisPrefix();
      const options = { ratePerS: 4, batchMax: 1, deadlineMs: 10_000, redis, redisKeyPrefix: prefix };
      const replicaA = client([s.url()], options);
      const replicaB = client([s.url()], options);
      const started = Date.now();
      await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 ? replicaA : replicaB).call('getBalance', [`k${i}`])),
      );
      // 12 calls at 4 per second-window: three windows, so at least two seconds; alone, each replica
      // would have sent its 6 calls within about one second.
      expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
      expect(s.requests.filter((r) => r.at - started < 900)).toHaveLength(4);
      const keys = await redis.keys(`${prefix}*`);
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) expect(key).not.toContain('127.0.0.1');
    });
  });
});

describe('JsonRpcClient against hostile providers', () => {
  const MIB = 1024 * 1024;

  it.each([
    ['a plain body', () => ({ chunks: oversizedAnswer(400 * MIB) })],
    ['a gzip bomb', () => ({ chunks: gzipBomb(400), headers: { 'content-encoding': 'gzip' } })],
  ])('stops reading %s past max_response_bytes (decoded) and fails the attempt', async (_name, reply) => {
    const s = await stub();
    s.reply = reply;
    const registry = new Registry();
    const c = client([s.url()], { maxResponseBytes: 4 * MIB, metrics: registry });
    const err = expectUnavailable(await rejection(c.call('getSlot')));
    expect(err.message).toMatch(/exceeded 4194304 bytes/);
    // The same request would get the same answer: no retry on the one URL.
    expect(s.requests).toHaveLength(1);
    expect(await registry.metrics()).toContain(
      'riskwatch_rpc_calls_total{provider="solana/mainnet#0",method="getSlot",outcome="too_large"} 1',
    );
  });

  it('holds the answers read at once by every client sharing a budget to that budget', async () => {
    const s = await stub();
    s.reply = () => ({ chunks: oversizedAnswer(64 * MIB) });
    const budget = new ByteBudget(6 * MIB);
    let peak = 0;
    const watch = setInterval(() => (peak = Math.max(peak, budget.inUse)), 1);
    // Two "networks" of one process, four concurrent reads each, every answer capped at 4 MiB.
    const clients = [0, 1].map(() =>
      client([s.url()], { maxResponseBytes: 4 * MIB, responseBudget: budget, retries: 0, batchMax: 1 }),
    );
    const errors = await Promise.all(
      clients.flatMap((c) => [0, 1, 2, 3].map((i) => rejection(c.call('getBalance', [`k${i}`])))),
    );
    clearInterval(watch);
    const reasons = errors.map((e) => expectUnavailable(e).message);
    expect(reasons.some((r) => /process budget/.test(r))).toBe(true);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(6 * MIB);
    expect(budget.inUse).toBe(0); // everything given back
  });

  it('fails over to the next URL after an oversized answer', async () => {
    const big = await stub();
    big.reply = () => ({ chunks: oversizedAnswer(64 * MIB) });
    const good = await stub();
    await expect(client([big.url(), good.url()], { maxResponseBytes: MIB }).call('getSlot')).resolves.toBe(
      4242,
    );
  });

  it('reads an answer just under the cap', async () => {
    const s = await stub();
    const result = 'y'.repeat(MIB - 100);
    s.reply = () => ({ body: JSON.stringify({ jsonrpc: '2.0', id: s.calls.at(-1)!.id, result }) });
    await expect(client([s.url()], { maxResponseBytes: MIB }).call('getSlot')).resolves.toBe(result);
  });

  it('never follows a redirect', async () => {
    const elsewhere = await stub();
    const s = await stub();
    s.reply = () => ({ status: 307, headers: { location: elsewhere.url() } });
    const registry = new Registry();
    const err = expectUnavailable(
      await rejection(client([s.url()], { retries: 0, metrics: registry }).call('getSlot')),
    );
    expect(err.message).toMatch(/redirect/);
    expect(elsewhere.requests).toHaveLength(0);
    expect(await registry.metrics()).toContain('outcome="http_3xx"} 1');
  });

  it('caps a Retry-After: one 429 asking for a year idles the URL for retry_after_max_ms only', async () => {
    const s = await stub();
    s.reply = (req) =>
      req.index === 0 ? { status: 429, headers: { 'retry-after': '31536000' } } : undefined;
    const c = client([s.url()], { retryAfterMaxMs: 300, deadlineMs: 2000 });
    const started = Date.now();
    await expect(c.call('getSlot')).resolves.toBe(4242);
    expect(s.requests).toHaveLength(2);
    expect(s.requests[1]!.at - s.requests[0]!.at).toBeGreaterThanOrEqual(290);
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('probes an open circuit after a short cool-down that doubles while the probe fails, up to the max', async () => {
    const s = await stub();
    s.reply = () => ({ status: 500 });
    const c = client([s.url()], {
      retries: 0,
      circuitFailures: 1,
      circuitCooldownMinMs: 100,
      circuitCooldownMs: 400,
    });
    // Calls every 10 ms; only the probes reach the provider, and their spacing is the cool-down.
    const until = Date.now() + 1900;
    while (Date.now() < until) {
      await rejection(c.call('getSlot'));
      await new Promise((r) => setTimeout(r, 10));
    }
    const gaps = s.requests.slice(1).map((r, i) => r.at - s.requests[i]!.at);
    expect(gaps.length).toBeGreaterThanOrEqual(5);
    const [g1, g2, g3, ...rest] = gaps;
    expect(g1).toBeGreaterThanOrEqual(100);
    expect(g1).toBeLessThan(190);
    expect(g2).toBeGreaterThanOrEqual(200);
    expect(g2).toBeLessThan(350);
    expect(g3).toBeGreaterThanOrEqual(400);
    for (const g of rest) {
      expect(g).toBeGreaterThanOrEqual(400);
      expect(g).toBeLessThan(550);
    }
  });

  it('answers again within the first cool-down of a recovery: the first success is the probe', async () => {
    const s = await stub();
    let down = true;
    s.reply = () => (down ? { status: 503 } : undefined);
    // The shipped defaults: first cool-down 250 ms doubling to 3 s.
    const c = client([s.url()], {
      retries: 0,
      circuitFailures: 5,
      circuitCooldownMinMs: 250,
      circuitCooldownMs: 3000,
    });
    const outcomes: { at: number; ok: boolean }[] = [];
    const send = async () => {
      const ok = await c.call('getSlot').then(
        () => true,
        () => false,
      );
      outcomes.push({ at: Date.now(), ok });
    };
    // A 6 s outage under steady traffic (a call every 20 ms), then recovery.
    let recoveredAt = Infinity;
    setTimeout(() => {
      down = false;
      recoveredAt = Date.now();
    }, 6000);
    while (!outcomes.some((o) => o.ok)) {
      await send();
      await new Promise((r) => setTimeout(r, 20));
    }
    const firstOk = outcomes.find((o) => o.ok)!;
    const afterRecovery = s.requests.filter((r) => r.at >= recoveredAt);
    // The provider was not hammered while down: a probe per cool-down, not a call per request.
    const whileDown = s.requests.filter((r) => r.at < recoveredAt);
    expect(whileDown.length).toBeLessThan(5 + 10);
    expect(outcomes.length).toBeGreaterThan(200);
    // The first request after recovery is the probe, and it is the first success.
    expect(afterRecovery).toHaveLength(1);
    expect(firstOk.at - recoveredAt).toBeLessThanOrEqual(3000 + 200);
    expect(c.status()[0]!.circuit).toBe('closed');
    console.log(
      `provider recovery: first success ${firstOk.at - recoveredAt} ms after the provider recovered`,
    );
  }, 15_000);
});

describe('JsonRpcClient metrics and secrecy', () => {
  it('labels by provider name and bounded method, and never shows the URL in metrics, logs or errors', async () => {
    const s = await stub();
    const registry = new Registry();
    const { logger, lines } = capturingLogger('trace');
    const secretUrl = s.url('/v2/SECRET-API-KEY-123');
    s.reply = (req) => (req.calls[0]?.method === 'getHealth' ? { status: 500 } : undefined);
    const c = client([secretUrl], { metrics: registry, logger, retries: 0, circuitFailures: 1 });
    await c.call('getSlot');
    await rejection(c.call('someVendorMethod', [1]));
    const failure = await rejection(c.call('getHealth'));
    const refused = await rejection(c.call('getSlot', [{ again: true }]));

    const text = await registry.metrics();
    expect(text).toContain(
      'riskwatch_rpc_calls_total{provider="solana/mainnet#0",method="getSlot",outcome="ok"} 1',
    );
    expect(text).toContain(
      'riskwatch_rpc_calls_total{provider="solana/mainnet#0",method="other",outcome="rpc_error"} 1',
    );
    expect(text).toContain(
      'riskwatch_rpc_calls_total{provider="solana/mainnet#0",method="getHealth",outcome="http_5xx"} 1',
    );
    expect(text).toMatch(
      /riskwatch_rpc_request_duration_seconds_count\{provider="solana\/mainnet#0",method="getSlot"\} 1/,
    );
    expect(text).toContain('riskwatch_rpc_circuit_open{provider="solana/mainnet#0"} 1');
    const methods = new Set([...text.matchAll(/method="([^"]*)"/g)].map((m) => m[1]));
    for (const m of methods) expect([...SOLANA_METHODS, 'other']).toContain(m);

    const everything = [text, ...lines, failure.message, refused.message].join('\n');
    expect(lines.length).toBeGreaterThan(0);
    expect(everything).not.toContain('SECRET-API-KEY');
    expect(everything).not.toContain(`127.0.0.1:${s.port}`);
  });
});
