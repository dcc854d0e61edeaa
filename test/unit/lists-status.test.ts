import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { operatorActor } from '../../src/audit/actor.js';
import { ChainProviders } from '../../src/chains/providers.js';
import { BUILT_IN_NETWORKS } from '../../src/chains/registry.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { parseOfacSdnAdvancedXml } from '../../src/lists/sanctions-files.js';
import { ListsCache } from '../../src/lists/cache.js';
import { presentListEntry } from '../../src/lists/present.js';
import { ListsService } from '../../src/lists/service.js';
import { createRedis, type RedisClient } from '../../src/platform/redis.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/platform/logger.js';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { createTestDatabase, REDIS_URL } from '../support/env.js';
import { eventually } from '../support/service.js';
import { rejection } from '../support/rejection.js';

/** This file's own change channel (test files run in parallel on one Redis). */
const CHANNEL = `rwtest:${process.pid}:lists:changed`;

const fixture = (name: string) =>
  parseOfacSdnAdvancedXml(
    createReadStream(join(PROJECT_ROOT, 'test', 'fixtures', name), { encoding: 'utf8' }),
  );

/** Listed in the fixture (ETH and USDT), written there in mixed case. */
const LISTED_EVM = '0xDC6d495C24d5B5597B5EBa73948B85040fEe9521';
/** Listed in sdn_advanced.xml, de-listed in sdn_advanced_delisted.xml. */
const DELISTED_EVM = '0xAcBa122Cb40f7260F95E6722c3FC240AE68317D2';
const LISTED_SOL = '5k8iuEj3HfV27qePWPj1XmtWEcc2FgcE9VuoX32vsZms';
const UNLISTED_EVM = '0x1111111111111111111111111111111111111111';
const UNLISTED_SOL = '8xDMMWeMZcMEavSWLJkk56cfnDdcEzhReuouQ9Dn82u7';

/** Who changes the lists here (the audit log names it). */
const ACTOR = operatorActor('test');

/** ListsService against a migrated PostgreSQL database of this file's own. */
describe('ListsService on PostgreSQL + ListsCache: sanctions import, deny/allow lists, status', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let orm: Orm;
  let lists: ListsService;
  let cache: ListsCache;
  let redis: RedisClient;
  /** What the risk engine sees (ListsCache, told of every change by the service). */
  const status = async (account: string, chain: string | null, target: string) =>
    (await cache.view(account)).status(chain ?? '', target);
  const sanctioned = async (target: string) => (await status('acc_nobody', null, target)).sanctioned;
  const ACME = 'acc_acme';
  const GLOBEX = 'acc_globex';

  beforeAll(async () => {
    db = await createTestDatabase();
    orm = await connectOrm(db.url, 4);
    await applyMigrations(orm, createLogger('silent'));
    redis = createRedis(REDIS_URL);
    lists = new ListsService(orm, BUILT_IN_NETWORKS, (scope) => cache.changed(scope));
    cache = new ListsCache(lists, { redis, channel: CHANNEL, logger: createLogger('silent') });
    await cache.start();
    const { asOf, records } = await fixture('sdn_advanced.xml');
    await lists.importSanctions({ source: 'OFAC SDN', listAsOf: asOf!, records });
  });

  afterAll(async () => {
    cache?.stop();
    redis?.disconnect();
    await orm?.close();
    await db?.drop();
  });

  describe('sanctions', () => {
    it('finds an imported address on any chain, whatever the case of an EVM address', async () => {
      const match = {
        source: 'OFAC SDN',
        name: 'NORTHWIND CYBER COLLECTIVE',
        uid: '91001',
        list_as_of: '2026-11-20',
      };
      for (const form of [LISTED_EVM, LISTED_EVM.toLowerCase(), `0x${LISTED_EVM.slice(2).toUpperCase()}`])
        expect(await sanctioned(form)).toEqual({ ...match, currency: 'ETH' });
      expect(await sanctioned(LISTED_SOL)).toMatchObject({ currency: 'SOL', name: 'MORROW Elias' });
    });

    it('returns null for an unlisted address, and keeps base58 case-sensitive', async () => {
      expect(await sanctioned(UNLISTED_EVM)).toBeNull();
      expect(await sanctioned(LISTED_SOL.toLowerCase())).toBeNull();
    });

    it('is idempotent: importing the same file again changes nothing', async () => {
      const { asOf, records } = await fixture('sdn_advanced.xml');
      const result = await lists.importSanctions({ source: 'OFAC SDN', listAsOf: asOf!, records });
      expect(result).toMatchObject({ total: 10, added: 0, removed: 0 });
      expect(await lists.sanctionSources()).toEqual([
        expect.objectContaining({ source: 'OFAC SDN', listAsOf: '2026-11-20', total: 10 }),
      ]);
    });

    it('refuses an empty import and leaves the source as it was', async () => {
      const err = await rejection(
        lists.importSanctions({ source: 'OFAC SDN', listAsOf: '2026-11-22', records: [] }),
      );
      expect(err.code).toBe('invalid_request');
      expect(await sanctioned(LISTED_EVM)).not.toBeNull();
    });

    it('keeps sources apart: a CSV source neither replaces nor is replaced by OFAC', async () => {
      const records = [{ currency: 'SOL', address: UNLISTED_SOL, name: 'Internal fraud list', uid: null }];
      await lists.importSanctions({ source: 'acme-intel', listAsOf: '2026-11-01', records });
      expect(await sanctioned(UNLISTED_SOL)).toMatchObject({
        source: 'acme-intel',
        list_as_of: '2026-11-01',
      });
      expect(await sanctioned(LISTED_SOL)).toMatchObject({ source: 'OFAC SDN' });
    });
  });

  describe('organisation lists', () => {
    it('adds an EVM entry with no chain (every chain), stored lower-case and shown in EIP-55', async () => {
      const entry = await lists.addEntry(
        ACME,
        'deny',
        { target: LISTED_EVM.toLowerCase(), label: 'drainer', reason: 'phishing kit' },
        ACTOR,
      );
      expect(entry).toMatchObject({
        list: 'deny',
        chain: null,
        target: LISTED_EVM.toLowerCase(),
        label: 'drainer',
        reason: 'phishing kit',
      });
      expect(entry.id).toMatch(/^lst_[0-9a-f]{28}$/);
      expect(presentListEntry(entry).target).toBe(LISTED_EVM);
    });

    it('treats "every chain" as one chain for duplicates (409), and keeps the lists and chains apart', async () => {
      const err = await rejection(lists.addEntry(ACME, 'deny', { target: LISTED_EVM }, ACTOR));
      expect(err.code).toBe('conflict');
      await lists.addEntry(ACME, 'deny', { target: LISTED_EVM, chain: 'base' }, ACTOR);
      await lists.addEntry(ACME, 'allow', { target: LISTED_EVM }, ACTOR);
      expect(
        (await rejection(lists.addEntry(ACME, 'deny', { target: LISTED_EVM, network: 'eip155:8453' }, ACTOR)))
          .code,
      ).toBe('conflict');
    });

    it('validates the target for the chain and resolves chains the install has no RPC URL for', async () => {
      expect(
        (await rejection(lists.addEntry(ACME, 'deny', { target: LISTED_SOL, chain: 'ethereum' }, ACTOR)))
          .code,
      ).toBe('invalid_address');
      expect(
        (await rejection(lists.addEntry(ACME, 'deny', { target: LISTED_EVM, chain: 'dogechain' }, ACTOR)))
          .code,
      ).toBe('unsupported_chain');
      const onSepolia = await lists.addEntry(
        ACME,
        'deny',
        { target: UNLISTED_EVM, network: 'sepolia' },
        ACTOR,
      );
      expect(onSepolia.chain).toBe('ethereum');
      // No RPC URL anywhere: the risk engine could not use polygon, but a list entry for it is fine.
      const providers = ChainProviders.fromConfig(loadConfig({}).chains);
      expect(() => providers.resolve('polygon', undefined)).toThrow(/not configured/);
      const unconfigured = new ListsService(orm, providers.networks);
      const polygon = await unconfigured.addEntry(
        ACME,
        'allow',
        { target: UNLISTED_EVM, chain: 'polygon' },
        ACTOR,
      );
      expect(polygon.chain).toBe('polygon');
    });

    it('answers not_found for a list other than deny/allow', async () => {
      expect((await rejection(lists.addEntry(ACME, 'grey', { target: LISTED_EVM }, ACTOR))).code).toBe(
        'not_found',
      );
      expect((await rejection(lists.listEntries(ACME, 'grey', { limit: 10 }))).code).toBe('not_found');
    });
  });

  describe('status (ListsCache)', () => {
    it('answers deny, allow and sanctions for one account from memory: no query once loaded', async () => {
      await cache.view(ACME);
      const conn = orm.em.getConnection();
      const execute = vi.spyOn(conn, 'execute');
      try {
        const status = (await cache.view(ACME)).status('ethereum', LISTED_EVM);
        expect(execute).toHaveBeenCalledTimes(0);
        expect(status.denied).toMatchObject({
          list: 'deny',
          chain: null,
          target: LISTED_EVM,
          label: 'drainer',
        });
        expect(status.allowed).toMatchObject({ list: 'allow', chain: null, target: LISTED_EVM });
        expect(status.sanctioned).toEqual({
          source: 'OFAC SDN',
          currency: 'ETH',
          name: 'NORTHWIND CYBER COLLECTIVE',
          uid: '91001',
          list_as_of: '2026-11-20',
        });
        expect(status.denied!.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      } finally {
        execute.mockRestore();
      }
    });

    it('prefers the entry for the chain itself to an every-chain entry', async () => {
      expect((await status(ACME, 'base', LISTED_EVM)).denied?.chain).toBe('base');
      expect((await status(ACME, 'ethereum', LISTED_EVM)).denied?.chain).toBeNull();
      expect((await status(ACME, null, LISTED_EVM)).denied?.chain).toBeNull();
    });

    it('applies a chain entry on that chain only', async () => {
      expect((await status(ACME, 'ethereum', UNLISTED_EVM)).denied).toMatchObject({
        chain: 'ethereum',
      });
      expect((await status(ACME, 'base', UNLISTED_EVM)).denied).toBeNull();
      expect((await status(ACME, 'polygon', UNLISTED_EVM)).allowed).toMatchObject({
        chain: 'polygon',
      });
      expect((await status(ACME, 'ethereum', UNLISTED_EVM)).allowed).toBeNull();
    });

    it('never shows one account’s lists to another (sanctions are shared)', async () => {
      expect(await status(GLOBEX, 'ethereum', LISTED_EVM)).toEqual({
        denied: null,
        allowed: null,
        sanctioned: expect.objectContaining({ source: 'OFAC SDN' }) as unknown,
      });
      await lists.addEntry(GLOBEX, 'allow', { target: UNLISTED_SOL }, ACTOR);
      expect((await status(GLOBEX, 'solana', UNLISTED_SOL)).allowed).toMatchObject({
        target: UNLISTED_SOL,
      });
      expect((await status(ACME, 'solana', UNLISTED_SOL)).allowed).toBeNull();
      expect((await lists.orgEntries(GLOBEX)).map((e) => e.target)).toEqual([UNLISTED_SOL]);
      expect((await lists.orgEntries(ACME)).map((e) => e.target)).not.toContain(UNLISTED_SOL);
    });

    it('stops reporting a de-listed address after the next issue is imported', async () => {
      expect((await status(ACME, 'ethereum', DELISTED_EVM)).sanctioned).toMatchObject({
        uid: '91003',
      });
      const { asOf, records } = await fixture('sdn_advanced_delisted.xml');
      const result = await lists.importSanctions({ source: 'OFAC SDN', listAsOf: asOf!, records });
      expect(result).toMatchObject({ total: 7, added: 0, removed: 3, listAsOf: '2026-11-21' });
      expect((await status(ACME, 'ethereum', DELISTED_EVM)).sanctioned).toBeNull();
      expect((await status(ACME, 'ethereum', LISTED_EVM)).sanctioned).toMatchObject({
        list_as_of: '2026-11-21',
      });
    });

    it('another replica’s cache drops its copy when a change is published', async () => {
      const replicaRedis = createRedis(REDIS_URL);
      const replica = new ListsCache(lists, {
        redis: replicaRedis,
        channel: CHANNEL,
        logger: createLogger('silent'),
      });
      await replica.start();
      try {
        expect((await replica.view(GLOBEX)).status('ethereum', UNLISTED_EVM).denied).toBeNull();
        const entry = await lists.addEntry(GLOBEX, 'deny', { target: UNLISTED_EVM }, ACTOR);
        const deniedId = async () => (await replica.view(GLOBEX)).status('ethereum', UNLISTED_EVM).denied?.id;
        expect(await eventually(deniedId, 2000, 10)).toBe(entry.id);
        await lists.removeEntry(GLOBEX, 'deny', entry.id, ACTOR);
        expect(await eventually(async () => (await deniedId()) === undefined, 2000, 10)).toBe(true);
      } finally {
        replica.stop();
        replicaRedis.disconnect();
      }
    });

    it('reflects changes at once in the process that made them', async () => {
      const entry = await lists.addEntry(GLOBEX, 'deny', { target: LISTED_SOL, chain: 'solana' }, ACTOR);
      expect((await status(GLOBEX, 'solana', LISTED_SOL)).denied?.id).toBe(entry.id);
      expect((await rejection(lists.removeEntry(ACME, 'deny', entry.id, ACTOR))).code).toBe('not_found');
      await lists.removeEntry(GLOBEX, 'deny', entry.id, ACTOR);
      expect((await status(GLOBEX, 'solana', LISTED_SOL)).denied).toBeNull();
    });
  });

  describe('ensureEntry (inside a caller’s transaction)', () => {
    const INITECH = 'acc_initech';
    const ensure = (target: string, chain: string | null, list = 'deny') =>
      orm.em
        .fork()
        .transactional((em) => lists.ensureEntry(em, INITECH, list, { target, chain, reason: 'r' }, ACTOR));
    const added = async (id: string) =>
      (
        await orm.em
          .fork()
          .getConnection()
          .execute<{ n: number }[]>(
            `select count(*)::int as n from audit_log where action = 'list_entry.added' and resource_id = ?`,
            [id],
          )
      )[0]!.n;

    it('creates once, then reuses the entry (no conflict); an every-chain entry covers a chain', async () => {
      const first = await ensure(UNLISTED_EVM, 'ethereum');
      expect(first).toMatchObject({ created: true, entry: { chain: 'ethereum', target: UNLISTED_EVM } });
      expect(await added(first.entry.id)).toBe(1);
      const again = await ensure(UNLISTED_EVM.toUpperCase().replace('0X', '0x'), 'eip155:1');
      expect(again).toEqual({ created: false, entry: first.entry });
      expect(await added(first.entry.id)).toBe(1);
      // Another list, or another chain, is another entry.
      expect((await ensure(UNLISTED_EVM, 'ethereum', 'allow')).created).toBe(true);
      expect((await ensure(UNLISTED_EVM, 'base')).created).toBe(true);
      // An every-chain entry covers every chain; a chain's entry does not cover every chain.
      const everywhere = await ensure(LISTED_SOL, null);
      expect((await ensure(LISTED_SOL, 'solana')).entry.id).toBe(everywhere.entry.id);
      expect((await ensure(UNLISTED_EVM, null)).created).toBe(true);
    });

    it('lets concurrent callers race: one entry, one created, one audit record', async () => {
      const results = await Promise.all(Array.from({ length: 6 }, () => ensure(UNLISTED_SOL, 'solana')));
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.entry.id)).size).toBe(1);
      expect(await added(results[0]!.entry.id)).toBe(1);
    });

    it('rolls back with its caller, and the cache learns of a commit through changed()', async () => {
      await expect(
        orm.em.fork().transactional(async (em) => {
          await lists.ensureEntry(em, INITECH, 'allow', { target: LISTED_EVM, chain: 'polygon' }, ACTOR);
          throw new Error('the caller failed');
        }),
      ).rejects.toThrow('the caller failed');
      expect((await lists.orgEntries(INITECH)).some((e) => e.chain === 'polygon')).toBe(false);
      expect((await status(INITECH, 'polygon', LISTED_EVM)).allowed).toBeNull();
      const { entry } = await ensure(LISTED_EVM, 'polygon', 'allow');
      await lists.changed(INITECH);
      expect((await status(INITECH, 'polygon', LISTED_EVM)).allowed?.id).toBe(entry.id);
    });

    it('refuses a bad target or list as addEntry does', async () => {
      expect((await rejection(ensure(LISTED_SOL, 'ethereum'))).code).toBe('invalid_address');
      expect((await rejection(ensure(UNLISTED_EVM, 'ethereum', 'grey'))).code).toBe('not_found');
    });
  });
});
