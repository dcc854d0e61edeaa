import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/platform/logger.js';
import { BATCH_FIELD, UsageRecorder, type UsageEntry } from '../../src/usage/recorder.js';
import { REDIS_URL } from '../support/env.js';
import { fileRedis } from '../support/redis.js';

const { redis, prefix } = fileRedis();
const logger = createLogger('silent', {}, 'stderr');

const entry = (i: number): UsageEntry => ({
  id: `use_${String(i).padStart(6, '0')}`,
  account_id: 'acc_1',
  api_key_id: 'key_1',
  api_key_prefix: 'rwk_abc',
  method: 'POST',
  endpoint: '/api/v1/shield/preflight',
  status: 200,
  latency_ms: 1,
  request_id: `req_${i}`,
  at: new Date().toISOString(),
});

/** The stream's entries, each a batch of calls. */
async function batches(key: string): Promise<UsageEntry[][]> {
  const rows = (await redis.xrange(key, '-', '+')) as [string, string[]][];
  return rows.map(([, fields]) => {
    expect(fields[0]).toBe(BATCH_FIELD);
    return JSON.parse(fields[1]!) as UsageEntry[];
  });
}

describe('UsageRecorder (real Redis stream)', () => {
  it('writes calls as batches of at most 200, the rest within 20 ms, and loses none', async () => {
    const key = `${prefix}usage:a`;
    const recorder = new UsageRecorder(redis, key, logger);
    for (let i = 0; i < 450; i++) recorder.record(entry(i));
    // Two full batches are on their way at once; the last 50 wait for the timer.
    expect(recorder.backlog).toBe(450);
    await new Promise((r) => setTimeout(r, 200));
    expect(recorder.backlog).toBe(0);
    const written = await batches(key);
    expect(written.map((b) => b.length)).toEqual([200, 200, 50]);
    expect(written.flat().map((e) => e.id)).toEqual(Array.from({ length: 450 }, (_, i) => entry(i).id));
    await recorder.flush(1000);
  });

  it('records a finished API-key call as the HTTP layer describes it: id and time minted, latency rounded', async () => {
    const key = `${prefix}usage:call`;
    const recorder = new UsageRecorder(redis, key, logger);
    const before = Date.now();
    recorder.recordCall({
      method: 'POST',
      endpoint: '/api/v1/scan/token',
      status: 422,
      latencyMs: 33.6,
      accountId: 'acc_1',
      apiKeyId: 'key_1',
      apiKeyPrefix: 'rwk_abcd',
      requestId: 'req_client-7',
    });
    await recorder.flush(1000);
    const [stored] = (await batches(key)).flat();
    expect(stored).toEqual({
      id: expect.stringMatching(/^use_[0-9a-f]{28}$/) as unknown,
      account_id: 'acc_1',
      api_key_id: 'key_1',
      api_key_prefix: 'rwk_abcd',
      method: 'POST',
      endpoint: '/api/v1/scan/token',
      status: 422,
      latency_ms: 34,
      request_id: 'req_client-7',
      at: expect.any(String) as unknown,
    });
    expect(Date.parse(stored!.at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(stored!.at)).toBeLessThanOrEqual(Date.now());
  });

  it('carries what the call was about (ctx.state.usageDetail), only the fields given', async () => {
    const key = `${prefix}usage:detail`;
    const recorder = new UsageRecorder(redis, key, logger);
    const call = {
      method: 'POST',
      endpoint: '/api/v1/shield/preflight',
      status: 200,
      latencyMs: 2,
      accountId: 'acc_1',
      apiKeyId: 'key_1',
      apiKeyPrefix: 'rwk_abcd',
      requestId: 'req_1',
    };
    recorder.recordCall({
      ...call,
      detail: { target: '0x4Cd241E8d1510e30b2076397afc7508Ae59C66c9', chain: 'ethereum', network: 'mainnet' },
    });
    recorder.recordCall({ ...call, detail: { target: undefined, chain: 'solana', network: 'mainnet' } });
    recorder.recordCall({ ...call, detail: { targets: 250 } });
    recorder.recordCall({ ...call, detail: { targets: 1.5 } });
    recorder.recordCall(call);
    await recorder.flush(1000);
    const about = (await batches(key))
      .flat()
      .map(({ target, chain, network, targets }) => ({ target, chain, network, targets }));
    expect(about).toEqual([
      {
        target: '0x4Cd241E8d1510e30b2076397afc7508Ae59C66c9',
        chain: 'ethereum',
        network: 'mainnet',
        targets: undefined,
      },
      { target: undefined, chain: 'solana', network: 'mainnet', targets: undefined },
      { target: undefined, chain: undefined, network: undefined, targets: 250 },
      { target: undefined, chain: undefined, network: undefined, targets: undefined },
      { target: undefined, chain: undefined, network: undefined, targets: undefined },
    ]);
  });

  it('keeps failed batches while Redis is unreachable and writes them when it is back', async () => {
    const key = `${prefix}usage:b`;
    // A client whose connection is gone refuses every command at once, as when Redis is down.
    const client = new Redis(REDIS_URL, { lazyConnect: true, enableOfflineQueue: false });
    client.on('error', () => undefined);
    await client.connect();
    client.disconnect();
    const attempts = vi.spyOn(client, 'xadd');
    const recorder = new UsageRecorder(client, key, logger);
    try {
      for (let i = 0; i < 30; i++) recorder.record(entry(i));
      const started = Date.now();
      await recorder.flush(600);
      // The flush waited its deadline, retrying every 200 ms or so (not in a tight loop), and dropped nothing.
      expect(Date.now() - started).toBeGreaterThanOrEqual(550);
      expect(attempts.mock.calls.length).toBeGreaterThanOrEqual(2);
      expect(attempts.mock.calls.length).toBeLessThanOrEqual(5);
      expect(recorder.backlog).toBe(30);
      expect(await redis.exists(key)).toBe(0);

      await client.connect();
      await recorder.flush(2000);
      expect(recorder.backlog).toBe(0);
      expect((await batches(key)).flat()).toHaveLength(30);
    } finally {
      client.disconnect();
    }
  });

  it('sends the batches kept while Redis was down merged, in order, within a retry period of its return', async () => {
    const key = `${prefix}usage:c`;
    const client = new Redis(REDIS_URL, { lazyConnect: true, enableOfflineQueue: false });
    client.on('error', () => undefined);
    await client.connect();
    client.disconnect();
    const recorder = new UsageRecorder(client, key, logger);
    try {
      // Calls one by one while Redis is down: each is a batch of its own, and each write fails.
      for (let i = 0; i < 40; i++) {
        recorder.record(entry(i));
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(recorder.backlog).toBe(40);
      await client.connect();
      const back = Date.now();
      while (recorder.backlog > 0 && Date.now() - back < 5000) await new Promise((r) => setTimeout(r, 20));
      // The retry timer runs every second: one period, not one per 10 batches (4 s for these 40).
      expect(Date.now() - back).toBeLessThan(2000);
      const written = await batches(key);
      expect(written.length).toBeLessThanOrEqual(2);
      expect(written.flat().map((e) => e.id)).toEqual(Array.from({ length: 40 }, (_, i) => entry(i).id));
    } finally {
      await recorder.flush(100);
      client.disconnect();
    }
  });
});
