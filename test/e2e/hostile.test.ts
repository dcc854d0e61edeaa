import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, type TestKey } from '../support/customers.js';
import { testIdentityProvider, KEY_ADMIN_ROLE } from '../support/jwt.js';
import { prototypeKeyCases, UNREACHABLE_RPC_ENV } from '../support/prototype-keys.js';
import { rawRequest, type RawResponse } from '../support/raw-http.js';
import { prepareEnv, startService, type RunningService } from '../support/service.js';

/**
 * 2,000 malformed or hostile requests against a running `all` service: never a 5xx, never a crash, every
 * error a problem document with a `code` and the response's request id.
 */

const TOTAL = 2000;
const CONCURRENCY = 8;
const AGENT_KEY = 'agent-key-hostile-0123456789';
const GENERATED_ID = /^req_[0-9a-f]{28}$/;

type Auth = 'none' | 'key' | 'jwt' | 'agent';

interface Case {
  name: string;
  method?: string;
  path?: string;
  headers?: [string, string][];
  body?: string | Buffer;
  /** Send exactly these bytes (no request line or headers added). */
  raw?: Buffer;
  /** Which credential the case may carry; the run mixes them. */
  auth?: Auth[];
  /** Expected status (or any of several) and problem code. */
  status?: number | number[];
  code?: string;
  /** An X-Request-Id the server must not echo. */
  badRequestId?: string;
  /** The server may close the connection without any response (e.g. CONNECT with no handler). */
  mayDrop?: boolean;
}

/** A small deterministic PRNG, so a failure can be replayed. */
function prng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function buildCases(): Case[] {
  const keys = '/api/account/api-keys';
  const usage = '/api/v1/usage';
  const json = (body: string | Buffer, extra: Partial<Case> = {}): Case => ({
    name: `json body ${String(body).slice(0, 40)}`,
    method: 'POST',
    path: keys,
    headers: [['Content-Type', 'application/json']],
    body,
    auth: ['jwt'],
    status: 400,
    code: 'invalid_request',
    ...extra,
  });
  const cases: Case[] = [];

  // Bad and truncated JSON.
  const valid = '{"name":"ci key","expires_at":"2099-01-01T00:00:00Z"}';
  for (const body of [
    '{bad',
    '{"name":',
    '{"name":"x"',
    '}{',
    'nul',
    '[1,2',
    '{"a":1,}',
    "{'name':'x'}",
    '\u0000',
  ])
    cases.push(json(body));
  for (let cut = 1; cut < valid.length; cut += 7) cases.push(json(valid.slice(0, cut)));
  // Arrays, strings, numbers, null instead of an object.
  for (const body of ['[]', '[1,2]', '[{"name":"x"}]', '"str"', '123', '-1e999', 'null', 'true'])
    cases.push(json(body));
  // Deeply nested (still under 64 KiB).
  cases.push(json('['.repeat(20_000) + ']'.repeat(20_000)));
  cases.push(json(`{"name":${'{"a":'.repeat(5000)}1${'}'.repeat(5001)}`));
  cases.push(json(`{"name":"x","x":${'['.repeat(30_000)}${']'.repeat(30_000)}}`));
  // Wrong types and values.
  for (const body of [
    '{"name":123}',
    '{"name":null}',
    '{"name":[]}',
    '{"name":{}}',
    '{"name":true}',
    '{"name":""}',
    '{"name":"   "}',
    `{"name":"${'x'.repeat(201)}"}`,
    '{"name":"x","expires_at":5}',
    '{"name":"x","expires_at":"tomorrow"}',
    '{"name":"x","expires_at":"2000-01-01T00:00:00Z"}',
    '{"name":"x","extra":1}',
    '{"name":"x\\u0000y"}',
    '{"na\\u0000me":"x"}',
    '{"__proto__":{"admin":true},"name":"x","x":1}',
    '{"constructor":{"prototype":{"admin":true}}}',
    '\ufeff{"name":',
  ])
    cases.push(json(body));
  // Huge bodies → 413, whether sized or chunked.
  const huge = `{"name":"${'a'.repeat(70 * 1024)}"}`;
  cases.push(json(huge, { status: 413, code: 'payload_too_large' }));
  cases.push(
    json(huge, {
      status: 413,
      code: 'payload_too_large',
      headers: [
        ['Content-Type', 'application/json'],
        ['Transfer-Encoding', 'chunked'],
      ],
    }),
  );
  cases.push(json(`[${'1,'.repeat(40_000)}1]`, { status: 413, code: 'payload_too_large' }));
  // Wrong or missing content type → 415.
  for (const type of [
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=xyz',
    'application/xml',
    'application/jsonx',
    'application/merge-patch+json',
    'json',
    '*/*',
    '',
  ])
    cases.push(
      json(valid, {
        name: `content-type ${type || '(none)'}`,
        headers: type ? [['Content-Type', type]] : [],
        status: 415,
        code: 'unsupported_media_type',
      }),
    );
  // A body that claims gzip but is not.
  cases.push(
    json(valid, {
      headers: [
        ['Content-Type', 'application/json'],
        ['Content-Encoding', 'gzip'],
      ],
    }),
  );
  cases.push(
    json(valid, {
      headers: [
        ['Content-Type', 'application/json'],
        ['Content-Encoding', 'br, zstd, x-unknown'],
      ],
      status: [400, 415],
      code: undefined,
    }),
  );
  // Bodies without the credential: refused before the body is read.
  for (const body of ['{bad', valid, huge])
    cases.push({
      ...json(body),
      name: 'body without credential',
      auth: ['none'],
      status: 401,
      code: 'unauthorized',
    });

  // Odd headers.
  cases.push({ name: 'long header value', path: '/healthz', headers: [['X-Long', 'a'.repeat(8000)]] });
  cases.push({
    name: 'oversized header',
    path: '/healthz',
    headers: [['X-Huge', 'a'.repeat(20_000)]],
    status: 431,
    code: 'invalid_request',
  });
  cases.push({
    name: 'many headers',
    path: usage,
    headers: Array.from({ length: 150 }, (_, i): [string, string] => [`X-H${i}`, `v${i}`]),
    auth: ['key', 'none'],
  });
  for (const id of [
    'has space',
    '<script>alert(1)</script>',
    'a'.repeat(129),
    '../../etc/passwd',
    'id;drop table usage_records',
    'tab\there',
    '%00',
    '"quoted"',
    'ünïcödé',
    'req_\u00ff\u00fe',
  ])
    cases.push({
      name: `x-request-id ${id.slice(0, 20)}`,
      path: usage,
      headers: [['X-Request-Id', id]],
      badRequestId: id,
      auth: ['key', 'none'],
    });
  for (const origin of [
    'https://evil.example',
    'null',
    'http://localhost',
    'x'.repeat(2000),
    'javascript:alert(1)',
  ])
    cases.push({
      name: `origin ${origin.slice(0, 20)}`,
      path: usage,
      headers: [['Origin', origin]],
      auth: ['key'],
      status: 403,
      code: 'browser_request_forbidden',
    });
  for (const site of ['cross-site', 'same-site', 'same-origin', 'bogus'])
    cases.push({
      name: `sec-fetch-site ${site}`,
      path: usage,
      headers: [['Sec-Fetch-Site', site]],
      auth: ['key'],
      status: 403,
      code: 'browser_request_forbidden',
    });
  cases.push({
    name: 'origin on a public endpoint',
    path: '/api/public/impact',
    headers: [['Origin', 'https://x']],
    status: 200,
  });
  // Keys: malformed, unicode, repeated, huge.
  for (const key of [
    '',
    ' ',
    'rwk_',
    'rwk_' + 'A'.repeat(38),
    'rwk_' + 'a'.repeat(32) + 'ZZZZZZ',
    'rwk_ключ_ключ_ключ_ключ_ключ_ключ_ключ_',
    'rwk_' + '🔑'.repeat(19),
    'Bearer rwk_x',
    'x'.repeat(8000),
    "' or '1'='1",
  ])
    cases.push({
      name: `x-api-key ${key.slice(0, 20)}`,
      path: usage,
      headers: [['X-API-Key', key]],
      status: 401,
      code: 'unauthorized',
    });
  for (const authz of [
    'Bearer',
    'Bearer ',
    'Bearer garbage',
    'Bearer a.b.c',
    'Basic dXNlcjpwYXNz',
    'Bearer eyJhbGciOiJub25lIn0.eyJvcmdfaWQiOiJob3N0aWxlIn0.',
    'Bearer ✓✓✓',
    `Bearer ${'x'.repeat(9000)}`,
  ])
    cases.push({
      name: `authorization ${authz.slice(0, 20)}`,
      path: keys,
      headers: [['Authorization', authz]],
      status: 401,
      code: 'unauthorized',
    });
  for (const agentKey of ['', 'short', 'x'.repeat(10_000), `${AGENT_KEY}x`, AGENT_KEY.toUpperCase()])
    cases.push({
      name: `agent key ${agentKey.slice(0, 20)}`,
      path: '/api/agent/health',
      headers: [['x-service-agent-key', agentKey]],
      status: 401,
      code: 'unauthorized',
    });
  cases.push({
    name: 'expect: bogus',
    path: '/healthz',
    headers: [['Expect', 'bogus-expectation']],
    status: 200,
  });
  cases.push({
    name: 'expect: 100-continue',
    method: 'POST',
    path: keys,
    headers: [
      ['Content-Type', 'application/json'],
      ['Expect', '100-continue'],
    ],
    body: '{bad',
    auth: ['jwt'],
    status: 400,
  });
  for (const [name, value] of [
    ['X-HTTP-Method-Override', 'DELETE'],
    ['X-Forwarded-For', 'not-an-ip, <script>'],
    ['X-Forwarded-Proto', 'gopher'],
    ['Accept', 'text/html'],
    ['Accept', 'application/xml;q=1, */*;q=0'],
    ['Accept-Encoding', 'gzip, br, zstd, bogus'],
    ['Range', 'bytes=0-10,5-1,-1'],
    ['If-None-Match', '*'],
    ['Cookie', 'a=b; '.repeat(500)],
    ['Content-Length', '0'],
    ['Upgrade', 'websocket'],
  ] as const)
    cases.push({ name: `header ${name}`, path: usage, headers: [[name, value]], auth: ['key', 'none'] });

  // Unknown paths (404), traversal, null bytes.
  for (const path of [
    '/nope',
    '/api/v2/usage',
    '/api/v1/',
    '/api/v1/usage/extra',
    '/api/v1/usage/../../../etc/passwd',
    '/api/public/impact/../../v1/usage',
    '/../../../../etc/passwd',
    '/..%2f..%2f..%2fetc%2fpasswd',
    '/%2e%2e/%2e%2e/etc/passwd',
    '/docs/..%2f..%2fpackage.json',
    '/docs/../../package.json',
    '/docs/%2e%2e%2fsrc%2fmain.ts',
    '/docs/swagger-ui.css%00.js',
    '/healthz%00',
    '/api/v1/usage%00',
    '/%',
    '/%zz',
    '/%E0%A4%A',
    '/%C0%AE%C0%AE/',
    '//',
    '/.env',
    '/.git/config',
    '/wp-admin/',
    '/server-status',
    '/' + 'a'.repeat(6000),
    '/api/account/api-keys/%00',
    '/api/account/api-keys/..%2F..%2F',
    '/api/account/api-keys/' + 'k'.repeat(300),
    '/api/account/api-keys/%F0%9F%92%A9',
    '*',
  ])
    cases.push({ name: `path ${path.slice(0, 40)}`, path, auth: ['none', 'key', 'jwt'] });
  cases.push({ name: 'absolute-form target', path: 'http://evil.example/healthz' });

  // Wrong and unknown methods (405 with Allow).
  for (const [method, path] of [
    ['POST', '/healthz'],
    ['PUT', '/readyz'],
    ['DELETE', '/api/public/impact'],
    ['PATCH', usage],
    ['POST', usage],
    ['DELETE', usage],
    ['PUT', keys],
    ['PATCH', '/openapi.json'],
    ['PROPFIND', usage],
    ['PROPFIND', '/healthz'],
    ['MKCOL', '/api/public/impact'],
    ['LOCK', keys],
    ['SEARCH', usage],
    ['PURGE', '/healthz'],
    ['TRACE', '/healthz'],
    ['REPORT', usage],
  ] as const)
    cases.push({
      name: `${method} ${path}`,
      method,
      path,
      auth: ['none', 'key'],
      status: 405,
      code: 'method_not_allowed',
    });
  cases.push({ name: 'PROPFIND unknown path', method: 'PROPFIND', path: '/nope', status: [404, 405] });
  cases.push({ name: 'OPTIONS', method: 'OPTIONS', path: usage });
  cases.push({ name: 'HEAD impact', method: 'HEAD', path: '/api/public/impact', status: 200 });
  cases.push({ name: 'HEAD unknown', method: 'HEAD', path: '/nope', status: 404 });
  cases.push({ name: 'CONNECT', method: 'CONNECT', path: '127.0.0.1:22', mayDrop: true });

  // Query strings: arrays, duplicates, unicode, very long, prototype keys.
  for (const query of [
    'limit=1&limit=2',
    'limit[]=1',
    'limit[0]=1',
    'status=200&status=404',
    'from[$gt]=2020-01-01',
    'endpoint=%F0%9F%92%A9',
    'endpoint=%00',
    'api_key_id=%00',
    'cursor=%00',
    'endpoint=' + 'e'.repeat(10_000),
    'cursor=' + 'c'.repeat(12_000),
    'cursor=eyJhdCI6IjEiLCJpZCI6IngifQ',
    'from=0000-01-01T00:00:00Z',
    'from=9999-12-31T23:59:59-14:00',
    'to=2026-02-30T00:00:00Z',
    'status=1e3',
    'status=0x1F4',
    'limit=Infinity',
    'limit=NaN',
    'limit=99999999999999999999999',
    'group_by=hour&group_by=day',
    'group_by=__proto__',
    '__proto__=1',
    'constructor[prototype][x]=1',
    '%',
    'a=%zz',
    '=',
    '&&&',
    '%E0%A4%A=1',
    'x=' + 'y'.repeat(14_000),
  ])
    cases.push({
      name: `query ${query.slice(0, 40)}`,
      path: `${usage}?${query}`,
      auth: ['key', 'key', 'none'],
    });
  cases.push({
    name: 'oversized query',
    path: `${usage}?x=${'y'.repeat(20_000)}`,
    status: 431,
    auth: ['key'],
  });

  // Bytes fetch cannot send: malformed request lines and headers (the server's clientError answers).
  const rawCases: [string, string | Buffer][] = [
    ['garbage', 'GARBAGE\r\n\r\n'],
    ['no target', 'GET\r\n\r\n'],
    ['bad version', 'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n'],
    ['space in target', 'GET /he althz HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['header without colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'],
    ['space before colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n'],
    ['nul in header', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n'],
    ['nul in target', 'GET /healthz\u0000 HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['bare LF', 'GET /healthz HTTP/1.1\nHost: x\n\n'],
    [
      'CL and TE',
      'POST /api/account/api-keys HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    [
      'two content-lengths',
      'POST /api/account/api-keys HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
    ],
    [
      'negative content-length',
      'POST /api/account/api-keys HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
    ],
    [
      'bad chunk',
      'POST /api/account/api-keys HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
    ],
    [
      'content-length lies short',
      'POST /api/account/api-keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{"name":"abcdef"}',
    ],
    ['no host (HTTP/1.1)', 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n'],
    ['HTTP/1.0', 'GET /healthz HTTP/1.0\r\n\r\n'],
    [
      'utf-8 in target',
      Buffer.from('GET /api/v1/usage?endpoint=ü HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'utf8'),
    ],
    [
      'utf-8 key',
      Buffer.from(
        'GET /api/v1/usage HTTP/1.1\r\nHost: x\r\nX-API-Key: rwk_ключ\r\nConnection: close\r\n\r\n',
        'utf8',
      ),
    ],
    ['obs-fold header', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\nConnection: close\r\n\r\n'],
    ['empty host', 'GET /healthz HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n'],
    ['evil host', 'GET /healthz HTTP/1.1\r\nHost: evil.example:99999\r\nConnection: close\r\n\r\n'],
  ];
  for (const [name, bytes] of rawCases)
    cases.push({ name: `raw ${name}`, raw: Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, 'latin1') });

  // Object.prototype's names (`constructor`, `__proto__`…) wherever a free string is used as a key.
  for (const p of prototypeKeyCases())
    cases.push({
      name: `prototype key: ${p.name}`,
      method: p.method,
      path: p.path,
      ...(p.body ? { headers: [['Content-Type', 'application/json']], body: JSON.stringify(p.body) } : {}),
      auth: [p.auth],
      status: p.status,
      ...(p.code ? { code: p.code } : {}),
    });
  return cases;
}

function serialise(c: Case, auth: Auth, creds: { key: TestKey; jwt: string }): Buffer {
  if (c.raw) return c.raw;
  const headers: [string, string][] = [
    ['Host', '127.0.0.1'],
    ['Connection', 'close'],
  ];
  if (auth === 'key') headers.push(['X-API-Key', creds.key.key]);
  if (auth === 'jwt') headers.push(['Authorization', `Bearer ${creds.jwt}`]);
  if (auth === 'agent') headers.push(['x-service-agent-key', AGENT_KEY]);
  headers.push(...(c.headers ?? []));
  const chunked = headers.some(([n, v]) => n.toLowerCase() === 'transfer-encoding' && /chunked/i.test(v));
  let body = c.body === undefined ? undefined : Buffer.from(c.body);
  if (body && chunked)
    body = Buffer.concat([
      Buffer.from(`${body.length.toString(16)}\r\n`),
      body,
      Buffer.from('\r\n0\r\n\r\n'),
    ]);
  else if (body && !headers.some(([n]) => n.toLowerCase() === 'content-length'))
    headers.push(['Content-Length', String(body.length)]);
  const head = `${c.method ?? 'GET'} ${c.path ?? '/'} HTTP/1.1\r\n${headers.map(([n, v]) => `${n}: ${v}`).join('\r\n')}\r\n\r\n`;
  // Header values go out as UTF-8 bytes: unicode keys and ids arrive as the raw bytes a client would send.
  return body ? Buffer.concat([Buffer.from(head, 'utf8'), body]) : Buffer.from(head, 'utf8');
}

/** Everything wrong with one response, as strings (empty when it is fine). */
function judge(c: Case, method: string, res: RawResponse): string[] {
  const problems: string[] = [];
  if (res.status === 0) return c.mayDrop ? [] : ['no response'];
  if (res.status >= 500) problems.push(`5xx ${res.status}: ${res.body.slice(0, 200)}`);
  const requestId = res.headers['x-request-id'];
  if (!requestId) problems.push('no X-Request-Id');
  if (c.badRequestId !== undefined && requestId !== undefined) {
    if (requestId.includes(c.badRequestId) || !GENERATED_ID.test(requestId))
      problems.push(`echoed a bad X-Request-Id: ${requestId.slice(0, 60)}`);
  }
  const expected = c.status === undefined ? undefined : ([] as number[]).concat(c.status);
  if (expected && !expected.includes(res.status))
    problems.push(`status ${res.status}, expected ${expected.join('|')}`);
  if (res.status === 405 && !res.headers.allow) problems.push('405 without Allow');
  if (res.status >= 400 && method !== 'HEAD') {
    if (!/^application\/problem\+json/.test(res.headers['content-type'] ?? ''))
      problems.push(`content-type ${res.headers['content-type']}`);
    try {
      const body = JSON.parse(res.body) as { code?: unknown; request_id?: unknown; status?: unknown };
      if (typeof body.code !== 'string' || !body.code) problems.push('problem without code');
      if (c.code && body.code !== c.code) problems.push(`code ${String(body.code)}, expected ${c.code}`);
      if (body.request_id !== requestId) problems.push('request_id differs from X-Request-Id');
      if (body.status !== res.status) problems.push(`body status ${String(body.status)}`);
    } catch {
      problems.push(`non-JSON error body: ${res.body.slice(0, 100)}`);
    }
  }
  return problems;
}

describe('2,000 malformed or hostile requests', () => {
  let env: Record<string, string>;
  let dropDatabase: () => Promise<void>;
  let svc: RunningService;
  let key: TestKey;
  let jwt: string;

  beforeAll(async () => {
    const idp = testIdentityProvider();
    ({ env, dropDatabase } = await prepareEnv({ ...idp.env, ...UNREACHABLE_RPC_ENV, AGENT_KEYS: AGENT_KEY }));
    key = (await createCustomer(env, 'hostile', ['k'], { rateLimitPerMin: 100_000 })).keys.k!;
    jwt = idp.sign({ org_id: 'hostile', roles: [KEY_ADMIN_ROLE], sub: 'attacker' }, { expiresIn: '1h' });
    svc = await startService(env, 'all');
  }, 180_000);

  afterAll(async () => {
    await svc?.stop();
    await dropDatabase?.();
  });

  it('answers every one without a 5xx, each error as problem+json with code and request id', async () => {
    const cases = buildCases();
    const random = prng(20261122);
    const port = Number(new URL(svc.baseUrl).port);
    const byStatus: Record<number, number> = {};
    const failures: string[] = [];
    let fiveXx = 0;
    let next = 0;
    const started = Date.now();

    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < TOTAL) {
          const i = next++;
          const c = cases[i % cases.length]!;
          const options = c.auth ?? ['none', 'key'];
          const auth = options[Math.floor(random() * options.length)]!;
          let res: RawResponse;
          try {
            res = await rawRequest(port, serialise(c, auth, { key, jwt }), { timeoutMs: 15_000 });
          } catch (err) {
            failures.push(`#${i} ${c.name} [${auth}]: ${(err as Error).message}`);
            continue;
          }
          byStatus[res.status] = (byStatus[res.status] ?? 0) + 1;
          if (res.status >= 500) fiveXx++;
          for (const p of judge(c, c.method ?? 'GET', res)) failures.push(`#${i} ${c.name} [${auth}]: ${p}`);
        }
      }),
    );

    const ms = Date.now() - started;
    console.log(
      `[hostile] ${TOTAL} requests (${cases.length} distinct cases) in ${ms} ms; 5xx: ${fiveXx}; ` +
        `by status ${JSON.stringify(byStatus)}`,
    );
    expect(failures).toEqual([]);
    expect(fiveXx).toBe(0);
    expect(sumValues(byStatus)).toBe(TOTAL);

    // Still alive and well.
    expect(svc.process.exitCode).toBeNull();
    const live = await fetch(`${svc.baseUrl}/healthz`);
    expect(live.status).toBe(200);
    expect((await fetch(`${svc.baseUrl}/readyz`)).status).toBe(200);
    const usage = await fetch(`${svc.baseUrl}/api/v1/usage?limit=1`, { headers: { 'X-API-Key': key.key } });
    expect(usage.status).toBe(200);
    expect(svc.output()).not.toMatch(/unhandled error|uncaught|FATAL/i);
  }, 120_000);

  it('answers the same kinds of input sent through fetch (keep-alive connections)', async () => {
    const base = svc.baseUrl;
    const withKey = { 'X-API-Key': key.key };
    const attempts: [string, RequestInit, number][] = [
      ['/nope', {}, 404],
      ['/api/v1/usage', { method: 'POST', headers: withKey }, 405],
      ['/api/v1/usage', { method: 'PROPFIND', headers: withKey }, 405],
      ['/api/v1/usage?limit=0', { headers: withKey }, 400],
      ['/api/v1/usage?limit=1&limit=2', { headers: withKey }, 400],
      ['/api/v1/usage', { headers: { ...withKey, Origin: 'https://evil.example' } }, 403],
      ['/api/v1/usage', { headers: { 'X-API-Key': 'rwk_nope' } }, 401],
      [
        '/api/account/api-keys',
        {
          method: 'POST',
          headers: { Authorization: `Bearer ${jwt}`, 'Content-Type': 'application/json' },
          body: '{bad',
        },
        400,
      ],
      [
        '/api/account/api-keys',
        {
          method: 'POST',
          headers: { Authorization: `Bearer ${jwt}`, 'Content-Type': 'text/plain' },
          body: '{}',
        },
        415,
      ],
      [
        '/api/account/api-keys',
        {
          method: 'POST',
          headers: { Authorization: `Bearer ${jwt}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ name: 'x'.repeat(100 * 1024) }),
        },
        413,
      ],
    ];
    for (let round = 0; round < 3; round++)
      for (const [path, init, status] of attempts) {
        const res = await fetch(`${base}${path}`, {
          ...init,
          headers: { ...(init.headers as Record<string, string>), 'X-Request-Id': 'not valid!' },
        });
        const text = await res.text();
        expect(res.status, `${init.method ?? 'GET'} ${path}: ${text.slice(0, 200)}`).toBe(status);
        expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        const requestId = res.headers.get('x-request-id');
        expect(requestId).toMatch(GENERATED_ID);
        const body = JSON.parse(text) as { code: string; request_id: string };
        expect(body.code).toEqual(expect.any(String));
        expect(body.request_id).toBe(requestId);
        if (status === 405) expect(res.headers.get('allow')).toMatch(/GET/);
      }
    expect(svc.process.exitCode).toBeNull();
  }, 60_000);
});

const sumValues = (o: Record<number, number>) => Object.values(o).reduce((a, b) => a + b, 0);
