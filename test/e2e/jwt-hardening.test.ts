import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  userClaims,
} from '../support/auth-helpers.js';
import { JWT_AUDIENCE, JWT_ISSUER } from '../support/jwt.js';
import { prepareEnv, type RunningService, type TestEnv } from '../support/service.js';

const MIN_REFRESH_S = 2;
const MAX_AGE_S = 3600;

interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

const newKey = (kid: string): SigningKey => ({ kid, ...generateKeyPairSync('rsa', { modulusLength: 2048 }) });

/** An identity provider's JWKS endpoint on loopback, counting its fetches; keys can be added while it runs. */
async function jwksServer(initial: SigningKey[]) {
  const keys = [...initial];
  let fetches = 0;
  const server: Server = createServer((_req, res) => {
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        keys: keys.map((k) => ({
          ...k.publicKey.export({ format: 'jwk' }),
          kid: k.kid,
          use: 'sig',
          alg: 'RS256',
        })),
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`,
    add: (key: SigningKey) => keys.push(key),
    get fetches() {
      return fetches;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Signs the claims as given (jsonwebtoken adds `iat` when they have none, unless `noTimestamp`). */
const sign = (key: SigningKey, claims: Record<string, unknown>, noTimestamp = false) =>
  jwt.sign(claims, key.privateKey, { algorithm: 'RS256', keyid: key.kid, noTimestamp });

/**
 * Hostile and careless identity-provider input against the built service: tokens with made-up `kid`s
 * must not lock valid users out (the key set is the service's own, refreshed at most every
 * JWT_JWKS_MIN_REFRESH_S on an unknown kid), a key added at the provider is taken up, tokens without
 * `exp` or older than JWT_MAX_AGE_S are refused, and a `sub` too long to store is a 401, not a 500.
 */
describe('JWT hardening (built service, JWKS on loopback)', () => {
  const current = newKey('key-2026-11');
  const attacker = newKey('attacker');
  let idp: Awaited<ReturnType<typeof jwksServer>>;
  let testEnv: TestEnv;
  let svc: RunningService;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  const keys = (token: string) => fetch(`${svc.baseUrl}/api/account/api-keys`, { headers: bearer(token) });

  beforeAll(async () => {
    idp = await jwksServer([current]);
    testEnv = await prepareEnv({
      JWT_ALGORITHMS: 'RS256',
      JWT_ISSUER,
      JWT_AUDIENCE,
      JWT_JWKS_URL: idp.url,
      JWT_JWKS_MIN_REFRESH_S: String(MIN_REFRESH_S),
      JWT_MAX_AGE_S: String(MAX_AGE_S),
    });
    db = await openAccounts(testEnv.env);
    await db.customer('jwks-org');
    svc = await startServiceRetrying(testEnv.env, 'api');
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await db?.close();
    await testEnv?.dropDatabase();
    await idp?.close();
  });

  it('refuses 200 tokens with made-up kids without asking the provider each time; a valid token then passes at once', async () => {
    const before = idp.fetches;
    for (let i = 0; i < 200; i += 20) {
      const batch = Array.from({ length: 20 }, () =>
        keys(sign({ ...attacker, kid: randomBytes(8).toString('hex') }, userClaims('jwks-org'))).then((res) =>
          expectProblem(res, 401, 'unauthorized'),
        ),
      );
      const problems = await Promise.all(batch);
      for (const p of problems) expect(p.detail).toMatch(/signing key \(kid\)/);
    }
    // At most one refresh per JWT_JWKS_MIN_REFRESH_S while they arrived (they took well under 2 intervals).
    expect(idp.fetches - before).toBeLessThanOrEqual(2);
    const ok = await expectJson<{ data: unknown[] }>(await keys(sign(current, userClaims('jwks-org'))), 200);
    expect(Array.isArray(ok.data)).toBe(true);
  });

  it('accepts a key added at the identity provider once the refresh interval has passed', async () => {
    const next = newKey('key-2026-12');
    idp.add(next);
    const token = sign(next, userClaims('jwks-org'));
    const started = Date.now();
    let status = 0;
    while (Date.now() - started < (MIN_REFRESH_S + 3) * 1000) {
      const res = await keys(token);
      status = res.status;
      await res.arrayBuffer();
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe(200);
    expect(Date.now() - started).toBeLessThanOrEqual((MIN_REFRESH_S + 1) * 1000);
  });

  it('refuses a token without exp', async () => {
    const claims = userClaims('jwks-org');
    delete claims.exp;
    const problem = await expectProblem(await keys(sign(current, claims)), 401, 'unauthorized');
    expect(problem.detail).toMatch(/"exp"/);
  });

  it('refuses a token issued longer ago than JWT_MAX_AGE_S, and one without iat', async () => {
    const now = Math.floor(Date.now() / 1000);
    const old = await expectProblem(
      await keys(sign(current, userClaims('jwks-org', { iat: now - MAX_AGE_S - 120, exp: now + 300 }))),
      401,
      'unauthorized',
    );
    expect(old.detail).toMatch(/maximum token age/);
    const noIat = userClaims('jwks-org');
    delete noIat.iat;
    const missing = await expectProblem(await keys(sign(current, noIat, true)), 401, 'unauthorized');
    expect(missing.detail).toMatch(/"iat"/);
  });

  it('answers a sub too long to store with 401 on key creation, never 500', async () => {
    const res = await fetch(`${svc.baseUrl}/api/account/api-keys`, {
      method: 'POST',
      headers: {
        ...bearer(sign(current, userClaims('jwks-org', { sub: 'u'.repeat(400) }))),
        'content-type': 'application/json',
      },
      body: JSON.stringify({ name: 'from-a-long-sub' }),
    });
    const problem = await expectProblem(res, 401, 'unauthorized');
    expect(problem.detail).toMatch(/"sub".*256/);
    // The longest sub that is accepted is stored whole.
    const longest = 's'.repeat(256);
    const created = await expectJson<{ created_by: string }>(
      await fetch(`${svc.baseUrl}/api/account/api-keys`, {
        method: 'POST',
        headers: {
          ...bearer(sign(current, userClaims('jwks-org', { sub: longest }))),
          'content-type': 'application/json',
        },
        body: JSON.stringify({ name: 'from-the-longest-sub' }),
      }),
      201,
    );
    expect(created.created_by).toBe(`jwt:${longest}`);
  });
});
