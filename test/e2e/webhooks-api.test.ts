import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import type { WatchlistBody } from '../../src/watchlists/schemas.js';
import { endpointSecretContext, SecretBox } from '../../src/webhooks/secrets.js';
import type { EventPageBody as TypedEventPage } from '../../src/events/schemas.js';
import { appendEvents, eventLog, type LooseEvent as NewEvent } from '../support/event-log.js';
import type {
  CreatedEndpointBody,
  DeliveryBody,
  DeliveryPageBody,
  EndpointBody,
  EndpointPageBody,
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
import { REDIS_URL } from '../support/env.js';
import { freePort, prepareEnv, type RunningService, type TestEnv } from '../support/service.js';

/*
 * The webhook and event API (docs/api.md, "Webhooks and events") against the built service, PostgreSQL and
 * Redis: endpoint CRUD with the secret shown once, the SSRF guard at creation, rotation, test events, the
 * delivery log, redelivery and recovery, the event log's cursor, and another account's ids answering 404.
 * No worker runs (role `api`): nothing is sent, and what the delivery workers would write (failures,
 * attempts) is written here in SQL. Loopback receivers are let through the guard by the operator settings.
 */

/** The event log as this test reads it: its fixtures tag `data` freely. */
type EventPageBody = Omit<TypedEventPage, 'data'> & {
  data: (Omit<TypedEventPage['data'][number], 'data'> & { data: Record<string, unknown> })[];
};

const SECRET = /^whsec_[A-Za-z0-9+/]{32}$/;

describe('webhooks and events API (built service over HTTP)', () => {
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let sql: pg.Client;
  let orm: Orm;
  let svc: RunningService;
  let acme: Customer;
  let globex: Customer;
  let receiver: string;

  const call = (customer: Customer | null, path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${svc.baseUrl}/api/v1${path}`, {
      method: init.method ?? 'GET',
      headers: {
        ...(customer ? { 'x-api-key': customer.key.key } : {}),
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
  const createEndpoint = async (customer: Customer, body: Record<string, unknown> = {}) =>
    expectJson<CreatedEndpointBody>(
      await call(customer, '/webhooks/endpoints', {
        method: 'POST',
        body: { url: receiver, events: ['watchlist.alert'], ...body },
      }),
      201,
    );
  const getEndpoint = async (customer: Customer, id: string) =>
    expectJson<EndpointBody>(await call(customer, `/webhooks/endpoints/${id}`), 200);
  const patchEndpoint = async (customer: Customer, id: string, body: Record<string, unknown>) =>
    expectJson<EndpointBody>(
      await call(customer, `/webhooks/endpoints/${id}`, { method: 'PATCH', body }),
      200,
    );
  const sendTest = async (customer: Customer, id: string) =>
    expectJson<TestAcceptedBody>(
      await call(customer, `/webhooks/endpoints/${id}/test`, { method: 'POST' }),
      202,
    );
  const deliveries = async (customer: Customer, query: Record<string, string> = {}) =>
    expectJson<DeliveryPageBody>(
      await call(customer, `/webhooks/deliveries?${new URLSearchParams(query).toString()}`),
      200,
    );
  const events = async (customer: Customer, query: Record<string, string> = {}) =>
    expectJson<EventPageBody>(await call(customer, `/events?${new URLSearchParams(query).toString()}`), 200);
  const createWatchlist = async (customer: Customer) =>
    expectJson<WatchlistBody>(
      await call(customer, '/watchlists', { method: 'POST', body: { name: 'hooks' } }),
      201,
    );
  /** The endpoint's row, its secrets opened with the service's key (they are stored sealed). */
  const endpointRow = async (id: string) => {
    const box = SecretBox.fromSettings({
      secrets_key: testEnv.env.RISKWATCH_SECRETS_KEY!,
      secrets_previous_keys: [],
    });
    const [row] = (
      await sql.query<{ secret: string; previous_secret: string | null; enabled: boolean }>(
        'select secret, previous_secret, enabled from webhook_endpoints where id = $1',
        [id],
      )
    ).rows;
    if (!row) return undefined;
    expect(SecretBox.isSealed(row.secret)).toBe(true);
    const open = (stored: string) => box.open(stored, endpointSecretContext(id));
    return {
      ...row,
      secret: open(row.secret),
      previous_secret: row.previous_secret === null ? null : open(row.previous_secret),
    };
  };
  /** The webhook-drain jobs waiting in Redis (no worker runs here), by endpoint. */
  const waitingDrains = async (): Promise<string[]> => {
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const queue = new Queue('webhook-drain', {
      connection: redis,
      prefix: `${testEnv.env.REDIS_KEY_PREFIX}bull`,
    });
    try {
      const jobs = await queue.getJobs(['wait', 'prioritized', 'delayed']);
      return jobs.map((j) => (j.data as { endpoint_id: string }).endpoint_id);
    } finally {
      await queue.close();
      redis.disconnect();
    }
  };
  /** Appends events through the outbox, in one transaction, as the watchlist scan does. */
  const append = async (list: NewEvent[], now = new Date()) =>
    orm.em.fork().transactional((em) => appendEvents(eventLog(orm), em, list, now));

  beforeAll(async () => {
    receiver = `http://127.0.0.1:${await freePort()}/hooks/riskwatch`;
    testEnv = await prepareEnv({
      RISKWATCH_WEBHOOK_ALLOW_HTTP: 'true',
      RISKWATCH_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    });
    db = await openAccounts(testEnv.env);
    [acme, globex] = await Promise.all([db.customer('acme'), db.customer('globex')]);
    sql = new pg.Client({ connectionString: testEnv.env.DATABASE_URL });
    await sql.connect();
    orm = await connectOrm(testEnv.env.DATABASE_URL!, 2);
    svc = await startServiceRetrying(testEnv.env, 'api');
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await orm?.close();
    await sql?.end();
    await db?.close();
    await testEnv?.dropDatabase();
  });

  describe('endpoints', () => {
    it('creates an endpoint and shows its secret once; reads, lists, changes and deletes it', async () => {
      const created = await createEndpoint(acme, {
        url: `${receiver}?source=riskwatch`,
        events: ['watchlist.alert', 'webhook.endpoint_disabled', 'watchlist.alert'],
        description: '  ops pager  ',
      });
      expect(created).toEqual({
        id: expect.stringMatching(/^we_[0-9a-f]{28}$/) as unknown,
        url: `${receiver}?source=riskwatch`,
        events: ['watchlist.alert', 'webhook.endpoint_disabled'],
        watchlist_ids: null,
        description: 'ops pager',
        enabled: true,
        disabled_reason: null,
        disabled_at: null,
        failing_since: null,
        previous_secret_expires_at: null,
        created_at: expect.any(String) as unknown,
        updated_at: created.created_at,
        stats: { pending: 0, succeeded: 0, failed: 0, expired: 0 },
        secret: expect.stringMatching(SECRET) as unknown,
      });
      // Stored sealed, and opens to the secret shown: it must sign.
      expect((await endpointRow(created.id))?.secret).toBe(created.secret);

      const shown: Partial<CreatedEndpointBody> = { ...created };
      delete shown.secret;
      const read = await getEndpoint(acme, created.id);
      expect(read).toEqual(shown);
      expect(read).not.toHaveProperty('secret');
      const listed = await expectJson<EndpointPageBody>(await call(acme, '/webhooks/endpoints'), 200);
      expect(listed.data.find((e) => e.id === created.id)).toEqual(shown);
      expect(JSON.stringify(listed)).not.toContain('whsec_');

      const changed = await patchEndpoint(acme, created.id, {
        events: ['webhook.endpoint_disabled'],
        description: null,
        url: 'http://127.0.0.2:9/other',
      });
      expect(changed).toMatchObject({
        id: created.id,
        events: ['webhook.endpoint_disabled'],
        description: null,
        url: 'http://127.0.0.2:9/other',
        enabled: true,
      });
      expect(Date.parse(changed.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
      expect(JSON.stringify(changed)).not.toContain('whsec_');

      const disabled = await patchEndpoint(acme, created.id, { enabled: false });
      expect(disabled).toMatchObject({ enabled: false, disabled_reason: expect.any(String) as unknown });
      expect(Date.parse(disabled.disabled_at!)).toBeGreaterThan(Date.now() - 60_000);
      // What the delivery workers would have recorded before: re-enabling clears it all.
      await sql.query(`update webhook_endpoints set failing_since = now() - interval '1 day' where id = $1`, [
        created.id,
      ]);
      expect((await getEndpoint(acme, created.id)).failing_since).toEqual(expect.any(String));
      const enabled = await patchEndpoint(acme, created.id, { enabled: true });
      expect(enabled).toMatchObject({
        enabled: true,
        disabled_at: null,
        disabled_reason: null,
        failing_since: null,
      });
      // Enabling an enabled endpoint leaves its failure clock alone.
      await sql.query(
        `update webhook_endpoints set failing_since = now() - interval '1 hour' where id = $1`,
        [created.id],
      );
      expect((await patchEndpoint(acme, created.id, { enabled: true })).failing_since).toEqual(
        expect.any(String),
      );
      expect(await patchEndpoint(acme, created.id, {})).toMatchObject({ id: created.id });

      const deleted = await expectJson<EndpointBody>(
        await call(acme, `/webhooks/endpoints/${created.id}`, { method: 'DELETE' }),
        200,
      );
      expect(deleted).toMatchObject({ id: created.id, enabled: true });
      expect(deleted).not.toHaveProperty('secret');
      await expectProblem(await call(acme, `/webhooks/endpoints/${created.id}`), 404, 'not_found');
      await expectProblem(
        await call(acme, `/webhooks/endpoints/${created.id}`, { method: 'DELETE' }),
        404,
        'not_found',
      );
    });

    it('pages endpoints newest first; created disabled when asked', async () => {
      const customer = await db.customer('paging');
      const first = await createEndpoint(customer);
      const second = await createEndpoint(customer, { enabled: false });
      expect(second).toMatchObject({ enabled: false, disabled_at: expect.any(String) as unknown });
      const page1 = await expectJson<EndpointPageBody>(
        await call(customer, '/webhooks/endpoints?limit=1'),
        200,
      );
      expect(page1.data.map((e) => e.id)).toEqual([second.id]);
      const page2 = await expectJson<EndpointPageBody>(
        await call(customer, `/webhooks/endpoints?limit=1&cursor=${page1.next_cursor}`),
        200,
      );
      expect(page2).toEqual({ data: [expect.objectContaining({ id: first.id })], next_cursor: null });
      await expectProblem(
        await call(customer, '/webhooks/endpoints?cursor=bm90LWEtY3Vyc29y'),
        400,
        'invalid_request',
      );
    });

    it('refuses URLs the SSRF guard refuses with invalid_webhook_url and the reason', async () => {
      // Host names are judged by their addresses when a delivery connects (with an operator allow list, as
      // here, local-only names are not refused up front): these are refused at creation.
      const refused: [string, RegExp][] = [
        ['http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254.*linkLocal/],
        ['ftp://hooks.example.com/x', /scheme ftp:/],
        ['https://10.1.2.3/hook', /10\.1\.2\.3.*private/],
        ['https://192.168.0.10:8443/hook', /private/],
        ['http://[::1]:8080/hook', /::1.*loopback/],
        ['https://user:pass@hooks.example.com/', /user name or password/],
        ['not a url', /not a valid absolute URL/],
      ];
      for (const [url, reason] of refused) {
        const problem = await expectProblem(
          await call(acme, '/webhooks/endpoints', {
            method: 'POST',
            body: { url, events: ['watchlist.alert'] },
          }),
          400,
          'invalid_webhook_url',
        );
        expect(problem.title).toBe('Webhook URL refused');
        expect(problem.detail, url).toMatch(reason);
        expect(problem.errors, url).toEqual([
          { path: 'url', message: expect.stringMatching(reason) as unknown },
        ]);
      }
      // A public name and the operator's allow list (127.0.0.0/8 here) pass.
      expect((await createEndpoint(acme, { url: 'https://hooks.example.com/rw' })).url).toBe(
        'https://hooks.example.com/rw',
      );
      expect((await createEndpoint(acme, { url: 'http://127.0.0.1:8080/in-vpc' })).url).toBe(
        'http://127.0.0.1:8080/in-vpc',
      );
      // A change of URL is checked as well.
      const endpoint = await createEndpoint(acme);
      await expectProblem(
        await call(acme, `/webhooks/endpoints/${endpoint.id}`, {
          method: 'PATCH',
          body: { url: 'http://169.254.169.254/' },
        }),
        400,
        'invalid_webhook_url',
      );
      expect((await getEndpoint(acme, endpoint.id)).url).toBe(receiver);
      // Non-ASCII grows when normalised (é → %C3%A9): under 2,048 characters sent, over it stored.
      const long = `https://hooks.example.com/${'é'.repeat(400)}`;
      for (const [method, path] of [
        ['POST', '/webhooks/endpoints'],
        ['PATCH', `/webhooks/endpoints/${endpoint.id}`],
      ] as const)
        expect(
          (
            await expectProblem(
              await call(acme, path, { method, body: { url: long, events: ['watchlist.alert'] } }),
              400,
              'invalid_webhook_url',
            )
          ).detail,
        ).toMatch(/once normalised/);
    });

    it('refuses unknown event types, empty lists, unknown fields and foreign watchlists', async () => {
      const post = (body: unknown) => call(acme, '/webhooks/endpoints', { method: 'POST', body });
      const unknownType = await expectProblem(
        await post({ url: receiver, events: ['watchlist.alert', 'wallet.drained'] }),
        400,
        'invalid_request',
      );
      expect(unknownType.errors?.map((e) => e.path)).toEqual(['events.1']);
      // webhook.test needs no subscription: it is not one.
      await expectProblem(await post({ url: receiver, events: ['webhook.test'] }), 400, 'invalid_request');
      await expectProblem(await post({ url: receiver, events: [] }), 400, 'invalid_request');
      await expectProblem(await post({ url: receiver }), 400, 'invalid_request');
      await expectProblem(
        await post({ url: receiver, events: ['watchlist.alert'], secret: 'x' }),
        400,
        'invalid_request',
      );
      await expectProblem(
        await post({ url: receiver, events: ['watchlist.alert'], description: 'x'.repeat(501) }),
        400,
        'invalid_request',
      );

      const mine = await createWatchlist(acme);
      const theirs = await createWatchlist(globex);
      const foreign = await expectProblem(
        await post({
          url: receiver,
          events: ['watchlist.alert'],
          watchlist_ids: [mine.id, theirs.id, 'wl_nope'],
        }),
        400,
        'invalid_request',
      );
      expect(foreign.errors).toEqual([
        { path: 'watchlist_ids.1', message: 'not a watchlist of this account' },
        { path: 'watchlist_ids.2', message: 'not a watchlist of this account' },
      ]);
      const scoped = await createEndpoint(acme, { watchlist_ids: [mine.id, mine.id] });
      expect(scoped.watchlist_ids).toEqual([mine.id]);
      await expectProblem(
        await call(acme, `/webhooks/endpoints/${scoped.id}`, {
          method: 'PATCH',
          body: { watchlist_ids: [theirs.id] },
        }),
        400,
        'invalid_request',
      );
      expect((await patchEndpoint(acme, scoped.id, { watchlist_ids: null })).watchlist_ids).toBeNull();
    });

    it('holds at most 50 endpoints per account (409 limit_exceeded)', async () => {
      const customer = await db.customer('busy');
      for (let i = 0; i < 50; i += 10)
        await Promise.all(Array.from({ length: 10 }, () => createEndpoint(customer)));
      const problem = await expectProblem(
        await call(customer, '/webhooks/endpoints', {
          method: 'POST',
          body: { url: receiver, events: ['watchlist.alert'] },
        }),
        409,
        'limit_exceeded',
      );
      expect(problem.detail).toContain('50');
      const page = await expectJson<EndpointPageBody>(await call(customer, '/webhooks/endpoints'), 200);
      expect(page.data).toHaveLength(50);
    });

    it('rotates the secret: a new one, the old one signing for 24 hours more', async () => {
      const endpoint = await createEndpoint(acme);
      const before = Date.now();
      const rotated = await expectJson<RotatedSecretBody>(
        await call(acme, `/webhooks/endpoints/${endpoint.id}/rotate-secret`, { method: 'POST' }),
        200,
      );
      expect(rotated.secret).toMatch(SECRET);
      expect(rotated.secret).not.toBe(endpoint.secret);
      const expires = Date.parse(rotated.previous_secret_expires_at);
      expect(expires).toBeGreaterThanOrEqual(before + 86_400_000 - 1000);
      expect(expires).toBeLessThanOrEqual(Date.now() + 86_400_000 + 1000);
      expect(await endpointRow(endpoint.id)).toMatchObject({
        secret: rotated.secret,
        previous_secret: endpoint.secret,
      });
      const read = await getEndpoint(acme, endpoint.id);
      expect(read.previous_secret_expires_at).toBe(rotated.previous_secret_expires_at);
      expect(JSON.stringify(read)).not.toContain('whsec_');
      // Past the overlap, one secret signs again.
      await sql.query(
        `update webhook_endpoints set previous_secret_expires_at = now() - interval '1 second' where id = $1`,
        [endpoint.id],
      );
      expect((await getEndpoint(acme, endpoint.id)).previous_secret_expires_at).toBeNull();
    });

    it('answers 404 for another account’s endpoints and deliveries, and shows none of them', async () => {
      const endpoint = await createEndpoint(acme);
      const { delivery_id } = await sendTest(acme, endpoint.id);
      const path = `/webhooks/endpoints/${endpoint.id}`;
      await expectProblem(await call(globex, path), 404, 'not_found');
      await expectProblem(
        await call(globex, path, { method: 'PATCH', body: { enabled: false } }),
        404,
        'not_found',
      );
      // Not found first, whatever else the body gets wrong: nothing of the other account is told.
      await expectProblem(
        await call(globex, path, {
          method: 'PATCH',
          body: { watchlist_ids: ['wl_0123456789abcdef0123456789ab'] },
        }),
        404,
        'not_found',
      );
      await expectProblem(await call(globex, path, { method: 'DELETE' }), 404, 'not_found');
      await expectProblem(await call(globex, `${path}/rotate-secret`, { method: 'POST' }), 404, 'not_found');
      await expectProblem(await call(globex, `${path}/test`, { method: 'POST' }), 404, 'not_found');
      await expectProblem(
        await call(globex, `${path}/recover`, { method: 'POST', body: { since: '2020-01-01T00:00:00Z' } }),
        404,
        'not_found',
      );
      await expectProblem(
        await call(globex, `/webhooks/deliveries/${delivery_id}/redeliver`, { method: 'POST' }),
        404,
        'not_found',
      );
      await expectProblem(
        await call(acme, '/webhooks/deliveries/whd_nope/redeliver', { method: 'POST' }),
        404,
        'not_found',
      );
      expect((await deliveries(globex, { endpoint_id: endpoint.id })).data).toEqual([]);
      expect((await deliveries(globex)).data.map((d) => d.id)).not.toContain(delivery_id);
      expect((await events(globex)).data.map((e) => e.data.endpoint_id)).not.toContain(endpoint.id);
      expect((await getEndpoint(acme, endpoint.id)).enabled).toBe(true);
      // Without a key, or with a key but without entitlement: refused before anything.
      await expectProblem(await call(null, '/webhooks/endpoints'), 401, 'unauthorized');
      const lapsed = await db.customer('lapsed', { entitlement: 'none' });
      await expectProblem(await call(lapsed, '/events'), 403, 'entitlement_required');
    });
  });

  describe('test events and the delivery log', () => {
    it('writes a signed-to-be webhook.test event and its delivery, and asks the workers to send it', async () => {
      const endpoint = await createEndpoint(acme, { events: ['webhook.endpoint_disabled'] });
      const sent = await sendTest(acme, endpoint.id);
      expect(sent).toEqual({
        event_id: expect.stringMatching(/^evt_[0-9a-f]{28}$/) as unknown,
        delivery_id: expect.stringMatching(/^whd_[0-9a-f]{28}$/) as unknown,
      });

      const log = await events(acme, { types: 'webhook.test', limit: '1000' });
      const event = log.data.find((e) => e.id === sent.event_id);
      expect(event).toEqual({
        id: sent.event_id,
        seq: expect.any(Number) as unknown,
        type: 'webhook.test',
        created_at: expect.any(String) as unknown,
        data: { endpoint_id: endpoint.id, message: 'riskwatch test event' },
      });

      const page = await deliveries(acme, { endpoint_id: endpoint.id });
      expect(page.data).toHaveLength(1);
      expect(page.data[0]).toEqual({
        id: sent.delivery_id,
        endpoint_id: endpoint.id,
        event_id: sent.event_id,
        event_type: 'webhook.test',
        event_seq: event!.seq,
        // Due at once; no worker runs here to send it.
        status: 'pending',
        attempts: 0,
        next_attempt_at: event!.created_at,
        last_attempt_at: null,
        last_status_code: null,
        last_error: null,
        created_at: event!.created_at,
        succeeded_at: null,
        attempt_log: [],
      });
      expect(page.next_cursor).toBeNull();
      expect((await getEndpoint(acme, endpoint.id)).stats).toEqual({
        pending: 1,
        succeeded: 0,
        failed: 0,
        expired: 0,
      });
      expect(await waitingDrains()).toContain(endpoint.id);

      // Only this endpoint got it, although others of the account take every event they subscribe to.
      expect((await deliveries(acme, { event_id: sent.event_id })).data.map((d) => d.endpoint_id)).toEqual([
        endpoint.id,
      ]);

      await patchEndpoint(acme, endpoint.id, { enabled: false });
      await expectProblem(
        await call(acme, `/webhooks/endpoints/${endpoint.id}/test`, { method: 'POST' }),
        409,
        'conflict',
      );
    });

    it('lists deliveries newest first with filters, cursors and the last 10 attempts', async () => {
      const customer = await db.customer('deliveries');
      const alerts = await createEndpoint(customer);
      const other = await createEndpoint(customer, { events: ['webhook.endpoint_disabled'] });
      await append(
        Array.from({ length: 120 }, (_, i) => ({
          accountId: customer.account.id,
          type: i % 4 === 3 ? ('webhook.endpoint_disabled' as const) : ('watchlist.alert' as const),
          watchlistId: null,
          data: { i },
        })),
      );
      expect((await getEndpoint(customer, alerts.id)).stats).toEqual({
        pending: 90,
        succeeded: 0,
        failed: 0,
        expired: 0,
      });
      expect((await getEndpoint(customer, other.id)).stats.pending).toBe(30);

      const seen: DeliveryBody[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: DeliveryPageBody = await deliveries(customer, {
          limit: '50',
          ...(cursor ? { cursor } : {}),
        });
        seen.push(...page.data);
        cursor = page.next_cursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(3);
      expect(new Set(seen.map((d) => d.id)).size).toBe(120);
      const times = seen.map((d) => Date.parse(d.created_at));
      expect(times).toEqual([...times].sort((a, b) => b - a));
      expect((await deliveries(customer)).data).toHaveLength(50); // the default limit
      expect((await deliveries(customer, { endpoint_id: other.id, limit: '100' })).data).toHaveLength(30);
      await expectProblem(await call(customer, '/webhooks/deliveries?limit=101'), 400, 'invalid_request');
      await expectProblem(await call(customer, '/webhooks/deliveries?status=lost'), 400, 'invalid_request');
      await expectProblem(await call(customer, '/webhooks/deliveries?cursor=xyz'), 400, 'invalid_request');

      // What the delivery workers write: a delivery that failed 12 times, its attempts in the log.
      const target = seen.find((d) => d.endpoint_id === alerts.id)!;
      const base = Date.now() - 12 * 60_000;
      for (let i = 0; i < 12; i++)
        await sql.query(
          `insert into webhook_attempts (id, account_id, delivery_id, endpoint_id, attempted_at, status_code,
                  latency_ms, error, response_body)
           values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [
            `wha_${String(i).padStart(28, '0')}`,
            customer.account.id,
            target.id,
            alerts.id,
            new Date(base + i * 60_000),
            i % 2 ? 500 : null,
            100 + i,
            i % 2 ? 'http_500' : 'timeout',
            i % 2 ? 'oops' : null,
          ],
        );
      await sql.query(
        `update webhook_deliveries set status = 'failed', attempts = 12, next_attempt_at = null,
                last_attempt_at = $2, last_status_code = 500, last_error = 'http_500' where id = $1`,
        [target.id, new Date(base + 11 * 60_000)],
      );
      const failed = await deliveries(customer, { status: 'failed' });
      expect(failed.data.map((d) => d.id)).toEqual([target.id]);
      const shown = failed.data[0]!;
      expect(shown).toMatchObject({
        status: 'failed',
        attempts: 12,
        last_status_code: 500,
        last_error: 'http_500',
      });
      expect(shown.attempt_log).toHaveLength(10);
      expect(shown.attempt_log[0]).toEqual({
        attempted_at: new Date(base + 11 * 60_000).toISOString(),
        status_code: 500,
        latency_ms: 111,
        error: 'http_500',
        response_body: 'oops',
      });
      expect(shown.attempt_log.at(-1)!.attempted_at).toBe(new Date(base + 2 * 60_000).toISOString());
      expect((await getEndpoint(customer, alerts.id)).stats).toEqual({
        pending: 89,
        succeeded: 0,
        failed: 1,
        expired: 0,
      });

      // Deleting the endpoint takes its deliveries and attempts; the events stay.
      await expectJson(await call(customer, `/webhooks/endpoints/${alerts.id}`, { method: 'DELETE' }), 200);
      expect((await deliveries(customer, { endpoint_id: alerts.id })).data).toEqual([]);
      const left = await sql.query<{ n: string }>(
        'select count(*) as n from webhook_attempts where endpoint_id = $1',
        [alerts.id],
      );
      expect(Number(left.rows[0]!.n)).toBe(0);
      expect((await events(customer, { limit: '1000' })).data).toHaveLength(120);
    });

    it('redelivers one delivery and recovers an endpoint’s failed deliveries since a time', async () => {
      const endpoint = await createEndpoint(acme, { events: ['webhook.endpoint_disabled'] });
      const sent: TestAcceptedBody[] = [];
      for (let i = 0; i < 4; i++) sent.push(await sendTest(acme, endpoint.id));
      const ids = sent.map((s) => s.delivery_id);
      // As the workers leave them: failed, attempts used up; created 2 days, 2 hours, 1 hour ago and now.
      const ages = ['2 days', '2 hours', '1 hour', '0 seconds'];
      for (const [i, id] of ids.entries())
        await sql.query(
          `update webhook_deliveries set status = 'failed', attempts = 9, next_attempt_at = null,
                  last_attempt_at = now(), last_status_code = 503, last_error = 'http_503',
                  created_at = now() - $2::interval
            where id = $1`,
          [id, ages[i]],
        );
      await sql.query(
        `insert into webhook_attempts (id, account_id, delivery_id, endpoint_id, attempted_at, status_code, latency_ms,
                error, response_body)
         values ($1, $2, $3, $4, now(), 503, 40, 'http_503', null)`,
        [`wha_${'f'.repeat(28)}`, acme.account.id, ids[0], endpoint.id],
      );

      const before = Date.now();
      const redelivered = await expectJson<DeliveryBody>(
        await call(acme, `/webhooks/deliveries/${ids[0]}/redeliver`, { method: 'POST' }),
        202,
      );
      expect(redelivered).toMatchObject({
        id: ids[0],
        endpoint_id: endpoint.id,
        status: 'pending',
        attempts: 9,
        last_status_code: 503,
        last_error: 'http_503',
      });
      expect(Date.parse(redelivered.next_attempt_at!)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(redelivered.next_attempt_at!)).toBeLessThanOrEqual(Date.now() + 1000);
      expect(redelivered.attempt_log).toEqual([
        expect.objectContaining({ status_code: 503, latency_ms: 40, error: 'http_503' }),
      ]);
      expect(await waitingDrains()).toContain(endpoint.id);

      const since = new Date(Date.now() - 3 * 3600_000).toISOString();
      const recovered = await expectJson<RecoveredBody>(
        await call(acme, `/webhooks/endpoints/${endpoint.id}/recover`, { method: 'POST', body: { since } }),
        202,
      );
      expect(recovered).toEqual({ recovered: 3 });
      const statuses = await sql.query<{ id: string; status: string; attempts: number; due: boolean }>(
        `select id, status, attempts, next_attempt_at <= now() as due from webhook_deliveries
          where endpoint_id = $1`,
        [endpoint.id],
      );
      const byId = new Map(statuses.rows.map((r) => [r.id, r]));
      for (const id of ids)
        expect(byId.get(id), id).toMatchObject({ status: 'pending', attempts: 9, due: true });
      expect((await getEndpoint(acme, endpoint.id)).stats).toEqual({
        pending: 4,
        succeeded: 0,
        failed: 0,
        expired: 0,
      });

      // Nothing failed since then: nothing to recover. The one older than `since` is left alone.
      await sql.query(`update webhook_deliveries set status = 'failed' where id = $1`, [ids[0]]);
      expect(
        await expectJson<RecoveredBody>(
          await call(acme, `/webhooks/endpoints/${endpoint.id}/recover`, { method: 'POST', body: { since } }),
          202,
        ),
      ).toEqual({ recovered: 0 });
      await expectProblem(
        await call(acme, `/webhooks/endpoints/${endpoint.id}/recover`, {
          method: 'POST',
          body: { since: 'yesterday' },
        }),
        400,
        'invalid_request',
      );
      await expectProblem(
        await call(acme, `/webhooks/endpoints/${endpoint.id}/recover`, { method: 'POST', body: {} }),
        400,
        'invalid_request',
      );

      // A disabled endpoint sends nothing: enable it first.
      await patchEndpoint(acme, endpoint.id, { enabled: false });
      await expectProblem(
        await call(acme, `/webhooks/deliveries/${ids[0]}/redeliver`, { method: 'POST' }),
        409,
        'conflict',
      );
      await expectProblem(
        await call(acme, `/webhooks/endpoints/${endpoint.id}/recover`, { method: 'POST', body: { since } }),
        409,
        'conflict',
      );
      const stillFailed = await sql.query<{ status: string }>(
        'select status from webhook_deliveries where id = $1',
        [ids[0]],
      );
      expect(stillFailed.rows[0]!.status).toBe('failed');
    });
  });

  describe('the event log', () => {
    it('pages 250 events oldest first after the cursor, filters by type, and always gives a cursor', async () => {
      const customer = await db.customer('poller');
      const empty = await events(customer);
      expect(empty).toEqual({ data: [], next_cursor: expect.any(String) as unknown, has_more: false });
      // An empty log's cursor is the start: the events written later come after it.
      const start = empty.next_cursor;

      const typeOf = (i: number) =>
        (i % 5 === 4 ? 'webhook.endpoint_disabled' : 'watchlist.alert') as NewEvent['type'];
      const list = (from: number, n: number): NewEvent[] =>
        Array.from({ length: n }, (_, k) => ({
          accountId: customer.account.id,
          type: typeOf(from + k),
          watchlistId: null,
          data: { n: from + k },
        }));
      // In several transactions, as scans write them; another account's events interleave.
      await append(list(0, 100));
      await append([{ accountId: globex.account.id, type: 'watchlist.alert', watchlistId: null, data: {} }]);
      await append(list(100, 100));
      await append(list(200, 50));

      const read: EventPageBody['data'] = [];
      let after = start;
      const hasMore: boolean[] = [];
      for (;;) {
        const page = await events(customer, { after, limit: '100' });
        read.push(...page.data);
        hasMore.push(page.has_more);
        expect(page.next_cursor).toEqual(expect.any(String));
        if (page.data.length === 0) {
          expect(page.next_cursor).toBe(after); // nothing new: the same cursor, kept by the poller
          break;
        }
        after = page.next_cursor;
      }
      expect(hasMore).toEqual([true, true, false, false]);
      expect(read.map((e) => e.seq)).toEqual(Array.from({ length: 250 }, (_, i) => i + 1));
      expect(read.map((e) => e.data.n)).toEqual(Array.from({ length: 250 }, (_, i) => i));
      expect(read.map((e) => e.type)).toEqual(Array.from({ length: 250 }, (_, i) => typeOf(i)));
      expect(new Set(read.map((e) => e.id)).size).toBe(250);
      // Without a cursor: from the oldest kept; the default limit is 100.
      const first = await events(customer);
      expect(first.data.map((e) => e.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      expect(first.has_more).toBe(true);

      // The cursor after event 250 sees what comes next, and only that.
      await append(list(250, 2));
      const next = await events(customer, { after });
      expect(next.data.map((e) => e.seq)).toEqual([251, 252]);

      const disabled = await events(customer, { types: 'webhook.endpoint_disabled', limit: '1000' });
      expect(disabled.data.map((e) => e.data.n)).toEqual(Array.from({ length: 50 }, (_, i) => i * 5 + 4));
      const both = await events(customer, {
        types: 'webhook.endpoint_disabled, watchlist.alert',
        limit: '1000',
      });
      expect(both.data).toHaveLength(252);
      // A filtered cursor resumes where the filtered page stopped.
      const head = await events(customer, { types: 'webhook.endpoint_disabled', limit: '48' });
      expect(head.has_more).toBe(true);
      const tail = await events(customer, { types: 'webhook.endpoint_disabled', after: head.next_cursor });
      expect(tail.data.map((e) => e.data.n)).toEqual([244, 249]);
      expect((await events(customer, { types: 'webhook.test' })).data).toEqual([]);

      const badType = await expectProblem(
        await call(customer, '/events?types=watchlist.alert,nope'),
        400,
        'invalid_request',
      );
      expect(badType.errors?.[0]).toMatchObject({ path: 'query.types' });
      const badCursor = await expectProblem(
        await call(customer, '/events?after=bm90LWEtY3Vyc29y'),
        400,
        'invalid_request',
      );
      expect(badCursor.errors).toEqual([{ path: 'query.after', message: expect.any(String) as unknown }]);
      await expectProblem(await call(customer, '/events?limit=1001'), 400, 'invalid_request');
      await expectProblem(await call(customer, '/events?limit=0'), 400, 'invalid_request');

      // Another account reads its own log only.
      const theirs = await events(globex, { limit: '1000' });
      expect(theirs.data.some((e) => e.data.n !== undefined)).toBe(false);
    });

    it('does not serve events past the retention', async () => {
      const customer = await db.customer('retention');
      await append(
        [{ accountId: customer.account.id, type: 'watchlist.alert', watchlistId: null, data: { old: true } }],
        new Date(Date.now() - 31 * 86_400_000),
      );
      await append([
        { accountId: customer.account.id, type: 'watchlist.alert', watchlistId: null, data: { old: false } },
      ]);
      const page = await events(customer);
      expect(page.data.map((e) => [e.seq, e.data.old])).toEqual([[2, false]]);
    });
  });
});
