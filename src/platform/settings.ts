import { z } from 'zod';
import { bool, csv, int, type EnvVars } from './config.js';

/** The process: where it listens (API and metrics), what it accepts, how long it drains on shutdown. */
export const serverSettings = z.object({
  host: z.string().min(1),
  port: int(0, 65535),
  /** Processes serving the API port on this machine (src/cluster.ts); 0 = one per core. */
  api_processes: int(0, 64),
  metrics_port: int(0, 65535),
  body_limit_kb: int(1, 10240),
  trust_proxy: bool,
  shutdown_timeout_ms: int(100, 120000),
});

export const databaseSettings = z.object({
  url: z.string().regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL'),
  pool_max: int(1, 200),
});

export const redisSettings = z
  .object({
    url: z.string().regex(/^rediss?:\/\//, 'expected a redis:// URL'),
    /** Seed nodes of a Redis Cluster (src/platform/redis.ts); empty: `url` is one Redis. */
    cluster_nodes: csv.pipe(
      z.array(z.string().regex(/^([^\s:[\]]+|\[[0-9a-fA-F:.]+\]):\d{1,5}$/, 'expected host:port')),
    ),
    key_prefix: z.string(),
  })
  .refine((r) => r.cluster_nodes.length === 0 || /^rediss?:\/\/[^/]*\/?0?$/.test(r.url), {
    // SELECT is refused by a cluster: a URL naming another database is a mistake, not a setting to ignore.
    message: 'a Redis Cluster has only database 0: REDIS_URL must name none (or /0) with REDIS_CLUSTER_NODES',
    path: ['url'],
  });

export const logSettings = z.object({
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
});

export type DatabaseSettings = z.infer<typeof databaseSettings>;
export type RedisSettings = z.infer<typeof redisSettings>;
export type LogSettings = z.infer<typeof logSettings>;

export const PLATFORM_ENV_VARS: EnvVars = {
  RISKWATCH_HOST: 'server.host',
  PORT: 'server.port',
  RISKWATCH_API_PROCESSES: 'server.api_processes',
  METRICS_PORT: 'server.metrics_port',
  RISKWATCH_BODY_LIMIT_KB: 'server.body_limit_kb',
  RISKWATCH_TRUST_PROXY: 'server.trust_proxy',
  RISKWATCH_SHUTDOWN_TIMEOUT_MS: 'server.shutdown_timeout_ms',
  DATABASE_URL: 'database.url',
  DATABASE_POOL_MAX: 'database.pool_max',
  REDIS_URL: 'redis.url',
  REDIS_CLUSTER_NODES: 'redis.cluster_nodes',
  REDIS_KEY_PREFIX: 'redis.key_prefix',
  LOG_LEVEL: 'log.level',
};
