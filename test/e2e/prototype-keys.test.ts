import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, type TestKey } from '../support/customers.js';
import { KEY_ADMIN_ROLE, testIdentityProvider } from '../support/jwt.js';
import {
  PROTOTYPE_NAMES,
  prototypeKeyCases,
  UNREACHABLE_RPC_ENV,
  type PrototypeKeyCase,
} from '../support/prototype-keys.js';
import { prepareEnv, startService, type RunningService } from '../support/service.js';

/**
 * `GET /docs/constructor` used to answer 500 (and log a stack trace) with no credential: the asset table
 * was a plain object, and `constructor` is a key every object has. Every free string used as a key —
 * path segments, chain and network names, intents, target types, list names, query values, JWT claim
 * values — is tried with the names of Object.prototype: each is a 4xx problem (or a plain answer), never
 * a 5xx.
 */
describe('prototype-named keys', () => {
  let env: Record<string, string>;
  let dropDatabase: () => Promise<void>;
  let svc: RunningService;
  let key: TestKey;
  let idp: ReturnType<typeof testIdentityProvider>;
  let jwt: string;

  beforeAll(async () => {
    idp = testIdentityProvider();
    ({ env, dropDatabase } = await prepareEnv({ ...idp.env, ...UNREACHABLE_RPC_ENV }));
    key = (await createCustomer(env, 'protokeys', ['k'], { rateLimitPerMin: 100_000 })).keys.k!;
    jwt = idp.sign({ org_id: 'protokeys', roles: [KEY_ADMIN_ROLE], sub: 'tester' }, { expiresIn: '1h' });
    svc = await startService(env, 'all');
  }, 180_000);

  afterAll(async () => {
    await svc?.stop();
    await dropDatabase?.();
  });

  async function send(c: Pick<PrototypeKeyCase, 'method' | 'path' | 'body' | 'auth'>, bearer = jwt) {
    const headers: Record<string, string> = {};
    if (c.auth === 'key') headers['X-API-Key'] = key.key;
    if (c.auth === 'jwt') headers.Authorization = `Bearer ${bearer}`;
    if (c.body) headers['Content-Type'] = 'application/json';
    const res = await fetch(`${svc.baseUrl}${c.path}`, {
      method: c.method,
      headers,
      body: c.body ? JSON.stringify(c.body) : undefined,
    });
    const text = await res.text();
    return { res, text };
  }

  /** What is wrong with one answer (empty when it is right). */
  function judge(c: PrototypeKeyCase, res: Response, text: string): string[] {
    const problems: string[] = [];
    if (res.status !== c.status)
      problems.push(`status ${res.status}, expected ${c.status}: ${text.slice(0, 160)}`);
    if (res.status >= 400) {
      if (!/^application\/problem\+json/.test(res.headers.get('content-type') ?? ''))
        problems.push(`content-type ${res.headers.get('content-type')}`);
      try {
        const body = JSON.parse(text) as { code?: string; request_id?: string };
        if (c.code && body.code !== c.code) problems.push(`code ${body.code}, expected ${c.code}`);
        if (body.request_id !== res.headers.get('x-request-id')) problems.push('request_id differs');
      } catch {
        problems.push(`not JSON: ${text.slice(0, 100)}`);
      }
    }
    return problems.map((p) => `${c.method} ${c.path} (${c.name}): ${p}`);
  }

  it('answers each prototype name on every route as a 4xx problem (or a plain 200), never a 5xx', async () => {
    const cases = prototypeKeyCases();
    const failures: string[] = [];
    for (const c of cases) {
      const { res, text } = await send(c);
      failures.push(...judge(c, res, text));
    }
    expect(failures).toEqual([]);
    expect(cases.length).toBeGreaterThanOrEqual(PROTOTYPE_NAMES.length * 20);
    expect(svc.output()).not.toMatch(/unhandled error|ENOENT/i);
    expect(svc.process.exitCode).toBeNull();
  }, 120_000);

  it('serves the real /docs assets still', async () => {
    for (const asset of ['swagger-ui.css', 'swagger-ui-bundle.js', 'docs-init.js']) {
      const res = await fetch(`${svc.baseUrl}/docs/${asset}`);
      await res.arrayBuffer();
      expect(res.status, asset).toBe(200);
    }
  });

  it('refuses tokens whose account claim or roles are prototype names (403), never a 5xx', async () => {
    for (const p of PROTOTYPE_NAMES) {
      const foreign = idp.sign({ org_id: p, roles: [KEY_ADMIN_ROLE], sub: 'x' });
      const { res: r1, text: t1 } = await send(
        { method: 'GET', path: '/api/account/api-keys', auth: 'jwt' },
        foreign,
      );
      expect(r1.status, t1).toBe(403);
      expect(JSON.parse(t1)).toMatchObject({ code: 'forbidden' });

      const roleless = idp.sign({ org_id: 'protokeys', roles: [p], sub: 'x' });
      const { res: r2, text: t2 } = await send(
        { method: 'GET', path: '/api/account/api-keys', auth: 'jwt' },
        roleless,
      );
      expect(r2.status, t2).toBe(403);
      expect(JSON.parse(t2)).toMatchObject({ code: 'forbidden' });
    }
    expect(svc.output()).not.toMatch(/unhandled error/i);
  });
});
