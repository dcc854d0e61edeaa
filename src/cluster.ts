import cluster, { type Worker } from 'node:cluster';
import { readFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { AggregatorRegistry, type PrometheusContentType } from 'prom-client';
import type { Config } from './config.js';
import type { Logger } from './platform/logger.js';
import { serveMetrics } from './platform/metrics.js';

/**
 * The `api` role over several processes of one machine (`server.api_processes`, RISKWATCH_API_PROCESSES;
 * 0 = one per core). A Node process serves HTTP on one core; this lets one host use all of them.
 *
 * The process started as `riskwatch api` (or `all`) becomes a supervisor: it forks the API processes (and,
 * for `all`, one process with the worker and scheduler roles), serves the Prometheus `/metrics` of all of
 * them (prom-client's AggregatorRegistry, over the cluster's IPC; each child's series labelled `process`),
 * replaces a child that dies, and on SIGTERM/SIGINT stops them all gracefully. Each API process binds the
 * API port itself with SO_REUSEPORT, so the kernel spreads connections over them and no request passes
 * through the supervisor; the supervisor first checks that no other process holds the port. A heap sized
 * with `--max-old-space-size-percentage` (the Helm chart and compose set it in NODE_OPTIONS) is divided
 * among the children, which share the container's memory (childExecArgv).
 *
 * In Kubernetes the default stays 1 (one process per pod, scaled by replicas and the HPA); compose and
 * `deploy/local.sh` use every core.
 */

/** Which roles a child runs, and its name (`api-0`, `worker`), set by the supervisor in its environment. */
const CHILD_ROLES_ENV = 'RISKWATCH_CHILD_ROLES';
const CHILD_NAME_ENV = 'RISKWATCH_CHILD_NAME';
/** A replacement child starts this long after the one it replaces did, doubling while it fails. */
const RESTART_BACKOFF_MS = 1000;
const RESTART_MAX_MS = 30_000;

export type Role = 'api' | 'worker' | 'scheduler' | 'all';
type ChildRoles = 'api' | 'worker,scheduler';

/**
 * `0` (one per core) never starts more than this many: each process holds up to `database.pool_max`
 * PostgreSQL connections, and on a large host one per core would exhaust PostgreSQL's (100 by default).
 * An explicit number is taken as it is.
 */
export const AUTO_API_PROCESSES_MAX = 8;

/** The CPUs a cgroup v2 quota allows (`cpu.max`: "quota period"), or undefined without one. */
export function cgroupCpus(cpuMax: string | undefined): number | undefined {
  const [quota, period] = (cpuMax ?? '').trim().split(/\s+/);
  if (!quota || quota === 'max' || !period) return undefined;
  const cpus = Number(quota) / Number(period);
  return Number.isFinite(cpus) && cpus > 0 ? Math.max(1, Math.ceil(cpus)) : undefined;
}

const readCpuMax = (): string | undefined => {
  try {
    return readFileSync('/sys/fs/cgroup/cpu.max', 'utf8');
  } catch {
    return undefined;
  }
};

/**
 * How many processes serve the API: the setting, or for `0` one per core this process may use — the CPUs
 * it may run on, fewer under a container's CPU limit (cgroup v2 `cpu.max`) — at most
 * AUTO_API_PROCESSES_MAX.
 */
export function apiProcessCount(
  setting: number,
  cores = availableParallelism(),
  cpuMax: string | undefined = readCpuMax(),
): number {
  if (setting !== 0) return setting;
  return Math.min(cores, cgroupCpus(cpuMax) ?? cores, AUTO_API_PROCESSES_MAX);
}

/** Node's flag sizing the V8 heap as a share of the memory available: a container's limit, in a cgroup. */
const HEAP_PERCENT_FLAG = '--max-old-space-size-percentage';
/** The flag as one command-line token (`=value`) or without its value; underscores are Node's too. */
const HEAP_PERCENT_TOKEN = /^--max[-_]old[-_]space[-_]size[-_]percentage(?:=(.*))?$/;
const HEAP_PERCENT_OPTION = /(?:^|\s)--max[-_]old[-_]space[-_]size[-_]percentage(?:=|\s+)(\S+)/g;

/**
 * The heap percentage this process was started with: the last `--max-old-space-size-percentage` of its
 * command line (`execArgv`), which wins over NODE_OPTIONS, else the last one of NODE_OPTIONS.
 */
export function heapPercent(
  execArgv: readonly string[],
  nodeOptions: string | undefined,
): number | undefined {
  let fromArgv: string | undefined;
  execArgv.forEach((arg, i) => {
    const match = HEAP_PERCENT_TOKEN.exec(arg);
    if (match) fromArgv = match[1] ?? execArgv[i + 1];
  });
  const fromOptions = [...(nodeOptions ?? '').matchAll(HEAP_PERCENT_OPTION)].at(-1)?.[1];
  const percent = Number(fromArgv ?? fromOptions);
  return Number.isFinite(percent) && percent > 0 ? percent : undefined;
}

/**
 * The Node options of the supervisor's children. `--max-old-space-size-percentage=P` sizes a heap from the
 * memory of the whole container, which the supervisor shares with its `children`: each child gets
 * P / children percent (rounded down, at least 1) on its command line, where it wins over the P the child
 * inherits through NODE_OPTIONS. Undefined (the children start as the supervisor did) without the flag.
 */
export function childExecArgv(
  execArgv: readonly string[],
  nodeOptions: string | undefined,
  children: number,
): { execArgv: string[]; heapPercent: number } | undefined {
  const percent = heapPercent(execArgv, nodeOptions);
  if (percent === undefined) return undefined;
  const share = Math.max(1, Math.floor(percent / Math.max(1, children)));
  const kept = execArgv.filter((arg, i) => {
    if (HEAP_PERCENT_TOKEN.test(arg)) return false;
    // The value of a `--max-old-space-size-percentage P` written as two tokens.
    const previous = i > 0 ? HEAP_PERCENT_TOKEN.exec(execArgv[i - 1]!) : null;
    return !(previous && previous[1] === undefined);
  });
  return { execArgv: [...kept, `${HEAP_PERCENT_FLAG}=${share}`], heapPercent: share };
}

/** In a child of the supervisor: the roles it was given and its name. Outside a cluster: undefined. */
export function childOfSupervisor(): { roles: ('api' | 'worker' | 'scheduler')[]; name: string } | undefined {
  if (!cluster.isWorker) return undefined;
  return {
    roles: (process.env[CHILD_ROLES_ENV] ?? 'api').split(',') as ('api' | 'worker' | 'scheduler')[],
    name: process.env[CHILD_NAME_ENV] ?? 'api',
  };
}

/** A child tells the supervisor it has started (its HTTP port bound, its roles running). */
export function reportReady(): void {
  if (cluster.isWorker) process.send?.({ riskwatch: 'ready' });
}

/**
 * Fails when another process holds the port: the children bind it with SO_REUSEPORT, which would let a
 * second riskwatch started with the same port share its connections instead of failing as it should.
 */
async function assertPortFree(host: string, port: number): Promise<void> {
  const probe = createNetServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => resolve());
  });
  await new Promise((resolve) => probe.close(resolve));
}

/** Runs as the supervisor of `processes` API processes (plus the worker and scheduler roles for `all`). */
export async function superviseCluster(
  role: 'api' | 'all',
  processes: number,
  config: Readonly<Config>,
  logger: Logger,
): Promise<void> {
  // One slot per child; a replacement takes its slot's name, so its metrics continue that series.
  const slots: { name: string; roles: ChildRoles }[] = [
    ...Array.from({ length: processes }, (_, i) => ({ name: `api-${i}`, roles: 'api' as const })),
    ...(role === 'all' ? [{ name: 'worker', roles: 'worker,scheduler' as const }] : []),
  ];
  await assertPortFree(config.server.host, config.server.port);
  // The container's memory is the children's to share: each gets its part of the heap percentage.
  const heap = childExecArgv(process.execArgv, process.env.NODE_OPTIONS, slots.length);
  if (heap) cluster.setupPrimary({ execArgv: heap.execArgv });
  const metrics = new AggregatorRegistry<PrometheusContentType>();
  // `/metrics`: every child's series, labelled `process` by slot (see Metrics.reportToSupervisor).
  const metricsServer = await serveMetrics(
    () => metrics.clusterMetrics(),
    metrics.contentType,
    config.server.host,
    config.server.metrics_port,
  );
  let stopping = false;
  let starting = slots.length;
  const exited = new Set<Promise<void>>();

  const fork = (slot: (typeof slots)[number], restarts: number): Worker => {
    const child = cluster.fork({ [CHILD_ROLES_ENV]: slot.roles, [CHILD_NAME_ENV]: slot.name });
    const startedAt = Date.now();
    let ready = false;
    child.on('message', (msg: { riskwatch?: string }) => {
      if (msg?.riskwatch !== 'ready' || ready) return;
      ready = true;
      if (restarts === 0 && --starting === 0)
        logger.info(
          { api_processes: processes, port: config.server.port, heap_percent: heap?.heapPercent },
          'api listening',
        );
    });
    const gone = new Promise<void>((resolve) =>
      child.once('exit', (code, signal) => {
        exited.delete(gone);
        resolve();
        if (stopping) return;
        if (!ready && restarts === 0) {
          // It never started (port taken, bad config…): so would the next one. Stop everything.
          logger.error({ process: slot.name, code, signal }, 'a child process failed to start; stopping');
          void stop(1);
          return;
        }
        // A replacement that fails to start (a database blip) is tried again, less and less often.
        const next = ready ? 0 : restarts;
        const waitMs = Math.min(RESTART_MAX_MS, RESTART_BACKOFF_MS * 2 ** next);
        logger.warn(
          { process: slot.name, code, signal, pid: child.process.pid, retry_in_ms: waitMs },
          'a child process died; starting another',
        );
        setTimeout(
          () => {
            if (!stopping) fork(slot, next + 1);
          },
          Math.max(0, waitMs - (Date.now() - startedAt)),
        );
      }),
    );
    exited.add(gone);
    return child;
  };

  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down the child processes');
    for (const child of Object.values(cluster.workers ?? {})) child?.process.kill('SIGTERM');
    // Each child has its own shutdown deadline; past it (and a margin) it is killed.
    const killAt = setTimeout(() => {
      for (const child of Object.values(cluster.workers ?? {})) child?.process.kill('SIGKILL');
    }, config.server.shutdown_timeout_ms + 2000);
    killAt.unref();
    await Promise.all([...exited]);
    clearTimeout(killAt);
    await new Promise((resolve) => metricsServer.close(resolve));
    logger.info('shutdown complete');
    process.exit(code);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void stop(0));

  for (const slot of slots) fork(slot, 0);
}
