import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import Koa from 'koa';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorMiddleware } from '../../src/http/middleware/errors.js';
import { startRequest } from '../../src/http/middleware/request-id.js';

const SERVER_ID = /^req_[0-9a-f]{28}$/;

/** The error middleware's log lines name the request by the server's id, the client's beside it. */
describe('request ids in error logs', () => {
  const lines: Record<string, unknown>[] = [];
  let server: Server;
  let base: string;

  beforeAll(async () => {
    const logger = pino(
      { level: 'debug' },
      { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) },
    );
    const app = new Koa();
    app.silent = true;
    app.use((ctx, next) => {
      startRequest(ctx);
      return next();
    });
    app.use(errorMiddleware(logger));
    app.use((ctx) => {
      if (ctx.path === '/bug') throw new Error('a bug');
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    });
    server = createServer(app.callback()).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise((resolve) => server.close(resolve)));

  async function call(path: string, clientId?: string) {
    const res = await fetch(`${base}${path}`, { headers: clientId ? { 'X-Request-Id': clientId } : {} });
    const body = (await res.json()) as { request_id: string; code: string };
    return { res, body, header: res.headers.get('x-request-id')! };
  }

  it('unhandled error: 500 carrying the client id; the log has the server id and the client id', async () => {
    const { res, body, header } = await call('/bug', 'client-1');
    expect(res.status).toBe(500);
    expect([header, body.request_id]).toEqual(['client-1', 'client-1']);
    const line = lines.find((l) => l.msg === 'unhandled error' && l.client_request_id === 'client-1');
    expect(line?.request_id).toMatch(SERVER_ID);
  });

  it('dependency failure without a client id: one id, the server’s, in response and log', async () => {
    const { res, body, header } = await call('/db');
    expect(res.status).toBe(503);
    expect(body).toMatchObject({ code: 'dependency_unavailable', request_id: header });
    expect(header).toMatch(SERVER_ID);
    const line = lines.find((l) => l.msg === 'dependency unavailable' && l.request_id === header);
    expect(line).toBeDefined();
    expect(line).not.toHaveProperty('client_request_id');
  });

  it('a client id shaped like a server id is still only the client id', async () => {
    const forged = 'req_0000000000000000000000000000';
    const { header } = await call('/bug', forged);
    expect(header).toBe(forged);
    const line = lines.find((l) => l.msg === 'unhandled error' && l.client_request_id === forged);
    expect(line?.request_id).toMatch(SERVER_ID);
    expect(line?.request_id).not.toBe(forged);
  });
});
