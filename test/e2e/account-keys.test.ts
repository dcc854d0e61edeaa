import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { presentApiKey } from '../../src/accounts/present.js';
import type { ApiKeyBody, ApiKeyPageBody, CreatedApiKeyBody } from '../../src/accounts/schemas.js';
import {
  bearer,
  callUsage,
  expectJson,
  expectProblem,
  openAccounts,
  pollForStatus,
  startServiceRetrying,
  TEST_ACTOR,
  type Customer,
} from '../support/auth-helpers.js';
import { KEY_ADMIN_ROLE, testIdentityProvider } from '../support/jwt.js';
import { cli, prepareEnv, type RunningService, type TestEnv } from '../support/service.js';

/** Newest first: created_at descending, then id descending (the API's stable order). */
const newestFirst = (a: { created_at: string; id: string }, b: { created_at: string; id: string }) =>
  b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id);

/**
 * Self-service API keys over HTTP (docs/api.md#credentials): `POST|GET /api/account/api-keys`,
 * `DELETE /api/account/api-keys/{id}` with a key-admin JWT, always scoped to the token's account.
 */
describe('self-service API keys (built service over HTTP)', () => {
  const idp = testIdentityProvider();
  const secrets = new Set<string>();
  const remember = (secret: string) => {
    secrets.add(secret);
    return secret;
  };

  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let svc: RunningService;
  let acme: Customer;
  let globex: Customer;
  /** Key-admin tokens of a user of each account. */
  let acmeToken: string;
  let globexToken: string;

  const api = (token: string, path = '', init: RequestInit = {}) =>
    fetch(`${svc.baseUrl}/api/account/api-keys${path}`, {
      ...init,
      headers: { ...bearer(token), ...(init.headers as Record<string, string>) },
    });
  const create = (token: string, body: unknown) =>
    api(token, '', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const list = async (token: string) =>
    (await expectJson<ApiKeyPageBody>(await api(token, '?limit=1000'), 200)).data;
  const keyPage = async (token: string, query: Record<string, string>) =>
    expectJson<ApiKeyPageBody>(await api(token, `?${new URLSearchParams(query).toString()}`), 200);
  /** Every key of the token's account, page by page with `limit`; also how many pages it took. */
  const walk = async (token: string, limit: number, between?: () => Promise<void>) => {
    const seen: ApiKeyBody[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const body: ApiKeyPageBody = await keyPage(token, {
        limit: String(limit),
        ...(cursor ? { cursor } : {}),
      });
      expect(body.data.length).toBeLessThanOrEqual(limit);
      seen.push(...body.data);
      cursor = body.next_cursor;
      pages += 1;
      if (pages === 1 && between) await between();
    } while (cursor && pages < 100);
    return { seen, pages };
  };
  const createOk = async (token: string, body: unknown) => {
    const created = await expectJson<CreatedApiKeyBody>(await create(token, body), 201);
    remember(created.key);
    return created;
  };

  beforeAll(async () => {
    testEnv = await prepareEnv(idp.env);
    db = await openAccounts(testEnv.env);
    [acme, globex] = await Promise.all([db.customer('acme'), db.customer('globex')]);
    remember(acme.key.key);
    remember(globex.key.key);
    acmeToken = remember(idp.sign({ org_id: 'acme', sub: 'alice', roles: [KEY_ADMIN_ROLE] }));
    globexToken = remember(idp.sign({ org_id: 'globex', sub: 'gina', roles: ['viewer', KEY_ADMIN_ROLE] }));
    // Debug logging makes "secrets are never logged" meaningful: every request is logged.
    svc = await startServiceRetrying({ ...testEnv.env, LOG_LEVEL: 'debug' });
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await db?.close();
    await testEnv?.dropDatabase();
  });

  describe('POST /api/account/api-keys', () => {
    it('creates a key (201): the raw key is shown once, in the rwk_ format, not cacheable', async () => {
      const res = await create(acmeToken, { name: 'ci pipeline' });
      const created = await expectJson<CreatedApiKeyBody>(res, 201);
      remember(created.key);
      expect(created.key).toMatch(/^rwk_[0-9A-Za-z]{38}$/);
      expect(created.id).toMatch(/^key_[0-9a-f]{28}$/);
      expect(new Date(created.created_at).toISOString()).toBe(created.created_at);
      expect(created).toEqual({
        id: created.id,
        name: 'ci pipeline',
        prefix: created.key.slice(0, 8),
        created_at: created.created_at,
        created_by: 'jwt:alice',
        expires_at: null,
        revoked_at: null,
        status: 'active',
        key: created.key,
      });
      expect(res.headers.get('cache-control')).toBe('no-store');
    });

    it('creates a key with a future expires_at, returned as RFC 3339 UTC', async () => {
      const expires = new Date(Date.now() + 86_400_000);
      const created = await createOk(acmeToken, { name: 'expiring', expires_at: expires.toISOString() });
      expect(created.expires_at).toBe(expires.toISOString());
      expect(created.status).toBe('active');
    });

    it('the created key works on /api/v1/usage (200)', async () => {
      const created = await createOk(acmeToken, { name: 'works' });
      await expectJson(await callUsage(svc.baseUrl, created.key), 200);
    });

    it('a key created with a near expires_at works until then, then is refused and listed as expired', async () => {
      const expires = new Date(Date.now() + 2500);
      const created = await createOk(acmeToken, { name: 'brief', expires_at: expires.toISOString() });
      expect(expires.getTime() - Date.now()).toBeGreaterThan(500);
      await expectJson(await callUsage(svc.baseUrl, created.key), 200);
      await new Promise((r) => setTimeout(r, expires.getTime() - Date.now() + 50));
      await expectProblem(await callUsage(svc.baseUrl, created.key), 401, 'unauthorized');
      const listed = (await list(acmeToken)).find((k) => k.id === created.id);
      expect(listed).toMatchObject({
        status: 'expired',
        expires_at: expires.toISOString(),
        revoked_at: null,
      });
    });

    it('never shows the raw key again: GET lists it by id and prefix only', async () => {
      const created = await createOk(acmeToken, { name: 'shown once' });
      const keys = await list(acmeToken);
      const listed = keys.find((k) => k.id === created.id);
      expect(listed).toEqual({ ...created, key: undefined });
      expect(listed).not.toHaveProperty('key');
      expect(JSON.stringify(keys)).not.toContain(created.key);
      // The full raw key never appears, only its display prefix.
      expect(JSON.stringify(keys)).not.toContain(created.key.slice(8));
    });
  });

  describe('request validation (problem+json)', () => {
    const invalid: [string, unknown, string][] = [
      ['a missing name', {}, 'name'],
      ['a blank name', { name: '   ' }, 'name'],
      ['a name that is not a string', { name: 42 }, 'name'],
      ['a name over 200 characters', { name: 'x'.repeat(201) }, 'name'],
      ['expires_at in the past', { name: 'old', expires_at: '2020-01-01T00:00:00Z' }, 'expires_at'],
      ['expires_at that is not a date', { name: 'n', expires_at: 'tomorrow' }, 'expires_at'],
    ];
    it.each(invalid)(
      'refuses %s (400 invalid_request, errors[] names the field)',
      async (_what, body, field) => {
        const problem = await expectProblem(await create(acmeToken, body), 400, 'invalid_request');
        expect(problem.errors?.map((e) => e.path)).toContain(field);
        expect(problem.errors?.every((e) => typeof e.message === 'string' && e.message.length > 0)).toBe(
          true,
        );
      },
    );

    it('refuses an unknown field (400, errors[] names it)', async () => {
      const problem = await expectProblem(
        await create(acmeToken, { name: 'n', scopes: ['admin'] }),
        400,
        'invalid_request',
      );
      expect(problem.errors?.length).toBeGreaterThan(0);
      expect(problem.errors!.some((e) => `${e.path} ${e.message}`.includes('scopes'))).toBe(true);
    });

    it('refuses malformed JSON (400 invalid_request)', async () => {
      const res = await api(acmeToken, '', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"name": "unterminated',
      });
      await expectProblem(res, 400, 'invalid_request');
    });

    it('refuses a JSON body that is not an object (400 invalid_request)', async () => {
      const problem = await expectProblem(await create(acmeToken, ['name']), 400, 'invalid_request');
      expect(problem.errors?.length).toBeGreaterThan(0);
    });

    it('refuses a POST without a body (400 invalid_request)', async () => {
      const res = await api(acmeToken, '', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      });
      const problem = await expectProblem(res, 400, 'invalid_request');
      expect(problem.errors?.length).toBeGreaterThan(0);
    });

    it.each(['text/plain', 'application/x-www-form-urlencoded'])(
      'refuses Content-Type %s (415 unsupported_media_type)',
      async (type) => {
        const res = await api(acmeToken, '', {
          method: 'POST',
          headers: { 'content-type': type },
          body: JSON.stringify({ name: 'n' }),
        });
        await expectProblem(res, 415, 'unsupported_media_type');
      },
    );

    it('created no key for any refused request', async () => {
      const names = (await list(acmeToken)).map((k) => k.name);
      expect(names.filter((n) => ['n', 'old', 'x'.repeat(201)].includes(n))).toEqual([]);
    });
  });

  describe('tenancy', () => {
    it('lists only the token account’s keys', async () => {
      const globexCreated = await createOk(globexToken, { name: 'globex-http' });
      const acmeCreated = await createOk(acmeToken, { name: 'acme-http' });
      const acmeIds = (await list(acmeToken)).map((k) => k.id);
      const globexIds = (await list(globexToken)).map((k) => k.id);
      expect(acmeIds).toEqual(expect.arrayContaining([acme.key.id, acmeCreated.id]));
      expect(globexIds).toEqual(expect.arrayContaining([globex.key.id, globexCreated.id]));
      expect(acmeIds).not.toContain(globex.key.id);
      expect(acmeIds).not.toContain(globexCreated.id);
      expect(globexIds).not.toContain(acme.key.id);
      expect(globexIds).not.toContain(acmeCreated.id);
    });

    it('answers 404 not_found for another account’s key id, and does not revoke it', async () => {
      await expectJson(await callUsage(svc.baseUrl, globex.key.key), 200);
      await expectProblem(await api(acmeToken, `/${globex.key.id}`, { method: 'DELETE' }), 404, 'not_found');
      // Past the service's key cache (≤ 5 s would be needed to notice a revocation), still accepted.
      await new Promise((r) => setTimeout(r, 2500));
      await expectJson(await callUsage(svc.baseUrl, globex.key.key), 200);
      const listed = (await list(globexToken)).find((k) => k.id === globex.key.id);
      expect(listed).toMatchObject({ status: 'active', revoked_at: null });
    });

    it('answers 404 not_found for an unknown key id', async () => {
      await expectProblem(
        await api(acmeToken, '/key_000000000000000000000000000', { method: 'DELETE' }),
        404,
        'not_found',
      );
    });
  });

  describe('DELETE /api/account/api-keys/{id}', () => {
    it('revokes the key (200): the service refuses it within 5 s', async () => {
      const created = await createOk(acmeToken, { name: 'to revoke' });
      // Used once, so the service has it in its lookup cache when it is revoked.
      await expectJson(await callUsage(svc.baseUrl, created.key), 200);

      const revoked = await expectJson<ApiKeyBody>(
        await api(acmeToken, `/${created.id}`, { method: 'DELETE' }),
        200,
      );
      expect(revoked).toMatchObject({ id: created.id, status: 'revoked' });
      expect(revoked.revoked_at).toBeTypeOf('string');
      expect(revoked).not.toHaveProperty('key');

      const { res, elapsedMs } = await pollForStatus(() => callUsage(svc.baseUrl, created.key), 401, 6000);
      await expectProblem(res, 401, 'unauthorized');
      expect(elapsedMs).toBeLessThanOrEqual(5000);

      const listed = (await list(acmeToken)).find((k) => k.id === created.id);
      expect(listed).toMatchObject({ status: 'revoked', revoked_at: revoked.revoked_at });
    }, 30_000);

    it('is idempotent: revoking a revoked key answers 200 with the same revoked_at', async () => {
      const created = await createOk(acmeToken, { name: 'twice' });
      const first = await expectJson<ApiKeyBody>(
        await api(acmeToken, `/${created.id}`, { method: 'DELETE' }),
        200,
      );
      const second = await expectJson<ApiKeyBody>(
        await api(acmeToken, `/${created.id}`, { method: 'DELETE' }),
        200,
      );
      expect(second).toEqual(first);
    });

    it('needs a valid token (401 with WWW-Authenticate)', async () => {
      const res = await fetch(`${svc.baseUrl}/api/account/api-keys/${acme.key.id}`, { method: 'DELETE' });
      await expectProblem(res, 401, 'unauthorized');
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
      await expectJson(await callUsage(svc.baseUrl, acme.key.key), 200);
    });

    it('needs the key-admin role (403 forbidden), and leaves the key alone', async () => {
      const viewer = remember(idp.sign({ org_id: 'acme', sub: 'victor', roles: ['viewer'] }));
      await expectProblem(await api(viewer, `/${acme.key.id}`, { method: 'DELETE' }), 403, 'forbidden');
      const listed = (await list(acmeToken)).find((k) => k.id === acme.key.id);
      expect(listed).toMatchObject({ status: 'active' });
    });
  });

  describe('GET /api/account/api-keys pagination', () => {
    let hooliToken: string;
    /** Every key of hooli, in the order the API must list them. */
    let expected: ApiKeyBody[];

    beforeAll(async () => {
      const hooli = await db.customer('hooli');
      hooliToken = remember(idp.sign({ org_id: 'hooli', sub: 'hank', roles: [KEY_ADMIN_ROLE] }));
      // Created together: several share a millisecond, so the order must fall back to the id.
      const created = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          db.accounts.createKey(hooli.account.id, { name: `k${i}` }, TEST_ACTOR),
        ),
      );
      const first = (await list(hooliToken)).find((k) => k.id === hooli.key.id)!;
      expected = [first, ...created.map((c) => presentApiKey(c.view))].sort(newestFirst);
    });

    it('pages newest first with limit and next_cursor: every key exactly once, the last page null', async () => {
      const { seen, pages } = await walk(hooliToken, 3);
      expect(pages).toBe(4);
      expect(seen.map((k) => k.id)).toEqual(expected.map((k) => k.id));
      expect(new Set(seen.map((k) => k.id)).size).toBe(11);
      expect(seen).toEqual(expected);
      for (const limit of [1, 5, 11]) {
        const again = await walk(hooliToken, limit);
        expect(again.seen.map((k) => k.id)).toEqual(expected.map((k) => k.id));
        expect(again.pages).toBe(Math.ceil(11 / limit));
      }
    });

    it('defaults to 100 per page: one page, next_cursor null', async () => {
      const body = await expectJson<ApiKeyPageBody>(await api(hooliToken), 200);
      expect(body).toEqual({ data: expected, next_cursor: null });
    });

    it('is stable while keys are created mid-walk: the walk lists the keys that existed, once each', async () => {
      let added: CreatedApiKeyBody | undefined;
      const { seen } = await walk(hooliToken, 4, async () => {
        added = await createOk(hooliToken, { name: 'mid-walk' });
      });
      expect(added).toBeDefined();
      expect(seen.map((k) => k.id)).toEqual(expected.map((k) => k.id));
      expect((await list(hooliToken))[0]?.id).toBe(added!.id);
    });

    it.each([
      ['limit=0', 'query.limit'],
      ['limit=1001', 'query.limit'],
      ['limit=ten', 'query.limit'],
      ['cursor=not-a-cursor', 'query.cursor'],
      [
        // A well-formed cursor of another list (list entries): not one this endpoint returned.
        `cursor=${Buffer.from(
          JSON.stringify({ at: '2026-11-22T10:11:12.345Z', id: 'lst_0123456789abcdef0123456789ab' }),
        ).toString('base64url')}`,
        'query.cursor',
      ],
      ['unknown=1', ''],
    ])('refuses %s (400 invalid_request)', async (query, field) => {
      const problem = await expectProblem(await api(hooliToken, `?${query}`), 400, 'invalid_request');
      expect(problem.errors?.length).toBeGreaterThan(0);
      if (field) expect(problem.errors?.map((e) => e.path)).toContain(field);
    });
  });

  describe('ceiling of active keys per account (a service with RISKWATCH_MAX_API_KEYS_PER_ACCOUNT=3)', () => {
    let limited: RunningService;
    let limitedEnv: Record<string, string>;
    let umbrellaToken: string;
    const createLimited = (body: unknown) =>
      fetch(`${limited.baseUrl}/api/account/api-keys`, {
        method: 'POST',
        headers: { ...bearer(umbrellaToken), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const ceilingDetail =
      'Account umbrella already has 3 active API keys; the limit is 3 ' +
      '(auth.max_api_keys_per_account / RISKWATCH_MAX_API_KEYS_PER_ACCOUNT). Revoke a key to create another.';

    beforeAll(async () => {
      limitedEnv = { ...testEnv.env, RISKWATCH_MAX_API_KEYS_PER_ACCOUNT: '3' };
      const umbrella = await db.customer('umbrella'); // one active key already
      remember(umbrella.key.key);
      umbrellaToken = remember(idp.sign({ org_id: 'umbrella', sub: 'ursula', roles: [KEY_ADMIN_ROLE] }));
      limited = await startServiceRetrying(limitedEnv);
    }, 60_000);

    afterAll(async () => {
      await limited?.stop();
    });

    it('creates keys up to the ceiling, then answers 409 limit_exceeded naming the limit and its value', async () => {
      for (const name of ['second', 'third'])
        remember((await expectJson<CreatedApiKeyBody>(await createLimited({ name }), 201)).key);
      const problem = await expectProblem(await createLimited({ name: 'fourth' }), 409, 'limit_exceeded');
      expect(problem.title).toBe('Account limit reached');
      expect(problem.detail).toBe(ceilingDetail);
      expect((await list(umbrellaToken)).map((k) => k.name)).not.toContain('fourth');
    });

    it('riskwatch keys create enforces the same ceiling', async () => {
      const failure = await cli(limitedEnv, ['keys', 'create', 'umbrella', '--name', 'from-cli']).then(
        () => new Error('expected the CLI to fail'),
        (err: Error) => err,
      );
      expect(failure.message).toContain(`riskwatch: limit_exceeded: ${ceilingDetail}`);
      expect((await list(umbrellaToken)).map((k) => k.name)).not.toContain('from-cli');
    });

    it('counts active keys only: revoking one lets a new one be created (HTTP and CLI)', async () => {
      const [newest, previous] = await list(umbrellaToken);
      await expectJson(await api(umbrellaToken, `/${newest!.id}`, { method: 'DELETE' }), 200);
      remember((await expectJson<CreatedApiKeyBody>(await createLimited({ name: 'after revoke' }), 201)).key);
      await expectProblem(await createLimited({ name: 'over again' }), 409, 'limit_exceeded');

      await expectJson(await api(umbrellaToken, `/${previous!.id}`, { method: 'DELETE' }), 200);
      const fromCli = JSON.parse(
        await cli(limitedEnv, ['keys', 'create', 'umbrella', '--name', 'cli after revoke']),
      ) as CreatedApiKeyBody;
      remember(fromCli.key);
      expect(fromCli).toMatchObject({ name: 'cli after revoke', status: 'active' });

      const keys = await list(umbrellaToken);
      expect(keys.filter((k) => k.status === 'active')).toHaveLength(3);
      expect(keys.filter((k) => k.status === 'revoked')).toHaveLength(2);
    }, 30_000);
  });

  describe('secrets never logged', () => {
    it('keeps every raw key and JWT out of the service output (LOG_LEVEL=debug)', () => {
      const output = svc.output();
      expect(output).toContain('"msg":"request"');
      expect(secrets.size).toBeGreaterThan(8);
      expect([...secrets].filter((secret) => output.includes(secret))).toEqual([]);
    });
  });
});
