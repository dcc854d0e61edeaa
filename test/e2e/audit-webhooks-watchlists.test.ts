import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  AddEntriesResultBody,
  RemoveEntriesResultBody,
  RescanAcceptedBody,
  WatchlistBody,
} from '../../src/watchlists/schemas.js';
import type { ResealReport } from '../../src/webhooks/secret-store.js';
import type {
  CreatedEndpointBody,
  DeliveryBody,
  RecoveredBody,
  RotatedSecretBody,
  TestAcceptedBody,
} from '../../src/webhooks/schemas.js';
import {
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import { cli, cliJson, freePort, prepareEnv, type RunningService, type TestEnv } from '../support/service.js';

/*
 * The audit records webhooks and watchlists write (docs/api.md, "Audit log"), read
 * straight from the audit_log table: one per change, in the account of the change, naming the API key
 * (id and prefix), the request id the client sent and its address, with the changed fields only; one
 * summarised record per bulk call; none for a call that fails or changes nothing; never a signing secret.
 * The CLI's changes name the operator (`--actor`, RISKWATCH_OPERATOR). The built service, role `api`.
 */

interface AuditRow {
  id: string;
  account_id: string | null;
  actor_type: string;
  actor_id: string;
  actor_label: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  request_id: string | null;
  client_address: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

let evmCounter = 0;
const evmAddress = () =>
  `0x${(++evmCounter).toString(16).padStart(8, '0')}${randomBytes(16).toString('hex')}`;
const requestId = () => `audit-test-${randomBytes(6).toString('hex')}`;
const MINE = "(action like 'webhook%' or action like 'watchlist%')";

describe('audit records of webhooks and watchlists (built service over HTTP)', () => {
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let sql: pg.Client;
  let svc: RunningService;
  let acme: Customer;
  let globex: Customer;
  let receiver: string;
  /** Every signing secret the API handed out: none may be in the audit log. */
  const secrets: string[] = [];

  const call = (
    customer: Customer,
    path: string,
    init: { method?: string; body?: unknown; requestId?: string } = {},
  ) =>
    fetch(`${svc.baseUrl}/api/v1${path}`, {
      method: init.method ?? 'GET',
      headers: {
        'x-api-key': customer.key.key,
        ...(init.requestId ? { 'x-request-id': init.requestId } : {}),
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });

  /** The records of webhooks and watchlists, oldest first, filtered by a condition on audit_log. */
  const records = async (where = 'true', params: unknown[] = []) =>
    (
      await sql.query<AuditRow>(
        `select id, account_id, actor_type, actor_id, actor_label, action, resource_type, resource_id,
                request_id, client_address, before, after
           from audit_log where ${MINE} and ${where} order by at, id`,
        params,
      )
    ).rows;
  const countAll = async () => (await records()).length;

  /**
   * The one record the request `rid` wrote: `action` on `resourceId`, in the customer's account, by its
   * key (id and prefix), with the request id and a client address.
   */
  const theRecord = async (customer: Customer, rid: string, action: string, resourceId: string) => {
    const rows = await records('request_id = $1', [rid]);
    expect(rows.map((r) => r.action)).toEqual([action]);
    const row = rows[0]!;
    expect(row).toMatchObject({
      account_id: customer.account.id,
      actor_type: 'api_key',
      actor_id: customer.key.id,
      actor_label: customer.key.prefix,
      resource_id: resourceId,
      request_id: rid,
    });
    expect(row.client_address).toMatch(/^(::ffff:)?127\.0\.0\.1$|^::1$/);
    return row;
  };
  /** A call that fails writes nothing: no record, whatever the action. */
  const expectNoRecord = async (rid: string) => expect(await records('request_id = $1', [rid])).toEqual([]);

  beforeAll(async () => {
    receiver = `http://127.0.0.1:${await freePort()}/hooks/audit`;
    const unused = `http://127.0.0.1:${await freePort()}`;
    testEnv = await prepareEnv({
      RISKWATCH_WEBHOOK_ALLOW_HTTP: 'true',
      RISKWATCH_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
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

  const createList = async (customer: Customer, name: string, rid = requestId()) =>
    expectJson<WatchlistBody>(
      await call(customer, '/watchlists', { method: 'POST', body: { name }, requestId: rid }),
      201,
    );

  describe('webhook endpoints', () => {
    it('audits creation, changes, rotations, tests, redeliveries, recovery and deletion', async () => {
      const list = await createList(acme, 'hooked');
      const theirs = await createList(globex, 'theirs');

      // Created: every field after, nothing before, no secret.
      let rid = requestId();
      const created = await expectJson<CreatedEndpointBody>(
        await call(acme, '/webhooks/endpoints', {
          method: 'POST',
          body: { url: receiver, events: ['watchlist.alert'], watchlist_ids: [list.id] },
          requestId: rid,
        }),
        201,
      );
      secrets.push(created.secret);
      const id = created.id;
      let row = await theRecord(acme, rid, 'webhook_endpoint.created', id);
      expect(row.resource_type).toBe('webhook_endpoint');
      expect(row.before).toBeNull();
      expect(row.after).toEqual({
        url: receiver,
        description: null,
        events: ['watchlist.alert'],
        watchlist_ids: [list.id],
        enabled: true,
        disabled_reason: null,
      });

      // A creation refused inside its transaction (another account's watchlist) writes nothing.
      rid = requestId();
      await expectProblem(
        await call(acme, '/webhooks/endpoints', {
          method: 'POST',
          body: { url: receiver, events: ['watchlist.alert'], watchlist_ids: [theirs.id] },
          requestId: rid,
        }),
        400,
        'invalid_request',
      );
      await expectNoRecord(rid);

      // Changed: only the fields that changed, each side with its value.
      rid = requestId();
      await expectJson(
        await call(acme, `/webhooks/endpoints/${id}`, {
          method: 'PATCH',
          body: {
            url: receiver,
            events: ['watchlist.alert', 'webhook.endpoint_disabled'],
            watchlist_ids: null,
            description: 'alerts',
          },
          requestId: rid,
        }),
        200,
      );
      row = await theRecord(acme, rid, 'webhook_endpoint.updated', id);
      expect(row.before).toEqual({
        events: ['watchlist.alert'],
        watchlist_ids: [list.id],
        description: null,
      });
      expect(row.after).toEqual({
        events: ['watchlist.alert', 'webhook.endpoint_disabled'],
        watchlist_ids: null,
        description: 'alerts',
      });

      // The same values again change nothing: no record. A refused change (a bad URL, another
      // account's watchlist, another account's endpoint) writes nothing either.
      rid = requestId();
      await expectJson(
        await call(acme, `/webhooks/endpoints/${id}`, {
          method: 'PATCH',
          body: { description: 'alerts', enabled: true },
          requestId: rid,
        }),
        200,
      );
      await expectNoRecord(rid);
      for (const [customer, body, status, code] of [
        [acme, { url: 'http://169.254.169.254/latest' }, 400, 'invalid_webhook_url'],
        [acme, { watchlist_ids: [theirs.id] }, 400, 'invalid_request'],
        [globex, { description: 'mine now' }, 404, 'not_found'],
      ] as const) {
        rid = requestId();
        await expectProblem(
          await call(customer, `/webhooks/endpoints/${id}`, { method: 'PATCH', body, requestId: rid }),
          status,
          code,
        );
        await expectNoRecord(rid);
      }

      // Rotated, twice: until when the previous secret signs; nothing of any secret.
      const rotations: RotatedSecretBody[] = [];
      for (let i = 0; i < 2; i++) {
        rid = requestId();
        const rotated = await expectJson<RotatedSecretBody>(
          await call(acme, `/webhooks/endpoints/${id}/rotate-secret`, { method: 'POST', requestId: rid }),
          200,
        );
        secrets.push(rotated.secret);
        rotations.push(rotated);
        row = await theRecord(acme, rid, 'webhook_endpoint.secret_rotated', id);
        expect(row.before).toEqual({
          previous_signs_until: i === 0 ? null : rotations[0]!.previous_secret_expires_at,
        });
        expect(row.after).toEqual({ previous_signs_until: rotated.previous_secret_expires_at });
      }

      // A test event: its event and delivery.
      rid = requestId();
      const sent = await expectJson<TestAcceptedBody>(
        await call(acme, `/webhooks/endpoints/${id}/test`, { method: 'POST', requestId: rid }),
        202,
      );
      row = await theRecord(acme, rid, 'webhook_endpoint.test_sent', id);
      expect(row.after).toEqual({ event_id: sent.event_id, delivery_id: sent.delivery_id });

      // Redelivered: the delivery's status before, pending after.
      await sql.query(
        `update webhook_deliveries set status = 'failed', next_attempt_at = null where id = $1`,
        [sent.delivery_id],
      );
      rid = requestId();
      await expectJson<DeliveryBody>(
        await call(acme, `/webhooks/deliveries/${sent.delivery_id}/redeliver`, {
          method: 'POST',
          requestId: rid,
        }),
        202,
      );
      row = await theRecord(acme, rid, 'webhook_delivery.redelivered', sent.delivery_id);
      expect(row.resource_type).toBe('webhook_delivery');
      expect(row.before).toEqual({ status: 'failed' });
      expect(row.after).toEqual({ status: 'pending', endpoint_id: id, event_id: sent.event_id });
      // Another account's delivery is not found: nothing written.
      rid = requestId();
      await expectProblem(
        await call(globex, `/webhooks/deliveries/${sent.delivery_id}/redeliver`, {
          method: 'POST',
          requestId: rid,
        }),
        404,
        'not_found',
      );
      await expectNoRecord(rid);

      // Recovered: one record counting the deliveries sent again; none when there was none to send.
      const since = new Date(Date.now() - 3_600_000).toISOString();
      const more = [
        await expectJson<TestAcceptedBody>(
          await call(acme, `/webhooks/endpoints/${id}/test`, { method: 'POST' }),
          202,
        ),
        await expectJson<TestAcceptedBody>(
          await call(acme, `/webhooks/endpoints/${id}/test`, { method: 'POST' }),
          202,
        ),
      ];
      await sql.query(`update webhook_deliveries set status = 'failed' where endpoint_id = $1`, [id]);
      rid = requestId();
      const recovered = await expectJson<RecoveredBody>(
        await call(acme, `/webhooks/endpoints/${id}/recover`, {
          method: 'POST',
          body: { since },
          requestId: rid,
        }),
        202,
      );
      expect(recovered).toMatchObject({ recovered: 1 + more.length });
      row = await theRecord(acme, rid, 'webhook_endpoint.deliveries_recovered', id);
      expect(row.before).toEqual({ status: 'failed' });
      expect(row.after).toEqual({ status: 'pending', since, recovered: 3 });
      rid = requestId();
      await expectJson<RecoveredBody>(
        await call(acme, `/webhooks/endpoints/${id}/recover`, {
          method: 'POST',
          body: { since },
          requestId: rid,
        }),
        202,
      );
      await expectNoRecord(rid);

      // Disabled: `enabled` and why, before and after. Then a redelivery is a conflict: nothing written.
      rid = requestId();
      await expectJson(
        await call(acme, `/webhooks/endpoints/${id}`, {
          method: 'PATCH',
          body: { enabled: false },
          requestId: rid,
        }),
        200,
      );
      row = await theRecord(acme, rid, 'webhook_endpoint.updated', id);
      expect(row.before).toEqual({ enabled: true, disabled_reason: null });
      expect(row.after).toEqual({ enabled: false, disabled_reason: expect.any(String) as unknown });
      rid = requestId();
      await expectProblem(
        await call(acme, `/webhooks/deliveries/${sent.delivery_id}/redeliver`, {
          method: 'POST',
          requestId: rid,
        }),
        409,
        'conflict',
      );
      await expectNoRecord(rid);

      // Deleted: every field before (with the deliveries that went), nothing after.
      rid = requestId();
      await expectJson(
        await call(acme, `/webhooks/endpoints/${id}`, { method: 'DELETE', requestId: rid }),
        200,
      );
      row = await theRecord(acme, rid, 'webhook_endpoint.deleted', id);
      expect(row.after).toBeNull();
      expect(row.before).toEqual({
        url: receiver,
        description: 'alerts',
        events: ['watchlist.alert', 'webhook.endpoint_disabled'],
        watchlist_ids: null,
        enabled: false,
        disabled_reason: expect.any(String) as unknown,
        deliveries: 3,
      });
      rid = requestId();
      await expectProblem(
        await call(acme, `/webhooks/endpoints/${id}`, { method: 'DELETE', requestId: rid }),
        404,
        'not_found',
      );
      await expectNoRecord(rid);

      // Every record of this endpoint is in acme's account; globex's log holds none of it.
      const mine = await records('resource_id = $1', [id]);
      // created, 2 × updated, 2 × secret_rotated, 3 × test_sent, deliveries_recovered, deleted
      expect(mine.length).toBe(10);
      expect(new Set(mine.map((r) => r.account_id))).toEqual(new Set([acme.account.id]));
      expect(await records('account_id = $1 and action like $2', [globex.account.id, 'webhook%'])).toEqual(
        [],
      );
    });
  });

  describe('watchlists', () => {
    it('audits a list created, changed and deleted, with the changed fields only', async () => {
      let rid = requestId();
      const list = await createList(acme, 'treasury', rid);
      let row = await theRecord(acme, rid, 'watchlist.created', list.id);
      expect(row.before).toBeNull();
      expect(row.after).toEqual({
        name: 'treasury',
        schedule: '*/5 * * * *',
        deep_schedule: '0 3 * * *',
        thresholds: { balance_change_pct: 10 },
      });

      rid = requestId();
      await expectJson(
        await call(acme, `/watchlists/${list.id}`, {
          method: 'PATCH',
          body: { name: 'treasury', deep_schedule: '0 4 * * *', thresholds: { balance_change_pct: 25 } },
          requestId: rid,
        }),
        200,
      );
      row = await theRecord(acme, rid, 'watchlist.updated', list.id);
      expect(row.before).toEqual({ deep_schedule: '0 3 * * *', thresholds: { balance_change_pct: 10 } });
      expect(row.after).toEqual({ deep_schedule: '0 4 * * *', thresholds: { balance_change_pct: 25 } });

      // Nothing changed, a refused schedule, another account's list: no record.
      for (const [customer, body, status, code] of [
        [acme, { name: 'treasury' }, 200, null],
        [acme, { schedule: '* * * * * *' }, 400, 'invalid_request'],
        [globex, { name: 'stolen' }, 404, 'not_found'],
      ] as const) {
        rid = requestId();
        const res = await call(customer, `/watchlists/${list.id}`, { method: 'PATCH', body, requestId: rid });
        if (code) await expectProblem(res, status, code);
        else await expectJson(res, status);
        await expectNoRecord(rid);
      }

      await expectJson<AddEntriesResultBody>(
        await call(acme, `/watchlists/${list.id}/entries`, {
          method: 'POST',
          body: { entries: [{ target: evmAddress() }, { target: evmAddress() }] },
        }),
        200,
      );
      rid = requestId();
      await expectProblem(
        await call(globex, `/watchlists/${list.id}`, { method: 'DELETE', requestId: rid }),
        404,
        'not_found',
      );
      await expectNoRecord(rid);
      rid = requestId();
      await expectJson(await call(acme, `/watchlists/${list.id}`, { method: 'DELETE', requestId: rid }), 200);
      row = await theRecord(acme, rid, 'watchlist.deleted', list.id);
      expect(row.after).toBeNull();
      expect(row.before).toEqual({
        name: 'treasury',
        schedule: '*/5 * * * *',
        deep_schedule: '0 4 * * *',
        thresholds: { balance_change_pct: 25 },
        entry_count: 2,
      });
    });

    it('summarises a bulk add of 1,000 entries in one record, and a bulk removal in another', async () => {
      const list = await createList(acme, 'bulk');
      const targets = Array.from({ length: 1000 }, evmAddress);
      const entries = [
        ...targets.map((target) => ({ target })),
        { target: 'not an address' },
        { target: targets[0]! },
      ];
      let rid = requestId();
      const added = await expectJson<AddEntriesResultBody>(
        await call(acme, `/watchlists/${list.id}/entries`, {
          method: 'POST',
          body: { entries },
          requestId: rid,
        }),
        200,
      );
      expect(added).toMatchObject({ created: 1000, exists: 0, failed: 2 });
      let row = await theRecord(acme, rid, 'watchlist_entries.added', list.id);
      expect(row.resource_type).toBe('watchlist_entries');
      expect(row.before).toBeNull();
      const sample = added.results.slice(0, 10).map((r) => ({
        id: r.id,
        target: r.target,
        network: 'eip155:1',
      }));
      expect(row.after).toEqual({ entries: 1002, created: 1000, exists: 0, failed: 2, sample });
      expect(JSON.stringify(row).length).toBeLessThan(4096);

      // The same entries again create nothing: no record. Too many entries, or another account's list:
      // refused, nothing written.
      for (const [customer, body, status, code] of [
        [acme, { entries: targets.map((target) => ({ target })) }, 200, null],
        [
          acme,
          { entries: Array.from({ length: 10_001 }, () => ({ target: evmAddress() })) },
          400,
          'too_many_entries',
        ],
        [globex, { entries: [{ target: evmAddress() }] }, 404, 'not_found'],
      ] as const) {
        rid = requestId();
        const res = await call(customer, `/watchlists/${list.id}/entries`, {
          method: 'POST',
          body,
          requestId: rid,
        });
        if (code) await expectProblem(res, status, code);
        else expect((await expectJson<AddEntriesResultBody>(res, status)).exists).toBe(1000);
        await expectNoRecord(rid);
      }

      // One entry removed: the entry as it was.
      const first = added.results[0]!;
      rid = requestId();
      await expectJson(
        await call(acme, `/watchlists/${list.id}/entries/${first.id}`, { method: 'DELETE', requestId: rid }),
        200,
      );
      row = await theRecord(acme, rid, 'watchlist_entry.removed', first.id!);
      expect(row.resource_type).toBe('watchlist_entry');
      expect(row.after).toBeNull();
      expect(row.before).toEqual({
        watchlist_id: list.id,
        target: first.target,
        chain: 'ethereum',
        network: 'eip155:1',
        label: null,
        target_type: null,
      });

      // Removed by target: one summarised record.
      rid = requestId();
      const removed = await expectJson<RemoveEntriesResultBody>(
        await call(acme, `/watchlists/${list.id}/entries/remove`, {
          method: 'POST',
          body: {
            targets: [...targets.slice(1, 600), first.target, 'not an address'].map((target) => ({ target })),
          },
          requestId: rid,
        }),
        200,
      );
      expect(removed).toMatchObject({ removed: 599, not_found: 1, failed: 1 });
      row = await theRecord(acme, rid, 'watchlist_entries.removed', list.id);
      expect(row.after).toBeNull();
      expect(row.before).toEqual({
        targets: 601,
        removed: 599,
        not_found: 1,
        failed: 1,
        sample: removed.results.slice(0, 10).map((r) => ({ target: r.target, ids: r.ids })),
      });
      // Nothing left to remove: no record.
      rid = requestId();
      await expectJson(
        await call(acme, `/watchlists/${list.id}/entries/remove`, {
          method: 'POST',
          body: { targets: [{ target: first.target }] },
          requestId: rid,
        }),
        200,
      );
      await expectNoRecord(rid);
    });

    it('audits a rescan asked for (not the answer naming the running one, nor a refused one)', async () => {
      const list = await createList(acme, 'rescanned');
      await expectJson(
        await call(acme, `/watchlists/${list.id}/entries`, {
          method: 'POST',
          body: { entries: [{ target: evmAddress() }, { target: evmAddress() }, { target: evmAddress() }] },
        }),
        200,
      );
      let rid = requestId();
      const accepted = await expectJson<RescanAcceptedBody>(
        await call(acme, `/watchlists/${list.id}/rescan`, { method: 'POST', requestId: rid }),
        202,
      );
      const row = await theRecord(acme, rid, 'watchlist.rescan_requested', list.id);
      expect(row.before).toBeNull();
      expect(row.after).toEqual({ rescan_id: accepted.rescan_id, total: 3 });

      // Still running: the answer is that rescan, and nothing is written.
      rid = requestId();
      expect(
        (
          await expectJson<RescanAcceptedBody>(
            await call(acme, `/watchlists/${list.id}/rescan`, { method: 'POST', requestId: rid }),
            202,
          )
        ).rescan_id,
      ).toBe(accepted.rescan_id);
      await expectNoRecord(rid);
      // Done, and asked for again too soon: 429, nothing written.
      await sql.query('update watchlist_entries set deep_checked_at = now() where watchlist_id = $1', [
        list.id,
      ]);
      rid = requestId();
      await expectProblem(
        await call(acme, `/watchlists/${list.id}/rescan`, { method: 'POST', requestId: rid }),
        429,
        'rate_limited',
      );
      await expectNoRecord(rid);
    });

    it('audits an alert’s status, before and after, when it changes', async () => {
      const list = await createList(acme, 'alerts');
      const added = await expectJson<AddEntriesResultBody>(
        await call(acme, `/watchlists/${list.id}/entries`, {
          method: 'POST',
          body: { entries: [{ target: evmAddress() }] },
        }),
        200,
      );
      const alertId = `alr_${Date.now().toString(16).padStart(12, '0')}${randomBytes(8).toString('hex')}`;
      await sql.query(
        `insert into watchlist_alerts (id, account_id, watchlist_id, entry_id, target, network, type, severity,
                                       previous, current, evidence, fingerprint, scan_id, status, created_at,
                                       updated_at)
         select $1, account_id, watchlist_id, id, target, network, 'balance_changed', 'medium', '{}'::jsonb,
                '{}'::jsonb, '{}'::jsonb, $2, 'scan-1', 'open', now(), now()
           from watchlist_entries where id = $3`,
        [alertId, randomBytes(32).toString('hex'), added.results[0]!.id],
      );
      const patch = (customer: Customer, status: string, rid: string) =>
        call(customer, `/watchlists/${list.id}/alerts/${alertId}`, {
          method: 'PATCH',
          body: { status },
          requestId: rid,
        });

      let rid = requestId();
      await expectJson(await patch(acme, 'acknowledged', rid), 200);
      let row = await theRecord(acme, rid, 'watchlist_alert.updated', alertId);
      expect(row.resource_type).toBe('watchlist_alert');
      expect([row.before, row.after]).toEqual([{ status: 'open' }, { status: 'acknowledged' }]);

      rid = requestId();
      await expectJson(await patch(acme, 'acknowledged', rid), 200); // no change: no record
      await expectNoRecord(rid);
      for (const [customer, status, code] of [
        [acme, 'open', 400],
        [globex, 'resolved', 404],
      ] as const) {
        rid = requestId();
        await expectProblem(
          await patch(customer, status, rid),
          code,
          code === 400 ? 'invalid_request' : 'not_found',
        );
        await expectNoRecord(rid);
      }

      rid = requestId();
      await expectJson(await patch(acme, 'resolved', rid), 200);
      row = await theRecord(acme, rid, 'watchlist_alert.updated', alertId);
      expect([row.before, row.after]).toEqual([{ status: 'acknowledged' }, { status: 'resolved' }]);
    });
  });

  describe('operator commands', () => {
    let tmp: string;
    beforeAll(() => {
      tmp = mkdtempSync(join(tmpdir(), 'rw-audit-'));
    });
    afterAll(() => {
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    });

    it('audits a CSV import batch by batch, naming the operator from --actor', async () => {
      const list = await createList(acme, 'imported');
      const file = join(tmp, 'entries.csv');
      writeFileSync(file, ['target', ...Array.from({ length: 2500 }, evmAddress), 'bad'].join('\n'));
      await cli(testEnv.env, ['watchlists', 'import', 'acme', list.id, file, '--actor', 'alice@ops']);

      const rows = await records('resource_id = $1 and action = $2', [list.id, 'watchlist_entries.added']);
      expect(rows.length).toBe(3); // one per batch of 1,000 rows, each in its batch's transaction
      for (const r of rows)
        expect(r).toMatchObject({
          account_id: acme.account.id,
          actor_type: 'operator',
          actor_id: 'alice@ops',
          actor_label: null,
          request_id: null,
          client_address: null,
        });
      const after = rows.map((r) => r.after as { created: number; failed: number; import: unknown });
      expect(after.map((a) => a.created)).toEqual([1000, 1000, 500]);
      expect(after.map((a) => a.failed)).toEqual([0, 0, 1]);
      expect(after.map((a) => a.import)).toEqual([
        { file: 'entries.csv', first_line: 2, last_line: 1001 },
        { file: 'entries.csv', first_line: 1002, last_line: 2001 },
        { file: 'entries.csv', first_line: 2002, last_line: 2502 },
      ]);

      // RISKWATCH_OPERATOR names the operator when --actor is not given.
      const again = join(tmp, 'again.csv');
      writeFileSync(again, `target\n${evmAddress()}\n`);
      await cli({ ...testEnv.env, RISKWATCH_OPERATOR: 'bob' }, [
        'watchlists',
        'import',
        'acme',
        list.id,
        again,
      ]);
      const last = (await records('resource_id = $1', [list.id])).at(-1)!;
      expect(last).toMatchObject({
        action: 'watchlist_entries.added',
        actor_type: 'operator',
        actor_id: 'bob',
      });
    }, 120_000);

    it('audits secrets rotate-key per batch of re-sealed endpoints, of no account, naming no secret', async () => {
      const created = await expectJson<CreatedEndpointBody>(
        await call(globex, '/webhooks/endpoints', {
          method: 'POST',
          body: { url: receiver, events: ['watchlist.alert'] },
        }),
        201,
      );
      secrets.push(created.secret);
      const rotating = {
        ...testEnv.env,
        RISKWATCH_SECRETS_KEY: randomBytes(32).toString('hex'),
        RISKWATCH_SECRETS_PREVIOUS_KEYS: testEnv.env.RISKWATCH_SECRETS_KEY!,
      };
      const report = await cliJson<ResealReport>(rotating, ['secrets', 'rotate-key', '--actor', 'carol']);
      expect(report.endpoints).toBeGreaterThan(0);
      const rows = await records('action = $1', ['webhook_secrets.resealed']);
      expect(rows.length).toBe(1);
      expect(rows[0]).toMatchObject({
        account_id: null,
        actor_type: 'operator',
        actor_id: 'carol',
        resource_type: 'webhook_secrets',
        before: null,
      });
      expect(rows[0]!.after).toMatchObject({
        endpoints: report.endpoints,
        sealed: report.secrets,
        from_plaintext: 0,
      });
      expect(rows[0]!.after!.endpoint_ids).toContain(created.id);
      // Nothing stale is left: a second run re-seals nothing and writes nothing.
      await cliJson<ResealReport>(rotating, ['secrets', 'rotate-key', '--actor', 'carol']);
      expect((await records('action = $1', ['webhook_secrets.resealed'])).length).toBe(1);
    }, 120_000);
  });

  it('holds no signing secret, sealed or not, in any record', async () => {
    expect(secrets.length).toBeGreaterThanOrEqual(4);
    expect(await countAll()).toBeGreaterThan(20);
    const { rows } = await sql.query<{ text: string }>(
      'select row_to_json(a)::text as text from audit_log a',
    );
    const all = rows.map((r) => r.text).join('\n');
    for (const secret of secrets) {
      expect(all).not.toContain(secret);
      expect(all).not.toContain(secret.slice('whsec_'.length));
    }
    expect(all).not.toMatch(/whsec_|rwenc:/);
    expect(all).not.toMatch(/"[a-z_]*secret"\s*:/);
  });
});
