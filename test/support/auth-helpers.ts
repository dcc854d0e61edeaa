import { createHmac } from 'node:crypto';
import { expect } from 'vitest';
import { generateApiKey } from '../../src/accounts/api-key-format.js';
import { presentAccount, presentCreatedKey } from '../../src/accounts/present.js';
import type { AccountBody, CreatedApiKeyBody } from '../../src/accounts/schemas.js';
import { AccountsService } from '../../src/accounts/service.js';
import { operatorActor } from '../../src/audit/actor.js';
import { connectDatabase as connectOrm } from '../../src/database.js';
import { cliJson, startService, type RunningService } from './service.js';
import { JWT_AUDIENCE, JWT_ISSUER, KEY_ADMIN_ROLE } from './jwt.js';

/** An RFC 9457 problem document as the service writes it. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail: string;
  request_id: string;
  /** Present (true) on 503s. */
  retryable?: boolean;
  errors?: { path: string; message: string }[];
}

/**
 * Asserts the response is the problem `code` with `status`: problem+json content type, the stable code,
 * an `X-Request-Id` header equal to the body's `request_id`. Returns the parsed problem.
 */
export async function expectProblem(res: Response, status: number, code: string): Promise<Problem> {
  const text = await res.text();
  let body: Problem;
  try {
    body = JSON.parse(text) as Problem;
  } catch {
    throw new Error(`expected a problem+json body, got ${res.status} ${JSON.stringify(text.slice(0, 200))}`);
  }
  expect({ status: res.status, code: body.code }, body.detail).toEqual({ status, code });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json\b/);
  const requestId = res.headers.get('x-request-id');
  expect(requestId).toBeTruthy();
  expect(body).toMatchObject({
    type: `https://riskwatch.dev/errors/${code}`,
    status,
    code,
    request_id: requestId,
  });
  expect(body.title).toEqual(expect.any(String));
  expect(body.detail).toEqual(expect.any(String));
  return body;
}

/** Asserts a JSON success response (status, JSON content type, X-Request-Id) and returns the body. */
export async function expectJson<T = Record<string, unknown>>(res: Response, status: number): Promise<T> {
  const text = await res.text();
  expect(res.status, text.slice(0, 300)).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json\b/);
  expect(res.headers.get('x-request-id')).toBeTruthy();
  return JSON.parse(text) as T;
}

// ---- provisioning ---------------------------------------------------------------------------------

/** The operator the tests' direct service calls are made as (the audit log names `test`). */
export const TEST_ACTOR = operatorActor('test');

export type EntitlementState = 'active' | 'none' | 'suspended' | 'revoked' | 'expired';

export interface Customer {
  account: AccountBody;
  key: CreatedApiKeyBody;
}

/**
 * The accounts service on the test database, in the test process: creating accounts and keys this way
 * costs milliseconds, where each `riskwatch` CLI call starts a whole Node process. The CLI is still used
 * for what a test is about (entitlement transitions, `keys revoke`, `--expires-at`, bootstrap).
 */
export async function openAccounts(env: Record<string, string>) {
  const orm = await connectOrm(env.DATABASE_URL!, 2);
  const accounts = new AccountsService(orm, { keyCacheMs: 0, defaultRateLimitPerMin: 600 });

  /** An account (org id = name) with one key, its entitlement in `state` (transitions via the CLI). */
  const customer = async (
    name: string,
    opts: { entitlement?: EntitlementState; rateLimitPerMin?: number } = {},
  ): Promise<Customer> => {
    const state = opts.entitlement ?? 'active';
    const acc = await accounts.createAccount({ name }, TEST_ACTOR);
    const created = await accounts.createKey(acc.id, { name: `${name}-key` }, TEST_ACTOR);
    if (state !== 'none') {
      const grant = ['entitlements', 'grant', name];
      if (state === 'expired') grant.push('--expires-at', '2020-01-01T00:00:00Z');
      if (opts.rateLimitPerMin !== undefined)
        grant.push('--rate-limit-per-min', String(opts.rateLimitPerMin));
      if (state === 'active' && opts.rateLimitPerMin === undefined)
        await accounts.grantEntitlement(acc.id, {}, TEST_ACTOR);
      else expect(await cliJson(env, grant)).toMatchObject({ status: 'active', account_id: acc.id });
      if (state === 'suspended' || state === 'revoked') {
        const verb = state === 'suspended' ? 'suspend' : 'revoke';
        expect(await cliJson(env, ['entitlements', verb, name])).toMatchObject({
          status: state,
          active: false,
        });
      }
    }
    return { account: presentAccount(acc), key: presentCreatedKey(created) };
  };

  return { accounts, customer, close: () => orm.close() };
}

export function createKeyCli(
  env: Record<string, string>,
  account: string,
  name: string,
  expiresAt?: Date,
): Promise<CreatedApiKeyBody> {
  const args = ['keys', 'create', account, '--name', name];
  if (expiresAt) args.push('--expires-at', expiresAt.toISOString());
  return cliJson<CreatedApiKeyBody>(env, args);
}

/**
 * startService, tried once more when the service was merely slow to become ready (a machine busy with
 * other test files): a start that fails for any other reason fails at once.
 */
export async function startServiceRetrying(
  env: Record<string, string>,
  role: Parameters<typeof startService>[1] = 'all',
): Promise<RunningService> {
  try {
    return await startService(env, role);
  } catch (err) {
    if (!/not up in/.test((err as Error).message)) throw err;
    return startService(env, role);
  }
}

// ---- API keys -----------------------------------------------------------------------------------------

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The key with the character at `index` replaced by another base62 character: a typo the checksum catches. */
export function flipChar(key: string, index: number): string {
  const current = key[index]!;
  const replacement = BASE62[(BASE62.indexOf(current) + 1) % BASE62.length]!;
  return key.slice(0, index) + replacement + key.slice(index + 1);
}

/** A key with a valid shape and checksum that was never issued. */
export const unknownWellFormedKey = () => generateApiKey();

/** GET /api/v1/usage?limit=1 with an X-API-Key (when given) and extra headers. */
export function callUsage(baseUrl: string, key: string | undefined, headers: Record<string, string> = {}) {
  return fetch(`${baseUrl}/api/v1/usage?limit=1`, {
    headers: { ...(key === undefined ? {} : { 'x-api-key': key }), ...headers },
  });
}

/**
 * Polls `call` every 100 ms until it answers `status`; returns that response and how long it took, or the
 * last response when `timeoutMs` passed first.
 */
export async function pollForStatus(
  call: () => Promise<Response>,
  status: number,
  timeoutMs: number,
): Promise<{ res: Response; elapsedMs: number }> {
  const started = Date.now();
  for (;;) {
    const res = await call();
    const elapsedMs = Date.now() - started;
    if (res.status === status || elapsedMs > timeoutMs) return { res, elapsedMs };
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

// ---- JWTs ---------------------------------------------------------------------------------------------

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Claims of a key-admin user of `orgId`, valid for 5 minutes, with the test issuer and audience. */
export function userClaims(orgId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: JWT_ISSUER,
    aud: JWT_AUDIENCE,
    sub: `user-of-${orgId}`,
    org_id: orgId,
    roles: [KEY_ADMIN_ROLE],
    iat: now,
    exp: now + 300,
    ...extra,
  };
}

/** An unsigned token: header `{"alg":"none"}`, the claims, and an empty signature. */
export function algNoneToken(claims: Record<string, unknown>): string {
  return `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims)}.`;
}

/** An HS256 token whose HMAC secret is `secret` (e.g. the service's RSA public key PEM: key confusion). */
export function hs256Token(claims: Record<string, unknown>, secret: string): string {
  const signingInput = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url(claims)}`;
  return `${signingInput}.${createHmac('sha256', secret).update(signingInput).digest('base64url')}`;
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
