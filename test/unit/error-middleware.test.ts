import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonRpcClient } from '../../src/chains/jsonrpc.js';
import { SOLANA_METHODS } from '../../src/chains/solana.js';
import { errorMiddleware } from '../../src/http/middleware/errors.js';
import { startRequest } from '../../src/http/middleware/request-id.js';
import { JsonRpcStub } from '../support/jsonrpc-stub.js';
import { capturingLogger } from '../support/logs.js';

/**
 * A node provider's failure as a caller sees it: a real JSON-RPC client against a stub provider, behind the
 * request id and error middleware, served over HTTP.
 */
describe('errorMiddleware: provider_unavailable', () => {
  let provider: JsonRpcStub;
  let server: ReturnType<Koa['listen']>;
  let baseUrl: string;

  beforeAll(async () => {
    provider = await JsonRpcStub.start({ getSlot: () => 4242 });
    const rpc = new JsonRpcClient({
      network: 'solana/mainnet',
      urls: [provider.url()],
      knownMethods: SOLANA_METHODS,
      deadlineMs: 1000,
      timeoutMs: 500,
      retries: 0,
      backoffBaseMs: 10,
      backoffMaxMs: 50,
      ratePerS: 0,
      concurrency: 4,
      batchMax: 1,
      circuitFailures: 100,
      circuitCooldownMinMs: 1000,
      circuitCooldownMs: 1000,
      maxResponseBytes: 1024 * 1024,
      retryAfterMaxMs: 60_000,
    });
    const app = new Koa();
    app.use((ctx, next) => {
      startRequest(ctx);
      return next();
    });
    app.use(errorMiddleware(capturingLogger('warn').logger));
    app.use(async (ctx) => {
      ctx.body = { slot: await rpc.call('getSlot') };
    });
    app.silent = true;
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await provider.close();
  });

  it("passes the provider's Retry-After on to the caller with the 503", async () => {
    provider.reply = () => ({ status: 429, headers: { 'retry-after': '30' } });
    const res = await fetch(baseUrl);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('30');
    expect(await res.json()).toMatchObject({ code: 'provider_unavailable', status: 503, retryable: true });
  });

  it('sends no Retry-After when the provider named no wait', async () => {
    provider.reply = () => ({ status: 502 });
    const res = await fetch(baseUrl);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBeNull();
    expect(await res.json()).toMatchObject({ code: 'provider_unavailable' });
  });
});
