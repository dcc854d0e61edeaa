import { getAddressDecoder } from '@solana/kit';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveNetwork } from '../../src/chains/registry.js';
import { operatorActor } from '../../src/audit/actor.js';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import type {
  AddEntriesResultBody,
  AlertBody,
  AlertPageBody,
  RemoveEntriesResultBody,
  RescanAcceptedBody,
  RescanBody,
  SnapshotPageBody,
  WatchlistBody,
  WatchlistEntryBody,
  WatchlistEntryPageBody,
  WatchlistPageBody,
} from '../../src/watchlists/schemas.js';
import { watchlistServices } from '../support/watchlist-services.js';
import {
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import { REDIS_URL } from '../support/env.js';
import { freePort, prepareEnv, type RunningService, type TestEnv } from '../support/service.js';

/*
 * The watchlist API (docs/api.md, "Watchlists") against the built service, PostgreSQL and Redis: CRUD,
 * bulk entries with per-entry results, filters and cursors, removal by target, rescans and their progress,
 * snapshot history, alerts, and another account's ids answering 404. The scanner is not running (role
 * `api`): what it would write (risk levels, snapshots, alerts, deep_checked_at) is written here in SQL.
 */

/** A distinct EVM address per call, lower-case (unchecksummed). */
let evmCounter = 0;
const evmAddress = () =>
  `0x${(++evmCounter).toString(16).padStart(8, '0')}${randomBytes(16).toString('hex')}`;
const solanaAddress = () => getAddressDecoder().decode(randomBytes(32));

const SOLANA_MAINNET = resolveNetwork('solana', 'mainnet').caip2;
const ETHEREUM_MAINNET = 'eip155:1';
const BASE_MAINNET = 'eip155:8453';

describe('watchlists API (built service over HTTP)', () => {
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let sql: pg.Client;
  let svc: RunningService;
  let acme: Customer;
  let globex: Customer;

  const call = (customer: Customer | null, path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${svc.baseUrl}/api/v1/watchlists${path}`, {
      method: init.method ?? 'GET',
      headers: {
        ...(customer ? { 'x-api-key': customer.key.key } : {}),
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
  const createList = async (customer: Customer, body: Record<string, unknown> = {}) =>
    expectJson<WatchlistBody>(
      await call(customer, '', { method: 'POST', body: { name: 'list', ...body } }),
      201,
    );
  const addEntries = async (customer: Customer, id: string, entries: unknown[]) =>
    expectJson<AddEntriesResultBody>(
      await call(customer, `/${id}/entries`, { method: 'POST', body: { entries } }),
      200,
    );
  const entriesPage = async (customer: Customer, id: string, query: Record<string, string> = {}) =>
    expectJson<WatchlistEntryPageBody>(
      await call(customer, `/${id}/entries?${new URLSearchParams(query).toString()}`),
      200,
    );
  /** Every entry of a list, following next_cursor with pages of `limit`. */
  const allEntries = async (
    customer: Customer,
    id: string,
    query: Record<string, string> = {},
    limit = 1000,
  ) => {
    const all: WatchlistEntryBody[] = [];
    let cursor: string | null = null;
    do {
      const page: WatchlistEntryPageBody = await entriesPage(customer, id, {
        ...query,
        limit: String(limit),
        ...(cursor ? { cursor } : {}),
      });
      all.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    return all;
  };
  const count = async (table: string, where: string, params: unknown[]) =>
    Number(
      (await sql.query<{ n: string }>(`select count(*) as n from ${table} where ${where}`, params)).rows[0]!
        .n,
    );

  beforeAll(async () => {
    // Networks are configured (adding entries never calls them): nothing listens on these ports.
    const unused = `http://127.0.0.1:${await freePort()}`;
    testEnv = await prepareEnv({
      RISKWATCH_RPC_SOLANA_MAINNET: unused,
      RISKWATCH_RPC_ETHEREUM_MAINNET: unused,
      RISKWATCH_RPC_BASE_MAINNET: unused,
    });
    db = await openAccounts(testEnv.env);
    [acme, globex] = await Promise.all([db.customer('acme'), db.customer('globex')]);
    sql = new pg.Client({ connectionString: testEnv.env.DATABASE_URL });
    await sql.connect();
    svc = await startServiceRetrying(testEnv.env, 'api');
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await sql?.end();
    await db?.close();
    await testEnv?.dropDatabase();
  });

  describe('watchlists', () => {
    it('creates a list with the default schedules and thresholds, reads, changes and lists it', async () => {
      const created = await createList(acme, { name: '  treasury  ' });
      expect(created).toEqual({
        id: expect.stringMatching(/^wl_[0-9a-f]{28}$/) as unknown,
        name: 'treasury',
        schedule: '*/5 * * * *',
        deep_schedule: '0 3 * * *',
        thresholds: { balance_change_pct: 10 },
        entry_count: 0,
        next_tick_at: expect.any(String) as unknown,
        next_deep_at: expect.any(String) as unknown,
        created_at: expect.any(String) as unknown,
        updated_at: created.created_at,
      });
      // The due times are the crons' next runs after creation (UTC): the next 5th minute, the next 03:00.
      const createdAt = Date.parse(created.created_at);
      const tick = Date.parse(created.next_tick_at!);
      expect(tick).toBeGreaterThan(createdAt);
      expect(tick - createdAt).toBeLessThanOrEqual(5 * 60_000);
      expect(new Date(tick).getUTCMinutes() % 5).toBe(0);
      expect(new Date(created.next_deep_at!).getUTCHours()).toBe(3);
      expect(Date.parse(created.next_deep_at!) - createdAt).toBeLessThanOrEqual(86_400_000);
      expect(await expectJson(await call(acme, `/${created.id}`), 200)).toEqual(created);

      const changed = await expectJson<WatchlistBody>(
        await call(acme, `/${created.id}`, {
          method: 'PATCH',
          body: { name: 'hot wallets', schedule: '* * * * *', thresholds: { balance_change_pct: 2.5 } },
        }),
        200,
      );
      expect(changed).toMatchObject({
        id: created.id,
        name: 'hot wallets',
        schedule: '* * * * *',
        deep_schedule: '0 3 * * *',
        thresholds: { balance_change_pct: 2.5 },
        next_deep_at: created.next_deep_at,
      });
      // A changed schedule is due at its own next run: the next minute.
      expect(Date.parse(changed.next_tick_at!) - Date.parse(changed.updated_at)).toBeLessThanOrEqual(60_000);
      expect(Date.parse(changed.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));

      const other = await createList(acme, {
        name: 'cold',
        schedule: '0 * * * *',
        deep_schedule: '30 2 * * 1',
        thresholds: {},
      });
      expect(other).toMatchObject({ schedule: '0 * * * *', deep_schedule: '30 2 * * 1' });
      const first = await expectJson<WatchlistPageBody>(await call(acme, '?limit=1'), 200);
      expect(first.data.map((w) => w.id)).toEqual([other.id]);
      expect(first.next_cursor).toEqual(expect.any(String));
      const second = await expectJson<WatchlistPageBody>(
        await call(acme, `?limit=1&cursor=${first.next_cursor}`),
        200,
      );
      expect(second.data.map((w) => w.id)).toEqual([created.id]);
      await expectProblem(await call(acme, '?cursor=bm90LWEtY3Vyc29y'), 400, 'invalid_request');
    });

    it('refuses a bad cron, naming the field (and why a 6-field one is refused)', async () => {
      const bad = await expectProblem(
        await call(acme, '', { method: 'POST', body: { name: 'x', schedule: 'every minute' } }),
        400,
        'invalid_request',
      );
      expect(bad.errors).toEqual([
        { path: 'schedule', message: expect.stringContaining('5 fields') as unknown },
      ]);
      const sixFields = await expectProblem(
        await call(acme, '', { method: 'POST', body: { name: 'x', schedule: '*/10 * * * * *' } }),
        400,
        'invalid_request',
      );
      expect(sixFields.errors).toEqual([
        { path: 'schedule', message: expect.stringContaining('more often than once a minute') as unknown },
      ]);
      const outOfRange = await expectProblem(
        await call(acme, '', { method: 'POST', body: { name: 'x', schedule: '61 * * * *' } }),
        400,
        'invalid_request',
      );
      expect(outOfRange.errors?.[0]?.path).toBe('schedule');
      const list = await createList(acme);
      const patch = await expectProblem(
        await call(acme, `/${list.id}`, { method: 'PATCH', body: { deep_schedule: '* * *' } }),
        400,
        'invalid_request',
      );
      expect(patch.errors?.[0]?.path).toBe('deep_schedule');
      await expectProblem(
        await call(acme, '', { method: 'POST', body: { name: 'x', thresholds: { balance_change_pct: 0 } } }),
        400,
        'invalid_request',
      );
      await expectProblem(
        await call(acme, '', { method: 'POST', body: { name: '' } }),
        400,
        'invalid_request',
      );
      await expectProblem(
        await call(acme, '', { method: 'POST', body: { name: 'x', color: 'red' } }),
        400,
        'invalid_request',
      );
    });

    it('needs an API key', async () => {
      await expectProblem(await call(null, ''), 401, 'unauthorized');
      await expectProblem(
        await call(null, '/wl_0/entries', { method: 'POST', body: {} }),
        401,
        'unauthorized',
      );
    });
  });

  describe('bulk entries', () => {
    it('adds 10,000 entries in one call, then reports all 10,000 as existing', async () => {
      const list = await createList(acme);
      const entries = Array.from({ length: 10_000 }, (_, i) => ({
        target: evmAddress(),
        label: `customer ${i}`,
      }));
      let started = performance.now();
      const first = await addEntries(acme, list.id, entries);
      const firstMs = performance.now() - started;
      expect({ created: first.created, exists: first.exists, failed: first.failed }).toEqual({
        created: 10_000,
        exists: 0,
        failed: 0,
      });
      expect(first.results[0]).toEqual({
        index: 0,
        target: getAddress(entries[0]!.target),
        status: 'created',
        id: expect.stringMatching(/^wle_[0-9a-f]{28}$/) as unknown,
      });
      expect(first.results.map((r) => r.index)).toEqual(entries.map((_, i) => i));
      expect(new Set(first.results.map((r) => r.id)).size).toBe(10_000);

      started = performance.now();
      const again = await addEntries(acme, list.id, entries);
      const againMs = performance.now() - started;
      expect({ created: again.created, exists: again.exists, failed: again.failed }).toEqual({
        created: 0,
        exists: 10_000,
        failed: 0,
      });
      expect(again.results.map((r) => r.id)).toEqual(first.results.map((r) => r.id));
      console.log(
        `watchlists: 10,000 entries in one call: created in ${Math.round(firstMs)} ms, ` +
          `re-sent (all exist) in ${Math.round(againMs)} ms`,
      );
      // Its speed is measured by the bench (`watchlists`), on a quiet machine, not asserted here.

      const stored = await expectJson<WatchlistBody>(await call(acme, `/${list.id}`), 200);
      expect(stored.entry_count).toBe(10_000);
      const all = await allEntries(acme, list.id);
      expect(all).toHaveLength(10_000);
      expect(all[0]).toMatchObject({
        chain: 'ethereum',
        network: 'mainnet',
        label: expect.stringMatching(/^customer /) as unknown,
      });
      const ids = all.map((e) => e.id);
      expect(ids).toEqual([...ids].sort());
    });

    it('refuses 10,001 entries as too_many_entries and stores nothing', async () => {
      const list = await createList(acme);
      const entries = Array.from({ length: 10_001 }, () => ({ target: evmAddress() }));
      const problem = await expectProblem(
        await call(acme, `/${list.id}/entries`, { method: 'POST', body: { entries } }),
        400,
        'too_many_entries',
      );
      expect(problem.detail).toContain('10,001');
      expect(await count('watchlist_entries', 'watchlist_id = $1', [list.id])).toBe(0);
      // Refused by count before any item is read, even a malformed one.
      await expectProblem(
        await call(acme, `/${list.id}/entries`, {
          method: 'POST',
          body: { entries: Array.from({ length: 10_001 }, () => ({ nope: 1 })) },
        }),
        400,
        'too_many_entries',
      );
      await expectProblem(
        await call(acme, `/${list.id}/entries`, { method: 'POST', body: { entries: [] } }),
        400,
        'invalid_request',
      );
      await expectProblem(
        await call(acme, `/${list.id}/entries`, { method: 'POST', body: { entries: [{ target: 5 }] } }),
        400,
        'invalid_request',
      );
    });

    it('answers each entry of a mixed batch and keeps the valid ones', async () => {
      const list = await createList(acme);
      const sol = solanaAddress();
      const evm = evmAddress();
      const onBase = evmAddress();
      const typed = solanaAddress();
      const before = await addEntries(acme, list.id, [{ target: evm }]);
      expect(before.created).toBe(1);
      // The EIP-55 test vector 0x52908400098527886E0F7030069857D2E4169EE7 with one letter's case flipped.
      const flipped = '0x52908400098527886e0F7030069857D2E4169EE7';
      const batch = [
        { target: sol, label: 'ops' }, // 0: created (solana/mainnet inferred)
        { target: evm.toUpperCase().replace('0X', '0x') }, // 1: exists (same address, other case)
        { target: onBase, chain: 'base' }, // 2: created on base
        { target: 'not-an-address' }, // 3: invalid_address
        { target: flipped }, // 4: invalid_address (EIP-55 checksum)
        { target: evmAddress(), chain: 'dogechain' }, // 5: unsupported_chain (unknown)
        { target: evmAddress(), chain: 'polygon' }, // 6: unsupported_chain (no provider configured)
        { target: typed, target_type: 'contract' }, // 7: unsupported_target_type
        { target: typed, target_type: 'token' }, // 8: created
        { target: sol, network: 'mainnet-beta' }, // 9: duplicate_in_request (same as 0)
        { target: onBase, network: BASE_MAINNET }, // 10: duplicate_in_request (same as 2)
        { target: onBase }, // 11: created (ethereum/mainnet: another network)
        { target: evmAddress(), target_type: 'banana' }, // 12: unsupported_target_type
      ];
      const res = await addEntries(acme, list.id, batch);
      expect(res.results.map((r) => [r.index, r.status, r.code ?? null])).toEqual([
        [0, 'created', null],
        [1, 'exists', null],
        [2, 'created', null],
        [3, 'error', 'invalid_address'],
        [4, 'error', 'invalid_address'],
        [5, 'error', 'unsupported_chain'],
        [6, 'error', 'unsupported_chain'],
        [7, 'error', 'unsupported_target_type'],
        [8, 'created', null],
        [9, 'error', 'duplicate_in_request'],
        [10, 'error', 'duplicate_in_request'],
        [11, 'created', null],
        [12, 'error', 'unsupported_target_type'],
      ]);
      expect({ created: res.created, exists: res.exists, failed: res.failed }).toEqual({
        created: 4,
        exists: 1,
        failed: 8,
      });
      expect(res.results[1]).toMatchObject({ id: before.results[0]!.id, target: getAddress(evm) });
      for (const r of res.results.filter((x) => x.status === 'error'))
        expect(r.message).toEqual(expect.any(String));
      expect(res.results[6]!.message).toContain('not configured');
      expect(res.results[9]!.message).toContain('entry 0');

      const stored = await allEntries(acme, list.id);
      expect(
        stored
          .map((e) => [e.target, e.chain, e.network, e.target_type, e.label])
          .sort(
            (a, b) => String(a[0]).localeCompare(String(b[0])) || String(a[1]).localeCompare(String(b[1])),
          ),
      ).toEqual(
        [
          [getAddress(evm), 'ethereum', 'mainnet', null, null],
          [sol, 'solana', 'mainnet', null, 'ops'],
          [getAddress(onBase), 'base', 'mainnet', null, null],
          [getAddress(onBase), 'ethereum', 'mainnet', null, null],
          [typed, 'solana', 'mainnet', 'token', null],
        ].sort(
          (a, b) => String(a[0]).localeCompare(String(b[0])) || String(a[1]).localeCompare(String(b[1])),
        ),
      );
      const rows = await sql.query<{ network: string }>(
        'select distinct network from watchlist_entries where watchlist_id = $1',
        [list.id],
      );
      expect(rows.rows.map((r) => r.network).sort()).toEqual(
        [BASE_MAINNET, ETHEREUM_MAINNET, SOLANA_MAINNET].sort(),
      );
    });

    it('reports entries past the account ceiling as limit_exceeded, counting every list of the account', async () => {
      const orm: Orm = await connectOrm(testEnv.env.DATABASE_URL!, 2);
      try {
        const limited = watchlistServices(orm, 5);
        const initech = await db.customer('initech');
        const accountId = initech.account.id;
        const actor = operatorActor('watchlists-api-test');
        const a = await limited.lists.createWatchlist(accountId, { name: 'a' }, actor);
        const b = await limited.lists.createWatchlist(accountId, { name: 'b' }, actor);
        const three = [evmAddress(), evmAddress(), evmAddress()];
        expect(
          (
            await limited.entries.addEntries(
              accountId,
              a.id,
              three.map((target) => ({ target })),
              actor,
            )
          ).created,
        ).toBe(3);
        const more = await limited.entries.addEntries(
          accountId,
          b.id,
          [
            { target: evmAddress() },
            { target: 'bad' },
            { target: evmAddress() },
            { target: evmAddress() },
            { target: evmAddress() },
          ],
          actor,
        );
        expect(more.results.map((r) => r.code ?? r.status)).toEqual([
          'created',
          'invalid_address',
          'created',
          'limit_exceeded',
          'limit_exceeded',
        ]);
        expect(more.results[3]!.message).toContain('max_entries_per_account');
        // Existing targets are not new entries: they never hit the ceiling.
        const again = await limited.entries.addEntries(
          accountId,
          a.id,
          three.map((target) => ({ target })),
          actor,
        );
        expect(again.exists).toBe(3);
        expect(await count('watchlist_entries', 'account_id = $1', [accountId])).toBe(5);
      } finally {
        await orm.close();
      }
    });
  });

  describe('entries: list, filters, removal', () => {
    let list: WatchlistBody;
    let targets: string[];
    let added: AddEntriesResultBody;

    beforeAll(async () => {
      list = await createList(acme, { name: 'filters' });
      targets = Array.from({ length: 12 }, () => evmAddress());
      added = await addEntries(
        acme,
        list.id,
        targets.map((target) => ({ target })),
      );
      expect(added.created).toBe(12);
    });

    it('pages in id order with a cursor, and filters by level and changed_since', async () => {
      const ids = added.results.map((r) => r.id!).sort();
      const pages: string[][] = [];
      let cursor: string | null = null;
      do {
        const page: WatchlistEntryPageBody = await entriesPage(acme, list.id, {
          limit: '5',
          ...(cursor ? { cursor } : {}),
        });
        pages.push(page.data.map((e) => e.id));
        cursor = page.next_cursor;
      } while (cursor);
      expect(pages.map((p) => p.length)).toEqual([5, 5, 2]);
      expect(pages.flat()).toEqual(ids);

      const [a, b, c] = ids;
      await sql.query(
        `update watchlist_entries set risk_level = 'high', risk_score = 72, last_checked_at = now(), last_outcome = 'ok',
            verdict = '{"level":"high","score":72,"findings":[{"code":"token_delegate_set","severity":"high"}]}'
          where id = any($1)`,
        [[a, b]],
      );
      await sql.query(
        `update watchlist_entries set risk_level = 'critical', changed_at = now() + interval '1 hour' where id = $1`,
        [c],
      );
      const high = await entriesPage(acme, list.id, { level: 'high' });
      expect(high.data.map((e) => e.id)).toEqual([a, b]);
      expect(high.data[0]).toMatchObject({
        risk_level: 'high',
        risk_score: 72,
        last_outcome: 'ok',
        last_checked_at: expect.any(String) as unknown,
        findings: [{ code: 'token_delegate_set', severity: 'high' }],
      });
      const changed = await entriesPage(acme, list.id, { changed_since: new Date().toISOString() });
      expect(changed.data.map((e) => [e.id, e.risk_level])).toEqual([[c, 'critical']]);
      const none = await entriesPage(acme, list.id, { level: 'low' });
      expect(none).toEqual({ data: [], next_cursor: null });
      await expectProblem(await call(acme, `/${list.id}/entries?level=extreme`), 400, 'invalid_request');
      await expectProblem(
        await call(acme, `/${list.id}/entries?changed_since=yesterday`),
        400,
        'invalid_request',
      );
      await expectProblem(await call(acme, `/${list.id}/entries?limit=1001`), 400, 'invalid_request');
    });

    it('removes one entry with its snapshots and alerts', async () => {
      const entryId = added.results[11]!.id!;
      await insertSnapshot(entryId, 1);
      await insertAlert(list.id, entryId, { type: 'balance_changed' });
      const removed = await expectJson<WatchlistEntryBody>(
        await call(acme, `/${list.id}/entries/${entryId}`, { method: 'DELETE' }),
        200,
      );
      expect(removed).toMatchObject({ id: entryId, target: getAddress(targets[11]!) });
      expect(await count('watchlist_snapshots', 'entry_id = $1', [entryId])).toBe(0);
      expect(await count('watchlist_alerts', 'entry_id = $1', [entryId])).toBe(0);
      await expectProblem(
        await call(acme, `/${list.id}/entries/${entryId}`, { method: 'DELETE' }),
        404,
        'not_found',
      );
    });

    it('removes many by target: on a network, or on every network of the list', async () => {
      const both = evmAddress();
      const extra = await addEntries(acme, list.id, [{ target: both }, { target: both, chain: 'base' }]);
      expect(extra.created).toBe(2);
      const gone = added.results[0]!.id!;
      await insertSnapshot(gone, 2);
      await insertAlert(list.id, gone, { type: 'level_changed' });
      const res = await expectJson<RemoveEntriesResultBody>(
        await call(acme, `/${list.id}/entries/remove`, {
          method: 'POST',
          body: {
            targets: [
              { target: targets[0]! }, // 0: removed (every network)
              { target: getAddress(targets[1]!), chain: 'ethereum' }, // 1: removed (that network)
              { target: targets[2]!, chain: 'base' }, // 2: not on base
              { target: both }, // 3: removed on both networks
              { target: evmAddress() }, // 4: not_found
              { target: 'nope' }, // 5: invalid_address
              { target: targets[0]!.toUpperCase().replace('0X', '0x') }, // 6: duplicate of 0
              { target: targets[3]!, chain: 'dogechain' }, // 7: unsupported_chain
            ],
          },
        }),
        200,
      );
      expect(res.results.map((r) => [r.index, r.status, r.code ?? null, r.ids?.length ?? 0])).toEqual([
        [0, 'removed', null, 1],
        [1, 'removed', null, 1],
        [2, 'not_found', null, 0],
        [3, 'removed', null, 2],
        [4, 'not_found', null, 0],
        [5, 'error', 'invalid_address', 0],
        [6, 'error', 'duplicate_in_request', 0],
        [7, 'error', 'unsupported_chain', 0],
      ]);
      expect({ removed: res.removed, not_found: res.not_found, failed: res.failed }).toEqual({
        removed: 3,
        not_found: 2,
        failed: 3,
      });
      expect(res.results[0]!.ids).toEqual([gone]);
      expect(await count('watchlist_snapshots', 'entry_id = $1', [gone])).toBe(0);
      expect(await count('watchlist_alerts', 'entry_id = $1', [gone])).toBe(0);
      const left = (await allEntries(acme, list.id)).map((e) => e.target);
      expect(left).not.toContain(getAddress(targets[0]!));
      expect(left).not.toContain(getAddress(targets[1]!));
      expect(left).not.toContain(getAddress(both));
      expect(left).toContain(getAddress(targets[2]!));
      await expectProblem(
        await call(acme, `/${list.id}/entries/remove`, {
          method: 'POST',
          body: { targets: Array.from({ length: 10_001 }, () => ({ target: evmAddress() })) },
        }),
        400,
        'too_many_entries',
      );
    });
  });

  /** A snapshot row as the scanner writes it, read `minutesAgo` minutes ago at height 1000 + n. */
  async function insertSnapshot(entryId: string, n: number, minutesAgo = 10 - n) {
    const id = `snp_${Date.now().toString(16).padStart(12, '0')}${randomBytes(8).toString('hex')}`;
    await sql.query(
      `insert into watchlist_snapshots (id, account_id, entry_id, scan_id, state, hash, read_at_height, read_at, verdict)
       select $1, account_id, id, $2, $3, $4, $5, now() - make_interval(mins => $6), $7 from watchlist_entries where id = $8`,
      [
        id,
        `scan-${n}`,
        JSON.stringify({ kind: 'wallet', lamports: String(n) }),
        randomBytes(32).toString('hex'),
        1000 + n,
        minutesAgo,
        n === 1 ? null : JSON.stringify({ level: 'low', score: 5, findings: [] }),
        entryId,
      ],
    );
    return id;
  }

  /** An alert row as the scanner writes it. */
  async function insertAlert(
    watchlistId: string,
    entryId: string,
    opts: { type?: string; severity?: string; status?: string; minutesAgo?: number } = {},
  ) {
    const id = `alr_${Date.now().toString(16).padStart(12, '0')}${randomBytes(8).toString('hex')}`;
    await sql.query(
      `insert into watchlist_alerts (id, account_id, watchlist_id, entry_id, target, network, type, severity,
                                     previous, current, evidence, fingerprint, scan_id, status, created_at, updated_at)
       select $1, account_id, $2, id, target, network, $3, $4, $5, $6, $7, $8, 'scan-1', $9,
              now() - make_interval(mins => $10), now() - make_interval(mins => $10)
         from watchlist_entries where id = $11`,
      [
        id,
        watchlistId,
        opts.type ?? 'balance_changed',
        opts.severity ?? 'medium',
        JSON.stringify({ lamports: '100' }),
        JSON.stringify({ lamports: '500' }),
        JSON.stringify({ method: 'getMultipleAccounts', slot: 1001, raw: null }),
        randomBytes(32).toString('hex'),
        opts.status ?? 'open',
        opts.minutesAgo ?? 0,
        entryId,
      ],
    );
    return id;
  }

  describe('snapshots and alerts', () => {
    let list: WatchlistBody;
    let solEntry: string;
    let evmEntry: string;

    beforeAll(async () => {
      list = await createList(acme, { name: 'alerts' });
      const res = await addEntries(acme, list.id, [{ target: solanaAddress() }, { target: evmAddress() }]);
      [solEntry, evmEntry] = res.results.map((r) => r.id!) as [string, string];
    });

    it('lists an entry’s snapshots newest first, with the slot or block they were read at', async () => {
      const ids = [
        await insertSnapshot(solEntry, 1),
        await insertSnapshot(solEntry, 2),
        await insertSnapshot(solEntry, 3),
      ];
      const first = await expectJson<SnapshotPageBody>(
        await call(acme, `/${list.id}/entries/${solEntry}/snapshots?limit=2`),
        200,
      );
      expect(first.data.map((s) => s.id)).toEqual([ids[2], ids[1]]);
      expect(first.data[0]).toEqual({
        id: ids[2],
        state: { kind: 'wallet', lamports: '3' },
        hash: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown,
        read_at: expect.any(String) as unknown,
        slot: 1003,
        verdict: { level: 'low', score: 5, findings: [] },
      });
      const rest = await expectJson<SnapshotPageBody>(
        await call(acme, `/${list.id}/entries/${solEntry}/snapshots?limit=2&cursor=${first.next_cursor}`),
        200,
      );
      expect(rest).toMatchObject({ data: [{ id: ids[0], slot: 1001, verdict: null }], next_cursor: null });

      await insertSnapshot(evmEntry, 4);
      const evm = await expectJson<SnapshotPageBody>(
        await call(acme, `/${list.id}/entries/${evmEntry}/snapshots`),
        200,
      );
      expect(evm.data[0]).toMatchObject({ block: 1004 });
      expect(evm.data[0]).not.toHaveProperty('slot');
      await expectProblem(await call(acme, `/${list.id}/entries/wle_nope/snapshots`), 404, 'not_found');
    });

    it('lists alerts newest first with filters and a cursor, and acknowledges or resolves them', async () => {
      const oldest = await insertAlert(list.id, solEntry, {
        type: 'authority_changed',
        severity: 'high',
        minutesAgo: 30,
      });
      const middle = await insertAlert(list.id, evmEntry, {
        type: 'balance_changed',
        severity: 'medium',
        minutesAgo: 20,
      });
      const newest = await insertAlert(list.id, solEntry, {
        type: 'level_changed',
        severity: 'critical',
        status: 'acknowledged',
        minutesAgo: 10,
      });
      const all = await expectJson<AlertPageBody>(await call(acme, `/${list.id}/alerts`), 200);
      expect(all.data.map((a) => a.id)).toEqual([newest, middle, oldest]);
      expect(all.data[1]).toEqual({
        id: middle,
        watchlist_id: list.id,
        entry_id: evmEntry,
        target: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/) as unknown,
        chain: 'ethereum',
        network: 'mainnet',
        type: 'balance_changed',
        severity: 'medium',
        previous: { lamports: '100' },
        current: { lamports: '500' },
        evidence: { method: 'getMultipleAccounts', slot: 1001, raw: null },
        status: 'open',
        created_at: expect.any(String) as unknown,
        updated_at: expect.any(String) as unknown,
      });
      expect(all.data[0]).toMatchObject({ chain: 'solana', network: 'mainnet' });

      const ids = async (query: string) =>
        (await expectJson<AlertPageBody>(await call(acme, `/${list.id}/alerts?${query}`), 200)).data.map(
          (a) => a.id,
        );
      expect(await ids('status=open')).toEqual([middle, oldest]);
      expect(await ids('status=acknowledged')).toEqual([newest]);
      expect(await ids('type=authority_changed')).toEqual([oldest]);
      expect(await ids('severity=critical')).toEqual([newest]);
      expect(await ids(`since=${new Date(Date.now() - 25 * 60_000).toISOString()}`)).toEqual([
        newest,
        middle,
      ]);
      const page1 = await expectJson<AlertPageBody>(await call(acme, `/${list.id}/alerts?limit=2`), 200);
      const page2 = await expectJson<AlertPageBody>(
        await call(acme, `/${list.id}/alerts?limit=2&cursor=${page1.next_cursor}`),
        200,
      );
      expect([...page1.data, ...page2.data].map((a) => a.id)).toEqual([newest, middle, oldest]);
      expect(page2.next_cursor).toBeNull();
      await expectProblem(await call(acme, `/${list.id}/alerts?status=closed`), 400, 'invalid_request');
      await expectProblem(await call(acme, `/${list.id}/alerts?type=weather`), 400, 'invalid_request');

      const acked = await expectJson<AlertBody>(
        await call(acme, `/${list.id}/alerts/${middle}`, {
          method: 'PATCH',
          body: { status: 'acknowledged' },
        }),
        200,
      );
      expect(acked).toMatchObject({ id: middle, status: 'acknowledged' });
      expect(Date.parse(acked.updated_at)).toBeGreaterThan(Date.parse(all.data[1]!.updated_at));
      const resolved = await expectJson<AlertBody>(
        await call(acme, `/${list.id}/alerts/${middle}`, { method: 'PATCH', body: { status: 'resolved' } }),
        200,
      );
      expect(resolved.status).toBe('resolved');
      expect(await ids('status=resolved')).toEqual([middle]);
      const bad = await expectProblem(
        await call(acme, `/${list.id}/alerts/${middle}`, { method: 'PATCH', body: { status: 'open' } }),
        400,
        'invalid_request',
      );
      expect(bad.errors?.[0]?.path).toBe('status');
      await expectProblem(
        await call(acme, `/${list.id}/alerts/alr_nope`, { method: 'PATCH', body: { status: 'resolved' } }),
        404,
        'not_found',
      );
    });
  });

  describe('rescans', () => {
    it('queues a rescan (202), and reports its progress as the entries are re-analysed', async () => {
      const list = await createList(acme, { name: 'rescan' });
      const res = await addEntries(
        acme,
        list.id,
        Array.from({ length: 4 }, () => ({ target: evmAddress() })),
      );
      const ids = res.results.map((r) => r.id!);
      const accepted = await call(acme, `/${list.id}/rescan`, { method: 'POST' });
      const body = await expectJson<RescanAcceptedBody>(accepted, 202);
      expect(body).toEqual({
        rescan_id: expect.stringMatching(/^rsc_[0-9a-f]{28}$/) as unknown,
        status: 'queued',
        status_url: `/api/v1/watchlists/${list.id}/rescans/${body.rescan_id}`,
      });
      expect(accepted.headers.get('location')).toBe(body.status_url);

      // The job the scanner picks up: watchlist-tick in rescan mode, its id the rescan's.
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      const queue = new Queue('watchlist-tick', {
        connection: redis,
        prefix: `${testEnv.env.REDIS_KEY_PREFIX}bull`,
      });
      try {
        const job = await queue.getJob(body.rescan_id);
        expect(job?.data).toEqual({ watchlist_id: list.id, scan_id: body.rescan_id, mode: 'rescan' });
      } finally {
        await queue.close();
        redis.disconnect();
      }

      const progress = async () =>
        expectJson<RescanBody>(
          await fetch(`${svc.baseUrl}${body.status_url}`, { headers: { 'x-api-key': acme.key.key } }),
          200,
        );
      expect(await progress()).toEqual({
        rescan_id: body.rescan_id,
        watchlist_id: list.id,
        total: 4,
        checked: 0,
        status: 'queued',
        created_at: expect.any(String) as unknown,
        finished_at: null,
      });
      // A check before the rescan was asked for does not count.
      await sql.query(
        `update watchlist_entries set deep_checked_at = now() - interval '1 hour' where id = $1`,
        [ids[0]],
      );
      expect((await progress()).checked).toBe(0);
      await sql.query(
        `update watchlist_entries set deep_checked_at = now() + interval '1 second' where id = any($1)`,
        [ids.slice(0, 2)],
      );
      expect(await progress()).toMatchObject({ checked: 2, status: 'running', finished_at: null });
      await sql.query(
        `update watchlist_entries set deep_checked_at = now() + interval '1 second' where id = any($1)`,
        [ids.slice(2)],
      );
      const done = await progress();
      expect(done).toMatchObject({
        checked: 4,
        total: 4,
        status: 'completed',
        finished_at: expect.any(String) as unknown,
      });
      expect((await progress()).finished_at).toBe(done.finished_at);

      await expectProblem(await call(acme, `/${list.id}/rescans/rsc_nope`), 404, 'not_found');
    });
  });

  describe('another account’s ids', () => {
    it('answer 404 not_found, and nothing of theirs changes', async () => {
      const list = await createList(acme, { name: 'private' });
      const [entry] = (await addEntries(acme, list.id, [{ target: evmAddress() }])).results.map((r) => r.id!);
      const alert = await insertAlert(list.id, entry!, {});
      const rescan = await expectJson<RescanAcceptedBody>(
        await call(acme, `/${list.id}/rescan`, { method: 'POST' }),
        202,
      );
      const own = await createList(globex, { name: 'own' });

      const attempts: [string, string, unknown?][] = [
        ['GET', `/${list.id}`],
        ['PATCH', `/${list.id}`, { name: 'mine now' }],
        ['DELETE', `/${list.id}`],
        ['POST', `/${list.id}/entries`, { entries: [{ target: evmAddress() }] }],
        ['GET', `/${list.id}/entries`],
        ['DELETE', `/${list.id}/entries/${entry}`],
        ['DELETE', `/${own.id}/entries/${entry}`],
        ['POST', `/${list.id}/entries/remove`, { targets: [{ target: evmAddress() }] }],
        ['GET', `/${list.id}/entries/${entry}/snapshots`],
        ['GET', `/${own.id}/entries/${entry}/snapshots`],
        ['POST', `/${list.id}/rescan`],
        ['GET', `/${list.id}/rescans/${rescan.rescan_id}`],
        ['GET', `/${own.id}/rescans/${rescan.rescan_id}`],
        ['GET', `/${list.id}/alerts`],
        ['PATCH', `/${list.id}/alerts/${alert}`, { status: 'resolved' }],
        ['PATCH', `/${own.id}/alerts/${alert}`, { status: 'resolved' }],
      ];
      for (const [method, path, body] of attempts) {
        const problem = await expectProblem(await call(globex, path, { method, body }), 404, 'not_found');
        expect(problem.detail, `${method} ${path}`).not.toContain('globex');
      }
      const theirs = await expectJson<WatchlistPageBody>(await call(globex, ''), 200);
      expect(theirs.data.map((w) => w.id)).toEqual([own.id]);
      expect(await expectJson<WatchlistBody>(await call(acme, `/${list.id}`), 200)).toMatchObject({
        name: 'private',
        entry_count: 1,
      });
      const alerts = await expectJson<AlertPageBody>(await call(acme, `/${list.id}/alerts`), 200);
      expect(alerts.data.map((a) => [a.id, a.status])).toEqual([[alert, 'open']]);
    });
  });

  describe('deleting a watchlist', () => {
    it('deletes its entries, snapshots, alerts and rescans, and nothing of other lists', async () => {
      const doomed = await createList(acme, { name: 'doomed' });
      const kept = await createList(acme, { name: 'kept' });
      const [d1, d2] = (
        await addEntries(acme, doomed.id, [{ target: evmAddress() }, { target: solanaAddress() }])
      ).results.map((r) => r.id!);
      const [k1] = (await addEntries(acme, kept.id, [{ target: evmAddress() }])).results.map((r) => r.id!);
      for (const [list, entry] of [
        [doomed.id, d1!],
        [doomed.id, d2!],
        [kept.id, k1!],
      ] as const) {
        await insertSnapshot(entry, 1);
        await insertAlert(list, entry);
      }
      await expectJson(await call(acme, `/${doomed.id}/rescan`, { method: 'POST' }), 202);
      await expectJson(await call(acme, `/${kept.id}/rescan`, { method: 'POST' }), 202);

      const deleted = await expectJson<WatchlistBody>(
        await call(acme, `/${doomed.id}`, { method: 'DELETE' }),
        200,
      );
      expect(deleted).toMatchObject({ id: doomed.id, entry_count: 2 });
      expect(await count('watchlists', 'id = $1', [doomed.id])).toBe(0);
      expect(await count('watchlist_entries', 'watchlist_id = $1', [doomed.id])).toBe(0);
      expect(await count('watchlist_snapshots', 'entry_id = any($1)', [[d1, d2]])).toBe(0);
      expect(await count('watchlist_alerts', 'watchlist_id = $1', [doomed.id])).toBe(0);
      expect(await count('watchlist_rescans', 'watchlist_id = $1', [doomed.id])).toBe(0);
      expect(await count('watchlist_entries', 'watchlist_id = $1', [kept.id])).toBe(1);
      expect(await count('watchlist_snapshots', 'entry_id = $1', [k1])).toBe(1);
      expect(await count('watchlist_alerts', 'watchlist_id = $1', [kept.id])).toBe(1);
      expect(await count('watchlist_rescans', 'watchlist_id = $1', [kept.id])).toBe(1);
      await expectProblem(await call(acme, `/${doomed.id}`), 404, 'not_found');
      await expectProblem(await call(acme, `/${doomed.id}`, { method: 'DELETE' }), 404, 'not_found');
    });
  });
});
