import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/accounts/api-key-format.js';
import type { ApiKeyBody, CreatedApiKeyBody } from '../../src/accounts/schemas.js';
import type { AuditExportLine, AuditPageBody, AuditRecordBody } from '../../src/audit/schemas.js';
import { AuditLogService } from '../../src/audit/service.js';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import { newId } from '../../src/platform/ids.js';
import {
  bearer,
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import { KEY_ADMIN_ROLE, testIdentityProvider } from '../support/jwt.js';
import { cli, cliJson, prepareEnv, type RunningService, type TestEnv } from '../support/service.js';

const DAY_MS = 86_400_000;

/** Oldest first: what the export writes. */
const oldestFirst = (a: AuditRecordBody, b: AuditRecordBody) =>
  a.at.localeCompare(b.at) || a.id.localeCompare(b.id);

/**
 * The audit log (docs/api.md#audit-log): changes of the accounts feature recorded in their transaction
 * (API keys over HTTP and the CLI, entitlements, accounts, bootstrap), `GET /api/v1/audit-log[/{id}]`
 * scoped to the key's account, the append-only trigger and the retention prune, `riskwatch audit export`.
 */
describe('audit log (built service, PostgreSQL)', () => {
  const idp = testIdentityProvider();
  /** Every raw key and its hash: none may appear in any record. */
  const secrets = new Set<string>();
  const remember = (key: string) => {
    secrets.add(key);
    secrets.add(hashApiKey(key));
    return key;
  };
  const expectNoSecret = (json: string) => {
    for (const secret of secrets)
      expect(json.includes(secret), 'a key or key hash in the audit log').toBe(false);
  };

  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let orm: Orm;
  let sql: pg.Client;
  let svc: RunningService;
  let acme: Customer;
  let globex: Customer;
  let initech: Customer;
  let hooli: Customer;
  let tmp: string;
  const token = (org: string, sub: string) => idp.sign({ org_id: org, sub, roles: [KEY_ADMIN_ROLE] });

  const keysApi = (jwt: string, path: string, init: RequestInit = {}, requestId?: string) =>
    fetch(`${svc.baseUrl}/api/account/api-keys${path}`, {
      ...init,
      headers: {
        ...bearer(jwt),
        'content-type': 'application/json',
        ...(requestId ? { 'x-request-id': requestId } : {}),
      },
    });
  const createKey = async (jwt: string, name: string, requestId?: string) => {
    const res = await keysApi(jwt, '', { method: 'POST', body: JSON.stringify({ name }) }, requestId);
    const created = await expectJson<CreatedApiKeyBody>(res, 201);
    remember(created.key);
    return created;
  };
  const revokeKey = async (jwt: string, id: string, requestId?: string) =>
    expectJson<ApiKeyBody>(await keysApi(jwt, `/${id}`, { method: 'DELETE' }, requestId), 200);

  const auditApi = (customer: Customer, path = '') =>
    fetch(`${svc.baseUrl}/api/v1/audit-log${path}`, { headers: { 'x-api-key': customer.key.key } });
  const page = async (customer: Customer, query: Record<string, string> = {}) => {
    const res = await auditApi(customer, `?${new URLSearchParams(query).toString()}`);
    const text = await res.clone().text();
    expectNoSecret(text);
    return expectJson<AuditPageBody>(res, 200);
  };
  /** Every record of the account matching `query`, page by page. */
  const walk = async (customer: Customer, query: Record<string, string>) => {
    const seen: AuditRecordBody[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const body: AuditPageBody = await page(customer, { ...query, ...(cursor ? { cursor } : {}) });
      seen.push(...body.data);
      cursor = body.next_cursor;
      pages += 1;
    } while (cursor && pages < 100);
    return { seen, pages };
  };
  const exportLines = async (args: string[] = [], env: Record<string, string> = {}) => {
    const out = await cli({ ...testEnv.env, ...env }, ['audit', 'export', ...args]);
    expectNoSecret(out);
    expect(out === '' || out.endsWith('\n')).toBe(true);
    return out
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AuditExportLine);
  };

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'rw-audit-'));
    testEnv = await prepareEnv(idp.env);
    db = await openAccounts(testEnv.env);
    orm = await connectOrm(testEnv.env.DATABASE_URL!, 2);
    sql = new pg.Client({ connectionString: testEnv.env.DATABASE_URL });
    await sql.connect();
    [acme, globex, initech, hooli] = await Promise.all([
      db.customer('acme'),
      db.customer('globex'),
      db.customer('initech'),
      db.customer('hooli'),
    ]);
    for (const c of [acme, globex, initech, hooli]) remember(c.key.key);
    svc = await startServiceRetrying(testEnv.env);
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await sql?.end();
    await orm?.close();
    await db?.close();
    await testEnv?.dropDatabase();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  describe('API keys over HTTP', () => {
    let created: CreatedApiKeyBody;
    let records: AuditRecordBody[];

    beforeAll(async () => {
      const alice = token('acme', 'alice');
      created = await createKey(alice, 'ci pipeline', 'req-audit-create-1');
      await revokeKey(alice, created.id, 'req-audit-revoke-1');
      records = (await page(acme)).data;
    });

    it('records the creation and the revocation, newest first, with who, from where and what changed', () => {
      const [revoked, made] = records;
      const actor = { type: 'user', id: 'alice', label: 'acme' };
      expect(revoked).toEqual({
        id: expect.stringMatching(/^aud_[0-9a-f]{28}$/) as unknown,
        at: expect.any(String) as unknown,
        actor,
        action: 'api_key.revoked',
        resource_type: 'api_key',
        resource_id: created.id,
        request_id: 'req-audit-revoke-1',
        client_address: expect.stringMatching(/127\.0\.0\.1$/) as unknown,
        before: { status: 'active', revoked_at: null },
        after: { status: 'revoked', revoked_at: expect.any(String) as unknown },
      });
      expect(made).toEqual({
        id: expect.stringMatching(/^aud_[0-9a-f]{28}$/) as unknown,
        at: expect.any(String) as unknown,
        actor,
        action: 'api_key.created',
        resource_type: 'api_key',
        resource_id: created.id,
        request_id: 'req-audit-create-1',
        client_address: expect.stringMatching(/127\.0\.0\.1$/) as unknown,
        before: null,
        after: { name: 'ci pipeline', prefix: created.prefix, expires_at: null },
      });
      expect(new Date(made!.at).toISOString()).toBe(made!.at);
      expect(made!.at <= revoked!.at).toBe(true);
    });

    it('never holds the key or its hash', () => {
      const json = JSON.stringify(records);
      expect(json).not.toContain(created.key);
      expect(json).not.toContain(hashApiKey(created.key));
      expectNoSecret(json);
    });

    it('serves one record by id, the same as in the list', async () => {
      const one = await expectJson<AuditRecordBody>(await auditApi(acme, `/${records[0]!.id}`), 200);
      expect(one).toEqual(records[0]);
    });

    it('keeps the record of the account set-up (operator `test`) below them', () => {
      const setUp = records.filter((r) => r.actor.type === 'operator');
      expect(setUp.map((r) => r.action).sort()).toEqual([
        'account.created',
        'api_key.created',
        'entitlement.granted',
      ]);
      for (const r of setUp)
        expect(r).toMatchObject({ actor: { id: 'test', label: null }, request_id: null });
      expect(setUp.find((r) => r.action === 'account.created')).toMatchObject({
        resource_id: acme.account.id,
        after: { name: 'acme', org_id: 'acme' },
      });
      expect(setUp.find((r) => r.action === 'entitlement.granted')).toMatchObject({
        before: null,
        after: { plan: 'enterprise', status: 'active', expires_at: null, rate_limit_per_min: null },
      });
    });
  });

  describe('filters and paging', () => {
    let keys: CreatedApiKeyBody[];
    let all: AuditRecordBody[];

    beforeAll(async () => {
      const hank = token('hooli', 'hank');
      keys = [];
      for (let i = 0; i < 7; i++) keys.push(await createKey(hank, `k${i}`));
      await revokeKey(hank, keys[1]!.id);
      await revokeKey(hank, keys[4]!.id);
      all = (await page(hooli, { limit: '500' })).data;
    });

    it('defaults to 50 records a page and holds every change of the account', async () => {
      expect(all).toHaveLength(3 + 7 + 2);
      expect((await page(hooli)).data).toEqual(all);
      expect([...all].sort(oldestFirst).reverse()).toEqual(all);
    });

    it('walks every record exactly once with limit and next_cursor', async () => {
      const { seen, pages } = await walk(hooli, { limit: '3' });
      expect(pages).toBe(4);
      expect(seen).toEqual(all);
      const last = await page(hooli, { limit: '12' });
      expect(last.next_cursor).toBeNull();
    });

    it('filters by action, resource type, resource id and actor, and pages the filtered list', async () => {
      const created = await walk(hooli, { action: 'api_key.created', limit: '2' });
      expect(created.seen.map((r) => r.resource_id)).toEqual([
        ...keys.map((k) => k.id).reverse(),
        hooli.key.id,
      ]);
      expect((await page(hooli, { action: 'api_key.revoked' })).data.map((r) => r.resource_id)).toEqual([
        keys[4]!.id,
        keys[1]!.id,
      ]);
      expect((await page(hooli, { resource_id: keys[1]!.id })).data.map((r) => r.action)).toEqual([
        'api_key.revoked',
        'api_key.created',
      ]);
      expect((await page(hooli, { resource_type: 'entitlement' })).data.map((r) => r.action)).toEqual([
        'entitlement.granted',
      ]);
      const byHank = await page(hooli, { actor_id: 'hank', limit: '500' });
      expect(byHank.data).toHaveLength(9);
      expect(byHank.data.every((r) => r.actor.type === 'user' && r.actor.id === 'hank')).toBe(true);
      expect((await page(hooli, { actor_id: 'nobody' })).data).toEqual([]);
    });

    it('filters by time: since inclusive, until exclusive', async () => {
      const pivot = all[5]!;
      const since = await walk(hooli, { since: pivot.at, limit: '4' });
      expect(since.seen).toEqual(all.filter((r) => r.at >= pivot.at));
      const until = await page(hooli, { until: pivot.at, limit: '500' });
      expect(until.data).toEqual(all.filter((r) => r.at < pivot.at));
      const offset = new Date(pivot.at).toISOString().replace('Z', '+00:00');
      expect((await page(hooli, { since: offset, until: offset })).data).toEqual([]);
    });
  });

  describe('accounts apart', () => {
    it('answers 404 for another account’s record and for an unknown id', async () => {
      const theirs = (await page(globex)).data[0]!;
      await expectProblem(await auditApi(acme, `/${theirs.id}`), 404, 'not_found');
      await expectProblem(await auditApi(acme, `/${newId('aud')}`), 404, 'not_found');
      await expectProblem(await auditApi(acme, '/not-an-id'), 404, 'not_found');
      await expectJson(await auditApi(globex, `/${theirs.id}`), 200);
    });

    it('never shows an account another account’s records', async () => {
      const globexIds = new Set([globex.account.id, globex.key.id]);
      const ours = (await page(acme, { limit: '500' })).data;
      expect(ours.length).toBeGreaterThan(0);
      expect(ours.filter((r) => globexIds.has(r.resource_id ?? ''))).toEqual([]);
      const theirs = (await page(globex, { limit: '500' })).data;
      expect(theirs.map((r) => r.resource_id)).toEqual(expect.arrayContaining([...globexIds]));
      const ourIds = new Set(ours.map((r) => r.id));
      expect(theirs.filter((r) => ourIds.has(r.id))).toEqual([]);
    });
  });

  describe('bad queries are 400 invalid_request', () => {
    it.each([
      ['a cursor it did not return', '?cursor=bm90LWEtY3Vyc29y', 'query.cursor'],
      ['a since that is not RFC 3339', '?since=yesterday', 'query.since'],
      ['a time without offset', '?until=2026-01-01T00:00:00', 'query.until'],
      ['limit 0', '?limit=0', 'query.limit'],
      ['limit 501', '?limit=501', 'query.limit'],
      ['an unknown filter', '?actor=alice', 'query'],
      ['an empty filter', '?action=', 'query.action'],
    ])('%s', async (_what, query, path) => {
      const problem = await expectProblem(await auditApi(acme, query), 400, 'invalid_request');
      expect(problem.errors?.map((e) => e.path)).toContain(path);
    });
  });

  describe('operator changes from the CLI', () => {
    const entitlementLog = async () =>
      (await page(initech, { resource_type: 'entitlement', limit: '500' })).data;

    it('records entitlement changes as the operator named by --actor, else RISKWATCH_OPERATOR', async () => {
      await cliJson({ ...testEnv.env, RISKWATCH_OPERATOR: 'ops-bot' }, [
        'entitlements',
        'grant',
        'initech',
        '--rate-limit-per-min',
        '120',
        '--actor',
        'alice',
      ]);
      await cliJson({ ...testEnv.env, RISKWATCH_OPERATOR: 'bob' }, ['entitlements', 'suspend', 'initech']);
      // The same state again changes nothing, and records nothing.
      await cliJson({ ...testEnv.env, RISKWATCH_OPERATOR: 'bob' }, ['entitlements', 'suspend', 'initech']);
      await cliJson({ ...testEnv.env, RISKWATCH_OPERATOR: 'bob' }, [
        'entitlements',
        'grant',
        'initech',
        '--actor',
        'carol',
      ]);
      await cliJson({ ...testEnv.env, RISKWATCH_OPERATOR: 'bob' }, ['entitlements', 'grant', 'initech']);
      const log = await entitlementLog();
      const operator = (id: string) => ({ type: 'operator', id, label: null });
      expect(log.map((r) => [r.action, r.actor, r.before, r.after])).toEqual([
        ['entitlement.granted', operator('carol'), { status: 'suspended' }, { status: 'active' }],
        ['entitlement.suspended', operator('bob'), { status: 'active' }, { status: 'suspended' }],
        ['entitlement.changed', operator('alice'), { rate_limit_per_min: null }, { rate_limit_per_min: 120 }],
        [
          'entitlement.granted',
          operator('test'),
          null,
          { plan: 'enterprise', status: 'active', expires_at: null, rate_limit_per_min: null },
        ],
      ]);
      for (const r of log) expect(r).toMatchObject({ request_id: null, client_address: null });
    }, 120_000);

    it('records keys made and revoked with `keys`; the OS user when nobody is named', async () => {
      const made = await cliJson<CreatedApiKeyBody>({ ...testEnv.env, RISKWATCH_OPERATOR: 'dave' }, [
        'keys',
        'create',
        'initech',
        '--name',
        'batch job',
      ]);
      remember(made.key);
      expect(made.created_by).toBe('operator:dave');
      await cliJson({ ...testEnv.env, RISKWATCH_OPERATOR: '' }, ['keys', 'revoke', 'initech', made.id]);
      const log = (await page(initech, { resource_id: made.id })).data;
      expect(log.map((r) => [r.action, r.actor.id])).toEqual([
        ['api_key.revoked', userInfo().username],
        ['api_key.created', 'dave'],
      ]);
      expect(log[1]!.after).toEqual({ name: 'batch job', prefix: made.prefix, expires_at: null });
    }, 120_000);

    it('records what bootstrap creates, as its --actor', async () => {
      const banner = await cli(testEnv.env, ['bootstrap', '--org-id', 'demo', '--actor', 'erin']);
      remember(/api key\s+(rwk_\S+)/.exec(banner)![1]!);
      const lines = await exportLines(['--account', 'demo']);
      expect(lines.map((l) => [l.action, l.actor.id])).toEqual([
        ['account.created', 'erin'],
        ['entitlement.granted', 'erin'],
        ['api_key.created', 'erin'],
      ]);
      // Run again: the account and its entitlement are there; only a new key is made.
      remember(/api key\s+(rwk_\S+)/.exec(await cli(testEnv.env, ['bootstrap', '--org-id', 'demo']))![1]!);
      expect((await exportLines(['--account', 'demo'])).map((l) => l.action)).toEqual([
        'account.created',
        'entitlement.granted',
        'api_key.created',
        'api_key.created',
      ]);
    }, 120_000);
  });

  describe('append-only', () => {
    const refused = /audit_log is append-only/;

    it('refuses UPDATE, DELETE and TRUNCATE, whoever asks', async () => {
      const [row] = (await sql.query<{ id: string }>('select id from audit_log order by at limit 1')).rows;
      const before = (await sql.query('select count(*)::int as n from audit_log')).rows[0] as { n: number };
      await expect(
        sql.query(`update audit_log set action = 'forged' where id = $1`, [row!.id]),
      ).rejects.toThrow(refused);
      await expect(sql.query(`update audit_log set before = null`)).rejects.toThrow(refused);
      await expect(sql.query('delete from audit_log where id = $1', [row!.id])).rejects.toThrow(refused);
      await expect(sql.query('truncate audit_log')).rejects.toThrow(refused);
      // A cut-off younger than 30 days opens nothing, even inside a prune-like transaction.
      await sql.query('begin');
      await sql.query(`select set_config('riskwatch.audit_prune_before', $1, true)`, [
        new Date().toISOString(),
      ]);
      await expect(sql.query('delete from audit_log')).rejects.toThrow(refused);
      await sql.query('rollback');
      const after = (await sql.query('select count(*)::int as n from audit_log')).rows[0] as { n: number };
      expect(after.n).toBe(before.n);
      expect((await sql.query(`select 1 from audit_log where action = 'forged'`)).rowCount).toBe(0);
    });

    it('prunes only the records older than the retention', async () => {
      const insert = (daysAgo: number) => {
        const at = new Date(Date.now() - daysAgo * DAY_MS);
        const id = newId('aud', at.getTime());
        return sql
          .query(
            `insert into audit_log (id, account_id, at, actor_type, actor_id, action, resource_type)
             values ($1, $2, $3, 'operator', 'test', 'test.old', 'test')`,
            [id, acme.account.id, at],
          )
          .then(() => id);
      };
      const ancient = await insert(500);
      const old = await insert(401);
      const kept = await insert(399);
      const count = async () =>
        ((await sql.query('select count(*)::int as n from audit_log')).rows[0] as { n: number }).n;
      const total = await count();
      expect(await new AuditLogService(orm).prune(400)).toEqual({ deleted: 2, dropped: [] });
      const left = await sql.query<{ id: string }>('select id from audit_log where id = any($1)', [
        [ancient, old, kept],
      ]);
      expect(left.rows.map((r) => r.id)).toEqual([kept]);
      expect(await count()).toBe(total - 2);
      expect(await new AuditLogService(orm).prune(400)).toEqual({ deleted: 0, dropped: [] });
      // The old record shows through the API until then, like any other.
      expect((await page(acme, { action: 'test.old' })).data.map((r) => r.id)).toEqual([kept]);
    });
  });

  describe('riskwatch audit export', () => {
    it('prints every account’s records as NDJSON, oldest first, and nothing else', async () => {
      const until = new Date(Date.now() + 1000).toISOString();
      const lines = await exportLines(['--until', until]);
      expect(lines.length).toBeGreaterThan(20);
      expect([...lines].sort(oldestFirst)).toEqual(lines);
      const accounts = new Set(lines.map((l) => l.account_id));
      for (const c of [acme, globex, initech, hooli]) expect(accounts.has(c.account.id)).toBe(true);
      expect(Object.keys(lines[0]!)).toEqual([
        'id',
        'account_id',
        'at',
        'actor',
        'action',
        'resource_type',
        'resource_id',
        'request_id',
        'client_address',
        'before',
        'after',
      ]);
      // The API's records of an account, as the export writes them.
      const acmeApi = (await page(acme, { limit: '500' })).data;
      const acmeLines = lines.filter((l) => l.account_id === acme.account.id);
      const withoutAccount = (l: AuditExportLine) =>
        Object.fromEntries(Object.entries(l).filter(([k]) => k !== 'account_id'));
      expect(acmeLines.map(withoutAccount)).toEqual([...acmeApi].reverse());

      const file = join(tmp, 'audit.ndjson');
      expect(await cli(testEnv.env, ['audit', 'export', '--until', until, '--output', file])).toBe('');
      expect(readFileSync(file, 'utf8')).toBe(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
    }, 120_000);

    it('filters by --account (id or org id) and --since', async () => {
      const byId = await exportLines(['--account', globex.account.id]);
      expect(byId.length).toBeGreaterThan(0);
      expect(byId.every((l) => l.account_id === globex.account.id)).toBe(true);
      expect(await exportLines(['--account', 'globex'])).toEqual(byId);
      const all = await exportLines(['--account', 'hooli']);
      const since = all[4]!.at;
      const later = await exportLines(['--account', 'hooli', '--since', since]);
      expect(later).toEqual(all.filter((l) => l.at >= since));
      expect(await exportLines(['--since', new Date(Date.now() + DAY_MS).toISOString()])).toEqual([]);
    }, 120_000);

    it('streams a log larger than a batch: every record once, in order, across equal times', async () => {
      // 12,001 records in three milliseconds of 2020 (and microseconds, as a direct insert may write):
      // three batches of the export, many ties on `at`.
      await sql.query(
        `insert into audit_log (id, account_id, at, actor_type, actor_id, action, resource_type, resource_id)
         select 'aud_' || lpad(to_hex(1577836800000 + i % 3), 12, '0') || lpad(to_hex(i), 16, '0'), null,
                timestamptz '2020-01-01T00:00:00Z' + (i % 3) * interval '1 millisecond'
                  + (i % 7) * interval '1 microsecond',
                'operator', 'bulk', 'test.bulk', 'test', i::text
           from generate_series(1, 12001) as i`,
      );
      // To a file: the lines are more than the test's stdout buffer holds.
      const file = join(tmp, 'bulk.ndjson');
      await cli(testEnv.env, [
        'audit',
        'export',
        '--since',
        '2020-01-01',
        '--until',
        '2020-01-02T00:00:00Z',
        '--output',
        file,
      ]);
      const text = readFileSync(file, 'utf8');
      expect(text.endsWith('\n')).toBe(true);
      const lines = text
        .slice(0, -1)
        .split('\n')
        .map((line) => JSON.parse(line) as AuditExportLine);
      expect(lines).toHaveLength(12_001);
      expect(new Set(lines.map((l) => l.id)).size).toBe(12_001);
      // In the order of the exact time (ms, then µs), then of the id (its ms prefix, then i).
      const key = (i: number) => [(i % 3) * 1000 + (i % 7), i % 3, i];
      const order = Array.from({ length: 12_001 }, (_, n) => n + 1).sort((a, b) => {
        const [ka, kb] = [key(a), key(b)];
        return ka[0]! - kb[0]! || ka[1]! - kb[1]! || ka[2]! - kb[2]!;
      });
      expect(lines.map((l) => l.resource_id)).toEqual(order.map(String));
      expect(lines.every((l) => l.action === 'test.bulk' && l.account_id === null)).toBe(true);
    }, 120_000);

    it('refuses a bad time or an unknown account, on stderr', async () => {
      await expect(cli(testEnv.env, ['audit', 'export', '--since', 'yesterday'])).rejects.toThrow(
        /--since.*RFC 3339/s,
      );
      await expect(cli(testEnv.env, ['audit', 'export', '--account', 'nope'])).rejects.toThrow(/not_found/);
      await expect(
        cli(testEnv.env, ['audit', 'export', '--since', '2026-02-01', '--until', '2026-01-01']),
      ).rejects.toThrow(/--since must be before --until/);
    }, 120_000);
  });

  it('pages across weeks: the newest week is read first, then older days, every record once and in order', async () => {
    const daysAgo = [0.2, 3, 6.9, 7.1, 8, 30, 200, 390];
    for (const [i, d] of daysAgo.entries()) {
      const at = new Date(Date.now() - d * DAY_MS);
      await sql.query(
        `insert into audit_log (id, account_id, at, actor_type, actor_id, action, resource_type, resource_id)
         values ($1, $2, $3, 'operator', 'test', 'test.weeks', 'test', $4)`,
        [newId('aud', at.getTime()), globex.account.id, at, String(i)],
      );
    }
    const order = daysAgo.map((_, i) => String(i));
    for (const limit of ['1', '2', '3', '50']) {
      const { seen } = await walk(globex, { action: 'test.weeks', limit });
      expect(seen.map((r) => r.resource_id)).toEqual(order);
    }
    // A page that finds less than a page in the week below its top goes on into older days.
    const first = await page(globex, { action: 'test.weeks', limit: '4' });
    expect(first.data.map((r) => r.resource_id)).toEqual(['0', '1', '2', '3']);
    // Bounded by since: within the week, or reaching older days.
    const since = (d: number) => new Date(Date.now() - d * DAY_MS).toISOString();
    expect(
      (await page(globex, { action: 'test.weeks', since: since(5) })).data.map((r) => r.resource_id),
    ).toEqual(['0', '1']);
    expect(
      (await page(globex, { action: 'test.weeks', since: since(31) })).data.map((r) => r.resource_id),
    ).toEqual(['0', '1', '2', '3', '4', '5']);
    expect(
      (await page(globex, { action: 'test.weeks', until: since(7.5), limit: '2' })).data.map(
        (r) => r.resource_id,
      ),
    ).toEqual(['4', '5']);
  });

  it('pages records whose times are finer than a millisecond (a direct insert) exactly once', async () => {
    await sql.query(
      `insert into audit_log (id, account_id, at, actor_type, actor_id, action, resource_type, resource_id)
       select 'aud_' || lpad(to_hex(1700000000000), 12, '0') || lpad(to_hex(i), 16, '0'), $1,
              timestamptz '2023-11-14T22:13:20.000Z' + (7 - i) * interval '1 microsecond',
              'operator', 'test', 'test.micro', 'test', i::text
         from generate_series(1, 7) as i`,
      [globex.account.id],
    );
    const { seen } = await walk(globex, { action: 'test.micro', limit: '2' });
    expect(seen.map((r) => r.resource_id)).toEqual(['1', '2', '3', '4', '5', '6', '7']);
  });

  it('documents both routes in the OpenAPI document, with the API key', async () => {
    const doc = (await (await fetch(`${svc.baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { security?: unknown }>>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.paths['/api/v1/audit-log']?.get?.security).toEqual([{ apiKey: [] }]);
    expect(doc.paths['/api/v1/audit-log/{id}']?.get?.security).toEqual([{ apiKey: [] }]);
    expect(doc.components.schemas).toHaveProperty('AuditRecord');
    expect(doc.components.schemas).toHaveProperty('AuditRecordPage');
  });
});
