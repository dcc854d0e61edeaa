import cluster, { type Worker } from 'node:cluster';
import { readFileSync } from 'node:fs';
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
 * them summed (prom-client's AggregatorRegistry, over the cluster's IPC), restarts a child that dies, and on
 * SIGTERM/SIGINT stops them all gracefully. Each API process binds the API port itself with SO_REUSEPORT, so
 * the kernel spreads connections over them and no request passes through the supervisor.
 *
 * In Kubernetes the default stays 1 (one process per pod, scaled by replicas and the HPA); compose and
 * `deploy/local.sh` use every core.
 */

/** Which roles a child runs, set by the supervisor in the child's environment. */
const CHILD_ROLES_ENV = 'RISKWATCH_CHILD_ROLES';
/** A child that dies within this long of its start, before it was ready, fails the whole start. */
const RESTART_BACKOFF_MS = 1000;

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

/** In a child of the supervisor: the roles it was given. Outside a cluster: undefined. */
export function childRoles(): ('api' | 'worker' | 'scheduler')[] | undefined {
  if (!cluster.isWorker) return undefined;
  return (process.env[CHILD_ROLES_ENV] ?? 'api').split(',') as ('api' | 'worker' | 'scheduler')[];
}

/** A child tells the supervisor it has started (its HTTP port bound, its roles running). */
export function reportReady(): void {
  if (cluster.isWorker) process.send?.({ riskwatch: 'ready' });
}

/** Runs as the supervisor of `processes` API processes (plus the worker and scheduler roles for `all`). */
export async function superviseCluster(
  role: 'api' | 'all',
  processes: number,
  config: Readonly<Config>,
  logger: Logger,
): Promise<void> {
  const wanted: ChildRoles[] = [
    ...Array.from({ length: processes }, () => 'api' as const),
    ...(role === 'all' ? ['worker,scheduler' as const] : []),
  ];
  const metrics = new AggregatorRegistry<PrometheusContentType>();
  // `/metrics`: every child's, summed (gauges as each metric's aggregator says).
  const metricsServer = await serveMetrics(
    () => metrics.clusterMetrics(),
    metrics.contentType,
    config.server.host,
    config.server.metrics_port,
  );
  let stopping = false;
  let starting = wanted.length;
  const exited = new Set<Promise<void>>();

  const fork = (roles: ChildRoles): Worker => {
    const child = cluster.fork({ [CHILD_ROLES_ENV]: roles });
    const startedAt = Date.now();
    let ready = false;
    child.on('message', (msg: { riskwatch?: string }) => {
      if (msg?.riskwatch !== 'ready' || ready) return;
      ready = true;
      if (--starting === 0)
        logger.info({ api_processes: processes, port: config.server.port }, 'api listening');
    });
    const gone = new Promise<void>((resolve) =>
      child.once('exit', (code, signal) => {
        exited.delete(gone);
        resolve();
        if (stopping) return;
        if (!ready) {
          // It never started (port taken, bad config…): so would the next one. Stop everything.
          logger.error({ roles, code, signal }, 'a child process failed to start; stopping');
          void stop(1);
          return;
        }
        logger.warn(
          { roles, code, signal, pid: child.process.pid },
          'a child process died; starting another',
        );
        setTimeout(
          () => {
            if (!stopping) fork(roles);
          },
          Math.max(0, RESTART_BACKOFF_MS - (Date.now() - startedAt)),
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

  for (const roles of wanted) fork(roles);
}
