import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedApiKeyBody } from '../../src/accounts/schemas.js';
import {
  algNoneToken,
  bearer,
  callUsage,
  createKeyCli,
  expectJson,
  expectProblem,
  flipChar,
  hs256Token,
  pollForStatus,
  openAccounts,
  sleep,
  startServiceRetrying,
  TEST_ACTOR,
  unknownWellFormedKey,
  userClaims,
  type Customer,
  type EntitlementState,
} from '../support/auth-helpers.js';
import { KEY_ADMIN_ROLE, testIdentityProvider } from '../support/jwt.js';
import { cli, cliJson, prepareEnv, type RunningService, type TestEnv } from '../support/service.js';

/**
 * The credential matrix (docs/api.md#credentials) over HTTP against the built service: API keys and
 * entitlements on /api/v1/*, shared rate limits, JWTs on /api/account/*, agent keys on /api/agent/health,
 * the bootstrap command, and that none of the secrets used here ever reaches the service's log output.
 */
describe('auth matrix (built service over HTTP)', () => {
  const idp = testIdentityProvider();
  const AGENT_KEYS = ['agent-key-one-0123456789abcdef', 'agent-key-two-fedcba9876543210'];
  /** Every raw credential used against the service; none may appear in its output. */
  const secrets = new Set<string>(AGENT_KEYS);
  const remember = <T extends string>(secret: T): T => {
    secrets.add(secret);
    return secret;
  };

  let testEnv: TestEnv;
  let serviceEnv: Record<string, string>;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let svc: RunningService;
  /** A second API replica on the same database and Redis prefix, started in the background. */
  let replicaStarting: Promise<RunningService> | undefined;
  let replica: RunningService | undefined;
  /** Two `riskwatch bootstrap` runs, one after the other, started in the background. */
  let bootstrapRuns: Promise<string[]> | undefined;
  let acme: Customer;
  let limited: Customer;
  const byEntitlement = new Map<EntitlementState, Customer>();
  const url = (path: string) => `${svc.baseUrl}${path}`;
  /** Marks a background promise as handled; whoever needs it awaits the original (and sees its error). */
  const background = <T>(promise: Promise<T>) => {
    promise.catch(() => undefined);
    return promise;
  };

  beforeAll(async () => {
    testEnv = await prepareEnv({ ...idp.env, AGENT_KEYS: AGENT_KEYS.join(',') });
    // Debug logging makes "secrets are never logged" meaningful: every request is logged.
    serviceEnv = { ...testEnv.env, LOG_LEVEL: 'debug' };
    db = await openAccounts(testEnv.env);
    const states = ['none', 'suspended', 'revoked', 'expired'] as const;
    const [service, acmeCustomer, limitedCustomer, ...others] = await Promise.all([
      startServiceRetrying(serviceEnv),
      db.customer('acme'),
      db.customer('limited', { rateLimitPerMin: 3 }),
      ...states.map((state) => db.customer(`ent-${state}`, { entitlement: state })),
    ]);
    svc = service;
    acme = acmeCustomer;
    limited = limitedCustomer;
    states.forEach((state, i) => byEntitlement.set(state, others[i]!));
    for (const c of [acme, limited, ...others]) remember(c.key.key);
    // Slow process starts overlap the first tests rather than add to the file's time.
    replicaStarting = background(startServiceRetrying(serviceEnv, 'api'));
    bootstrapRuns = background(
      (async () => {
        const first = await cli(testEnv.env, ['bootstrap']);
        return [first, await cli(testEnv.env, ['bootstrap'])];
      })(),
    );
  }, 120_000);

  afterAll(async () => {
    await Promise.all([
      svc?.stop(),
      replicaStarting?.then(
        (r) => r.stop(),
        () => null,
      ),
    ]);
    await db?.close();
    await testEnv?.dropDatabase();
  });

  // Independent calls (the slow revocation and expiry tests make their own keys): run them side by side.
  describe.concurrent('X-API-Key + entitlement on /api/v1/usage', () => {
    it('accepts the right key (200) with RateLimit-Policy and RateLimit headers', async () => {
      const res = await callUsage(svc.baseUrl, acme.key.key);
      const body = await expectJson<{ data: unknown[]; summary: unknown }>(res, 200);
      expect(Array.isArray(body.data)).toBe(true);
      expect(body.summary).toBeTypeOf('object');
      expect(res.headers.get('ratelimit-policy')).toBe('"default";q=600;w=60');
      expect(res.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/);
    });

    it('echoes a valid incoming X-Request-Id on errors too', async () => {
      const res = await callUsage(svc.baseUrl, undefined, { 'x-request-id': 'client-trace-42' });
      const problem = await expectProblem(res, 401, 'unauthorized');
      expect(problem.request_id).toBe('client-trace-42');
    });

    it('refuses a call without a key (401 unauthorized)', async () => {
      await expectProblem(await callUsage(svc.baseUrl, undefined), 401, 'unauthorized');
    });

    it('refuses an empty X-API-Key (401)', async () => {
      await expectProblem(await callUsage(svc.baseUrl, ''), 401, 'unauthorized');
    });

    it('refuses a well-formed key (valid checksum) that was never issued (401)', async () => {
      await expectProblem(await callUsage(svc.baseUrl, unknownWellFormedKey()), 401, 'unauthorized');
    });

    it('refuses the key sent as a bearer token instead of X-API-Key (401)', async () => {
      await expectProblem(await callUsage(svc.baseUrl, undefined, bearer(acme.key.key)), 401, 'unauthorized');
    });

    const malformed: [string, (key: string) => string][] = [
      ['one character of the random part flipped (bad checksum)', (k) => flipChar(k, 10)],
      ['one character of the checksum flipped', (k) => flipChar(k, k.length - 1)],
      ['the wrong prefix', (k) => `rwx_${k.slice(4)}`],
      ['an upper-case prefix', (k) => `RWK_${k.slice(4)}`],
      ['one character too short', (k) => k.slice(0, -1)],
      ['one character too long', (k) => `${k}0`],
      ['far too short', () => 'rwk_abc'],
      ['a non-base62 character', (k) => `${k.slice(0, 10)}-${k.slice(11)}`],
    ];
    it.each(malformed)('refuses a malformed key: %s (401)', async (_what, mangle) => {
      const key = mangle(acme.key.key);
      expect(key).not.toBe(acme.key.key);
      await expectProblem(await callUsage(svc.baseUrl, key), 401, 'unauthorized');
    });

    it.each(['none', 'suspended', 'revoked', 'expired'] as const)(
      'answers 403 entitlement_required for a valid key of an account whose entitlement is %s',
      async (state) => {
        const customer = byEntitlement.get(state)!;
        await expectProblem(await callUsage(svc.baseUrl, customer.key.key), 403, 'entitlement_required');
      },
    );

    it('refuses a browser call carrying an Origin header (403 browser_request_forbidden)', async () => {
      const res = await callUsage(svc.baseUrl, acme.key.key, { origin: 'https://evil.example' });
      await expectProblem(res, 403, 'browser_request_forbidden');
    });

    it.each(['cross-site', 'same-site', 'same-origin'])(
      'refuses Sec-Fetch-Site: %s (403 browser_request_forbidden)',
      async (site) => {
        const res = await callUsage(svc.baseUrl, acme.key.key, { 'sec-fetch-site': site });
        await expectProblem(res, 403, 'browser_request_forbidden');
      },
    );

    it('lets Sec-Fetch-Site: none pass (200)', async () => {
      await expectJson(await callUsage(svc.baseUrl, acme.key.key, { 'sec-fetch-site': 'none' }), 200);
    });

    it("lets Sec-Fetch-Mode: cors alone pass: Node's fetch is a server-side client (200)", async () => {
      await expectJson(await callUsage(svc.baseUrl, acme.key.key, { 'sec-fetch-mode': 'cors' }), 200);
    });

    it('refuses a key revoked with `keys revoke` within 5 s', async () => {
      const { key: raw, view } = await db.accounts.createKey(
        acme.account.id,
        { name: 'to-revoke' },
        TEST_ACTOR,
      );
      const key = { ...view, key: remember(raw) };
      // Used once first, so the service has it in its lookup cache when it is revoked.
      await expectJson(await callUsage(svc.baseUrl, key.key), 200);
      const revoked = await cliJson(testEnv.env, ['keys', 'revoke', acme.account.id, key.id]);
      expect(revoked).toMatchObject({ id: key.id, status: 'revoked' });
      expect(revoked.revoked_at).toBeTypeOf('string');
      const { res, elapsedMs } = await pollForStatus(() => callUsage(svc.baseUrl, key.key), 401, 6000);
      await expectProblem(res, 401, 'unauthorized');
      expect(elapsedMs).toBeLessThanOrEqual(5000);
    }, 60_000);

    it('refuses a key once its --expires-at has passed', async () => {
      // A CLI call starts a whole Node process and can be slow on a busy machine: when the key was not
      // created with 2 s to spare (or the CLI already found the expiry past), retry with a longer lifetime.
      let created: { key: CreatedApiKeyBody; expiresAt: Date } | undefined;
      for (const lifetimeMs of [6000, 12_000, 24_000]) {
        const expiresAt = new Date(Date.now() + lifetimeMs);
        const key = await createKeyCli(testEnv.env, acme.account.id, 'short-lived', expiresAt).catch(
          (err: Error) => {
            if (/must be in the future/.test(err.message)) return undefined;
            throw err;
          },
        );
        if (!key) continue;
        remember(key.key);
        expect(key.expires_at).toBe(expiresAt.toISOString());
        created = { key, expiresAt };
        if (expiresAt.getTime() - Date.now() > 2000) break;
      }
      if (!created) throw new Error('the CLI never created the key in time');
      const { key, expiresAt } = created;
      expect(expiresAt.getTime() - Date.now()).toBeGreaterThan(2000);
      await expectJson(await callUsage(svc.baseUrl, key.key), 200);
      await sleep(expiresAt.getTime() - Date.now() + 50);
      await expectProblem(await callUsage(svc.baseUrl, key.key), 401, 'unauthorized');
    }, 90_000);
  });

  describe('rate limits', () => {
    beforeAll(async () => {
      replica = await replicaStarting;
    }, 60_000);

    it('answers the 4th call of a 3/min key with 429 rate_limited, shared by two replicas', async () => {
      if (!replica) throw new Error('no replica');
      const replicas = [svc, replica, svc, replica, svc];
      const responses: Response[] = [];
      for (const target of replicas) responses.push(await callUsage(target.baseUrl, limited.key.key));

      for (const [i, res] of responses.slice(0, 3).entries()) {
        await expectJson(res, 200);
        expect(res.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60');
        expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"default";r=${2 - i};t=\\d+$`));
      }
      for (const res of responses.slice(3)) {
        await expectProblem(res, 429, 'rate_limited');
        const retryAfter = Number(res.headers.get('retry-after'));
        expect(Number.isInteger(retryAfter)).toBe(true);
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(60);
        expect(res.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60');
        expect(res.headers.get('ratelimit')).toBe(`"default";r=0;t=${retryAfter}`);
      }
    }, 60_000);

    it('limits per key: another key is not affected by the exhausted one', async () => {
      await expectJson(await callUsage(svc.baseUrl, acme.key.key), 200);
    });
  });

  describe('JWT on /api/account/api-keys', () => {
    const keys = (token: string, init: RequestInit = {}) =>
      fetch(url('/api/account/api-keys'), {
        ...init,
        headers: { ...bearer(remember(token)), ...(init.headers as Record<string, string>) },
      });
    const expectInvalidToken = async (res: Response) => {
      await expectProblem(res, 401, 'unauthorized');
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    };
    const validToken = () => idp.sign({ org_id: 'acme', sub: 'alice', roles: [KEY_ADMIN_ROLE] });

    it('accepts a valid token: GET lists the account’s keys (200)', async () => {
      const body = await expectJson<{ data: { id: string }[] }>(await keys(validToken()), 200);
      expect(body.data.map((k) => k.id)).toContain(acme.key.id);
    });

    it('accepts a valid token: POST creates a key (201)', async () => {
      const res = await keys(validToken(), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'from-jwt' }),
      });
      const created = await expectJson<{ key: string; created_by: string }>(res, 201);
      remember(created.key);
      expect(created.created_by).toBe('jwt:alice');
    });

    it('refuses a request without Authorization (401, WWW-Authenticate)', async () => {
      await expectInvalidToken(await fetch(url('/api/account/api-keys')));
    });

    it('refuses a token that is not a JWT (401)', async () => {
      await expectInvalidToken(await keys('not-a-jwt'));
    });

    it('refuses an alg:none token with an empty signature (401)', async () => {
      await expectInvalidToken(await keys(algNoneToken(userClaims('acme'))));
    });

    it('refuses a token for another audience (401)', async () => {
      await expectInvalidToken(
        await keys(
          idp.sign({ org_id: 'acme', sub: 'alice', roles: [KEY_ADMIN_ROLE] }, { audience: 'other' }),
        ),
      );
    });

    it('refuses a token from another issuer (401)', async () => {
      const token = idp.sign(
        { org_id: 'acme', sub: 'alice', roles: [KEY_ADMIN_ROLE] },
        { issuer: 'https://evil.example' },
      );
      await expectInvalidToken(await keys(token));
    });

    it('refuses an expired token, beyond the clock tolerance (401)', async () => {
      const iat = Math.floor(Date.now() / 1000) - 600;
      const token = idp.sign(
        { org_id: 'acme', sub: 'alice', roles: [KEY_ADMIN_ROLE], iat },
        { expiresIn: 60 },
      );
      await expectInvalidToken(await keys(token));
    });

    it('refuses an HS256 token whose HMAC secret is the RSA public key PEM (key confusion, 401)', async () => {
      await expectInvalidToken(await keys(hs256Token(userClaims('acme'), idp.publicPem)));
    });

    it('refuses a token signed by a different RSA key (401)', async () => {
      const other = testIdentityProvider();
      await expectInvalidToken(
        await keys(other.sign({ org_id: 'acme', sub: 'alice', roles: [KEY_ADMIN_ROLE] })),
      );
    });

    it('accepts the roles claim as a space-separated string', async () => {
      const token = idp.sign({ org_id: 'acme', sub: 'alice', roles: `viewer ${KEY_ADMIN_ROLE}` });
      await expectJson(await keys(token), 200);
    });

    it('accepts the auth scheme in any case ("bearer", RFC 9110 §11.1)', async () => {
      const res = await fetch(url('/api/account/api-keys'), {
        headers: { authorization: `bearer ${remember(validToken())}` },
      });
      await expectJson(res, 200);
    });

    it('refuses a token that is not valid yet (nbf beyond the clock tolerance, 401)', async () => {
      const token = idp.sign({ org_id: 'acme', sub: 'alice', roles: [KEY_ADMIN_ROLE] }, { notBefore: 600 });
      await expectInvalidToken(await keys(token));
    });

    it('refuses a token without the org_id claim (401)', async () => {
      await expectInvalidToken(await keys(idp.sign({ sub: 'alice', roles: [KEY_ADMIN_ROLE] })));
    });

    it('refuses a token without sub (401)', async () => {
      await expectInvalidToken(await keys(idp.sign({ org_id: 'acme', roles: [KEY_ADMIN_ROLE] })));
    });

    it('refuses a valid token without the key-admin role (403 forbidden)', async () => {
      const res = await keys(idp.sign({ org_id: 'acme', sub: 'bob', roles: ['riskwatch:viewer'] }));
      await expectProblem(res, 403, 'forbidden');
    });

    it('refuses a valid token of an org with no account (403 forbidden)', async () => {
      const res = await keys(idp.sign({ org_id: 'no-such-org', sub: 'carol', roles: [KEY_ADMIN_ROLE] }));
      await expectProblem(res, 403, 'forbidden');
    });
  });

  describe('agent key on /api/agent/health', () => {
    const health = (key?: string) =>
      fetch(url('/api/agent/health'), { headers: key === undefined ? {} : { 'x-service-agent-key': key } });

    it('refuses a call without an agent key (401)', async () => {
      await expectProblem(await health(), 401, 'unauthorized');
    });

    it.each([
      ['an unknown key of the same length', 'agent-key-six-0123456789abcdef'],
      ['a configured key with a character missing', AGENT_KEYS[0]!.slice(0, -1)],
      ['a configured key with a suffix', `${AGENT_KEYS[1]!}x`],
      ['both configured keys joined', AGENT_KEYS.join(',')],
    ])('refuses %s (401)', async (_what, key) => {
      await expectProblem(await health(key), 401, 'unauthorized');
    });

    it('refuses an API key in place of the agent key (401)', async () => {
      await expectProblem(await health(acme.key.key), 401, 'unauthorized');
    });

    it.each(AGENT_KEYS.map((key, i) => [i + 1, key] as const))(
      'accepts configured agent key #%i (200 application/health+json)',
      async (_n, key) => {
        const res = await health(key);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/^application\/health\+json\b/);
        expect(res.headers.get('x-request-id')).toBeTruthy();
        const body = (await res.json()) as { status: string; checks: Record<string, unknown> };
        expect(['pass', 'warn']).toContain(body.status);
        expect(body.checks).toHaveProperty(['postgres:responseTime']);
      },
    );
  });

  describe('riskwatch bootstrap', () => {
    const parse = (out: string) => {
      const account = /^account\s+(acc_\w+) \(org_id demo\)$/m.exec(out)?.[1];
      const entitlement = /^entitlement\s+(.+)$/m.exec(out)?.[1];
      const key = /^api key\s+(rwk_\w+)$/m.exec(out)?.[1];
      expect(account, out).toBeDefined();
      expect(key, out).toBeDefined();
      return { account: account!, entitlement, key: remember(key!), out };
    };

    it('is idempotent: same account, active entitlement, a new working key each run', async () => {
      const [first, second] = (await bootstrapRuns!).map(parse) as [
        ReturnType<typeof parse>,
        ReturnType<typeof parse>,
      ];
      expect(second.account).toBe(first.account);
      for (const run of [first, second]) {
        expect(run.entitlement).toMatch(/^enterprise active\b/);
        expect(run.out).toContain(`X-API-Key: ${run.key}`);
      }
      expect(second.key).not.toBe(first.key);
      for (const key of [first.key, second.key]) await expectJson(await callUsage(svc.baseUrl, key), 200);
    }, 60_000);
  });

  describe('secrets never logged', () => {
    it('keeps every API key, JWT and agent key used above out of the service output (LOG_LEVEL=debug)', () => {
      const output = svc.output() + (replica?.output() ?? '');
      // Debug logging was on: requests were logged, so the absence of secrets means something.
      expect(output).toContain('"msg":"request"');
      expect(secrets.size).toBeGreaterThan(10);
      const leaked = [...secrets].filter((secret) => output.includes(secret));
      expect(leaked).toEqual([]);
    });
  });
});
