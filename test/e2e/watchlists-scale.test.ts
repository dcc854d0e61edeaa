import type { EntityManager } from '@mikro-orm/postgresql';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorActor } from '../../src/audit/actor.js';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import { newId } from '../../src/platform/ids.js';
import { WatchlistRepository } from '../../src/watchlists/repository.js';
import { withTargetsSql } from '../../src/watchlists/repository/entries.js';
import { entryIdsSql, inIndexOrder, NETWORKS_SQL } from '../../src/watchlists/repository/scans.js';
import type { ImportSummaryBody } from '../../src/watchlists/schemas.js';
import { openAccounts } from '../support/auth-helpers.js';
import { cliJson, freePort, prepareEnv, type TestEnv } from '../support/service.js';
import { watchlistServices } from '../support/watchlist-services.js';

/*
 * Watchlists at millions of entries (issue 23), on a migrated database (real PostgreSQL): the entry
 * counts per list kept by triggers (watchlist_entry_counts) through every way entries come and go, the
 * ceiling read from it under concurrent bulk adds, and the tick's fan-out reads planned on the
 * (watchlist_id, network, id) index for a list the planner has no statistics of.
 */

const OPERATOR = operatorActor('watchlists-scale-test');
let evmCounter = 0;
const evmAddress = () =>
  `0x${(++evmCounter).toString(16).padStart(8, '0')}${randomBytes(16).toString('hex')}`;
const ETHEREUM = 'eip155:1';
const BASE = 'eip155:8453';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Plan Rows': number;
  'Actual Rows'?: number;
  'Index Cond'?: string;
  Filter?: string;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}
const nodesOf = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];

describe('watchlists at scale', () => {
  let testEnv: TestEnv;
  let accounts: Awaited<ReturnType<typeof openAccounts>>;
  let sql: pg.Client;
  let orm: Orm;
  let dir: string;

  /** The account's counters summed, and its entries counted. */
  const counts = async (accountId: string) => {
    const { rows } = await sql.query<{ counter: string | null; counted: string }>(
      `select (select sum(entries) from watchlist_entry_counts where account_id = $1) as counter,
              (select count(*) from watchlist_entries where account_id = $1) as counted`,
      [accountId],
    );
    return { counter: Number(rows[0]!.counter ?? 0), counted: Number(rows[0]!.counted) };
  };
  /** Each list's counter as the service reads it (`entry_count`), and its entries counted. */
  const listCounts = async (accountId: string) => {
    const { rows } = await sql.query<{ id: string; n: string }>(
      `select id, (select count(*) from watchlist_entries e where e.watchlist_id = w.id) as n
         from watchlists w where account_id = $1 order by id`,
      [accountId],
    );
    const svc = watchlistServices(orm, 1_000_000);
    const counters = await Promise.all(
      rows.map(async (r) => (await svc.lists.getWatchlist(accountId, r.id)).entryCount),
    );
    return { counters, counted: rows.map((r) => Number(r.n)) };
  };
  const expectCount = async (accountId: string, n: number) => {
    expect(await counts(accountId)).toEqual({ counter: n, counted: n });
    const lists = await listCounts(accountId);
    expect(lists.counters).toEqual(lists.counted);
    // A list without entries has no counter row left behind.
    const { rows } = await sql.query<{ n: string }>(
      'select count(*) as n from watchlist_entry_counts where account_id = $1 and entries <= 0',
      [accountId],
    );
    expect(Number(rows[0]!.n)).toBe(0);
  };

  beforeAll(async () => {
    const unused = `http://127.0.0.1:${await freePort()}`;
    testEnv = await prepareEnv({
      RISKWATCH_RPC_ETHEREUM_MAINNET: unused,
      RISKWATCH_RPC_BASE_MAINNET: unused,
    });
    accounts = await openAccounts(testEnv.env);
    sql = new pg.Client({ connectionString: testEnv.env.DATABASE_URL });
    await sql.connect();
    orm = await connectOrm(testEnv.env.DATABASE_URL!, 8);
    dir = mkdtempSync(join(tmpdir(), 'rw-watch-scale-'));
  }, 120_000);

  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await orm?.close();
    await sql?.end();
    await accounts?.close();
    await testEnv?.dropDatabase();
  });

  it('keeps each account’s counter equal to its entries through adds, removals, a CSV import and list deletion', async () => {
    const svc = watchlistServices(orm, 1_000_000);
    const acme = (await accounts.customer('acme')).account.id;
    const globex = (await accounts.customer('globex')).account.id;
    const a = await svc.lists.createWatchlist(acme, { name: 'a' }, OPERATOR);
    const b = await svc.lists.createWatchlist(acme, { name: 'b' }, OPERATOR);
    const g = await svc.lists.createWatchlist(globex, { name: 'g' }, OPERATOR);
    await expectCount(acme, 0);

    // Only the rows really inserted count: not the invalid one, the duplicate, or those already there.
    const three = [evmAddress(), evmAddress(), evmAddress()];
    const added = await svc.entries.addEntries(
      acme,
      a.id,
      [...three, 'bad', three[0]!].map((target) => ({ target })),
      OPERATOR,
    );
    expect([added.created, added.failed]).toEqual([3, 2]);
    await expectCount(acme, 3);
    expect(
      (
        await svc.entries.addEntries(
          acme,
          a.id,
          three.map((target) => ({ target })),
          OPERATOR,
        )
      ).exists,
    ).toBe(3);
    await expectCount(acme, 3);
    // The same address on two networks of one list is two entries; another list, more.
    const both = evmAddress();
    await svc.entries.addEntries(
      acme,
      b.id,
      [{ target: both, chain: 'ethereum' }, { target: both, chain: 'base' }, { target: evmAddress() }],
      OPERATOR,
    );
    await svc.entries.addEntries(
      globex,
      g.id,
      [{ target: evmAddress() }, { target: evmAddress() }],
      OPERATOR,
    );
    await expectCount(acme, 6);
    await expectCount(globex, 2);

    // Removal: one by id, and by target (one target on every network: two entries; one not found).
    const first = added.results[0]!.id!;
    await svc.entries.removeEntry(acme, a.id, first, OPERATOR);
    await expectCount(acme, 5);
    const removed = await svc.entries.removeEntries(
      acme,
      b.id,
      [{ target: both }, { target: evmAddress() }],
      OPERATOR,
    );
    expect([removed.removed, removed.notFound]).toEqual([1, 1]);
    await expectCount(acme, 3);

    // The CSV import: 2,500 rows, three batches of the same bulk add (a row already on the list exists).
    const file = join(dir, 'import.csv');
    const rows = [three[1]!, ...Array.from({ length: 2499 }, () => evmAddress())];
    writeFileSync(file, `target\n${rows.join('\n')}\n`);
    const summary = await cliJson<ImportSummaryBody>(testEnv.env, ['watchlists', 'import', acme, a.id, file]);
    expect(summary).toMatchObject({ created: 2499, exists: 1, failed: 0 });
    await expectCount(acme, 3 + 2499);

    // Deleting a list takes its entries out of the count; the other list's and account's stay.
    const deleted = await svc.lists.deleteWatchlist(acme, a.id, OPERATOR);
    expect(deleted.entryCount).toBe(2 + 2499);
    await expectCount(acme, 1);
    const left = await sql.query('select 1 from watchlist_entry_counts where watchlist_id = $1', [a.id]);
    expect(left.rowCount).toBe(0);
    await expectCount(globex, 2);
    // What no service does (an operator's fix-up) is counted too.
    await sql.query('delete from watchlist_entries where watchlist_id = $1', [g.id]);
    await expectCount(globex, 0);
  }, 120_000);

  it('holds the ceiling under concurrent bulk adds, counted from the counter under the account lock', async () => {
    const max = 1000;
    const svc = watchlistServices(orm, max);
    const initech = (await accounts.customer('initech')).account.id;
    const lists = await Promise.all(
      ['x', 'y', 'z'].map((name) => svc.lists.createWatchlist(initech, { name }, OPERATOR)),
    );
    // Six calls of 300 at once on three lists: 1,800 asked, exactly the ceiling stored.
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        svc.entries.addEntries(
          initech,
          lists[i % 3]!.id,
          Array.from({ length: 300 }, () => ({ target: evmAddress() })),
          OPERATOR,
        ),
      ),
    );
    const created = results.reduce((n, r) => n + r.created, 0);
    const exceeded = results.flatMap((r) => r.results).filter((r) => r.code === 'limit_exceeded').length;
    expect([created, exceeded]).toEqual([max, 800]);
    await expectCount(initech, max);

    // Room made by a removal (and by deleting a list) is room again, no more.
    const someone = results.find((r) => r.created > 0)!;
    const listOf = lists[results.indexOf(someone) % 3]!.id;
    await svc.entries.removeEntries(
      initech,
      listOf,
      someone.results
        .filter((r) => r.status === 'created')
        .slice(0, 100)
        .map((r) => ({ target: r.target })),
      OPERATOR,
    );
    await expectCount(initech, max - 100);
    const again = await svc.entries.addEntries(
      initech,
      lists[0]!.id,
      Array.from({ length: 150 }, () => ({ target: evmAddress() })),
      OPERATOR,
    );
    expect(again.created).toBe(100);
    expect(again.results.filter((r) => r.code === 'limit_exceeded')).toHaveLength(50);
    await expectCount(initech, max);
  }, 60_000);

  it('removes entries under the account lock, as adds take it: a removal waits for an add, no deadlock', async () => {
    // A bulk add of several batches holds its list's counter row from its first insert; a removal beside
    // it that held a row the add inserts again would deadlock. Both take the account's lock first.
    const svc = watchlistServices(orm, 1_000_000);
    const hooli = (await accounts.customer('hooli')).account.id;
    const list = await svc.lists.createWatchlist(hooli, { name: 'h' }, OPERATOR);
    const [a, b] = [evmAddress(), evmAddress()];
    const added = await svc.entries.addEntries(hooli, list.id, [{ target: a }, { target: b }], OPERATOR);
    const holder = new pg.Client({ connectionString: testEnv.env.DATABASE_URL });
    await holder.connect();
    try {
      // What an add in flight holds.
      await holder.query('begin');
      await holder.query('select 1 from accounts where id = $1 for no key update', [hooli]);
      const finished: string[] = [];
      const byTarget = svc.entries
        .removeEntries(hooli, list.id, [{ target: a }], OPERATOR)
        .then((r) => (finished.push('removeEntries'), r));
      const byId = svc.entries
        .removeEntry(hooli, list.id, added.results[1]!.id!, OPERATOR)
        .then((r) => (finished.push('removeEntry'), r));
      await new Promise((r) => setTimeout(r, 500));
      expect(finished).toEqual([]);
      await holder.query('commit');
      expect((await byTarget).removed).toBe(1);
      expect((await byId).target.toLowerCase()).toBe(b);
      await expectCount(hooli, 0);
    } finally {
      await holder.end();
    }
  });

  it('re-keys the counters (Migration20261128140000) beside an add in flight: it waits, counts the add once', async () => {
    await orm.migrator.down({ to: 'Migration20261128130000' });
    const stark = (await accounts.customer('stark')).account.id;
    const listId = newId('wl');
    const writer = new pg.Client({ connectionString: testEnv.env.DATABASE_URL });
    await writer.connect();
    try {
      // A bulk add reads the counters (the ceiling) before it inserts entries.
      await writer.query('begin');
      await writer.query('select entries from watchlist_entry_counts where account_id = $1', [stark]);
      let migrated = false;
      const migration = orm.migrator.up().then(() => (migrated = true));
      await new Promise((r) => setTimeout(r, 500));
      expect(migrated).toBe(false); // waiting for the counters
      await writer.query(
        `insert into watchlist_entries (id, account_id, watchlist_id, chain, network, target, created_at)
         values ($1, $2, $3, 'ethereum', $4, $5, now())`,
        [newId('wle'), stark, listId, ETHEREUM, evmAddress()],
      );
      await writer.query('commit');
      await migration;
    } finally {
      await writer.end();
    }
    const { rows } = await sql.query<{ entries: string }>(
      'select entries from watchlist_entry_counts where account_id = $1 and watchlist_id = $2',
      [stark, listId],
    );
    expect(rows.map((r) => Number(r.entries))).toEqual([1]);
    await sql.query('delete from watchlist_entries where watchlist_id = $1', [listId]);
  });

  describe('the fan-out of a list the planner has not seen', () => {
    const OLD_LIST = 40;
    const BIG = 30_000;
    const FEW = 50;
    let fresh: string;
    let ids: string[];

    beforeAll(async () => {
      const acct = (await accounts.customer('umbrella')).account.id;
      const insert = (listId: string, network: string, n: number) =>
        sql.query(
          `insert into watchlist_entries (id, account_id, watchlist_id, chain, network, target, created_at)
           select t.id, $1, $2, 'ethereum', $3, t.target, now() from unnest($4::text[], $5::text[]) as t(id, target)`,
          [
            acct,
            listId,
            network,
            Array.from({ length: n }, () => newId('wle')),
            Array.from({ length: n }, () => evmAddress()),
          ],
        );
      // This database's autovacuum would ANALYZE the table within a minute of the import: not during the test.
      await sql.query('alter table watchlist_entries set (autovacuum_enabled = false)');
      // The table as the planner knows it: lists ANALYZEd (autovacuum's work) before the new one came.
      for (let i = 0; i < OLD_LIST; i++) await insert(newId('wl'), ETHEREUM, 50);
      await sql.query('analyze watchlist_entries');
      // Then a big list imported (more than 10 % of the table, but before autovacuum's next ANALYZE).
      fresh = newId('wl');
      await insert(fresh, ETHEREUM, BIG);
      await insert(fresh, BASE, FEW);
      ids = (
        await sql.query<{ id: string }>(
          'select id from watchlist_entries where watchlist_id = $1 and network = $2 order by id',
          [fresh, ETHEREUM],
        )
      ).rows.map((r) => r.id);
    }, 60_000);

    const explain = async (query: string, params: unknown[], indexOrder: boolean): Promise<PlanNode[]> => {
      const run = (em: EntityManager) =>
        em.execute<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(`explain (format json) ${query}`, params, 'all');
      const rows = indexOrder ? await inIndexOrder(orm, run) : await orm.em.fork().transactional(run);
      return nodesOf(rows[0]!['QUERY PLAN'][0].Plan);
    };

    it('is a list the planner believes holds about one row (the statistics are missing)', async () => {
      const [scan] = (
        await explain('select id from watchlist_entries where watchlist_id = ?', [fresh], false)
      ).filter((n) => n['Relation Name'] === 'watchlist_entries');
      expect(scan!['Plan Rows']).toBeLessThan(100); // it holds 30,050
    });

    it('pages the ids off (watchlist_id, network, id) in id order, without a sort', async () => {
      const plan = await explain(entryIdsSql(1000), [fresh, ETHEREUM, ids[500]!], true);
      expect(plan.map((n) => n['Node Type'])).not.toContain('Sort');
      const scans = plan.filter((n) => n['Relation Name'] === 'watchlist_entries');
      expect(scans.map((n) => [n['Node Type'], n['Index Name']])).toEqual([
        [
          expect.stringMatching(/^Index (Only )?Scan$/) as unknown,
          'watchlist_entries_watchlist_id_network_id_index',
        ],
      ]);
    });

    it('finds the list’s networks by index probes, without reading or sorting the list', async () => {
      const plan = await explain(NETWORKS_SQL, [fresh, fresh], true);
      const types = plan.map((n) => n['Node Type']);
      expect(types).not.toContain('Sort');
      expect(types).not.toContain('Seq Scan');
      for (const scan of plan.filter((n) => n['Relation Name'] === 'watchlist_entries'))
        expect(scan['Index Name']).toMatch(
          /^watchlist_entries_watchlist_id_network_(id_index|target_unique)$/,
        );
    });

    it('fans the whole list out: every id once, network by network, in id order', async () => {
      const scans = new WatchlistRepository(orm).scans;
      expect(await scans.networksOf(fresh)).toEqual([ETHEREUM, BASE].sort());
      const seen: string[] = [];
      for (let after = ''; ;) {
        const page = await scans.entryIds(fresh, ETHEREUM, after, 1000);
        seen.push(...page);
        if (page.length < 1000) break;
        after = page.at(-1)!;
      }
      expect(seen).toEqual(ids);
      expect(await scans.entryIds(fresh, BASE, '', 1000)).toHaveLength(FEW);
    });

    it('looks a bulk add’s entries already there up by (network, target) on the unique index', async () => {
      // A bulk add inserts first and looks up only the rows not inserted (entries already on the list):
      // lists that are re-added to have statistics. With stale ones the planner took the list for one row
      // and read it through its smallest index; the same statement after ANALYZE:
      await sql.query('analyze watchlist_entries');
      const { rows } = await sql.query<{ target: string }>(
        'select target from watchlist_entries where watchlist_id = $1 and network = $2 limit 50',
        [fresh, ETHEREUM],
      );
      const targets = `{${[...rows.map((r) => r.target), evmAddress()].join(',')}}`;
      const analyzed = await orm.em
        .fork()
        .transactional((em) =>
          em.execute<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(
            `explain (analyze, format json) ${withTargetsSql}`,
            [fresh, `{${ETHEREUM},${BASE}}`, targets],
            'all',
          ),
        );
      const plan = nodesOf(analyzed[0]!['QUERY PLAN'][0].Plan);
      // An index scan, or a bitmap scan over one, of the unique index only, every column an index
      // condition: the 50 found of the list's 30,050 (a batch is up to 1,000, the test table is small
      // enough to make 1,000 probes cost more than reading it), none read and thrown away.
      const probes = plan.filter((n) => n['Index Name']);
      expect(probes.map((n) => [n['Node Type'], n['Index Name']])).toEqual([
        [
          expect.stringMatching(/^(Bitmap )?Index Scan$/) as unknown,
          'watchlist_entries_watchlist_id_network_target_unique',
        ],
      ]);
      expect(probes[0]!['Index Cond']).toMatch(/network\)::text = ANY .*target\)::text = ANY/);
      const [read] = plan.filter((n) => n['Relation Name'] === 'watchlist_entries');
      expect(read!.Filter).toBeUndefined();
      expect(read!['Actual Rows']).toBe(50);
    });

    afterAll(async () => {
      await sql.query('alter table watchlist_entries reset (autovacuum_enabled)');
    });
  });
});
