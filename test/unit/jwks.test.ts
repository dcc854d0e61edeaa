import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { JwksKeySet, parseJwks } from '../../src/http/jwks.js';
import { AppError } from '../../src/platform/errors.js';
import { loadConfig } from '../../src/config.js';

const jwk = (kid: string, use = 'sig') => ({
  ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' }),
  kid,
  use,
});

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A JWKS endpoint whose answer is `body()` at each fetch; counts fetches. */
async function endpoint(body: () => { status?: number; text: string; headers?: Record<string, string> }) {
  const state = { fetches: 0 };
  const server = createServer((_req, res) => {
    state.fetches++;
    const b = body();
    res.writeHead(b.status ?? 200, { 'content-type': 'application/json', ...b.headers });
    res.end(b.text);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`, state };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('JwksKeySet', () => {
  it('takes up a key added at the provider on its timed refresh, with no token asking for it', async () => {
    const keys = [jwk('a')];
    const idp = await endpoint(() => ({ text: JSON.stringify({ keys }) }));
    const set = new JwksKeySet({ url: idp.url, refreshMs: 200, minRefreshMs: 60_000 });
    await set.start();
    try {
      expect(await set.key('a')).toBeDefined();
      expect(await set.key('b')).toBeUndefined(); // within minRefreshMs: no fetch
      const fetched = idp.state.fetches;
      keys.push(jwk('b'));
      await sleep(450);
      expect(idp.state.fetches).toBeGreaterThan(fetched);
      expect(await set.key('b')).toBeDefined();
    } finally {
      set.stop();
    }
  });

  it('refetches on an unknown kid at most once per minRefreshMs, sharing one fetch among concurrent look-ups', async () => {
    const idp = await endpoint(() => ({ text: JSON.stringify({ keys: [jwk('a')] }) }));
    const set = new JwksKeySet({ url: idp.url, refreshMs: 60_000, minRefreshMs: 300 });
    await set.start();
    try {
      expect(idp.state.fetches).toBe(1);
      await sleep(320);
      const found = await Promise.all(Array.from({ length: 50 }, (_, i) => set.key(`made-up-${i}`)));
      expect(found.every((k) => k === undefined)).toBe(true);
      expect(idp.state.fetches).toBe(2);
      for (let i = 0; i < 50; i++) await set.key(`again-${i}`);
      expect(idp.state.fetches).toBe(2);
    } finally {
      set.stop();
    }
  });

  it('keeps the keys it holds when a refresh fails, and is unavailable (503) while it never had any', async () => {
    let broken = true;
    const idp = await endpoint(() =>
      broken ? { status: 500, text: 'down' } : { text: JSON.stringify({ keys: [jwk('a')] }) },
    );
    const set = new JwksKeySet({ url: idp.url, refreshMs: 60_000, minRefreshMs: 1 });
    await set.start();
    await expect(set.key('a')).rejects.toSatisfy(
      (err) => err instanceof AppError && err.code === 'dependency_unavailable',
    );
    broken = false;
    await sleep(5);
    expect(await set.key('a')).toBeDefined();
    broken = true;
    await sleep(5);
    expect(await set.key('unknown')).toBeUndefined();
    expect(await set.key('a')).toBeDefined();
    set.stop();
  });

  it('does not follow redirects and refuses an oversized answer', async () => {
    const target = await endpoint(() => ({ text: JSON.stringify({ keys: [jwk('a')] }) }));
    const redirecting = await endpoint(() => ({ status: 302, text: '', headers: { location: target.url } }));
    const viaRedirect = new JwksKeySet({ url: redirecting.url, refreshMs: 60_000, minRefreshMs: 60_000 });
    await viaRedirect.start();
    viaRedirect.stop();
    expect(target.state.fetches).toBe(0);
    await expect(viaRedirect.key('a')).rejects.toBeInstanceOf(AppError);

    const huge = await endpoint(() => ({
      text: JSON.stringify({ keys: [jwk('a')], pad: 'x'.repeat(2 << 20) }),
    }));
    const oversized = new JwksKeySet({ url: huge.url, refreshMs: 60_000, minRefreshMs: 60_000 });
    await oversized.start();
    oversized.stop();
    await expect(oversized.key('a')).rejects.toBeInstanceOf(AppError);
  });

  it('keeps signing keys only, and a lone key serves a token without kid', () => {
    const keys = parseJwks(JSON.stringify({ keys: [jwk('s'), jwk('e', 'enc'), { kty: 'RSA', kid: 'bad' }] }));
    expect([...keys.keys()]).toEqual(['s']);
    expect(() => parseJwks('{"nokeys":true}')).toThrow(/JWKS/);
  });
});

describe('JWT configuration', () => {
  it('wants JWT_JWKS_URL over https, except on loopback', () => {
    expect(() => loadConfig({ JWT_JWKS_URL: 'http://idp.example/jwks' })).toThrow(
      /JWT_JWKS_URL \(auth\.jwt\.jwks_url\): expected empty or an https:\/\/ URL/,
    );
    expect(() => loadConfig({ JWT_JWKS_URL: 'ftp://127.0.0.1/jwks' })).toThrow(/JWT_JWKS_URL/);
    for (const url of ['https://idp.example/jwks', 'http://127.0.0.1:8080/jwks', 'http://localhost/jwks'])
      expect(loadConfig({ JWT_JWKS_URL: url }).auth.jwt.jwks_url).toBe(url);
  });
});
