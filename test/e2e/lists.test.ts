import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_NETWORKS } from '../../src/chains/registry.js';
import { normaliseAddress } from '../../src/lists/addresses.js';
import { presentSanctionMatch } from '../../src/lists/present.js';
import type {
  ListEntryBody,
  ListEntryPageBody,
  SanctionMatchBody,
  SanctionsImportBody,
} from '../../src/lists/schemas.js';
import { ListsService } from '../../src/lists/service.js';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import type { UsageCallBody } from '../../src/usage/schemas.js';
import {
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import {
  cli,
  cliJson,
  eventually,
  freePort,
  prepareEnv,
  type RunningService,
  type TestEnv,
} from '../support/service.js';

const SDN = join(PROJECT_ROOT, 'test', 'fixtures', 'sdn_advanced.xml');
const SDN_DELISTED = join(PROJECT_ROOT, 'test', 'fixtures', 'sdn_advanced_delisted.xml');
/** In both fixtures (ETH and USDT); written there in mixed case. */
const LISTED_EVM = '0xDC6d495C24d5B5597B5EBa73948B85040fEe9521';
/** In sdn_advanced.xml only: party 91003, de-listed the next day. */
const DELISTED_EVM = '0xAcBa122Cb40f7260F95E6722c3FC240AE68317D2';
const DELISTED_TRX = 'TC8A5Eb5TatreUEcr5QThJibtceR9dn2PV';
const SOLANA = '8xDMMWeMZcMEavSWLJkk56cfnDdcEzhReuouQ9Dn82u7';

/** A fresh EVM address in EIP-55 form (distinct per call). */
let evmCounter = 0;
const evmAddress = () => getAddress(`0x${(0xa11ce000 + ++evmCounter).toString(16).padStart(40, 'b')}`);

/** The EIP-55 address with the case of its first hex letter flipped: a checksum typo. */
function badChecksum(address: string): string {
  const i = address.slice(2).search(/[a-fA-F]/) + 2;
  const c = address[i]!;
  return (
    address.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + address.slice(i + 1)
  );
}

/**
 * Sanctions import (CLI) and the organisation deny/allow lists over HTTP (docs/api.md#organisation-lists):
 * `GET|POST /api/v1/lists/{list}/entries`, `DELETE /api/v1/lists/{list}/entries/{id}`, API key +
 * entitlement, always scoped to the key's account.
 */
describe('sanctions import and organisation lists (built service over HTTP)', () => {
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let orm: Orm;
  let lists: ListsService;
  /** The sanctions index entry of an address, as the risk engine shows it. */
  let sanctioned: (address: string) => Promise<SanctionMatchBody | null>;
  let svc: RunningService;
  let acme: Customer;
  let globex: Customer;
  let initech: Customer;
  let tmp: string;

  const api = (customer: Customer, path: string, init: RequestInit = {}) =>
    fetch(`${svc.baseUrl}/api/v1/lists${path}`, {
      ...init,
      headers: { 'x-api-key': customer.key.key, ...(init.headers as Record<string, string>) },
    });
  const add = (customer: Customer, list: string, body: unknown) =>
    api(customer, `/${list}/entries`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const addOk = async (customer: Customer, list: string, body: unknown) =>
    expectJson<ListEntryBody>(await add(customer, list, body), 201);
  const page = async (customer: Customer, list: string, query: Record<string, string> = {}) =>
    expectJson<ListEntryPageBody>(
      await api(customer, `/${list}/entries?${new URLSearchParams(query).toString()}`),
      200,
    );
  const remove = (customer: Customer, list: string, id: string) =>
    api(customer, `/${list}/entries/${id}`, { method: 'DELETE' });
  const importFile = (file: string, ...args: string[]) =>
    cliJson<SanctionsImportBody>(testEnv.env, ['lists', 'import', ...args, file]);

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'rw-lists-'));
    testEnv = await prepareEnv();
    db = await openAccounts(testEnv.env);
    [acme, globex, initech] = await Promise.all([
      db.customer('acme'),
      db.customer('globex'),
      db.customer('initech'),
    ]);
    orm = await connectOrm(testEnv.env.DATABASE_URL!, 2);
    lists = new ListsService(orm, BUILT_IN_NETWORKS);
    sanctioned = async (address) => {
      const match = (await lists.sanctionsIndex()).get(normaliseAddress(address));
      return match ? presentSanctionMatch(match) : null;
    };
    svc = await startServiceRetrying(testEnv.env);
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await orm?.close();
    await db?.close();
    await testEnv?.dropDatabase();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  describe('riskwatch lists import', () => {
    it('imports the OFAC SDN advanced XML: every currency, counted, with the file’s date', async () => {
      const result = await importFile(SDN, '--format', 'ofac-sdn-xml');
      expect(result).toEqual({
        source: 'OFAC SDN',
        list_as_of: '2026-11-20',
        total: 10,
        added: 10,
        removed: 0,
        by_currency: { ETH: 3, SOL: 1, TRX: 1, USDT: 2, XBT: 2, XMR: 1 },
      });
      expect(await sanctioned(LISTED_EVM.toLowerCase())).toMatchObject({
        source: 'OFAC SDN',
        currency: 'ETH',
        name: 'NORTHWIND CYBER COLLECTIVE',
        list_as_of: '2026-11-20',
      });
      expect(await sanctioned(DELISTED_TRX)).toMatchObject({ currency: 'USDT', uid: '91003' });
    });

    it('is idempotent: the same file again adds and removes nothing', async () => {
      expect(await importFile(SDN, '--format', 'ofac-sdn-xml')).toMatchObject({
        total: 10,
        added: 0,
        removed: 0,
      });
    });

    it('replaces the source with the next issue: de-listed addresses disappear', async () => {
      const result = await importFile(SDN_DELISTED, '--format', 'ofac-sdn-xml');
      expect(result).toMatchObject({ list_as_of: '2026-11-21', total: 7, added: 0, removed: 3 });
      expect(await sanctioned(DELISTED_EVM)).toBeNull();
      expect(await sanctioned(DELISTED_TRX)).toBeNull();
      expect(await sanctioned(LISTED_EVM)).toMatchObject({ list_as_of: '2026-11-21' });
      expect(await cliJson(testEnv.env, ['lists', 'sources'])).toEqual([
        {
          source: 'OFAC SDN',
          list_as_of: '2026-11-21',
          imported_at: expect.any(String) as unknown,
          total: 7,
          by_currency: { ETH: 2, SOL: 1, TRX: 1, USDT: 1, XBT: 1, XMR: 1 },
        },
      ]);
    });

    it('imports an operator CSV as its own source, with --as-of', async () => {
      const file = join(tmp, 'intel.csv');
      writeFileSync(file, `address,currency,name,uid\n${SOLANA},SOL,"Fraud ring, east",INT-7\n`);
      const result = await importFile(
        file,
        '--format',
        'csv',
        '--source',
        'acme-intel',
        '--as-of',
        '2026-10-01',
      );
      expect(result).toEqual({
        source: 'acme-intel',
        list_as_of: '2026-10-01',
        total: 1,
        added: 1,
        removed: 0,
        by_currency: { SOL: 1 },
      });
      expect(await sanctioned(SOLANA)).toEqual({
        source: 'acme-intel',
        currency: 'SOL',
        name: 'Fraud ring, east',
        uid: 'INT-7',
        list_as_of: '2026-10-01',
      });
      expect(await sanctioned(LISTED_EVM)).toMatchObject({ source: 'OFAC SDN' });
    });

    it('still imports with Redis unreachable: the result on stdout, the unannounced change on stderr', async () => {
      const file = join(tmp, 'offline.csv');
      writeFileSync(file, `address,currency,name\n${SOLANA},SOL,Offline import\n`);
      const env = { ...testEnv.env, REDIS_URL: `redis://127.0.0.1:${await freePort()}` };
      // cliJson parses the whole of stdout: a log line there would fail it.
      const result = await cliJson<SanctionsImportBody>(env, [
        'lists',
        'import',
        '--format',
        'csv',
        '--source',
        'offline',
        file,
      ]);
      expect(result).toMatchObject({ source: 'offline', total: 1, added: 1 });
      expect(await sanctioned(SOLANA)).toMatchObject({ source: 'acme-intel' });
    });

    it('refuses a CSV without --source, a bad date, an unknown format and a malformed file, changing nothing', async () => {
      const csv = join(tmp, 'nosource.csv');
      writeFileSync(csv, `address,currency,name\n${evmAddress()},ETH,x\n`);
      await expect(cli(testEnv.env, ['lists', 'import', '--format', 'csv', csv])).rejects.toThrow(
        /--source is required/,
      );
      await expect(
        cli(testEnv.env, ['lists', 'import', '--format', 'ofac-sdn-xml', '--as-of', '2026-02-30', SDN]),
      ).rejects.toThrow(/YYYY-MM-DD/);
      await expect(cli(testEnv.env, ['lists', 'import', '--format', 'xlsx', SDN])).rejects.toThrow(
        /ofac-sdn-xml, csv/,
      );
      const truncated = join(tmp, 'truncated.xml');
      writeFileSync(truncated, '<?xml version="1.0"?><Sanctions><DistinctParties><DistinctParty>');
      await expect(
        cli(testEnv.env, ['lists', 'import', '--format', 'ofac-sdn-xml', truncated]),
      ).rejects.toThrow(/invalid_request: Not well-formed XML/);
      expect(await sanctioned(LISTED_EVM)).toMatchObject({ list_as_of: '2026-11-21' });
    });
  });

  describe('POST /api/v1/lists/{list}/entries', () => {
    it('adds an EVM target for every chain: stored normalised, answered in EIP-55 (201)', async () => {
      const target = evmAddress();
      const res = await add(acme, 'deny', {
        target: target.toLowerCase(),
        label: 'drainer',
        reason: 'phishing kit seen 2026-11-02',
      });
      const entry = await expectJson<ListEntryBody>(res, 201);
      expect(entry).toEqual({
        id: expect.stringMatching(/^lst_[0-9a-f]{28}$/) as unknown,
        list: 'deny',
        target,
        chain: null,
        label: 'drainer',
        reason: 'phishing kit seen 2026-11-02',
        created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/) as unknown,
        created_by: `api_key:${acme.key.id}`,
      });
      expect(res.headers.get('cache-control')).toBe('no-store');
    });

    it('adds for one chain, by name, CAIP-2 id or network (no RPC URL is configured for any of them)', async () => {
      expect(await addOk(acme, 'allow', { target: SOLANA, chain: 'solana' })).toMatchObject({
        chain: 'solana',
        target: SOLANA,
        label: null,
        reason: null,
      });
      expect(await addOk(acme, 'deny', { target: evmAddress(), chain: 'eip155:8453' })).toMatchObject({
        chain: 'base',
      });
      expect(await addOk(acme, 'deny', { target: evmAddress(), network: 'sepolia' })).toMatchObject({
        chain: 'ethereum',
      });
      expect(
        await addOk(acme, 'deny', { target: evmAddress(), chain: 'Polygon', network: 'mainnet' }),
      ).toMatchObject({
        chain: 'polygon',
      });
    });

    it('answers 409 conflict for the same target on the same list and chain (any case)', async () => {
      const target = evmAddress();
      await addOk(acme, 'deny', { target });
      const problem = await expectProblem(
        await add(acme, 'deny', { target: target.toLowerCase() }),
        409,
        'conflict',
      );
      expect(problem.detail).toContain(target);
      await addOk(acme, 'deny', { target, chain: 'ethereum' });
      await expectProblem(await add(acme, 'deny', { target, chain: 'eip155:1' }), 409, 'conflict');
      await addOk(acme, 'allow', { target });
      await addOk(globex, 'deny', { target });
    });

    it('refuses a mixed-case EVM address with a wrong EIP-55 checksum (400 invalid_address)', async () => {
      const typo = badChecksum(evmAddress());
      const problem = await expectProblem(await add(acme, 'deny', { target: typo }), 400, 'invalid_address');
      expect(problem.errors).toEqual([{ path: 'target', message: 'EIP-55 checksum mismatch' }]);
      await expectProblem(await add(acme, 'deny', { target: typo, chain: 'base' }), 400, 'invalid_address');
    });

    it.each([
      ['a Solana address for an EVM chain', { target: SOLANA, chain: 'ethereum' }],
      ['an EVM address for Solana', { target: LISTED_EVM, chain: 'solana' }],
      ['a base58 string that is not 32 bytes', { target: '11111111' }],
      ['something that is no address', { target: 'vitalik.eth' }],
    ])('refuses %s (400 invalid_address)', async (_what, body) => {
      await expectProblem(await add(acme, 'deny', body), 400, 'invalid_address');
    });

    it('refuses an unknown chain or network (400 unsupported_chain, listing the known ones)', async () => {
      const problem = await expectProblem(
        await add(acme, 'deny', { target: evmAddress(), chain: 'dogechain' }),
        400,
        'unsupported_chain',
      );
      expect(problem.detail).toContain('polygon/mainnet');
      await expectProblem(
        await add(acme, 'deny', { target: evmAddress(), chain: 'ethereum', network: 'goerli' }),
        400,
        'unsupported_chain',
      );
      await expectProblem(
        await add(acme, 'deny', { target: SOLANA, chain: 'eip155:999999' }),
        400,
        'unsupported_chain',
      );
    });

    it.each([
      ['a missing target', { label: 'x' }, 'target'],
      ['a blank target', { target: '  ' }, 'target'],
      ['a target that is not a string', { target: 42 }, 'target'],
      ['a label over 200 characters', { target: LISTED_EVM, label: 'x'.repeat(201) }, 'label'],
      ['a reason over 1000 characters', { target: LISTED_EVM, reason: 'x'.repeat(1001) }, 'reason'],
      ['an unknown field', { target: LISTED_EVM, severity: 'high' }, ''],
    ])('refuses %s (400 invalid_request, errors[] names it)', async (_what, body, field) => {
      const problem = await expectProblem(await add(acme, 'deny', body), 400, 'invalid_request');
      expect(problem.errors?.length).toBeGreaterThan(0);
      if (field) expect(problem.errors?.map((e) => e.path)).toContain(field);
      else expect(problem.errors!.some((e) => `${e.path} ${e.message}`.includes('severity'))).toBe(true);
    });

    it('refuses a body that is not JSON (415)', async () => {
      const res = await api(acme, '/deny/entries', {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: LISTED_EVM,
      });
      await expectProblem(res, 415, 'unsupported_media_type');
    });
  });

  describe('unknown lists and credentials', () => {
    it('answers 404 not_found (not 400) for a list other than deny/allow, on every method', async () => {
      await expectProblem(await api(acme, '/grey/entries'), 404, 'not_found');
      await expectProblem(await add(acme, 'grey', { target: LISTED_EVM }), 404, 'not_found');
      const entry = await addOk(acme, 'deny', { target: evmAddress() });
      await expectProblem(await remove(acme, 'grey', entry.id), 404, 'not_found');
      await expectProblem(await remove(acme, 'allow', entry.id), 404, 'not_found');
    });

    it('needs an API key (401) and refuses browser calls (403)', async () => {
      await expectProblem(await fetch(`${svc.baseUrl}/api/v1/lists/deny/entries`), 401, 'unauthorized');
      await expectProblem(
        await api(acme, '/deny/entries', { headers: { origin: 'https://evil.example' } }),
        403,
        'browser_request_forbidden',
      );
    });
  });

  describe('tenancy', () => {
    it('lists only the key account’s entries', async () => {
      const mine = await addOk(acme, 'deny', { target: evmAddress(), label: 'acme only' });
      const theirs = await addOk(globex, 'deny', { target: evmAddress(), label: 'globex only' });
      const acmeIds = (await page(acme, 'deny', { limit: '1000' })).data.map((e) => e.id);
      const globexIds = (await page(globex, 'deny', { limit: '1000' })).data.map((e) => e.id);
      expect(acmeIds).toContain(mine.id);
      expect(acmeIds).not.toContain(theirs.id);
      expect(globexIds).toContain(theirs.id);
      expect(globexIds).not.toContain(mine.id);
      expect((await page(globex, 'deny', { target: mine.target })).data).toEqual([]);
    });

    it('answers 404 for another account’s entry id and leaves it in place', async () => {
      const entry = await addOk(acme, 'deny', { target: evmAddress() });
      await expectProblem(await remove(globex, 'deny', entry.id), 404, 'not_found');
      expect((await page(acme, 'deny', { target: entry.target })).data).toEqual([entry]);
      await expectProblem(await remove(acme, 'deny', 'lst_000000000000000000000000000'), 404, 'not_found');
    });
  });

  describe('DELETE /api/v1/lists/{list}/entries/{id}', () => {
    it('removes the entry and answers with it (200); a second delete is 404', async () => {
      const entry = await addOk(acme, 'allow', {
        target: evmAddress(),
        chain: 'arbitrum',
        label: 'treasury',
      });
      expect(await expectJson<ListEntryBody>(await remove(acme, 'allow', entry.id), 200)).toEqual(entry);
      expect((await page(acme, 'allow', { target: entry.target })).data).toEqual([]);
      await expectProblem(await remove(acme, 'allow', entry.id), 404, 'not_found');
      // Gone from the lookup the risk engine uses, too.
      expect((await lists.orgEntries(acme.account.id)).map((e) => e.id)).not.toContain(entry.id);
    });
  });

  describe('GET /api/v1/lists/{list}/entries', () => {
    it('pages newest first with limit and next_cursor, every entry exactly once', async () => {
      const created: ListEntryBody[] = [];
      for (let i = 0; i < 5; i++)
        created.push(await addOk(initech, 'deny', { target: evmAddress(), label: `#${i}` }));
      const seen: ListEntryBody[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const body: ListEntryPageBody = await page(initech, 'deny', {
          limit: '2',
          ...(cursor ? { cursor } : {}),
        });
        expect(body.data.length).toBeLessThanOrEqual(2);
        seen.push(...body.data);
        cursor = body.next_cursor;
        pages += 1;
      } while (cursor && pages < 10);
      expect(pages).toBe(3);
      expect(seen.map((e) => e.id)).toEqual(created.map((e) => e.id).reverse());
      expect(seen).toEqual([...created].reverse());
      expect((await page(initech, 'allow')).data).toEqual([]);
    });

    it('filters by target, in any case for EVM', async () => {
      const entry = await addOk(initech, 'allow', { target: evmAddress(), chain: 'optimism' });
      expect((await page(initech, 'allow', { target: entry.target.toLowerCase() })).data).toEqual([entry]);
      expect((await page(initech, 'allow', { target: entry.target })).data).toEqual([entry]);
      expect((await page(initech, 'allow', { target: evmAddress() })).data).toEqual([]);
    });

    it.each([
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['cursor=not-a-cursor', 'cursor'],
      ['unknown=1', ''],
    ])('refuses %s (400 invalid_request)', async (query, field) => {
      const problem = await expectProblem(await api(acme, `/deny/entries?${query}`), 400, 'invalid_request');
      if (field) expect(problem.errors?.map((e) => e.path)).toContain(`query.${field}`);
    });
  });

  describe('ceiling of entries per account (a service with RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT=3)', () => {
    let limited: RunningService;
    let umbrella: Customer;
    let wayne: Customer;
    const addLimited = (list: string, body: unknown, customer = umbrella) =>
      fetch(`${limited.baseUrl}/api/v1/lists/${list}/entries`, {
        method: 'POST',
        headers: { 'x-api-key': customer.key.key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const ceilingDetail =
      'Account umbrella already has 3 entries on its deny and allow lists; the limit is 3 ' +
      '(lists.max_entries_per_account / RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT). Remove entries to add others.';

    beforeAll(async () => {
      [umbrella, wayne] = await Promise.all([db.customer('umbrella'), db.customer('wayne')]);
      limited = await startServiceRetrying({ ...testEnv.env, RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT: '3' });
    }, 60_000);

    afterAll(async () => {
      await limited?.stop();
    });

    it('counts the deny and allow lists together: past 3 entries either list answers 409 limit_exceeded', async () => {
      await expectJson(await addLimited('deny', { target: evmAddress() }), 201);
      await expectJson(await addLimited('deny', { target: evmAddress(), chain: 'base' }), 201);
      await expectJson(await addLimited('allow', { target: SOLANA }), 201);
      for (const list of ['deny', 'allow']) {
        const problem = await expectProblem(
          await addLimited(list, { target: evmAddress() }),
          409,
          'limit_exceeded',
        );
        expect(problem.title).toBe('Account limit reached');
        expect(problem.detail).toBe(ceilingDetail);
      }
      expect((await page(umbrella, 'deny')).data).toHaveLength(2);
      expect((await page(umbrella, 'allow')).data).toHaveLength(1);
    });

    it('removing an entry lets a new one be added', async () => {
      const [entry] = (await page(umbrella, 'deny')).data;
      await expectJson(await remove(umbrella, 'deny', entry!.id), 200);
      const added = await expectJson<ListEntryBody>(await addLimited('allow', { target: evmAddress() }), 201);
      expect(added.created_by).toBe(`api_key:${umbrella.key.id}`);
      await expectProblem(await addLimited('deny', { target: evmAddress() }), 409, 'limit_exceeded');
    });

    it('is per account: another account adds while this one is full; one already past a lowered ceiling keeps its entries but adds none', async () => {
      await expectJson(await addLimited('deny', { target: evmAddress() }, wayne), 201);
      const acmeEntries = (await page(acme, 'deny', { limit: '1000' })).data.length;
      expect(acmeEntries).toBeGreaterThan(3);
      const problem = await expectProblem(
        await addLimited('deny', { target: evmAddress() }, acme),
        409,
        'limit_exceeded',
      );
      expect(problem.detail).toMatch(/^Account acme already has \d+ entries .* the limit is 3 /);
      expect((await page(acme, 'deny', { limit: '1000' })).data).toHaveLength(acmeEntries);
    });
  });

  describe('audit log', () => {
    interface AuditRow {
      account_id: string | null;
      actor_type: string;
      actor_id: string;
      actor_label: string | null;
      action: string;
      resource_type: string;
      resource_id: string | null;
      request_id: string | null;
      before: Record<string, unknown> | null;
      after: Record<string, unknown> | null;
    }
    const audit = (where: string, params: unknown[]) =>
      orm.em
        .fork()
        .getConnection()
        .execute<AuditRow[]>(
          `select account_id, actor_type, actor_id, actor_label, action, resource_type, resource_id,
                  request_id, before, after
             from audit_log where ${where} order by at, id`,
          params,
        );

    it('records list_entry.added and list_entry.removed with the key, the request id and the entry', async () => {
      const target = evmAddress();
      const added = await expectJson<ListEntryBody>(
        await api(acme, '/deny/entries', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': 'audit-add-1' },
          body: JSON.stringify({ target, chain: 'base', label: 'drainer', reason: 'seen twice' }),
        }),
        201,
      );
      await expectJson(
        await api(acme, `/deny/entries/${added.id}`, {
          method: 'DELETE',
          headers: { 'x-request-id': 'audit-remove-1' },
        }),
        200,
      );
      const entry = { list: 'deny', chain: 'base', target, label: 'drainer', reason: 'seen twice' };
      const who = { actor_type: 'api_key', actor_id: acme.key.id, actor_label: acme.key.prefix };
      expect(await audit('resource_id = ?', [added.id])).toEqual([
        {
          account_id: acme.account.id,
          ...who,
          action: 'list_entry.added',
          resource_type: 'list_entry',
          resource_id: added.id,
          request_id: 'audit-add-1',
          before: null,
          after: entry,
        },
        {
          account_id: acme.account.id,
          ...who,
          action: 'list_entry.removed',
          resource_type: 'list_entry',
          resource_id: added.id,
          request_id: 'audit-remove-1',
          before: entry,
          after: null,
        },
      ]);
    });

    it('records nothing for a refused change (409, 404)', async () => {
      const target = evmAddress();
      await addOk(globex, 'allow', { target });
      await expectProblem(
        await api(globex, '/allow/entries', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': 'audit-dup-1' },
          body: JSON.stringify({ target }),
        }),
        409,
        'conflict',
      );
      await expectProblem(
        await api(globex, '/allow/entries/lst_000000000000000000000000000', {
          method: 'DELETE',
          headers: { 'x-request-id': 'audit-missing-1' },
        }),
        404,
        'not_found',
      );
      expect(await audit('request_id in (?, ?)', ['audit-dup-1', 'audit-missing-1'])).toEqual([]);
    });

    it('records sanctions.imported (no account) with the operator of --actor, else RISKWATCH_OPERATOR', async () => {
      const file = join(tmp, 'audited.csv');
      writeFileSync(file, `address,currency,name\n${evmAddress()},ETH,Audited\n${SOLANA},SOL,Audited\n`);
      const args = ['--format', 'csv', '--source', 'audited', '--as-of', '2026-11-01'];
      await importFile(file, ...args, '--actor', 'alice@ops');
      writeFileSync(file, `address,currency,name\n${SOLANA},SOL,Audited\n`);
      await cliJson({ ...testEnv.env, RISKWATCH_OPERATOR: 'bob@ops' }, ['lists', 'import', ...args, file]);
      const imported = await audit('action = ? and resource_id = ?', ['sanctions.imported', 'audited']);
      const record = (actor: string, after: Record<string, unknown>) => ({
        account_id: null,
        actor_type: 'operator',
        actor_id: actor,
        actor_label: null,
        action: 'sanctions.imported',
        resource_type: 'sanctions_source',
        resource_id: 'audited',
        request_id: null,
        before: null,
        after: { source: 'audited', list_as_of: '2026-11-01', ...after },
      });
      expect(imported).toEqual([
        record('alice@ops', { total: 2, added: 2, removed: 0 }),
        record('bob@ops', { total: 1, added: 0, removed: 1 }),
      ]);
      await expect(cli(testEnv.env, ['lists', 'import', ...args, '--actor', ' ', file])).rejects.toThrow(
        /1 to 300 characters/,
      );
    });
  });

  describe('usage', () => {
    it('records the list calls in the account’s usage history, by route template', async () => {
      const endpoint = '/api/v1/lists/{list}/entries';
      const query = new URLSearchParams({ endpoint, limit: '1000' }).toString();
      const calls = await eventually(async () => {
        const res = await fetch(`${svc.baseUrl}/api/v1/usage?${query}`, {
          headers: { 'x-api-key': acme.key.key },
        });
        const body = (await res.json()) as { data: UsageCallBody[] };
        const statuses = new Set(body.data.map((c) => `${c.method} ${c.status}`));
        return ['POST 201', 'POST 400', 'POST 409', 'GET 200', 'GET 404'].every((s) => statuses.has(s))
          ? body.data
          : null;
      }, 10_000);
      expect(calls, 'usage shows the list calls within 10 s').toBeTruthy();
      expect(calls!.every((c) => c.endpoint === endpoint && c.api_key_id === acme.key.id)).toBe(true);

      const deletes = await eventually(async () => {
        const q = new URLSearchParams({ endpoint: '/api/v1/lists/{list}/entries/{id}' }).toString();
        const res = await fetch(`${svc.baseUrl}/api/v1/usage?${q}`, {
          headers: { 'x-api-key': acme.key.key },
        });
        const body = (await res.json()) as { data: UsageCallBody[] };
        return body.data.some((c) => c.method === 'DELETE' && c.status === 200) ? body.data : null;
      }, 10_000);
      expect(deletes).toBeTruthy();
    });
  });
});
