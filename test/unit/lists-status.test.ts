import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ChainProviders } from '../../src/chains/providers.js';
import { BUILT_IN_NETWORKS } from '../../src/chains/registry.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { parseOfacSdnAdvancedXml } from '../../src/lists/sanctions-files.js';
import { ListsService } from '../../src/lists/service.js';
import { loadConfig } from '../../src/platform/config.js';
import { AppError } from '../../src/platform/errors.js';
import { createLogger } from '../../src/platform/logger.js';
import { connectOrm, type Orm } from '../../src/platform/orm.js';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { createTestDatabase } from '../support/env.js';

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

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const err: unknown = await promise.then(
    () => new Error('expected a rejection'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

/** ListsService against a migrated PostgreSQL database of this file's own. */
describe('ListsService on PostgreSQL: sanctions import, deny/allow lists, listStatus', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let orm: Orm;
  let lists: ListsService;
  const ACME = 'acc_acme';
  const GLOBEX = 'acc_globex';

  beforeAll(async () => {
    db = await createTestDatabase();
    orm = await connectOrm(db.url, 4);
    await applyMigrations(orm, createLogger('silent'));
    lists = new ListsService(orm, BUILT_IN_NETWORKS);
    const { asOf, records } = await fixture('sdn_advanced.xml');
    await lists.importSanctions({ source: 'OFAC SDN', listAsOf: asOf!, records });
  });

  afterAll(async () => {
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
        expect(await lists.isSanctioned(form)).toEqual({ ...match, currency: 'ETH' });
      expect(await lists.isSanctioned(LISTED_SOL)).toMatchObject({ currency: 'SOL', name: 'MORROW Elias' });
    });

    it('returns null for an unlisted address, and keeps base58 case-sensitive', async () => {
      expect(await lists.isSanctioned(UNLISTED_EVM)).toBeNull();
      expect(await lists.isSanctioned(LISTED_SOL.toLowerCase())).toBeNull();
    });

    it('is idempotent: importing the same file again changes nothing', async () => {
      const { asOf, records } = await fixture('sdn_advanced.xml');
      const result = await lists.importSanctions({ source: 'OFAC SDN', listAsOf: asOf!, records });
      expect(result).toMatchObject({ total: 10, added: 0, removed: 0 });
      expect(await lists.sanctionSources()).toEqual([
        expect.objectContaining({ source: 'OFAC SDN', list_as_of: '2026-11-20', total: 10 }),
      ]);
    });

    it('refuses an empty import and leaves the source as it was', async () => {
      const err = await rejection(
        lists.importSanctions({ source: 'OFAC SDN', listAsOf: '2026-11-22', records: [] }),
      );
      expect(err.code).toBe('invalid_request');
      expect(await lists.isSanctioned(LISTED_EVM)).not.toBeNull();
    });

    it('keeps sources apart: a CSV source neither replaces nor is replaced by OFAC', async () => {
      const records = [{ currency: 'SOL', address: UNLISTED_SOL, name: 'Internal fraud list', uid: null }];
      await lists.importSanctions({ source: 'acme-intel', listAsOf: '2026-11-01', records });
      expect(await lists.isSanctioned(UNLISTED_SOL)).toMatchObject({
        source: 'acme-intel',
        list_as_of: '2026-11-01',
      });
      expect(await lists.isSanctioned(LISTED_SOL)).toMatchObject({ source: 'OFAC SDN' });
    });
  });

  describe('organisation lists', () => {
    it('adds an EVM entry with no chain (every chain), stored lower-case and shown in EIP-55', async () => {
      const entry = await lists.addEntry(
        ACME,
        'deny',
        { target: LISTED_EVM.toLowerCase(), label: 'drainer', reason: 'phishing kit' },
        'test',
      );
      expect(entry).toMatchObject({
        list: 'deny',
        chain: null,
        target: LISTED_EVM,
        label: 'drainer',
        reason: 'phishing kit',
      });
      expect(entry.id).toMatch(/^lst_[0-9a-f]{28}$/);
    });

    it('treats "every chain" as one chain for duplicates (409), and keeps the lists and chains apart', async () => {
      const err = await rejection(lists.addEntry(ACME, 'deny', { target: LISTED_EVM }, 'test'));
      expect(err.code).toBe('conflict');
      await lists.addEntry(ACME, 'deny', { target: LISTED_EVM, chain: 'base' }, 'test');
      await lists.addEntry(ACME, 'allow', { target: LISTED_EVM }, 'test');
      expect(
        (
          await rejection(
            lists.addEntry(ACME, 'deny', { target: LISTED_EVM, network: 'eip155:8453' }, 'test'),
          )
        ).code,
      ).toBe('conflict');
    });

    it('validates the target for the chain and resolves chains the install has no RPC URL for', async () => {
      expect(
        (await rejection(lists.addEntry(ACME, 'deny', { target: LISTED_SOL, chain: 'ethereum' }, 't'))).code,
      ).toBe('invalid_address');
      expect(
        (await rejection(lists.addEntry(ACME, 'deny', { target: LISTED_EVM, chain: 'dogechain' }, 't'))).code,
      ).toBe('unsupported_chain');
      const onSepolia = await lists.addEntry(ACME, 'deny', { target: UNLISTED_EVM, network: 'sepolia' }, 't');
      expect(onSepolia.chain).toBe('ethereum');
      // No RPC URL anywhere: the risk engine could not use polygon, but a list entry for it is fine.
      const providers = ChainProviders.fromConfig(loadConfig({}).chains);
      expect(() => providers.resolve('polygon', undefined)).toThrow(/not configured/);
      const unconfigured = new ListsService(orm, providers.networks);
      const polygon = await unconfigured.addEntry(
        ACME,
        'allow',
        { target: UNLISTED_EVM, chain: 'polygon' },
        't',
      );
      expect(polygon.chain).toBe('polygon');
    });

    it('answers not_found for a list other than deny/allow', async () => {
      expect((await rejection(lists.addEntry(ACME, 'grey', { target: LISTED_EVM }, 't'))).code).toBe(
        'not_found',
      );
      expect((await rejection(lists.listEntries(ACME, 'grey', { limit: 10 }))).code).toBe('not_found');
    });
  });

  describe('listStatus', () => {
    it('answers deny, allow and sanctions for one account in one round trip', async () => {
      const conn = orm.em.getConnection();
      const execute = vi.spyOn(conn, 'execute');
      try {
        const status = await lists.listStatus(ACME, 'ethereum', LISTED_EVM);
        expect(execute).toHaveBeenCalledTimes(1);
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
      expect((await lists.listStatus(ACME, 'base', LISTED_EVM)).denied?.chain).toBe('base');
      expect((await lists.listStatus(ACME, 'ethereum', LISTED_EVM)).denied?.chain).toBeNull();
      expect((await lists.listStatus(ACME, null, LISTED_EVM)).denied?.chain).toBeNull();
    });

    it('applies a chain entry on that chain only', async () => {
      expect((await lists.listStatus(ACME, 'ethereum', UNLISTED_EVM)).denied).toMatchObject({
        chain: 'ethereum',
      });
      expect((await lists.listStatus(ACME, 'base', UNLISTED_EVM)).denied).toBeNull();
      expect((await lists.listStatus(ACME, 'polygon', UNLISTED_EVM)).allowed).toMatchObject({
        chain: 'polygon',
      });
      expect((await lists.listStatus(ACME, 'ethereum', UNLISTED_EVM)).allowed).toBeNull();
    });

    it('never shows one account’s lists to another (sanctions are shared)', async () => {
      expect(await lists.listStatus(GLOBEX, 'ethereum', LISTED_EVM)).toEqual({
        denied: null,
        allowed: null,
        sanctioned: expect.objectContaining({ source: 'OFAC SDN' }) as unknown,
      });
      await lists.addEntry(GLOBEX, 'allow', { target: UNLISTED_SOL }, 'test');
      expect((await lists.listStatus(GLOBEX, 'solana', UNLISTED_SOL)).allowed).toMatchObject({
        target: UNLISTED_SOL,
      });
      expect((await lists.listStatus(ACME, 'solana', UNLISTED_SOL)).allowed).toBeNull();
      expect((await lists.orgEntries(GLOBEX)).map((e) => e.target)).toEqual([UNLISTED_SOL]);
      expect((await lists.orgEntries(ACME)).map((e) => e.target)).not.toContain(UNLISTED_SOL);
    });

    it('stops reporting a de-listed address after the next issue is imported', async () => {
      expect((await lists.listStatus(ACME, 'ethereum', DELISTED_EVM)).sanctioned).toMatchObject({
        uid: '91003',
      });
      const { asOf, records } = await fixture('sdn_advanced_delisted.xml');
      const result = await lists.importSanctions({ source: 'OFAC SDN', listAsOf: asOf!, records });
      expect(result).toMatchObject({ total: 7, added: 0, removed: 3, list_as_of: '2026-11-21' });
      expect((await lists.listStatus(ACME, 'ethereum', DELISTED_EVM)).sanctioned).toBeNull();
      expect((await lists.listStatus(ACME, 'ethereum', LISTED_EVM)).sanctioned).toMatchObject({
        list_as_of: '2026-11-21',
      });
    });

    it('reflects removals at once (nothing is cached)', async () => {
      const entry = await lists.addEntry(GLOBEX, 'deny', { target: LISTED_SOL, chain: 'solana' }, 'test');
      expect((await lists.listStatus(GLOBEX, 'solana', LISTED_SOL)).denied?.id).toBe(entry.id);
      expect((await rejection(lists.removeEntry(ACME, 'deny', entry.id))).code).toBe('not_found');
      await lists.removeEntry(GLOBEX, 'deny', entry.id);
      expect((await lists.listStatus(GLOBEX, 'solana', LISTED_SOL)).denied).toBeNull();
    });
  });
});
