import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { UsageEntry } from '../../src/usage/recorder.js';
import { histBin } from '../../src/usage/rollups.js';
import { UsageService } from '../../src/usage/service.js';
import type { UsageBody, UsageBucketBody, UsageCallBody } from '../../src/usage/schemas.js';
import type { Problem } from '../support/auth-helpers.js';
import { createCustomer, type TestCustomer, type TestKey } from '../support/customers.js';
import { createTestDatabase, REDIS_URL } from '../support/env.js';
import {
  cliJson,
  eventually,
  killHard,
  prepareEnv,
  startService,
  type RunningService,
} from '../support/service.js';

/** A usage answer whose `data` holds calls or buckets, as the query asked. */
type UsagePage<T> = Omit<UsageBody, 'data'> & { data: T[] };

const USAGE = '/api/v1/usage';
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const b64 = (s: string) => Buffer.from(s).toString('base64url');
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
/** Newest first: (at, id) descending, as the API orders. */
const newerFirst = (a: UsageCallBody, b: UsageCallBody) =>
  Date.parse(b.at) - Date.parse(a.at) || (b.id > a.id ? 1 : b.id < a.id ? -1 : 0);

/** One developer-API call; returns the status and the X-Request-Id the call got. */
async function call(
  svc: RunningService,
  key: TestKey,
  query = '',
  headers: Record<string, string> = {},
): Promise<{ status: number; requestId: string; body: unknown }> {
  const res = await fetch(`${svc.baseUrl}${USAGE}${query ? `?${query}` : ''}`, {
    headers: { 'X-API-Key': key.key, ...headers },
  });
  const body: unknown = await res.json();
  return { status: res.status, requestId: res.headers.get('x-request-id') ?? '', body };
}

async function usage<T = UsageCallBody>(svc: RunningService, key: TestKey, query: Record<string, string>) {
  const res = await fetch(`${svc.baseUrl}${USAGE}?${new URLSearchParams(query).toString()}`, {
    headers: { 'X-API-Key': key.key },
  });
  expect(res.status, `usage ${JSON.stringify(query)}`).toBe(200);
  return (await res.json()) as UsagePage<T>;
}

async function problem(svc: RunningService, key: TestKey, query: string) {
  const res = await fetch(`${svc.baseUrl}${USAGE}?${query}`, { headers: { 'X-API-Key': key.key } });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as Problem;
  expect(body.request_id).toBe(res.headers.get('x-request-id'));
  return { status: res.status, body };
}

/** The start of the UTC day `daysAgo` days before today, ms. */
const day0 = (daysAgo: number) => {
  const now = new Date();
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - daysAgo * 86_400_000;
};

/** Deterministic pseudo-random calls over 3 days from `from` (ms), with ids in time order. */
function historyRows(
  accountId: string,
  keyIds: string[],
  from: number,
  n: number,
  seed: number,
): UsageEntry[] {
  let x = seed;
  const random = () => (x = (x * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const endpoints = ['/api/v1/scan/token', '/api/v1/risk/assess', '/api/v1/shield/preflight'];
  const statuses = [200, 200, 200, 200, 200, 400, 429, 503];
  return Array.from({ length: n }, (_, i) => {
    const at = from + Math.floor(random() * 3 * 86_400_000);
    return {
      id: `use_${at.toString(16).padStart(12, '0')}${String(seed).padStart(4, '0')}${String(i).padStart(12, '0')}`,
      account_id: accountId,
      api_key_id: keyIds[Math.floor(random() * keyIds.length)]!,
      api_key_prefix: 'rwk_hist',
      method: 'POST',
      endpoint: endpoints[Math.floor(random() * endpoints.length)]!,
      status: statuses[Math.floor(random() * statuses.length)]!,
      latency_ms: Math.round(Math.exp(Math.log(40) + 2.5 * (random() - 0.5) * 2)),
      request_id: `hist-${seed}-${i}`,
      at: new Date(at).toISOString(),
    };
  });
}

/**
 * Inserts calls as the usage drain does (one statement, idempotent on the key: the id before the day
 * partitions, id and time after, so the statement names no conflict target).
 */
async function insertRows(db: pg.Client, rows: UsageEntry[]) {
  await db.query(
    `insert into usage_records
       (id, account_id, api_key_id, api_key_prefix, method, endpoint, status, latency_ms, request_id, at)
     select id, account_id, api_key_id, api_key_prefix, method, endpoint, status, latency_ms, request_id, at
       from jsonb_to_recordset($1::jsonb) as r(id varchar, account_id varchar, api_key_id varchar,
            api_key_prefix varchar, method varchar, endpoint varchar, status smallint, latency_ms int,
            request_id varchar, at timestamptz)
     on conflict do nothing`,
    [JSON.stringify(rows)],
  );
}

/** Runs `fn` over `items` with at most `concurrency` in flight. */
async function pool<T, R>(items: T[], concurrency: number, fn: (item: T, i: number) => Promise<R>) {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i]!, i);
      }
    }),
  );
  return results;
}

describe('GET /api/v1/usage', () => {
  let env: Record<string, string>;
  let dropDatabase: () => Promise<void>;
  let svc: RunningService;
  let acme: TestCustomer;
  let beta: TestCustomer;
  let tight: TestCustomer;
  let exact: TestCustomer;
  let replay: TestCustomer;
  let db: pg.Client;

  beforeAll(async () => {
    // Key lookups uncached, so a changed entitlement (rate limit) applies to the very next call.
    ({ env, dropDatabase } = await prepareEnv({ RISKWATCH_API_KEY_CACHE_MS: '0' }));
    [acme, beta, tight, exact, replay] = await Promise.all([
      createCustomer(env, 'acme', ['caller', 'observer', 'filters', 'pager'], { rateLimitPerMin: 100_000 }),
      createCustomer(env, 'beta', ['b1'], { rateLimitPerMin: 100_000 }),
      createCustomer(env, 'tight', ['t1'], { rateLimitPerMin: 2 }),
      createCustomer(env, 'exact', ['e1', 'e2'], { rateLimitPerMin: 100_000 }),
      createCustomer(env, 'replay', ['r1'], { rateLimitPerMin: 100_000 }),
    ]);
    db = new pg.Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    svc = await startService(env, 'all');
  }, 180_000);

  afterAll(async () => {
    await svc?.stop();
    await db?.end();
    await dropDatabase?.();
  });

  /** Every call of one key (as seen by the account's observer key), newest first. */
  async function callsOf<T = UsageCallBody>(key: TestKey, extra: Record<string, string> = {}) {
    return usage<T>(svc, acme.keys.observer!, { api_key_id: key.id, limit: '1000', ...extra });
  }

  /** Waits until the key has `n` recorded calls. */
  async function waitForCalls(key: TestKey, n: number, timeoutMs = 5000) {
    const body = await eventually(async () => {
      const b = await callsOf(key);
      return b.summary.total >= n ? b : undefined;
    }, timeoutMs);
    expect(body?.summary.total, `${n} calls of ${key.id} recorded`).toBe(n);
    return body!;
  }

  it('records a call within 5 s, with every field of the entry', async () => {
    const caller = acme.keys.caller!;
    const before = Date.now();
    const named = await call(svc, caller, '', { 'X-Request-Id': 'e2e-usage-first.call:1' });
    expect(named.status).toBe(200);
    expect(named.requestId).toBe('e2e-usage-first.call:1');
    const answeredAt = Date.now();
    const generated = await call(svc, caller);
    expect(generated.requestId).toMatch(/^req_[0-9a-f]{28}$/);

    const body = await eventually(async () => {
      const b = await callsOf(caller);
      return b.data.some((e) => e.request_id === named.requestId) ? b : undefined;
    }, 5000);
    const appearedAfterMs = Date.now() - answeredAt;
    expect(body, 'call visible in usage').toBeDefined();
    expect(appearedAfterMs).toBeLessThan(5000);

    const entry = body!.data.find((e) => e.request_id === named.requestId)!;
    expect(entry.id).toMatch(/^use_[0-9a-f]{28}$/);
    expect(entry.at).toMatch(RFC3339_UTC);
    expect(Date.parse(entry.at)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(entry.at)).toBeLessThanOrEqual(Date.now() + 1000);
    expect(entry.method).toBe('GET');
    expect(entry.endpoint).toBe('/api/v1/usage');
    expect(entry.status).toBe(200);
    expect(Number.isInteger(entry.latency_ms)).toBe(true);
    expect(entry.latency_ms).toBeGreaterThanOrEqual(0);
    expect(entry.latency_ms).toBeLessThan(5000);
    expect(entry.api_key_id).toBe(caller.id);
    expect(entry.api_key_prefix).toBe(caller.key.slice(0, 8));
    expect(entry.api_key_prefix).toBe(caller.prefix);
    expect(Object.keys(entry).sort()).toEqual(
      [
        'id',
        'at',
        'method',
        'endpoint',
        'status',
        'latency_ms',
        'api_key_id',
        'api_key_prefix',
        'request_id',
        'target',
        'chain',
        'network',
        'targets',
      ].sort(),
    );
    // A usage call is about no target: the fields are there, null.
    expect([entry.target, entry.chain, entry.network, entry.targets]).toEqual([null, null, null, null]);

    const second = await eventually(async () => {
      const b = await callsOf(caller);
      return b.data.find((e) => e.request_id === generated.requestId);
    }, 5000);
    expect(second, 'the generated request id is the one recorded').toBeDefined();
    console.log(`[usage] call visible in usage after ${appearedAfterMs} ms`);
  });

  it('records 4xx validation errors and 429s of authenticated calls', async () => {
    const caller = acme.keys.caller!;
    const invalid = await call(svc, caller, 'limit=abc');
    expect(invalid.status).toBe(400);
    const unknownParam = await call(svc, caller, 'colour=blue');
    expect(unknownParam.status).toBe(400);

    const t1 = tight.keys.t1!;
    const burst = [];
    for (let i = 0; i < 4; i++) burst.push(await call(svc, t1));
    expect(burst.map((c) => c.status)).toEqual([200, 200, 429, 429]);
    // Lift the limit so the tight account can read its own history.
    await cliJson(env, ['entitlements', 'grant', tight.accountId, '--rate-limit-per-min', '100000']);

    const seen = await eventually(async () => {
      const b = await usage(svc, t1, { status: '429' });
      return b.summary.total >= 2 ? b : undefined;
    }, 5000);
    expect(seen?.data.map((e) => e.request_id).sort()).toEqual(
      burst
        .filter((c) => c.status === 429)
        .map((c) => c.requestId)
        .sort(),
    );
    expect(seen!.data.every((e) => e.status === 429 && e.api_key_id === t1.id)).toBe(true);
    expect(seen!.summary.by_status).toEqual({ '429': 2 });

    const errors = await eventually(async () => {
      const b = await callsOf(caller, { status: '400' });
      const ids = b.data.map((e) => e.request_id);
      return ids.includes(invalid.requestId) && ids.includes(unknownParam.requestId) ? b : undefined;
    }, 5000);
    expect(errors, '400s recorded').toBeDefined();
    expect(errors!.data.every((e) => e.status === 400)).toBe(true);
  });

  it('filters by from, to, endpoint, status and api_key_id', async () => {
    const key = acme.keys.filters!;
    for (let i = 0; i < 4; i++) {
      expect((await call(svc, key)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 15)); // distinct timestamps
    }
    for (let i = 0; i < 2; i++) expect((await call(svc, key, 'limit=0')).status).toBe(400);
    const all = (await waitForCalls(key, 6)).data;
    expect([...all].sort(newerFirst).map((e) => e.id)).toEqual(all.map((e) => e.id));

    const byStatus = await callsOf(key, { status: '400' });
    expect(byStatus.data).toHaveLength(2);
    expect(byStatus.data.every((e) => e.status === 400)).toBe(true);
    expect(byStatus.summary).toEqual({
      total: 2,
      by_endpoint: { '/api/v1/usage': 2 },
      by_status: { '400': 2 },
    });
    expect((await callsOf(key, { status: '200' })).summary.total).toBe(4);
    expect((await callsOf(key, { status: '503' })).data).toEqual([]);

    expect((await callsOf(key, { endpoint: '/api/v1/usage' })).summary.total).toBe(6);
    const otherEndpoint = await callsOf(key, { endpoint: '/api/v1/scan/token' });
    expect(otherEndpoint.data).toEqual([]);
    expect(otherEndpoint.summary).toEqual({ total: 0, by_endpoint: {}, by_status: {} });

    // from is inclusive, to is exclusive; both take any RFC 3339 offset.
    const pivot = all[2]!.at;
    const from = await callsOf(key, { from: pivot });
    expect(from.data.map((e) => e.id)).toEqual(
      all.filter((e) => Date.parse(e.at) >= Date.parse(pivot)).map((e) => e.id),
    );
    expect(from.data.map((e) => e.id)).toContain(all[2]!.id);
    const to = await callsOf(key, { to: pivot });
    expect(to.data.map((e) => e.id)).toEqual(
      all.filter((e) => Date.parse(e.at) < Date.parse(pivot)).map((e) => e.id),
    );
    expect(to.data.map((e) => e.id)).not.toContain(all[2]!.id);
    const oldest = all.at(-1)!.at;
    const newest = all[0]!.at;
    const window = await callsOf(key, { from: oldest, to: newest });
    expect(window.data.map((e) => e.id)).toEqual(
      all
        .filter((e) => Date.parse(e.at) >= Date.parse(oldest) && Date.parse(e.at) < Date.parse(newest))
        .map((e) => e.id),
    );
    const withOffset = new Date(Date.parse(pivot)).toISOString().replace('Z', '+00:00');
    expect((await callsOf(key, { from: withOffset })).summary.total).toBe(from.summary.total);
    expect((await callsOf(key, { from: '2000-01-01T00:00:00Z', to: '2000-01-02T00:00:00Z' })).data).toEqual(
      [],
    );

    // api_key_id narrows the account's history to one key.
    const observerView = await usage(svc, acme.keys.observer!, { limit: '1000' });
    expect(new Set(observerView.data.map((e) => e.api_key_id)).size).toBeGreaterThan(1);
    expect(all.every((e) => e.api_key_id === key.id)).toBe(true);
  });

  it('walks every entry exactly once, newest first, with limit + cursor', async () => {
    const pager = acme.keys.pager!;
    await pool(
      Array.from({ length: 23 }, (_, i) => i),
      4,
      async (i) => {
        expect((await call(svc, pager, '', { 'X-Request-Id': `pager-${i}` })).status).toBe(200);
      },
    );
    const full = (await waitForCalls(pager, 23)).data;

    const seen: UsageCallBody[] = [];
    const pageSizes: number[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const query: Record<string, string> = { api_key_id: pager.id, limit: '5' };
      if (cursor) query.cursor = cursor;
      const body = await usage(svc, acme.keys.observer!, query);
      // The summary covers the whole filtered range, not just the page.
      expect(body.summary.total).toBe(23);
      expect(body.summary.by_endpoint).toEqual({ '/api/v1/usage': 23 });
      expect(body.summary.by_status).toEqual({ '200': 23 });
      pageSizes.push(body.data.length);
      seen.push(...body.data);
      cursor = body.next_cursor;
      if (!cursor) break;
      expect(typeof cursor).toBe('string');
    }
    expect(pageSizes).toEqual([5, 5, 5, 5, 3]);
    expect(cursor).toBeNull();
    expect(new Set(seen.map((e) => e.id)).size).toBe(23);
    expect(seen.map((e) => e.id)).toEqual(full.map((e) => e.id));
    expect(seen.map((e) => e.request_id).sort()).toEqual(
      Array.from({ length: 23 }, (_, i) => `pager-${i}`).sort(),
    );
    for (let i = 1; i < seen.length; i++) expect(newerFirst(seen[i - 1]!, seen[i]!)).toBeLessThan(0);

    // Exactly one page: no cursor.
    expect((await usage(svc, acme.keys.observer!, { api_key_id: pager.id, limit: '23' })).next_cursor).toBe(
      null,
    );
    expect((await usage(svc, acme.keys.observer!, { api_key_id: pager.id, limit: '1' })).data).toHaveLength(
      1,
    );
  });

  it('answers ranges that start late on 9999-12-31, the last day it accepts', async () => {
    const key = acme.keys.observer!;
    for (const from of ['9999-12-31T12:00:00Z', '9999-12-31T23:30:00Z'])
      for (const extra of [{}, { group_by: 'hour' }, { group_by: 'day' }] as Record<string, string>[]) {
        const page = await usage(svc, key, { from, ...extra });
        expect(page.summary.total).toBe(0);
        expect(page.data).toEqual([]);
      }
  });

  it('refuses invalid cursors, limits and unknown parameters with 400 problem+json', async () => {
    const key = acme.keys.observer!;
    const badCursors = [
      'not-a-cursor',
      b64('{}'),
      b64('[]'),
      b64('null'),
      b64('{"at":"1","id":"use_x"}'),
      b64('{"at":"0000-01-01T00:00:00.000Z","id":"use_000000000000000000000000000a"}'),
      b64('{"at":"2026-01-01T00:00:00.000Z"}'), // a bucket cursor on a call listing
      b64(`{"at":"2026-01-01T00:00:00.000Z","id":"use_' or 1=1 --"}`),
      b64('{"at":"2026-01-01T00:00:00.000Z","id":"use_\\u0000"}'),
      'A'.repeat(600),
    ];
    for (const cursor of badCursors) {
      const { status, body } = await problem(svc, key, `cursor=${encodeURIComponent(cursor)}`);
      expect(status, cursor).toBe(400);
      expect(body.code).toBe('invalid_request');
      expect(
        body.errors?.some((e) => e.path.includes('cursor')),
        cursor,
      ).toBe(true);
    }

    for (const limit of ['0', '1001', 'abc', '-1', '1.5', '']) {
      const { status, body } = await problem(svc, key, `limit=${limit}`);
      expect(status, `limit=${limit}`).toBe(400);
      expect(body.code).toBe('invalid_request');
      expect(body.type).toBe('https://riskwatch.dev/errors/invalid_request');
      expect(body.errors).toEqual([expect.objectContaining({ path: 'query.limit' })]);
    }
    expect((await usage(svc, key, { limit: '1000' })).data.length).toBeLessThanOrEqual(1000);
    expect((await usage(svc, key, { limit: '1' })).data).toHaveLength(1);

    for (const query of [
      'colour=blue',
      'group_by=week',
      'status=abc',
      'status=99',
      'from=yesterday',
      'to=2026-13-01T00:00:00Z',
      'from=2026-01-01',
      'from=0000-01-01T00:00:00Z',
      'limit=5&limit=6',
      'endpoint=%00',
    ]) {
      const { status, body } = await problem(svc, key, query);
      expect(status, query).toBe(400);
      expect(body.code, query).toBe('invalid_request');
      expect(body.errors?.length, query).toBeGreaterThan(0);
    }
  });

  it('groups by hour and day into buckets whose totals add up to the summary', async () => {
    // History a few days back, written straight into the table (what the drain would have stored).
    const day0 =
      Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()) -
      3 * 86_400_000;
    const at = (dayOffset: number, h: number, m: number) =>
      new Date(day0 + dayOffset * 86_400_000 + h * 3_600_000 + m * 60_000);
    const history: [Date, number][] = [
      [at(0, 5, 10), 200],
      [at(0, 5, 11), 200],
      [at(0, 5, 12), 200],
      [at(0, 5, 40), 400],
      [at(0, 7, 0), 200],
      [at(0, 7, 59), 429],
      [at(1, 12, 30), 200],
      [at(1, 12, 31), 200],
      [at(1, 12, 32), 200],
      [at(1, 12, 33), 500],
      [at(2, 23, 59), 200],
    ];
    const histKey = 'key_history0000000000000000000000';
    for (const [i, [when, status]] of history.entries())
      await db.query(
        `insert into usage_records
           (id, account_id, api_key_id, api_key_prefix, method, endpoint, status, latency_ms, request_id, at)
         values ($1, $2, $3, 'rwk_hist', 'GET', '/api/v1/usage', $4, $5, $6, $7)`,
        [
          `use_${when.getTime().toString(16).padStart(12, '0')}${String(i).padStart(16, '0')}`,
          acme.accountId,
          histKey,
          status,
          10 * (i + 1),
          `hist-${i}`,
          when,
        ],
      );
    const hist = { id: histKey, key: '', prefix: '' };

    const hours = await callsOf<UsageBucketBody>(hist, { group_by: 'hour' });
    const hourBuckets = hours.data;
    expect(hours.summary.total).toBe(11);
    expect(hourBuckets.map((b) => [b.bucket_start, b.total])).toEqual([
      [at(2, 23, 0).toISOString(), 1],
      [at(1, 12, 0).toISOString(), 4],
      [at(0, 7, 0).toISOString(), 2],
      [at(0, 5, 0).toISOString(), 4],
    ]);
    expect(sum(hourBuckets.map((b) => b.total))).toBe(hours.summary.total);
    expect(hourBuckets[1]!.by_status).toEqual({ '200': 3, '500': 1 });
    expect(hourBuckets[3]!.by_status).toEqual({ '200': 3, '400': 1 });
    for (const b of hourBuckets) {
      expect(b.bucket_start).toMatch(/T\d{2}:00:00\.000Z$/);
      expect(sum(Object.values(b.by_status))).toBe(b.total);
      expect(typeof b.latency_ms_avg).toBe('number');
      expect(b.latency_ms_p95).toBeGreaterThanOrEqual(b.latency_ms_avg);
    }
    expect(hourBuckets[3]!.latency_ms_avg).toBe(25); // (10 + 20 + 30 + 40) / 4

    const days = await callsOf<UsageBucketBody>(hist, { group_by: 'day' });
    const dayBuckets = days.data;
    expect(dayBuckets.map((b) => [b.bucket_start, b.total])).toEqual([
      [at(2, 0, 0).toISOString(), 1],
      [at(1, 0, 0).toISOString(), 4],
      [at(0, 0, 0).toISOString(), 6],
    ]);
    expect(sum(dayBuckets.map((b) => b.total))).toBe(days.summary.total);
    for (const b of dayBuckets) expect(b.bucket_start).toMatch(/T00:00:00\.000Z$/);

    // Buckets page with a cursor too; the summary stays the whole range.
    const walked: UsageBucketBody[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const query: Record<string, string> = { group_by: 'hour', limit: '1' };
      if (cursor) query.cursor = cursor;
      const page: UsagePage<UsageBucketBody> = await callsOf<UsageBucketBody>(hist, query);
      expect(page.summary.total).toBe(11);
      walked.push(...page.data);
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    expect(walked.map((b) => b.bucket_start)).toEqual(hourBuckets.map((b) => b.bucket_start));

    // Filters apply to buckets as well: one day, and one status.
    const oneDay = await callsOf<UsageBucketBody>(hist, {
      group_by: 'day',
      from: at(1, 0, 0).toISOString(),
      to: at(2, 0, 0).toISOString(),
    });
    expect(oneDay.summary.total).toBe(4);
    expect(oneDay.data.map((b) => b.total)).toEqual([4]);
    const okOnly = await callsOf<UsageBucketBody>(hist, { group_by: 'hour', status: '200' });
    expect(sum(okOnly.data.map((b) => b.total))).toBe(8);

    // The whole account (live calls included): buckets still add up to the summary.
    for (const groupBy of ['hour', 'day']) {
      const whole = await usage<UsageBucketBody>(svc, acme.keys.observer!, {
        group_by: groupBy,
        limit: '1000',
      });
      expect(sum(whole.data.map((b) => b.total))).toBe(whole.summary.total);
      expect(sum(Object.values(whole.summary.by_status))).toBe(whole.summary.total);
      expect(sum(Object.values(whole.summary.by_endpoint))).toBe(whole.summary.total);
    }
  });

  it("isolates accounts: a key never sees another account's calls", async () => {
    const b1 = beta.keys.b1!;
    const own = [await call(svc, b1), await call(svc, b1)];
    const betaView = await eventually(async () => {
      const b = await usage(svc, b1, { limit: '1000' });
      const ids = b.data.map((e) => e.request_id);
      return own.every((c) => ids.includes(c.requestId)) ? b : undefined;
    }, 5000);
    expect(betaView, "beta's calls recorded").toBeDefined();
    expect(betaView!.data.every((e) => e.api_key_id === b1.id)).toBe(true);

    const acmeView = await usage(svc, acme.keys.observer!, { limit: '1000' });
    expect(acmeView.data.length).toBeGreaterThan(0);
    const acmeRequestIds = new Set(acmeView.data.map((e) => e.request_id));
    const acmeKeyIds = new Set(Object.values(acme.keys).map((k) => k.id));
    expect(betaView!.data.some((e) => acmeRequestIds.has(e.request_id) || acmeKeyIds.has(e.api_key_id))).toBe(
      false,
    );
    expect(acmeView.data.some((e) => e.api_key_id === b1.id)).toBe(false);

    // Filtering by another account's key id finds nothing (no existence leak either way).
    for (const key of Object.values(acme.keys)) {
      const foreign = await usage(svc, b1, { api_key_id: key.id });
      expect(foreign.data).toEqual([]);
      expect(foreign.summary).toEqual({ total: 0, by_endpoint: {}, by_status: {} });
      expect((await usage(svc, b1, { api_key_id: key.id, group_by: 'day' })).data).toEqual([]);
    }
    expect((await usage(svc, acme.keys.observer!, { api_key_id: b1.id })).summary.total).toBe(0);
    const betaBuckets = await usage<UsageBucketBody>(svc, b1, { group_by: 'day' });
    expect(sum(betaBuckets.data.map((b) => b.total))).toBe(betaBuckets.summary.total);
  });

  /** Rows of `history` for the exact account: ~3 days, 5 days ago, at random milliseconds. */
  async function seedExactHistory() {
    const rows = historyRows(exact.accountId, [exact.keys.e1!.id, exact.keys.e2!.id], day0(5), 900, 11);
    // Several statements, one replayed: the rollups follow what each statement actually inserted.
    await insertRows(db, rows.slice(0, 400));
    await insertRows(db, rows.slice(200, 900));
    await insertRows(db, rows.slice(0, 900));
    return rows;
  }

  /** What the API must answer for a range and filter, counted over usage_records by brute force. */
  async function bruteForce(where: string, params: unknown[], groupBy?: 'hour' | 'day') {
    const all = [exact.accountId, ...params];
    const summary = await db.query<{ endpoint: string; status: number; n: string }>(
      `select endpoint, status, count(*) as n from usage_records where account_id = $1 ${where} group by 1, 2`,
      all,
    );
    const expected = {
      total: 0,
      by_endpoint: {} as Record<string, number>,
      by_status: {} as Record<string, number>,
    };
    for (const r of summary.rows) {
      expected.total += Number(r.n);
      expected.by_endpoint[r.endpoint] = (expected.by_endpoint[r.endpoint] ?? 0) + Number(r.n);
      expected.by_status[r.status] = (expected.by_status[r.status] ?? 0) + Number(r.n);
    }
    if (!groupBy) return { summary: expected, buckets: [] };
    const bucket = `date_trunc('${groupBy}', at, 'UTC')`;
    const buckets = await db.query<{ b: Date; total: string; avg: string; p95: number; max: number }>(
      `select ${bucket} as b, count(*) as total, round(avg(latency_ms)) as avg, max(latency_ms) as max,
              percentile_disc(0.95) within group (order by latency_ms) as p95
         from usage_records where account_id = $1 ${where} group by 1 order by 1 desc`,
      all,
    );
    const statuses = await db.query<{ b: Date; status: number; n: string }>(
      `select ${bucket} as b, status, count(*) as n from usage_records where account_id = $1 ${where} group by 1, 2`,
      all,
    );
    return {
      summary: expected,
      buckets: buckets.rows.map((r) => ({
        bucket_start: new Date(r.b).toISOString(),
        total: Number(r.total),
        by_status: Object.fromEntries(
          statuses.rows
            .filter((s) => new Date(s.b).getTime() === new Date(r.b).getTime())
            .map((s) => [String(s.status), Number(s.n)]),
        ),
        latency_ms_avg: Number(r.avg),
        p95: r.p95,
        max: r.max,
      })),
    };
  }

  it('answers summaries and buckets exactly for ranges not on hour or day boundaries', async () => {
    await seedExactHistory();
    const d0 = day0(5);
    const at = (ms: number) => new Date(d0 + ms).toISOString();
    const H = 3_600_000;
    const e2 = exact.keys.e2!.id;
    const cases: { query: Record<string, string>; where: string; params: unknown[] }[] = [
      {
        query: { from: at(3 * H + 1_017_345), to: at(53 * H + 2_530_500) },
        where: 'and at >= $2 and at < $3',
        params: [at(3 * H + 1_017_345), at(53 * H + 2_530_500)],
      },
      {
        query: { from: at(10.5 * H), to: at(11.25 * H) },
        where: 'and at >= $2 and at < $3',
        params: [at(10.5 * H), at(11.25 * H)],
      },
      {
        query: { from: at(10.2 * H), to: at(10.7 * H) },
        where: 'and at >= $2 and at < $3',
        params: [at(10.2 * H), at(10.7 * H)],
      },
      {
        query: { from: at(24 * H), to: at(72 * H) },
        where: 'and at >= $2 and at < $3',
        params: [at(24 * H), at(72 * H)],
      },
      {
        query: { from: at(37 * H + 420_001), api_key_id: e2 },
        where: 'and at >= $2 and api_key_id = $3',
        params: [at(37 * H + 420_001), e2],
      },
      {
        query: { to: at(49 * H + 61_000), api_key_id: e2 },
        where: 'and at < $2 and api_key_id = $3',
        params: [at(49 * H + 61_000), e2],
      },
      { query: { api_key_id: e2 }, where: 'and api_key_id = $2', params: [e2] },
      {
        query: { from: at(2 * H + 5), to: at(70 * H + 5), status: '429' },
        where: 'and at >= $2 and at < $3 and status = 429',
        params: [at(2 * H + 5), at(70 * H + 5)],
      },
      {
        query: { from: at(13 * H + 99), to: at(61 * H + 1), endpoint: '/api/v1/scan/token' },
        where: "and at >= $2 and at < $3 and endpoint = '/api/v1/scan/token'",
        params: [at(13 * H + 99), at(61 * H + 1)],
      },
      {
        query: {
          from: at(5 * H + 1),
          to: at(66 * H + 7),
          status: '200',
          api_key_id: e2,
          endpoint: '/api/v1/risk/assess',
        },
        where:
          "and at >= $2 and at < $3 and status = 200 and api_key_id = $4 and endpoint = '/api/v1/risk/assess'",
        params: [at(5 * H + 1), at(66 * H + 7), e2],
      },
    ];
    for (const c of cases) {
      const calls = await usage(svc, exact.keys.e1!, { limit: '1', ...c.query });
      const expected = await bruteForce(c.where, c.params);
      expect(calls.summary, JSON.stringify(c.query)).toEqual(expected.summary);
      expect(expected.summary.total, JSON.stringify(c.query)).toBeGreaterThan(0);
      for (const groupBy of ['hour', 'day'] as const) {
        const label = `${groupBy} ${JSON.stringify(c.query)}`;
        const want = await bruteForce(c.where, c.params, groupBy);
        // Walked in pages of 5 (cursor = bucket start), partial end buckets included.
        const got: UsageBucketBody[] = [];
        let cursor: string | null = null;
        for (let page = 0; page < 100; page++) {
          const query: Record<string, string> = { ...c.query, group_by: groupBy, limit: '5' };
          if (cursor) query.cursor = cursor;
          const body: UsagePage<UsageBucketBody> = await usage<UsageBucketBody>(svc, exact.keys.e1!, query);
          expect(body.summary, label).toEqual(want.summary);
          got.push(...body.data);
          cursor = body.next_cursor;
          if (!cursor) break;
        }
        expect(
          got.map((b) => [b.bucket_start, b.total, b.by_status, b.latency_ms_avg]),
          label,
        ).toEqual(want.buckets.map((b) => [b.bucket_start, b.total, b.by_status, b.latency_ms_avg]));
        for (const [i, b] of got.entries()) {
          // The p95 is the histogram's estimate: never below percentile_disc(0.95), at most 20% above.
          expect(b.latency_ms_p95, label).toBeGreaterThanOrEqual(want.buckets[i]!.p95);
          expect(b.latency_ms_p95, label).toBeLessThanOrEqual(
            Math.max(want.buckets[i]!.p95 * 1.2, want.buckets[i]!.p95 + 1),
          );
          expect(b.latency_ms_p95, label).toBeLessThanOrEqual(want.buckets[i]!.max);
        }
      }
    }
  });

  it('walks every call matching a status, endpoint or key filter exactly once, newest first', async () => {
    const e2 = exact.keys.e2!.id;
    const filters: [Record<string, string>, string, unknown[]][] = [
      [{ status: '429' }, 'and status = 429', []],
      [{ endpoint: '/api/v1/scan/token' }, "and endpoint = '/api/v1/scan/token'", []],
      [{ api_key_id: e2 }, 'and api_key_id = $2', [e2]],
      [{ status: '503', api_key_id: e2 }, 'and status = 503 and api_key_id = $2', [e2]],
      [
        { status: '400', from: new Date(day0(5) + 30 * 3_600_000 + 123).toISOString() },
        'and status = 400 and at >= $2',
        [new Date(day0(5) + 30 * 3_600_000 + 123).toISOString()],
      ],
    ];
    for (const [filter, where, params] of filters) {
      const { rows } = await db.query<{ id: string }>(
        `select id from usage_records where account_id = $1 ${where} order by at desc, id desc`,
        [exact.accountId, ...params],
      );
      expect(rows.length, JSON.stringify(filter)).toBeGreaterThan(7);
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 200; page++) {
        const query: Record<string, string> = { ...filter, limit: '7' };
        if (cursor) query.cursor = cursor;
        const body: UsagePage<UsageCallBody> = await usage(svc, exact.keys.e1!, query);
        expect(body.summary.total).toBe(rows.length);
        seen.push(...body.data.map((e) => e.id));
        cursor = body.next_cursor;
        if (!cursor) break;
      }
      expect(seen, JSON.stringify(filter)).toEqual(rows.map((r) => r.id));
    }
  });

  it('counts a replayed drain batch once: rollups equal the stored calls', async () => {
    const streamKey = `${env.REDIS_KEY_PREFIX}usage:stream`;
    const keyId = 'key_replayed000000000000000000000';
    const now = Date.now();
    const batch = Array.from({ length: 5 }, (_, i) => ({
      id: `use_${(now + i).toString(16).padStart(12, '0')}${'f'.repeat(15)}${i}`,
      account_id: replay.accountId,
      api_key_id: keyId,
      api_key_prefix: 'rwk_rply',
      method: 'POST',
      endpoint: '/api/v1/scan/token',
      status: i === 0 ? 429 : 200,
      latency_ms: 10 * i,
      request_id: `replayed-${i}`,
      at: new Date(now - 2 * 86_400_000 + i * 1000).toISOString(),
    }));
    const redis = new Redis(REDIS_URL);
    try {
      // The same batch twice, as after a crash between insert and acknowledgement.
      const first = await redis.xadd(streamKey, '*', 'b', JSON.stringify(batch));
      const second = await redis.xadd(streamKey, '*', 'b', JSON.stringify(batch));
      const drained = await eventually(async () => {
        const left = await redis.xrange(streamKey, first!, second!);
        return left.length === 0;
      }, 10_000);
      expect(drained).toBe(true);
    } finally {
      redis.disconnect();
    }
    // And the rows once more, straight into the table.
    await insertRows(db, batch);

    const { rows } = await db.query<{ n: string }>(
      'select count(*) as n from usage_records where account_id = $1 and api_key_id = $2',
      [replay.accountId, keyId],
    );
    expect(Number(rows[0]!.n)).toBe(5);
    // Every grain and every combination of dimensions counts each call once.
    const rollups = await db.query<{ grain: string; dims: number; calls: string }>(
      `select grain, dims, sum(calls) as calls from usage_rollups where account_id = $1 and (api_key_id = $2 or dims & 4 = 0)
        group by 1, 2 order by 1, 2`,
      [replay.accountId, keyId],
    );
    const recorded = await db.query<{ n: string }>(
      'select count(*) as n from usage_records where account_id = $1',
      [replay.accountId],
    );
    for (const r of rollups.rows)
      expect(Number(r.calls), `${r.grain} dims ${r.dims}`).toBe(r.dims & 4 ? 5 : Number(recorded.rows[0]!.n));
    expect(rollups.rows).toHaveLength(16);
    const body = await usage(svc, replay.keys.r1!, { api_key_id: keyId });
    expect(body.summary).toEqual({
      total: 5,
      by_endpoint: { '/api/v1/scan/token': 5 },
      by_status: { '200': 4, '429': 1 },
    });
    const days = await usage<UsageBucketBody>(svc, replay.keys.r1!, { api_key_id: keyId, group_by: 'day' });
    expect(days.data.map((b) => [b.total, b.by_status, b.latency_ms_avg, b.latency_ms_p95])).toEqual([
      [5, { '200': 4, '429': 1 }, 20, 40],
    ]);
  });

  it('stores what a call was about from the stream, and entries written before those fields existed', async () => {
    const streamKey = `${env.REDIS_KEY_PREFIX}usage:stream`;
    const keyId = 'key_about00000000000000000000000';
    const now = Date.now();
    const base = (i: number) => ({
      id: `use_${(now + i).toString(16).padStart(12, '0')}${'a'.repeat(15)}${i}`,
      account_id: replay.accountId,
      api_key_id: keyId,
      api_key_prefix: 'rwk_abut',
      method: 'POST',
      endpoint: '/api/v1/shield/preflight',
      status: 200,
      latency_ms: 3,
      request_id: `about-${i}`,
      at: new Date(now - 60_000 + i * 1000).toISOString(),
    });
    const batch: UsageEntry[] = [
      // As an API before this release wrote it: no target fields at all.
      base(0),
      {
        ...base(1),
        target: '0x4Cd241E8d1510e30b2076397afc7508Ae59C66c9',
        chain: 'ethereum',
        network: 'mainnet',
      },
      { ...base(2), targets: 250 },
      // Longer than the columns (a client's raw chain name): cut, never a failed batch.
      { ...base(3), target: 'x'.repeat(300), chain: 'c'.repeat(100), network: 'n'.repeat(100) },
    ];
    const redis = new Redis(REDIS_URL);
    try {
      const id = await redis.xadd(streamKey, '*', 'b', JSON.stringify(batch));
      const drained = await eventually(
        async () => (await redis.xrange(streamKey, id!, id!)).length === 0,
        10_000,
      );
      expect(drained).toBe(true);
    } finally {
      redis.disconnect();
    }
    const body = await usage(svc, replay.keys.r1!, { api_key_id: keyId });
    const about = body.data
      .sort((a, b) => a.request_id.localeCompare(b.request_id))
      .map((c) => [c.target, c.chain, c.network, c.targets]);
    expect(about).toEqual([
      [null, null, null, null],
      ['0x4Cd241E8d1510e30b2076397afc7508Ae59C66c9', 'ethereum', 'mainnet', null],
      [null, null, null, 250],
      ['x'.repeat(200), 'c'.repeat(40), 'n'.repeat(40), null],
    ]);
  });

  it('bins latencies in SQL as src/usage/rollups.ts does', async () => {
    const { rows } = await db.query<{ ms: number; bin: number }>(
      'select ms, usage_hist_bin(ms) as bin from generate_series(0, 70000) ms',
    );
    expect(rows.filter((r) => r.bin !== histBin(r.ms))).toEqual([]);
  });
});

describe('usage recording loses nothing', () => {
  let env: Record<string, string>;
  let dropDatabase: () => Promise<void>;
  let key: TestKey;
  let db: pg.Client;
  let redis: Redis;
  const running: RunningService[] = [];
  const start = async (role: 'api' | 'worker') => {
    const svc = await startService(env, role);
    running.push(svc);
    return svc;
  };

  beforeAll(async () => {
    ({ env, dropDatabase } = await prepareEnv());
    key = (await createCustomer(env, 'steady', ['k'], { rateLimitPerMin: 100_000 })).keys.k!;
    db = new pg.Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    redis = new Redis(REDIS_URL, { lazyConnect: true });
    await redis.connect();
  }, 180_000);

  afterAll(async () => {
    for (const svc of running) if (svc.process.exitCode === null) await killHard(svc);
    await db?.end();
    redis?.disconnect();
    await dropDatabase?.();
  });

  const stored = async (requestIds: string[]) => {
    const { rows } = await db.query<{ request_id: string }>(
      'select request_id from usage_records where request_id = any($1)',
      [requestIds],
    );
    return new Set(rows.map((r) => r.request_id));
  };

  const fire = (api: RunningService, requestId: string) =>
    fetch(`${api.baseUrl}${USAGE}?limit=1`, { headers: { 'X-API-Key': key.key, 'X-Request-Id': requestId } })
      .then(async (res) => {
        await res.arrayBuffer();
        return { requestId, status: res.status, echoed: res.headers.get('x-request-id') };
      })
      .catch(() => null);

  it('keeps every answered call across a graceful api shutdown while no worker runs', async () => {
    const api = await start('api');
    const worker = await start('worker');
    expect(await worker.stop(), 'worker exits 0 on SIGTERM').toBe(0);

    const N = 200;
    let answered = 0;
    let firstAnswer: () => void = () => undefined;
    const gotOne = new Promise<void>((resolve) => (firstAnswer = resolve));
    const calls = Array.from({ length: N }, (_, i) =>
      fire(api, `shutdown-${i}`).then((r) => {
        if (r) {
          answered++;
          firstAnswer();
        }
        return r;
      }),
    );
    await gotOne;
    const exitCode = api.stop(); // SIGTERM while most of the calls are still in flight
    const results = await Promise.all(calls);
    expect(await exitCode, `api exit code; output:\n${api.output()}`).toBe(0);
    expect(api.output()).not.toMatch(/not recorded before shutdown/);

    const ok = results.filter((r): r is NonNullable<typeof r> => r !== null);
    expect(ok.every((r) => r.status === 200 && r.echoed === r.requestId)).toBe(true);
    console.log(`[usage] graceful shutdown: ${ok.length}/${N} calls answered (${answered} counted)`);
    // Graceful: the calls already sent when SIGTERM arrived are answered, not reset.
    expect(ok.length).toBe(N);

    // Nothing is stored yet: every answered call is waiting in the stream.
    expect((await stored(ok.map((r) => r.requestId))).size).toBe(0);

    await start('worker');
    const ids = ok.map((r) => r.requestId);
    const all = await eventually(async () => (await stored(ids)).size === ids.length, 15_000, 200);
    const got = await stored(ids);
    expect(
      ids.filter((id) => !got.has(id)),
      'answered calls missing from usage',
    ).toEqual([]);
    expect(all).toBe(true);
    // And nothing that was never sent.
    const { rows } = await db.query<{ n: string }>(
      "select count(*) as n from usage_records where request_id not like 'shutdown-%'",
    );
    expect(Number(rows[0]!.n)).toBe(0);
  }, 90_000);

  it('stores everything after a worker is killed with SIGKILL mid-stream (consumer-group reclaim)', async () => {
    for (const svc of running.splice(0)) await svc.stop();
    const api = await start('api');
    const w1 = await start('worker');
    const streamKey = `${env.REDIS_KEY_PREFIX}usage:stream`;

    const N = 300;
    const ids = Array.from({ length: N }, (_, i) => `kill9-${i}`);
    let done = 0;
    let killed: Promise<void> | undefined;
    const results = await pool(ids, 10, async (id) => {
      const r = await fire(api, id);
      if (++done === 100) killed = killHard(w1);
      return r;
    });
    await killed;
    expect(results.every((r) => r?.status === 200)).toBe(true);

    // A consumer that read entries and died before acknowledging them (deterministic, on top of the kill).
    const ghost = (await redis.xreadgroup(
      'GROUP',
      'usage-drain',
      'ghost-consumer',
      'COUNT',
      25,
      'STREAMS',
      streamKey,
      '>',
    )) as [string, [string, string[]][]][] | null;
    const ghostHeld = ghost?.[0]?.[1].length ?? 0;
    const pendingBefore = (await redis.xpending(streamKey, 'usage-drain')) as [number, ...unknown[]];
    console.log(
      `[usage] after SIGKILL: ${pendingBefore[0]} entries pending (ghost holds ${ghostHeld}), ` +
        `${await redis.xlen(streamKey)} in the stream, ${(await stored(ids)).size}/${N} stored`,
    );
    expect(ghostHeld).toBeGreaterThan(0);

    const started = Date.now();
    await start('worker');
    const complete = await eventually(async () => (await stored(ids)).size === N, 40_000, 250);
    const got = await stored(ids);
    expect(
      ids.filter((id) => !got.has(id)),
      'calls missing from usage',
    ).toEqual([]);
    expect(complete).toBe(true);
    console.log(`[usage] all ${N} stored ${Date.now() - started} ms after the new worker started`);
    const { rows } = await db.query<{ n: string }>(
      "select count(*) as n from usage_records where request_id like 'kill9-%'",
    );
    expect(Number(rows[0]!.n), 'no duplicates').toBe(N);
    // Acknowledged and deleted: nothing left pending or waiting.
    const drained = await eventually(async () => {
      const pending = (await redis.xpending(streamKey, 'usage-drain')) as [number, ...unknown[]];
      return pending[0] === 0 && (await redis.xlen(streamKey)) === 0;
    }, 5000);
    expect(drained).toBe(true);
  }, 120_000);
});

describe('usage rollups migration', () => {
  it('backfills rollups of calls stored before it, equal to what the insert trigger builds; prunes both', async () => {
    const database = await createTestDatabase();
    const orm = await connectOrm(database.url);
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      await orm.migrator.up({ to: 'Migration20261124013104' });
      const rows = [
        ...historyRows('acc_backfill1', ['key_a', 'key_b'], day0(4), 700, 3),
        ...historyRows('acc_backfill2', ['key_c'], day0(2), 300, 5),
      ];
      await insertRows(db, rows.slice(0, 600));
      await insertRows(db, rows.slice(500));
      expect(
        (await db.query<{ t: string | null }>("select to_regclass('usage_rollups') as t")).rows[0]!.t,
      ).toBeNull();

      await orm.migrator.up();
      await db.query('create temp table backfilled as select * from usage_rollups');
      const backfilled = Number(
        (await db.query<{ n: string }>('select count(*) as n from backfilled')).rows[0]!.n,
      );
      expect(backfilled).toBeGreaterThan(0);
      const totals = await db.query<{ account_id: string; calls: string }>(
        "select account_id, sum(calls) as calls from backfilled where grain = 'day' and dims = 0 group by 1 order by 1",
      );
      expect(totals.rows.map((r) => [r.account_id, Number(r.calls)])).toEqual([
        ['acc_backfill1', 700],
        ['acc_backfill2', 300],
      ]);

      // The same calls again through the trigger, in other statements: the same rollups, row for row.
      await db.query('delete from usage_rollups');
      await db.query('delete from usage_records');
      for (let i = 0; i < rows.length; i += 130) await insertRows(db, rows.slice(i, i + 130));
      await insertRows(db, rows.slice(100, 400));
      const diff = await db.query(
        `(select * from usage_rollups except all select * from backfilled)
         union all (select * from backfilled except all select * from usage_rollups)`,
      );
      expect(diff.rows).toEqual([]);

      // Retention: calls before the UTC day 3 days ago go, with their rollups; what stays still adds up.
      const { deleted } = await new UsageService(orm).prune(3);
      const cutoff = new Date(day0(3));
      expect(deleted).toBe(rows.filter((r) => Date.parse(r.at) < cutoff.getTime()).length);
      expect(deleted).toBeGreaterThan(0);
      const left = await db.query<{ grain: string; dims: number; calls: string; records: string }>(
        `select grain, dims, sum(calls) as calls, (select count(*) from usage_records) as records
           from usage_rollups group by 1, 2`,
      );
      expect(left.rows).toHaveLength(16);
      for (const r of left.rows) expect(Number(r.calls), `${r.grain} ${r.dims}`).toBe(Number(r.records));
      const oldest = await db.query<{ rollup: Date; call: Date }>(
        'select (select min(start) from usage_rollups) as rollup, (select min(at) from usage_records) as call',
      );
      expect(new Date(oldest.rows[0]!.rollup).getTime()).toBeGreaterThanOrEqual(cutoff.getTime());
      expect(new Date(oldest.rows[0]!.call).getTime()).toBeGreaterThanOrEqual(cutoff.getTime());
    } finally {
      await db.end();
      await orm.close();
      await database.drop();
    }
  }, 60_000);
});
