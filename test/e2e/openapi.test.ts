import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { prepareEnv, startService, type RunningService, type TestEnv } from '../support/service.js';

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  security?: Record<string, string[]>[];
  responses: Record<string, { content?: Record<string, unknown> }>;
}
interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; license?: { name: string } };
  servers?: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: {
    securitySchemes: Record<string, Record<string, string>>;
    schemas: Record<string, Record<string, unknown>>;
  };
}

/** Every route the service serves, with the security scheme it takes (`[]`: no credential). */
const ROUTES: [method: string, path: string, security: string[]][] = [
  ['get', '/api/public/impact', []],
  ['get', '/healthz', []],
  ['get', '/readyz', []],
  ['get', '/api/agent/health', ['agentKey']],
  ['get', '/api/v1/usage', ['apiKey']],
  ['get', '/api/v1/lists/{list}/entries', ['apiKey']],
  ['post', '/api/v1/lists/{list}/entries', ['apiKey']],
  ['delete', '/api/v1/lists/{list}/entries/{id}', ['apiKey']],
  ['post', '/api/v1/watchlists', ['apiKey']],
  ['get', '/api/v1/watchlists', ['apiKey']],
  ['get', '/api/v1/watchlists/{id}', ['apiKey']],
  ['patch', '/api/v1/watchlists/{id}', ['apiKey']],
  ['delete', '/api/v1/watchlists/{id}', ['apiKey']],
  ['post', '/api/v1/watchlists/{id}/entries', ['apiKey']],
  ['get', '/api/v1/watchlists/{id}/entries', ['apiKey']],
  ['delete', '/api/v1/watchlists/{id}/entries/{entry_id}', ['apiKey']],
  ['post', '/api/v1/watchlists/{id}/entries/remove', ['apiKey']],
  ['get', '/api/v1/watchlists/{id}/entries/{entry_id}/snapshots', ['apiKey']],
  ['post', '/api/v1/watchlists/{id}/rescan', ['apiKey']],
  ['get', '/api/v1/watchlists/{id}/rescans/{rescan_id}', ['apiKey']],
  ['get', '/api/v1/watchlists/{id}/alerts', ['apiKey']],
  ['patch', '/api/v1/watchlists/{id}/alerts/{alert_id}', ['apiKey']],
  ['post', '/api/v1/webhooks/endpoints', ['apiKey']],
  ['get', '/api/v1/webhooks/endpoints', ['apiKey']],
  ['get', '/api/v1/webhooks/endpoints/{id}', ['apiKey']],
  ['patch', '/api/v1/webhooks/endpoints/{id}', ['apiKey']],
  ['delete', '/api/v1/webhooks/endpoints/{id}', ['apiKey']],
  ['post', '/api/v1/webhooks/endpoints/{id}/rotate-secret', ['apiKey']],
  ['post', '/api/v1/webhooks/endpoints/{id}/test', ['apiKey']],
  ['post', '/api/v1/webhooks/endpoints/{id}/recover', ['apiKey']],
  ['get', '/api/v1/webhooks/deliveries', ['apiKey']],
  ['post', '/api/v1/webhooks/deliveries/{id}/redeliver', ['apiKey']],
  ['get', '/api/v1/events', ['apiKey']],
  ['post', '/api/web3/risk-v2', ['bearer']],
  ['post', '/api/v1/scan/token', ['apiKey']],
  ['get', '/api/v1/approvals', ['apiKey']],
  ['post', '/api/v1/shield/preflight', ['apiKey']],
  ['post', '/api/v1/screenings', ['apiKey']],
  ['get', '/api/v1/screenings', ['apiKey']],
  ['get', '/api/v1/screenings/{id}', ['apiKey']],
  ['get', '/api/v1/screenings/{id}/results', ['apiKey']],
  ['get', '/api/v1/screenings/{id}/results.csv', ['apiKey']],
  ['get', '/api/v1/audit-log', ['apiKey']],
  ['get', '/api/v1/audit-log/{id}', ['apiKey']],
  ['post', '/api/v1/feedback', ['apiKey']],
  ['get', '/api/v1/feedback', ['apiKey']],
  ['get', '/api/v1/feedback/{id}', ['apiKey']],
  ['post', '/api/account/api-keys', ['bearer']],
  ['get', '/api/account/api-keys', ['bearer']],
  ['delete', '/api/account/api-keys/{id}', ['bearer']],
];

interface RedoclyReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; severity: string; message: string; location: { pointer?: string }[] }[];
}

/** `redocly lint` (the recommended ruleset, no network) on `file`; resolves with its exit code and report. */
function redoclyLint(
  dir: string,
  file: string,
): Promise<{ code: number; report: RedoclyReport; stderr: string }> {
  const config = join(dir, 'redocly.yaml');
  writeFileSync(config, 'extends:\n  - recommended\ntelemetry: off\n');
  return new Promise((resolve, reject) => {
    execFile(
      join(PROJECT_ROOT, 'node_modules', '.bin', 'redocly'),
      ['lint', '--config', config, '--format', 'json', '--max-problems', '1000', file],
      {
        cwd: dir,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', CI: 'true' },
        timeout: 120_000,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        try {
          resolve({ code, report: JSON.parse(stdout) as RedoclyReport, stderr });
        } catch {
          reject(new Error(`redocly lint printed no JSON report (exit ${code}):\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

describe('OpenAPI document and /docs', () => {
  let testEnv: TestEnv;
  let service: RunningService;
  let doc: OpenApiDocument;
  let tmp: string;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'rw-openapi-'));
    testEnv = await prepareEnv();
    service = await startService(testEnv.env);
    const res = await fetch(`${service.baseUrl}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    doc = (await res.json()) as OpenApiDocument;
  });

  afterAll(async () => {
    await service?.stop();
    await testEnv?.dropDatabase();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('is OpenAPI 3.1.0 with info, license and a relative server', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toBeTruthy();
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(doc.info.license?.name).toBeTruthy();
    expect(doc.servers?.[0]?.url).toBe('/');
  });

  it('lists every served route with its credential', () => {
    for (const [method, path, schemes] of ROUTES) {
      const op = doc.paths[path]?.[method];
      expect(op, `${method.toUpperCase()} ${path}`).toBeDefined();
      expect(op!.operationId).toBeTruthy();
      expect(op!.summary).toBeTruthy();
      expect(op!.security, `${method} ${path} security`).toEqual(schemes.map((s) => ({ [s]: [] })));
    }
    // …and nothing else: a route added without a line here fails.
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops as object).map((method) => `${method} ${path}`),
    );
    expect(documented.sort()).toEqual(ROUTES.map(([m, p]) => `${m} ${p}`).sort());
  });

  it('documents an event’s data per type: Event is a union on `type`, one schema of data each', () => {
    const event = doc.components.schemas.Event as {
      oneOf?: { $ref: string }[];
      discriminator?: { propertyName: string; mapping?: Record<string, string> };
    };
    expect(event.discriminator?.propertyName).toBe('type');
    const variants = (event.oneOf ?? []).map((v) => v.$ref.split('/').pop()!);
    const dataOf = (name: string) =>
      ((doc.components.schemas[name]!.properties as Record<string, { $ref?: string }>).data?.$ref ?? '')
        .split('/')
        .pop();
    expect(Object.fromEntries(variants.map((v) => [v, dataOf(v)]))).toEqual({
      Event_watchlist_alert: 'WatchlistAlertEventData',
      Event_webhook_test: 'WebhookTestEventData',
      Event_webhook_endpoint_disabled: 'WebhookEndpointDisabledEventData',
      Event_screening_completed: 'ScreeningCompletedEventData',
    });
    // The alert event's alert is the object GET …/alerts serves.
    const alertData = doc.components.schemas.WatchlistAlertEventData!.properties as Record<
      string,
      { $ref?: string }
    >;
    expect(alertData.alert?.$ref).toBe('#/components/schemas/WatchlistAlert');
  });

  it('defines the security schemes the operations use', () => {
    expect(doc.components.securitySchemes).toMatchObject({
      apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
      bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      agentKey: { type: 'apiKey', in: 'header', name: 'x-service-agent-key' },
    });
    for (const [path, item] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(item))
        for (const requirement of op.security ?? [])
          for (const scheme of Object.keys(requirement))
            expect(doc.components.securitySchemes, `${method} ${path} uses ${scheme}`).toHaveProperty(scheme);
  });

  it('documents error responses as problem+json, and what the service really answers', async () => {
    for (const [path, item] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(item)) {
        for (const [status, response] of Object.entries(op.responses))
          if (Number(status) >= 400)
            expect(Object.keys(response.content ?? {}), `${method} ${path} ${status}`).toEqual([
              expect.stringMatching(/^application\/(problem|health)\+json$/),
            ]);
        // A call without a credential (or body) gets a documented status: the route exists as described.
        const res = await fetch(service.baseUrl + path.replace(/\{\w+\}/g, 'x'), {
          method: method.toUpperCase(),
        });
        await res.arrayBuffer();
        expect(Object.keys(op.responses), `${method.toUpperCase()} ${path} answered ${res.status}`).toContain(
          String(res.status),
        );
      }
  });

  it('passes redocly lint (recommended ruleset) without errors or warnings', async () => {
    const file = join(tmp, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc, null, 2));
    const { code, report, stderr } = await redoclyLint(tmp, file);
    const problems = report.problems.map(
      (p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`,
    );
    expect(problems, stderr).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    expect(code).toBe(0);
  });

  it('serves /docs from same-origin assets only, each with its content type', async () => {
    const res = await fetch(`${service.baseUrl}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    const html = await res.text();
    expect(html).toContain('id="swagger-ui"');
    expect(html, 'no absolute URLs to other hosts').not.toMatch(/(https?:)?\/\/[a-z0-9.-]+/i);

    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThanOrEqual(3);
    const expectedType: Record<string, RegExp> = {
      '.css': /^text\/css/,
      '.js': /^(text|application)\/javascript/,
    };
    for (const ref of refs) {
      const url = new URL(ref, `${service.baseUrl}/docs`);
      expect(url.origin, ref).toBe(service.baseUrl);
      const asset = await fetch(url);
      expect(asset.status, ref).toBe(200);
      const ext = /\.\w+$/.exec(url.pathname)?.[0] ?? '';
      expect(expectedType[ext], `a known asset type: ${ref}`).toBeDefined();
      expect(asset.headers.get('content-type'), ref).toMatch(expectedType[ext]!);
      const body = await asset.text();
      expect(body.length, ref).toBeGreaterThan(0);
      if (ext === '.css')
        expect(body, `${ref} loads nothing remote`).not.toMatch(/url\(\s*["']?(https?:)?\/\//);
    }

    // The page's own script points Swagger UI at this server's document and keeps it off the online validator.
    const init = await (await fetch(`${service.baseUrl}/docs/docs-init.js`)).text();
    expect(init).toContain("url: '/openapi.json'");
    expect(init).toContain('validatorUrl: null');
  });

  it('answers unknown /docs assets with a 404 problem', async () => {
    const missing = await fetch(`${service.baseUrl}/docs/nope.js`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const traversal = await fetch(`${service.baseUrl}/docs/..%2Fpackage.json`);
    expect(traversal.status).toBe(404);
    await traversal.arrayBuffer();
  });
});
