import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createCustomer, type TestCustomer } from '../support/customers.js';
import { parseSamples, promtoolCheck, UPSTREAM_LINT } from '../support/prometheus.js';
import {
  freePort,
  MAIN,
  prepareEnv,
  startService,
  type RunningService,
  type TestEnv,
} from '../support/service.js';

/**
 * `server.api_processes` (RISKWATCH_API_PROCESSES): the api role on several processes of one machine. The
 * process started supervises them (src/cluster.ts): they share the API port, their metrics are summed on
 * the supervisor's metrics port, one that dies is replaced, and SIGTERM stops them all.
 */

/** The pids of the supervisor's children. */
const childrenOf = (pid: number): number[] => {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return []; // pgrep exits 1 when there is none
  }
};

/** The roles the supervisor gave a child (its RISKWATCH_CHILD_ROLES). */
const rolesOf = (pid: number): string | undefined =>
  /(?:^|\0)RISKWATCH_CHILD_ROLES=([^\0]*)/.exec(readFileSync(`/proc/${pid}/environ`, 'latin1'))?.[1];

/** One request on a connection of its own (so the kernel may hand it to either process). */
const getFresh = (url: string, init: RequestInit = {}) =>
  fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), Connection: 'close' } });

async function counted(svc: RunningService, route: string): Promise<number> {
  const text = await (await fetch(svc.metricsUrl)).text();
  return parseSamples(text)
    .filter((s) => s.name === 'http_requests_total' && s.labels.route === route)
    .reduce((n, s) => n + s.value, 0);
}

describe('the api role on several processes', () => {
  let env: TestEnv;
  let svc: RunningService;
  let acme: TestCustomer;

  beforeAll(async () => {
    env = await prepareEnv();
    acme = await createCustomer(env.env, 'acme', ['ci']);
    // `all`: two API processes and one with the worker and the scheduler.
    svc = await startService({ ...env.env, RISKWATCH_API_PROCESSES: '2' }, 'all');
  }, 60_000);

  afterAll(async () => {
    await svc?.stop();
    await env?.dropDatabase();
  });

  it('serves the port from every API process and sums their metrics on the supervisor', async () => {
    const pid = svc.process.pid!;
    await vi.waitFor(() => expect(childrenOf(pid)).toHaveLength(3), { timeout: 15_000, interval: 100 });
    const before = await counted(svc, '/api/public/impact');
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => getFresh(`${svc.baseUrl}/api/public/impact`)),
    );
    expect(answers.map((r) => r.status)).toEqual(Array.from({ length: 40 }, () => 200));
    // Every answer counted once, whichever process gave it.
    expect((await counted(svc, '/api/public/impact')) - before).toBe(40);

    const text = await (await fetch(svc.metricsUrl)).text();
    const { code, lines } = await promtoolCheck(text);
    expect(lines.filter((l) => !UPSTREAM_LINT.has(l))).toEqual([]);
    expect([0, 3]).toContain(code); // 3: only the tolerated lint findings
    // Each child's series apart, named by its slot: a replaced child's counters restart as a reset of
    // their own series (what Prometheus expects), not as a sum going backwards.
    const builds = parseSamples(text).filter((s) => s.name === 'riskwatch_build_info');
    expect(builds.map((b) => b.labels.process).sort()).toEqual(['api-0', 'api-1', 'worker']);
    for (const b of builds) expect(b.value).toBe(1);
  });

  it('refuses to share its port with a second instance (SO_REUSEPORT would let it)', async () => {
    const port = new URL(svc.baseUrl).port;
    const second = spawn(process.execPath, [MAIN, 'api'], {
      env: {
        ...process.env,
        ...env.env,
        PORT: port,
        METRICS_PORT: String(await freePort()),
        RISKWATCH_HOST: '127.0.0.1',
        RISKWATCH_API_PROCESSES: '2',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    second.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => second.once('exit', resolve));
    expect(code).not.toBe(0);
    expect(out).toMatch(/EADDRINUSE/);
  });

  it('records API-key calls through the worker process (usage)', async () => {
    const key = acme.keys.ci!.key;
    const res = await getFresh(`${svc.baseUrl}/api/v1/usage?limit=1`, { headers: { 'X-API-Key': key } });
    expect(res.status).toBe(200);
    await vi.waitFor(
      async () => {
        const page = (await (
          await fetch(`${svc.baseUrl}/api/v1/usage?limit=10`, { headers: { 'X-API-Key': key } })
        ).json()) as { summary: { total: number } };
        expect(page.summary.total).toBeGreaterThanOrEqual(1);
      },
      { timeout: 10_000, interval: 200 },
    );
  });

  it('replaces an API process that dies, and keeps answering meanwhile', async () => {
    const pid = svc.process.pid!;
    const before = childrenOf(pid);
    expect(before).toHaveLength(3);
    const victim = before.find((child) => rolesOf(child) === 'api')!;
    process.kill(victim, 'SIGKILL');
    // Connections the kernel had already queued on the killed process are lost with it (SO_REUSEPORT);
    // once it is gone, the other API process answers every new one.
    await vi.waitFor(() => expect(() => process.kill(victim, 0)).toThrow(), { timeout: 5000, interval: 20 });
    const meanwhile = await Promise.all(
      Array.from({ length: 10 }, () => getFresh(`${svc.baseUrl}/healthz`).then((r) => r.status)),
    );
    expect(meanwhile.every((s) => s === 200)).toBe(true);
    await vi.waitFor(
      () => {
        const now = childrenOf(pid);
        expect(now).toHaveLength(3);
        expect(now).not.toContain(victim);
        expect(now.filter((child) => rolesOf(child) === 'api')).toHaveLength(2);
      },
      { timeout: 20_000, interval: 100 },
    );
  });

  it('stops every process on SIGTERM and exits 0', async () => {
    const pid = svc.process.pid!;
    const children = childrenOf(pid);
    expect(await svc.stop()).toBe(0);
    for (const child of children) expect(() => process.kill(child, 0)).toThrow();
  });
});
