import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';

/**
 * A connection to one Redis or to a Redis Cluster. Both have the same command methods; riskwatch sends
 * only commands whose keys share one slot (single-key commands, MULTIs on one key, BullMQ's scripts on one
 * queue's hash tag), so every caller works with either.
 */
export type RedisClient = Redis | Cluster;

/**
 * Where Redis is (the `redis` settings): `url` alone for one Redis; with `cluster_nodes` (seed `host:port`s)
 * a cluster, whose nodes take the scheme (`rediss://`: TLS), user and password of `url` (its host is unused).
 */
export interface RedisTarget {
  url: string;
  cluster_nodes?: readonly string[];
}

/**
 * One factory for every Redis connection. Commands fail fast while Redis is down (no offline queue on
 * request-path clients) so the API answers 503 instead of hanging; ioredis keeps reconnecting in the
 * background and the service recovers without a restart. A string is the URL of one Redis.
 */
export function createRedis(target: string | RedisTarget, options: RedisOptions = {}): RedisClient {
  const { url, cluster_nodes: nodes = [] } = typeof target === 'string' ? { url: target } : target;
  const merged: RedisOptions = {
    lazyConnect: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    ...options,
  };
  if (nodes.length === 0) return new Redis(url, merged);
  return new Cluster(nodes.map(parseNode), clusterOptions(url, merged));
}

/** BullMQ workers block on Redis and must retry forever (BullMQ requires maxRetriesPerRequest: null). */
export function createBullConnection(target: string | RedisTarget): RedisClient {
  return createRedis(target, { maxRetriesPerRequest: null, enableOfflineQueue: true });
}

/**
 * A second connection to the same Redis or cluster with other options (a subscriber: pub/sub takes a
 * connection of its own). `Cluster.duplicate` takes cluster options, not a node's: translated here.
 */
export function duplicateRedis(client: RedisClient, options: RedisOptions): RedisClient {
  if (client instanceof Redis) return client.duplicate(options);
  const { redisOptions, ...cluster } = clusterOptions('redis://', options);
  return client.duplicate([], {
    ...cluster,
    redisOptions: { ...client.options.redisOptions, ...redisOptions },
  });
}

/**
 * A cluster's options from a node's: what ioredis keeps at the cluster level (offline queue, lazy
 * connect, auto-pipelining, reconnection) moves there; the rest (timeouts, retries per request) applies
 * to each node, with the URL's credentials and TLS. Replicas are not read from (`scaleReads` master):
 * BullMQ and the rate limits need to read their own writes.
 */
function clusterOptions(url: string, options: RedisOptions): ClusterOptions {
  const { lazyConnect, enableOfflineQueue, enableAutoPipelining, retryStrategy, ...node } = options;
  const parsed = new URL(url);
  return {
    lazyConnect,
    enableOfflineQueue,
    enableAutoPipelining,
    scaleReads: 'master',
    clusterRetryStrategy: retryStrategy ? (times) => retryStrategy(times) : () => null,
    redisOptions: {
      ...(parsed.username && { username: decodeURIComponent(parsed.username) }),
      ...(parsed.password && { password: decodeURIComponent(parsed.password) }),
      ...(parsed.protocol === 'rediss:' && { tls: {} }),
      ...node,
    },
  };
}

/** `host:port` or `[v6]:port` (validated by the settings) as ioredis' node. */
function parseNode(node: string): { host: string; port: number } {
  const at = node.lastIndexOf(':');
  return { host: node.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(node.slice(at + 1)) };
}
