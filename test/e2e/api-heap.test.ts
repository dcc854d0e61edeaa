import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { memoryCgroup } from '../support/cgroup.js';
import { prepareEnv, startService, type RunningService, type TestEnv } from '../support/service.js';

/**
 * `--max-old-space-size-percentage=P` in NODE_OPTIONS (the Helm chart's `api.heapPercent`, compose's
 * RISKWATCH_API_HEAP_PERCENT) sizes a heap from the container's memory. The API supervisor's children share
 * that memory, so each gets P / processes (src/cluster.ts, childExecArgv). Every process of the service
 * reports its own `v8.getHeapStatistics().heap_size_limit` from a preloaded module, inside a 1 GiB memory
 * cgroup (a container's limit) where the machine allows one.
 */

const PERCENT = 50;
const PROCESSES = 3;
const SHARE = Math.floor(PERCENT / PROCESSES); // 16
const CGROUP_MB = 1024;

/** Written by every process of the service as it starts: its name, Node options and heap limit. */
interface Report {
  child: string | null;
  execArgv: string[];
  heapSizeLimit: number;
}

const PRELOAD = `import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
writeFileSync(
  join(process.env.RISKWATCH_HEAP_REPORT_DIR, process.pid + '.json'),
  JSON.stringify({
    child: process.env.RISKWATCH_CHILD_NAME ?? null,
    execArgv: process.execArgv,
    heapSizeLimit: getHeapStatistics().heap_size_limit,
  }),
);
`;

describe('the heap percentage of the api role over several processes', () => {
  let env: TestEnv;
  let svc: RunningService | undefined;
  let dir = '';
  let cgroup: ReturnType<typeof memoryCgroup> | undefined;
  const cgroupDir = () => (cgroup && 'dir' in cgroup ? cgroup.dir : undefined);

  /** The heap limit of a plain Node process with `--max-old-space-size-percentage=percent`, in the same cgroup. */
  const heapLimitWith = (percent: number): number => {
    const script = 'process.stdout.write(String(require("v8").getHeapStatistics().heap_size_limit))';
    const args = [`--max-old-space-size-percentage=${percent}`, '-e', script];
    const dirOfCgroup = cgroupDir();
    const run = dirOfCgroup
      ? spawnSync(
          '/bin/sh',
          ['-c', 'echo $$ > "$CG/cgroup.procs" && exec "$0" "$@"', process.execPath, ...args],
          { encoding: 'utf8', env: { ...process.env, CG: dirOfCgroup, NODE_OPTIONS: '' } },
        )
      : spawnSync(process.execPath, args, { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
    expect(run.status, run.stderr).toBe(0);
    return Number(run.stdout);
  };

  const reports = (): Report[] =>
    readdirSync(dir)
      .filter((name) => name.endsWith('.json'))
      .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as Report);

  beforeAll(async () => {
    env = await prepareEnv();
    dir = mkdtempSync(join(tmpdir(), 'rw-heap-'));
    const preload = join(dir, 'heap-report.mjs');
    writeFileSync(preload, PRELOAD);
    cgroup = memoryCgroup(`rw-test-heap-${randomBytes(4).toString('hex')}`, CGROUP_MB);
    svc = await startService(
      {
        ...env.env,
        RISKWATCH_API_PROCESSES: String(PROCESSES),
        NODE_OPTIONS: `--max-old-space-size-percentage=${PERCENT} --import=${preload}`,
        RISKWATCH_HEAP_REPORT_DIR: dir,
        ...(cgroupDir() ? { RISKWATCH_TEST_CGROUP: cgroupDir()! } : {}),
      },
      'api',
    );
  }, 60_000);

  afterAll(async () => {
    await svc?.stop();
    if (cgroup && 'remove' in cgroup) cgroup.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await env?.dropDatabase();
  });

  it('gives each API process its share of the percentage: P / processes of the container', async () => {
    const all = await vi.waitFor(
      () => {
        const found = reports();
        expect(found).toHaveLength(PROCESSES + 1);
        return found;
      },
      { timeout: 10_000, interval: 100 },
    );
    const supervisor = all.filter((r) => r.child === null);
    const children = all.filter((r) => r.child !== null);
    expect(supervisor).toHaveLength(1);
    expect(children.map((r) => r.child).sort()).toEqual(['api-0', 'api-1', 'api-2']);
    // The supervisor keeps the whole percentage (it holds no heap to speak of)…
    expect(supervisor[0]!.heapSizeLimit).toBe(heapLimitWith(PERCENT));
    // …each child gets its share on its command line, which wins over the P of the NODE_OPTIONS it inherits.
    const childLimit = heapLimitWith(SHARE);
    for (const child of children) {
      expect(child.execArgv, child.child!).toContain(`--max-old-space-size-percentage=${SHARE}`);
      expect(child.heapSizeLimit, child.child!).toBe(childLimit);
    }
    // Not P each, as they would get without the split. (heap_size_limit adds the young generation to the old
    // space, a few tens of MiB per process whatever the percentage.)
    expect(childLimit).toBeLessThan(heapLimitWith(PERCENT) / 2);
    if (cgroupDir()) {
      // Sized from the cgroup's 1 GiB, not the host's memory: the old space is 16% of 1 GiB (plus young space).
      expect(childLimit / 2 ** 20).toBeGreaterThan((CGROUP_MB * SHARE) / 100);
      expect(childLimit / 2 ** 20).toBeLessThan((CGROUP_MB * SHARE) / 100 + 64);
    }
    // The API still answers from every process.
    expect((await fetch(`${svc!.baseUrl}/readyz`)).status).toBe(200);
  });
});
