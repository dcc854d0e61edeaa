import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './service.js';

const run = promisify(execFile);

/*
 * A real Redis Cluster on 127.0.0.1, made of Debian's `redis-server` processes: `masters` masters with a
 * replica each, joined by `redis-cli --cluster create`, on free ports (client and bus ports both chosen,
 * `cluster-port`, so no port + 10000 can collide). No persistence: the cluster lives as long as the test.
 */

export interface ClusterNode {
  port: number;
  process: ChildProcess;
}

export interface RedisCluster {
  /** `host:port` of every node, the REDIS_CLUSTER_NODES value. */
  seeds: string;
  nodes: ClusterNode[];
  /** The node that is master of `key`'s slot now (asked of a node that is alive). */
  masterOf(key: string): Promise<ClusterNode>;
  /** SIGKILL: the node is gone at once, as a crashed machine would be. */
  kill(node: ClusterNode): Promise<void>;
  /** Resolves once every live node says `cluster_state:ok` and every slot is served by a live master. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  masters?: number;
  /** How long a master may be unreachable before its replica takes over (cluster-node-timeout). */
  nodeTimeoutMs?: number;
}

export async function startRedisCluster({
  masters = 3,
  nodeTimeoutMs = 2000,
}: RedisClusterOptions = {}): Promise<RedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'rw-redis-cluster-'));
  const nodes: ClusterNode[] = [];
  const alive = (n: ClusterNode) => n.process.exitCode === null && n.process.signalCode === null;
  const stop = async () => {
    await Promise.all(nodes.filter(alive).map((n) => killed(n, 'SIGTERM')));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters * 2; i++) {
      const port = await freePort();
      const bus = await freePort();
      const child = spawn(
        'redis-server',
        [
          ...['--port', String(port), '--cluster-port', String(bus), '--bind', '127.0.0.1'],
          ...['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`)],
          ...['--cluster-node-timeout', String(nodeTimeoutMs), '--cluster-replica-validity-factor', '0'],
          ...['--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', join(dir, `${port}.log`)],
        ],
        { stdio: 'ignore' },
      );
      nodes.push({ port, process: child });
    }
    await Promise.all(nodes.map((n) => untilAnswers(n.port)));
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
  } catch (err) {
    await stop();
    throw err;
  }

  const liveClient = async <T>(fn: (r: Redis) => Promise<T>): Promise<T> => {
    const node = nodes.find(alive);
    if (!node) throw new Error('no node of the cluster is alive');
    const r = new Redis(node.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await r.connect();
      return await fn(r);
    } finally {
      r.disconnect();
    }
  };

  const cluster: RedisCluster = {
    seeds: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    nodes,
    masterOf: (key) =>
      liveClient(async (r) => {
        const slot = Number(await r.cluster('KEYSLOT', key));
        const ranges = await r.cluster('SLOTS');
        const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
        const node = nodes.find((n) => n.port === owner?.[2]?.[1]);
        if (!node) throw new Error(`no master serves slot ${slot}`);
        return node;
      }),
    kill: (node) => killed(node, 'SIGKILL'),
    waitHealthy: async (timeoutMs = 30_000) => {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const healthy = await Promise.all(nodes.filter(alive).map((n) => healthyAt(n, nodes))).then(
          (all) => all.every(Boolean),
          () => false,
        );
        if (healthy) return;
        if (Date.now() > until) throw new Error(`Redis Cluster not healthy within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    stop,
  };
  await cluster.waitHealthy();
  return cluster;
}

/** `cluster_state:ok` at this node, and each slot range's master one of the live nodes. */
async function healthyAt(node: ClusterNode, nodes: ClusterNode[]): Promise<boolean> {
  const r = new Redis(node.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await r.connect();
    const info = String(await r.cluster('INFO'));
    if (!/cluster_state:ok/.test(info) || !/cluster_slots_ok:16384/.test(info)) return false;
    const ranges = await r.cluster('SLOTS');
    const live = new Set(
      nodes.filter((n) => n.process.exitCode === null && n.process.signalCode === null).map((n) => n.port),
    );
    return ranges.every(([, , master]) => master !== undefined && live.has(master[1]));
  } finally {
    r.disconnect();
  }
}

async function untilAnswers(port: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    r.on('error', () => undefined);
    try {
      await r.connect();
      await r.ping();
      return;
    } catch (err) {
      if (Date.now() > until)
        throw new Error(`redis-server on ${port} not up: ${(err as Error).message}`, { cause: err });
      await new Promise((res) => setTimeout(res, 50));
    } finally {
      r.disconnect();
    }
  }
}

async function killed(node: ClusterNode, signal: NodeJS.Signals): Promise<void> {
  const child = node.process;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  await gone;
}
