import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_ADMIN_ROLE, testIdentityProvider } from '../support/jwt.js';
import { parseSamples, promtoolCheck, UPSTREAM_LINT, type Sample } from '../support/prometheus.js';
import { cli, prepareEnv, startService, type RunningService, type TestEnv } from '../support/service.js';

const labelKey = (s: Sample) => `${s.name}{${JSON.stringify(s.labels)}}`;

describe('Prometheus /metrics', () => {
  let testEnv: TestEnv;
  let service: RunningService;
  let apiKey: string;
  let bearer: string;

  const scrape = async () => {
    const res = await fetch(service.metricsUrl);
    expect(res.status).toBe(200);
    return { contentType: res.headers.get('content-type'), text: await res.text() };
  };
  const httpSamples = async (name: string) =>
    parseSamples((await scrape()).text).filter((s) => s.name === name);

  beforeAll(async () => {
    const idp = testIdentityProvider();
    testEnv = await prepareEnv(idp.env);
    const orgId = `org_${randomBytes(4).toString('hex')}`;
    const out = await cli(testEnv.env, ['bootstrap', '--org-id', orgId]);
    apiKey = /api key\s+(rwk_\w+)/.exec(out)?.[1] ?? '';
    expect(apiKey).toMatch(/^rwk_/);
    bearer = `Bearer ${idp.sign({ sub: 'user-1', org_id: orgId, roles: [KEY_ADMIN_ROLE] })}`;
    service = await startService(testEnv.env);

    const api = (path: string, init: RequestInit = {}) => fetch(service.baseUrl + path, init);
    expect((await api('/api/v1/usage', { headers: { 'X-API-Key': apiKey } })).status).toBe(200);
    expect((await api('/api/v1/usage')).status).toBe(401);
    const created = await api('/api/account/api-keys', {
      method: 'POST',
      headers: { Authorization: bearer, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'metrics test' }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const revoked = await api(`/api/account/api-keys/${id}`, {
      method: 'DELETE',
      headers: { Authorization: bearer },
    });
    expect(revoked.status).toBe(200);
    const missing = await api('/api/account/api-keys/key_doesnotexist', {
      method: 'DELETE',
      headers: { Authorization: bearer },
    });
    expect(missing.status).toBe(404);
    expect((await api('/no/such/path')).status).toBe(404);
    expect((await api('/healthz')).status).toBe(200);
    expect((await api('/docs/swagger-ui.css')).status).toBe(200);
  });

  afterAll(async () => {
    await service?.stop();
    await testEnv?.dropDatabase();
  });

  it('passes promtool check metrics (only the three upstream prom-client gauge names tolerated)', async () => {
    const { contentType, text } = await scrape();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const { code, lines } = await promtoolCheck(text);
    const ours = lines.filter((line) => !UPSTREAM_LINT.has(line));
    expect(ours, `promtool found problems:\n${lines.join('\n')}`).toEqual([]);
    // 0 = clean, 3 = lint findings only (all of them tolerated above); anything else is a parse failure.
    expect([0, 3]).toContain(code);
  });

  it('counts and times HTTP requests by route template, method and status', async () => {
    const text = (await scrape()).text;
    const samples = parseSamples(text);
    const requests = samples.filter((s) => s.name === 'http_requests_total');
    const has = (method: string, route: string, status: string) =>
      requests.some(
        (s) =>
          s.labels.method === method &&
          s.labels.route === route &&
          s.labels.status === status &&
          s.value >= 1,
      );
    expect(has('GET', '/api/v1/usage', '200')).toBe(true);
    expect(has('GET', '/api/v1/usage', '401')).toBe(true);
    expect(has('POST', '/api/account/api-keys', '201')).toBe(true);
    expect(has('DELETE', '/api/account/api-keys/{id}', '200')).toBe(true);
    expect(has('DELETE', '/api/account/api-keys/{id}', '404')).toBe(true);
    expect(has('GET', '/healthz', '200')).toBe(true);
    expect(has('GET', '/docs/{asset}', '200')).toBe(true);
    expect(has('GET', 'unmatched', '404')).toBe(true);

    for (const s of requests) expect(Object.keys(s.labels).sort()).toEqual(['method', 'route', 'status']);
    // Concrete ids and raw paths never become label values.
    expect(text).not.toContain('key_doesnotexist');
    expect(text).not.toContain('/no/such/path');
    expect(requests.every((s) => !/\/key_/.test(s.labels.route ?? ''))).toBe(true);

    const buckets = samples.filter(
      (s) =>
        s.name === 'http_request_duration_seconds_bucket' &&
        s.labels.route === '/api/account/api-keys/{id}' &&
        s.labels.method === 'DELETE',
    );
    expect(buckets.some((s) => s.labels.le === '+Inf' && s.labels.status === '200')).toBe(true);
    const count = samples.find(
      (s) =>
        s.name === 'http_request_duration_seconds_count' &&
        s.labels.route === '/api/v1/usage' &&
        s.labels.method === 'GET' &&
        s.labels.status === '200',
    );
    expect(count?.value).toBeGreaterThanOrEqual(1);
    expect(text).toContain('# TYPE http_requests_total counter');
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
  });

  it('keeps label cardinality bounded: 50 random unmatched paths add no label values', async () => {
    const before = await httpSamples('http_requests_total');
    const unmatchedBefore = before.find((s) => s.labels.route === 'unmatched' && s.labels.status === '404');
    for (let i = 0; i < 50; i++) {
      const res = await fetch(`${service.baseUrl}/${randomBytes(8).toString('hex')}/${i}?q=${i}`);
      expect(res.status).toBe(404);
      await res.arrayBuffer();
    }
    const after = await httpSamples('http_requests_total');
    expect(new Set(after.map(labelKey))).toEqual(new Set(before.map(labelKey)));
    const unmatchedAfter = after.find((s) => s.labels.route === 'unmatched' && s.labels.status === '404');
    expect(unmatchedAfter!.value - unmatchedBefore!.value).toBe(50);
    const durationSeries = async () =>
      new Set(
        parseSamples((await scrape()).text)
          .filter((s) => s.name.startsWith('http_request_duration_seconds'))
          .map(labelKey),
      );
    const seriesBefore = await durationSeries();
    await fetch(`${service.baseUrl}/${randomBytes(8).toString('hex')}`);
    expect(await durationSeries()).toEqual(seriesBefore);
  });

  it('exports riskwatch_build_info with the version, and process/Node.js metrics', async () => {
    const samples = parseSamples((await scrape()).text);
    const build = samples.find((s) => s.name === 'riskwatch_build_info');
    expect(build?.value).toBe(1);
    expect(build?.labels.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(build?.labels).toMatchObject({ role: 'all', node_version: process.version });
    expect(build?.labels.release_id).toBeTruthy();
    const names = new Set(samples.map((s) => s.name));
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'process_open_fds',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
    ])
      expect(names.has(name), name).toBe(true);
  });

  it('exports the dashboard metrics from the start, every known label combination at 0 (docs/metrics.md)', async () => {
    const samples = parseSamples((await scrape()).text);
    const series = (name: string) => samples.filter((s) => s.name === name);
    // riskwatch all: the API's verdicts and decisions, every process's cache lookups, the scheduler's jobs.
    expect(series('riskwatch_verdicts_total')).toHaveLength(3 * 4);
    expect(new Set(series('riskwatch_verdicts_total').map((s) => s.labels.endpoint))).toEqual(
      new Set(['risk-v2', 'scan-token', 'preflight']),
    );
    expect(series('riskwatch_preflight_decisions_total')).toHaveLength(3 * 4 * 2);
    expect(
      series('riskwatch_risk_cache_requests_total')
        .map((s) => s.labels.result)
        .sort(),
    ).toEqual(['hit', 'miss']);
    const jobs = series('riskwatch_jobs');
    expect(new Set(jobs.map((s) => s.labels.state))).toEqual(
      new Set(['waiting', 'active', 'delayed', 'failed']),
    );
    expect(new Set(jobs.map((s) => s.labels.queue))).toContain('watchlist-chunk');
    expect(jobs.length % 4).toBe(0);
    for (const s of [
      ...series('riskwatch_verdicts_total'),
      ...series('riskwatch_preflight_decisions_total'),
      ...series('riskwatch_risk_cache_requests_total'),
    ])
      expect(s.value, JSON.stringify(s)).toBe(0);
    const text = (await scrape()).text;
    for (const [name, type] of [
      ['riskwatch_verdicts_total', 'counter'],
      ['riskwatch_preflight_decisions_total', 'counter'],
      ['riskwatch_risk_cache_requests_total', 'counter'],
      ['riskwatch_rpc_rate_waits_total', 'counter'],
      ['riskwatch_rpc_rate_wait_seconds_total', 'counter'],
      ['riskwatch_jobs', 'gauge'],
    ])
      expect(text).toContain(`# TYPE ${name} ${type}`);
  });

  it('serves metrics on their own port only: /metrics on the API port is a 404 problem', async () => {
    expect(new URL(service.metricsUrl).port).not.toBe(new URL(service.baseUrl).port);
    const res = await fetch(`${service.baseUrl}/metrics`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({ status: 404, code: 'not_found' });
    const other = await fetch(service.metricsUrl.replace(/\/metrics$/, '/api/v1/usage'));
    expect(other.status).toBe(404);
    await other.arrayBuffer();
  });
});
