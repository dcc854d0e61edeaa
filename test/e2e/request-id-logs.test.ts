import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, type TestKey } from '../support/customers.js';
import { eventually, prepareEnv, startService, type RunningService } from '../support/service.js';

const SERVER_ID = /^req_[0-9a-f]{28}$/;

interface LogLine {
  msg?: string;
  request_id?: string;
  client_request_id?: string;
  status?: number;
  route?: string | null;
}

/**
 * Every log line naming a request carries the id the server minted (`request_id`), which a client can
 * neither choose nor collide, and the client's own X-Request-Id beside it (`client_request_id`) when one
 * was sent; the response (header, problem body, usage history) carries the client's id, as documented.
 */
describe('request ids in the logs', () => {
  let env: Record<string, string>;
  let dropDatabase: () => Promise<void>;
  let svc: RunningService;
  let key: TestKey;

  beforeAll(async () => {
    ({ env, dropDatabase } = await prepareEnv({ LOG_LEVEL: 'debug' }));
    key = (await createCustomer(env, 'reqids', ['k'])).keys.k!;
    svc = await startService(env, 'all');
  }, 180_000);

  afterAll(async () => {
    await svc?.stop();
    await dropDatabase?.();
  });

  const logLines = (): LogLine[] =>
    svc
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);

  /** The access log line(s) whose client or server id is `id` (waits for the line to be written). */
  async function accessLog(match: (l: LogLine) => boolean, count = 1): Promise<LogLine[]> {
    const found = await eventually(() => {
      const lines = logLines().filter((l) => l.msg === 'request' && match(l));
      return Promise.resolve(lines.length >= count ? lines : undefined);
    });
    return found ?? [];
  }

  it('a client id is echoed in the response and logged beside the server id', async () => {
    const clientId = 'client-7f3a.b:c_d';
    const res = await fetch(`${svc.baseUrl}/healthz`, { headers: { 'X-Request-Id': clientId } });
    await res.arrayBuffer();
    expect(res.headers.get('x-request-id')).toBe(clientId);

    const [line] = await accessLog((l) => l.client_request_id === clientId);
    expect(line).toMatchObject({ client_request_id: clientId, status: 200, route: '/healthz' });
    expect(line!.request_id).toMatch(SERVER_ID);
  });

  it('without a client id the server id is the response id and the only one logged', async () => {
    const res = await fetch(`${svc.baseUrl}/nope-${Date.now()}`);
    const body = (await res.json()) as { request_id: string };
    const id = res.headers.get('x-request-id')!;
    expect(id).toMatch(SERVER_ID);
    expect(body.request_id).toBe(id);

    const [line] = await accessLog((l) => l.request_id === id);
    expect(line).toMatchObject({ request_id: id, status: 404 });
    expect(line).not.toHaveProperty('client_request_id');
  });

  it('a malformed client id is neither echoed nor logged', async () => {
    const res = await fetch(`${svc.baseUrl}/healthz`, { headers: { 'X-Request-Id': 'has space <x>' } });
    await res.arrayBuffer();
    const id = res.headers.get('x-request-id')!;
    expect(id).toMatch(SERVER_ID);
    const [line] = await accessLog((l) => l.request_id === id);
    expect(line).not.toHaveProperty('client_request_id');
    expect(svc.output()).not.toContain('has space <x>');
  });

  it('a reused id, or one shaped like the server’s, never collides with a logged request id', async () => {
    const forged = 'req_00000000000000000000000000ff';
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${svc.baseUrl}/api/v1/usage?limit=1`, {
        headers: { 'X-Request-Id': forged, 'X-API-Key': key.key },
      });
      const body = await res.text();
      expect(res.status, body).toBe(200);
      expect(res.headers.get('x-request-id')).toBe(forged);
    }
    const lines = await accessLog((l) => l.client_request_id === forged, 3);
    expect(lines).toHaveLength(3);
    const serverIds = new Set(lines.map((l) => l.request_id));
    expect(serverIds.size).toBe(3);
    for (const id of serverIds) expect(id).not.toBe(forged);
    expect(logLines().filter((l) => l.request_id === forged)).toEqual([]);
  });

  it("the usage history shows the id the response carried: the client's own", async () => {
    const clientId = `usage-check-${Date.now()}`;
    const res = await fetch(`${svc.baseUrl}/api/v1/usage?limit=1`, {
      headers: { 'X-Request-Id': clientId, 'X-API-Key': key.key },
    });
    await res.arrayBuffer();
    expect(res.status).toBe(200);
    const recorded = await eventually(async () => {
      const page = await fetch(`${svc.baseUrl}/api/v1/usage?limit=100`, {
        headers: { 'X-API-Key': key.key },
      });
      const { data } = (await page.json()) as { data: { request_id: string }[] };
      return data.find((r) => r.request_id === clientId);
    }, 10_000);
    expect(recorded).toBeDefined();
  }, 20_000);
});
