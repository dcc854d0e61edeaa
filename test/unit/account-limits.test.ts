import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { operatorActor } from '../../src/audit/actor.js';
import { BUILT_IN_NETWORKS } from '../../src/chains/registry.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { ListsService } from '../../src/lists/service.js';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/platform/config.js';
import { AppError } from '../../src/platform/errors.js';
import { createLogger } from '../../src/platform/logger.js';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import { createTestDatabase } from '../support/env.js';
import { rejection } from '../support/rejection.js';

/** Who changes the lists here (the audit log names it). */
const ACTOR = operatorActor('test');

let evmCounter = 0;
const evmAddress = () => getAddress(`0x${(0xce111000 + ++evmCounter).toString(16).padStart(40, 'c')}`);

/** Settles every promise; returns the fulfilled values and the AppError codes of the rejections. */
async function outcomes<T>(promises: Promise<T>[]): Promise<{ ok: T[]; codes: string[] }> {
  const settled = await Promise.allSettled(promises);
  const ok = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const codes = settled.flatMap((s) => {
    if (s.status === 'fulfilled') return [];
    expect(s.reason).toBeInstanceOf(AppError);
    return [(s.reason as AppError).code];
  });
  return { ok, codes };
}

/**
 * The per-account ceilings (`auth.max_api_keys_per_account`, `lists.max_entries_per_account`) on a real
 * PostgreSQL, concurrent creations included: the count and the insert must not race past the ceiling.
 */
describe('per-account ceilings (services on PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let orm: Orm;
  let accounts: AccountsService;
  let lists: ListsService;

  beforeAll(async () => {
    db = await createTestDatabase();
    // Enough connections for the concurrent creations to really run side by side.
    orm = await connectOrm(db.url, 12);
    await applyMigrations(orm, createLogger('silent'));
    accounts = new AccountsService(orm, { keyCacheMs: 0, defaultRateLimitPerMin: 600, maxKeysPerAccount: 3 });
    lists = new ListsService(orm, BUILT_IN_NETWORKS, async () => {}, { maxEntriesPerAccount: 3 });
  });

  afterAll(async () => {
    await orm?.close();
    await db?.drop();
  });

  describe('API keys per account', () => {
    it('refuses the key past the ceiling with limit_exceeded naming the limit, its value and the account', async () => {
      const acc = await accounts.createAccount({ name: 'acme' }, ACTOR);
      for (const name of ['one', 'two', 'three']) await accounts.createKey(acc.id, { name }, ACTOR);
      const err = await rejection(accounts.createKey(acc.id, { name: 'four' }, ACTOR));
      expect(err.code).toBe('limit_exceeded');
      expect(err.message).toBe(
        'Account acme already has 3 active API keys; the limit is 3 ' +
          '(auth.max_api_keys_per_account / RISKWATCH_MAX_API_KEYS_PER_ACCOUNT). Revoke a key to create another.',
      );
      expect((await accounts.listKeys(acc.id, { limit: 10 })).items).toHaveLength(3);
    });

    it('counts active keys only: a revoked or an expired key makes room', async () => {
      const acc = await accounts.createAccount({ name: 'globex' }, ACTOR);
      const a = await accounts.createKey(acc.id, { name: 'a' }, ACTOR);
      await accounts.createKey(acc.id, { name: 'b' }, ACTOR);
      await accounts.createKey(
        acc.id,
        {
          name: 'short',
          expiresAt: new Date(Date.now() + 300),
        },
        ACTOR,
      );
      expect((await rejection(accounts.createKey(acc.id, { name: 'x' }, ACTOR))).code).toBe('limit_exceeded');
      await accounts.revokeKey(acc.id, a.view.id, ACTOR);
      await accounts.createKey(acc.id, { name: 'after revoke' }, ACTOR);
      expect((await rejection(accounts.createKey(acc.id, { name: 'x' }, ACTOR))).code).toBe('limit_exceeded');
      await new Promise((r) => setTimeout(r, 400));
      await accounts.createKey(acc.id, { name: 'after expiry' }, ACTOR);
      expect((await accounts.listKeys(acc.id, { limit: 10 })).items.map((k) => k.status).sort()).toEqual([
        'active',
        'active',
        'active',
        'expired',
        'revoked',
      ]);
    });

    it('holds under concurrent creations: exactly the ceiling succeeds', async () => {
      const acc = await accounts.createAccount({ name: 'initech' }, ACTOR);
      const { ok, codes } = await outcomes(
        Array.from({ length: 12 }, (_, i) => accounts.createKey(acc.id, { name: `k${i}` }, ACTOR)),
      );
      expect(ok).toHaveLength(3);
      expect(codes).toEqual(Array(9).fill('limit_exceeded'));
      const active = (await accounts.listKeys(acc.id, { limit: 100 })).items.filter(
        (k) => k.status === 'active',
      );
      expect(active).toHaveLength(3);
    });

    it('keeps accounts apart, and has no ceiling when none is configured', async () => {
      const full = await accounts.createAccount({ name: 'full' }, ACTOR);
      const other = await accounts.createAccount({ name: 'other' }, ACTOR);
      for (let i = 0; i < 3; i++) await accounts.createKey(full.id, { name: `f${i}` }, ACTOR);
      await accounts.createKey(other.id, { name: 'unaffected' }, ACTOR);
      const unbounded = new AccountsService(orm, { keyCacheMs: 0, defaultRateLimitPerMin: 600 });
      await unbounded.createKey(full.id, { name: 'no ceiling' }, ACTOR);
      expect((await unbounded.listKeys(full.id, { limit: 10 })).items).toHaveLength(4);
    });

    it('answers not_found for an account that does not exist', async () => {
      const err = await rejection(accounts.createKey('acc_missing', { name: 'x' }, ACTOR));
      expect(err.code).toBe('not_found');
    });
  });

  describe('list entries per account (deny and allow together)', () => {
    it('refuses the entry past the ceiling on either list, naming the limit; removing one makes room', async () => {
      const acc = await accounts.createAccount({ name: 'umbrella' }, ACTOR);
      const first = await lists.addEntry(acc.id, 'deny', { target: evmAddress() }, ACTOR);
      await lists.addEntry(acc.id, 'deny', { target: evmAddress() }, ACTOR);
      await lists.addEntry(acc.id, 'allow', { target: evmAddress() }, ACTOR);
      for (const list of ['deny', 'allow']) {
        const err = await rejection(lists.addEntry(acc.id, list, { target: evmAddress() }, ACTOR));
        expect(err.code).toBe('limit_exceeded');
        expect(err.message).toBe(
          'Account umbrella already has 3 entries on its deny and allow lists; the limit is 3 ' +
            '(lists.max_entries_per_account / RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT). Remove entries to add others.',
        );
      }
      await lists.removeEntry(acc.id, 'deny', first.id, ACTOR);
      await lists.addEntry(acc.id, 'allow', { target: evmAddress() }, ACTOR);
      expect(await lists.orgEntries(acc.id)).toHaveLength(3);
    });

    it('holds under concurrent additions: exactly the ceiling succeeds', async () => {
      const acc = await accounts.createAccount({ name: 'hooli' }, ACTOR);
      const { ok, codes } = await outcomes(
        Array.from({ length: 12 }, (_, i) =>
          lists.addEntry(acc.id, i % 2 ? 'deny' : 'allow', { target: evmAddress() }, ACTOR),
        ),
      );
      expect(ok).toHaveLength(3);
      expect(codes).toEqual(Array(9).fill('limit_exceeded'));
      expect(await lists.orgEntries(acc.id)).toHaveLength(3);
    });

    it('still reports a duplicate as conflict below the ceiling, and keeps accounts apart', async () => {
      const a = await accounts.createAccount({ name: 'stark' }, ACTOR);
      const b = await accounts.createAccount({ name: 'wayne' }, ACTOR);
      const target = evmAddress();
      await lists.addEntry(a.id, 'deny', { target }, ACTOR);
      expect((await rejection(lists.addEntry(a.id, 'deny', { target }, ACTOR))).code).toBe('conflict');
      await lists.addEntry(a.id, 'deny', { target: evmAddress() }, ACTOR);
      await lists.addEntry(a.id, 'deny', { target: evmAddress() }, ACTOR);
      await lists.addEntry(b.id, 'deny', { target }, ACTOR);
      expect(await lists.orgEntries(b.id)).toHaveLength(1);
    });
  });
});

describe('ceiling and key-cache settings', () => {
  it('default to 100 active keys and 100,000 list entries per account, unknown keys remembered 5 s', () => {
    const config = loadConfig({});
    expect(config.auth.max_api_keys_per_account).toBe(100);
    expect(config.auth.unknown_key_cache_ms).toBe(5000);
    expect(config.lists.max_entries_per_account).toBe(100_000);
  });

  it('take their environment variables', () => {
    const config = loadConfig({
      RISKWATCH_MAX_API_KEYS_PER_ACCOUNT: '3',
      RISKWATCH_UNKNOWN_KEY_CACHE_MS: '0',
      RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT: '250000',
    });
    expect(config.auth.max_api_keys_per_account).toBe(3);
    expect(config.auth.unknown_key_cache_ms).toBe(0);
    expect(config.lists.max_entries_per_account).toBe(250_000);
  });

  it.each([
    ['RISKWATCH_MAX_API_KEYS_PER_ACCOUNT', '0', 'auth.max_api_keys_per_account'],
    ['RISKWATCH_UNKNOWN_KEY_CACHE_MS', '60001', 'auth.unknown_key_cache_ms'],
    ['RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT', 'lots', 'lists.max_entries_per_account'],
  ])('refuse %s=%s in one line naming the variable', (name, value, path) => {
    let err: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).lines).toEqual([expect.stringMatching(`^config: ${name} \\(${path}\\): `)]);
  });
});
