import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/accounts/api-key-format.js';
import { AccountsService, type AccountsOptions } from '../../src/accounts/service.js';
import { operatorActor } from '../../src/audit/actor.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { createLogger } from '../../src/platform/logger.js';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import { createTestDatabase } from '../support/env.js';
import { rejection } from '../support/rejection.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ACTOR = operatorActor('test');

/**
 * AccountsService.authenticateApiKey's caches against a real PostgreSQL: what it remembers (found keys,
 * and well-formed keys that matched nothing), for how long, and what a flood of bogus keys can evict.
 * Queries are counted with a spy on the connection's `execute` (it still runs them).
 */
describe('API key lookup caches (AccountsService on PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let orm: Orm;
  let admin: AccountsService;
  let accountId: string;

  const service = (options: Partial<AccountsOptions> = {}) =>
    new AccountsService(orm, {
      keyCacheMs: 5000,
      unknownKeyCacheMs: 5000,
      defaultRateLimitPerMin: 600,
      ...options,
    });
  const newKey = async (name: string) => (await admin.createKey(accountId, { name }, ACTOR)).key;

  /** Runs `fn` and returns how many statements the service sent to PostgreSQL meanwhile. */
  async function queriesDuring(fn: () => Promise<unknown>): Promise<number> {
    const execute = vi.spyOn(orm.em.getConnection(), 'execute');
    try {
      await fn();
      return execute.mock.calls.length;
    } finally {
      execute.mockRestore();
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    orm = await connectOrm(db.url, 8);
    await applyMigrations(orm, createLogger('silent'));
    admin = service({ keyCacheMs: 0, unknownKeyCacheMs: 0 });
    accountId = (await admin.createAccount({ name: 'acme' }, ACTOR)).id;
    await admin.grantEntitlement(accountId, {}, ACTOR);
  });

  afterAll(async () => {
    await orm?.close();
    await db?.drop();
  });

  it('counts queries: an uncached lookup of a known and of an unknown key is one query each', async () => {
    const uncached = service({ keyCacheMs: 0, unknownKeyCacheMs: 0 });
    const key = await newKey('counted');
    expect(await queriesDuring(() => uncached.authenticateApiKey(key))).toBe(1);
    expect(await queriesDuring(() => rejection(uncached.authenticateApiKey(generateApiKey())))).toBe(1);
    expect(await queriesDuring(() => uncached.authenticateApiKey(key))).toBe(1);
  });

  it('remembers an unknown well-formed key: repeating it costs no further query', async () => {
    const svc = service();
    const bogus = generateApiKey();
    expect(await queriesDuring(() => rejection(svc.authenticateApiKey(bogus)))).toBe(1);
    const repeats = await queriesDuring(async () => {
      for (let i = 0; i < 20; i++) {
        const err = await rejection(svc.authenticateApiKey(bogus));
        expect(err.code).toBe('unauthorized');
        expect(err.message).toBe('The API key is not valid.');
      }
    });
    expect(repeats).toBe(0);
  });

  it('forgets an unknown key after unknownKeyCacheMs (and not remembering is a setting: 0)', async () => {
    const svc = service({ unknownKeyCacheMs: 150 });
    const bogus = generateApiKey();
    await rejection(svc.authenticateApiKey(bogus));
    expect(await queriesDuring(() => rejection(svc.authenticateApiKey(bogus)))).toBe(0);
    await sleep(250);
    expect(await queriesDuring(() => rejection(svc.authenticateApiKey(bogus)))).toBe(1);

    const forgetful = service({ unknownKeyCacheMs: 0 });
    await rejection(forgetful.authenticateApiKey(bogus));
    expect(await queriesDuring(() => rejection(forgetful.authenticateApiKey(bogus)))).toBe(1);
  });

  it('keeps a known key through a flood of more distinct bogus keys than either cache holds', async () => {
    // TTLs far longer than the flood takes: only eviction could make the known key be looked up again.
    const svc = service({ keyCacheMs: 600_000, unknownKeyCacheMs: 600_000 });
    const key = await newKey('busy');
    const principal = await svc.authenticateApiKey(key);
    expect(principal).toMatchObject({ accountId, accountName: 'acme' });

    const flood = Array.from(
      { length: AccountsService.KNOWN_KEYS_MAX + AccountsService.UNKNOWN_KEYS_MAX + 100 },
      () => generateApiKey(),
    );
    const floodQueries = await queriesDuring(async () => {
      for (let i = 0; i < flood.length; i += 100)
        await Promise.all(flood.slice(i, i + 100).map((bogus) => rejection(svc.authenticateApiKey(bogus))));
    });
    expect(floodQueries).toBe(flood.length);

    // The known key is still answered from memory, as before the flood.
    expect(await queriesDuring(() => svc.authenticateApiKey(key))).toBe(0);
    expect(await svc.authenticateApiKey(key)).toEqual(principal);
    // The most recent bogus keys are remembered; the oldest ones made room for them.
    expect(await queriesDuring(() => rejection(svc.authenticateApiKey(flood.at(-1)!)))).toBe(0);
    expect(await queriesDuring(() => rejection(svc.authenticateApiKey(flood[0]!)))).toBe(1);
  }, 120_000);

  it('evicts the least recently used known key when more keys are in use than the cache holds', async () => {
    const max = AccountsService.KNOWN_KEYS_MAX;
    const svc = service({ keyCacheMs: 600_000 });
    const hot = await newKey('hot');
    const cold = await newKey('cold');
    await svc.authenticateApiKey(cold);
    await svc.authenticateApiKey(hot);
    // Insert `max - 1` rows at once: enough other found keys to fill the cache past the cold key.
    const others = Array.from({ length: max - 1 }, () => generateApiKey());
    await orm.em.getConnection().execute(
      `insert into api_keys (id, account_id, name, prefix, key_hash, created_by, created_at)
       select 'key_' || lpad(to_hex(i), 28, '0'), ?, 'bulk', 'rwk_bulk', h, 'test', now()
         from jsonb_array_elements_text(?::jsonb) with ordinality as t(h, i)`,
      [accountId, JSON.stringify(others.map(hashApiKey))],
    );
    await svc.authenticateApiKey(hot); // used again: the most recent, so it survives
    for (let i = 0; i < others.length; i += 200)
      await Promise.all(others.slice(i, i + 200).map((k) => svc.authenticateApiKey(k)));
    expect(await queriesDuring(() => svc.authenticateApiKey(hot))).toBe(0);
    expect(await queriesDuring(() => svc.authenticateApiKey(cold))).toBe(1);
    await orm.em.getConnection().execute(`delete from api_keys where name = 'bulk'`);
  }, 120_000);

  it('reuses a found key for keyCacheMs at most: another replica’s revocation is seen after it', async () => {
    const svc = service({ keyCacheMs: 300 });
    const otherReplica = service();
    const key = await newKey('revoked elsewhere');
    const principal = await svc.authenticateApiKey(key);
    await otherReplica.revokeKey(accountId, principal.keyId, ACTOR);
    // Still within keyCacheMs: this replica answers from memory.
    expect(await queriesDuring(() => svc.authenticateApiKey(key))).toBe(0);
    await sleep(400);
    expect((await rejection(svc.authenticateApiKey(key))).message).toBe('The API key has been revoked.');
    // The revoked row is remembered too: refusing it again costs no query.
    expect(await queriesDuring(() => rejection(svc.authenticateApiKey(key)))).toBe(0);
  });

  it('refuses a key revoked through the same process at once, cache or not', async () => {
    const svc = service();
    const key = await newKey('revoked here');
    const principal = await svc.authenticateApiKey(key);
    await svc.revokeKey(accountId, principal.keyId, ACTOR);
    expect((await rejection(svc.authenticateApiKey(key))).message).toBe('The API key has been revoked.');
  });

  it('refuses a malformed key without any query', async () => {
    const svc = service();
    const key = generateApiKey();
    const typo = key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A');
    expect(
      await queriesDuring(async () => {
        expect((await rejection(svc.authenticateApiKey(typo))).message).toBe('The API key is malformed.');
      }),
    ).toBe(0);
  });
});
