import { Cluster } from 'ioredis';
import { createRedis, type RedisClient, type RedisTarget } from '../platform/redis.js';
import { exitCodeOf, type Finding } from './report.js';
import { maskUrl } from './secrets.js';
import { describeError, withTimeout } from './timeout.js';

/** BullMQ refuses older servers; below the recommended version it works with caveats (its own warning). */
export const MIN_REDIS_VERSION = '5.0.0';
export const RECOMMENDED_REDIS_VERSION = '6.2.0';

/** The findings, and the connection when Redis answered (for the queue checks; the caller closes it). */
export interface RedisConnection {
  redis?: RedisClient;
  findings: Finding[];
}

/**
 * Connects once (no reconnection: an unreachable Redis is a finding, not a retry loop) and reads what the
 * queues need of the server: its version, its eviction policy, its persistence (of every master, on a
 * Redis Cluster, and the cluster's own state). The open connection is handed on to the queue checks.
 */
export async function checkRedis(target: RedisTarget, timeoutMs: number): Promise<RedisConnection> {
  const nodes = target.cluster_nodes ?? [];
  const where = nodes.length > 0 ? `Redis Cluster ${nodes.join(',')}` : maskUrl(target.url);
  let lastError: Error | undefined;
  const redis = createRedis(target, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    retryStrategy: () => null,
  });
  // ioredis reports the cause (ECONNREFUSED, WRONGPASS) as an event; connect() only says "closed".
  redis.on('error', (err: Error) => (lastError = err));
  const started = performance.now();
  try {
    await withTimeout(
      redis.connect().then(() => redis.ping()),
      timeoutMs,
    );
  } catch (err) {
    redis.disconnect();
    const why = describeError(lastError ?? err);
    return {
      findings: [
        { check: 'redis', status: 'fail', detail: `cannot connect to ${where}: ${why}` },
        ...['redis:maxmemory-policy', 'redis:persistence'].map(notRun),
      ],
    };
  }
  const roundTripMs = Math.round(performance.now() - started);
  if (redis instanceof Cluster)
    return { redis, findings: await clusterFindings(redis, `${where} (${roundTripMs} ms)`, timeoutMs) };
  let info: Map<string, string>;
  try {
    info = parseInfo(await withTimeout(redis.info(), timeoutMs));
  } catch (err) {
    return {
      redis,
      findings: [
        {
          check: 'redis',
          status: 'warn',
          detail: `${where} answers PING but not INFO (${describeError(err)}): version, eviction policy and persistence not checked`,
        },
      ],
    };
  }
  return {
    redis,
    findings: [
      versionFinding(info.get('redis_version') ?? '?', `${where} (${roundTripMs} ms)`),
      evictionFinding(info.get('maxmemory_policy') ?? '?', Number(info.get('maxmemory') ?? 0)),
      persistenceFinding(info.get('aof_enabled') === '1'),
    ],
  };
}

const notRun = (check: string): Finding => ({
  check,
  status: 'info',
  detail: 'not checked: Redis did not answer',
});

/** `INFO` text (`key:value` lines under `# Section` headers) as a map. */
export function parseInfo(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('#')) out.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  return out;
}

/** Compares dotted versions numerically: negative when `a` is older than `b`. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0 && !Number.isNaN(d)) return d;
  }
  return 0;
}

function versionFinding(version: string, where: string): Finding {
  const what = `Redis ${version} at ${where}`;
  if (compareVersions(version, MIN_REDIS_VERSION) < 0)
    return {
      check: 'redis',
      status: 'fail',
      detail: `${what}: the job queues (BullMQ) need Redis ${MIN_REDIS_VERSION} or newer`,
    };
  if (compareVersions(version, RECOMMENDED_REDIS_VERSION) < 0)
    return {
      check: 'redis',
      status: 'warn',
      detail: `${what}: BullMQ recommends Redis ${RECOMMENDED_REDIS_VERSION} or newer`,
    };
  return { check: 'redis', status: 'ok', detail: what };
}

/**
 * BullMQ keeps jobs, locks and deduplication ids in Redis keys, and riskwatch its rate-limit windows and
 * usage stream: an evicted key is a lost job or a job run twice, silently. So any policy but
 * `noeviction` fails once a memory limit is set (eviction can happen at any moment); without a limit
 * (`maxmemory 0`) nothing is evicted yet, which is a warning: setting a limit later starts the losses.
 * With `noeviction`, a full Redis refuses writes instead, which riskwatch reports as errors.
 */
function evictionFinding(policy: string, maxmemory: number): Finding {
  const check = 'redis:maxmemory-policy';
  if (policy === 'noeviction')
    return {
      check,
      status: 'ok',
      detail: `noeviction (maxmemory ${maxmemory > 0 ? `${maxmemory} bytes` : 'unlimited'})`,
    };
  const fix = 'set `maxmemory-policy noeviction` (BullMQ requires it)';
  if (maxmemory > 0)
    return {
      check,
      status: 'fail',
      detail: `${policy} with maxmemory ${maxmemory} bytes: Redis may evict queued jobs and their locks; ${fix}`,
    };
  return {
    check,
    status: 'warn',
    detail: `${policy}: nothing is evicted while maxmemory is unlimited, but a memory limit would evict queued jobs; ${fix}`,
  };
}

function persistenceFinding(aof: boolean): Finding {
  return aof
    ? {
        check: 'redis:persistence',
        status: 'ok',
        detail: 'append-only file on (queued jobs survive a restart)',
      }
    : {
        check: 'redis:persistence',
        status: 'warn',
        detail:
          'appendonly no: jobs queued in Redis (scans, webhook deliveries, screenings) are lost when it restarts; ' +
          'production needs `appendonly yes`',
      };
}

/** Hash slots of a Redis Cluster: all must be served for every key to have a master. */
const CLUSTER_SLOTS = 16384;

/**
 * A Redis Cluster: the findings of one Redis, for every master (the oldest version, the first master
 * that may evict, those without an append-only file), and `redis:cluster`: every slot served by a master
 * that answers, and each master with a replica to take over when it is lost.
 */
async function clusterFindings(cluster: Cluster, where: string, timeoutMs: number): Promise<Finding[]> {
  let masters: { node: string; info: Map<string, string> }[];
  let state: Map<string, string>;
  try {
    state = parseInfo(String(await withTimeout(cluster.cluster('INFO'), timeoutMs)));
    masters = await Promise.all(
      cluster.nodes('master').map(async (node) => ({
        node: `${node.options.host}:${node.options.port}`,
        info: parseInfo(await withTimeout(node.info(), timeoutMs)),
      })),
    );
  } catch (err) {
    return [
      {
        check: 'redis',
        status: 'warn',
        detail: `${where} answers PING but not CLUSTER INFO / INFO (${describeError(err)}): version, eviction policy, persistence and slots not checked`,
      },
    ];
  }
  const version = (m: (typeof masters)[number]) => m.info.get('redis_version') ?? '?';
  const oldest = masters.reduce((a, b) => (compareVersions(version(b), version(a)) < 0 ? b : a));
  const evicting = masters
    .map((m) => ({
      node: m.node,
      finding: evictionFinding(m.info.get('maxmemory_policy') ?? '?', Number(m.info.get('maxmemory') ?? 0)),
    }))
    .sort((a, b) => exitCodeOf([b.finding]) - exitCodeOf([a.finding]))[0]!;
  const withoutAof = masters.filter((m) => m.info.get('aof_enabled') !== '1').map((m) => m.node);
  const persistence = persistenceFinding(withoutAof.length === 0);
  return [
    versionFinding(version(oldest), `${where}, ${masters.length} masters (oldest: ${oldest.node})`),
    evicting.finding.status === 'ok'
      ? { ...evicting.finding, detail: `every master: ${evicting.finding.detail}` }
      : { ...evicting.finding, detail: `master ${evicting.node}: ${evicting.finding.detail}` },
    withoutAof.length === 0
      ? { ...persistence, detail: `every master: ${persistence.detail}` }
      : { ...persistence, detail: `masters ${withoutAof.join(', ')}: ${persistence.detail}` },
    slotsFinding(state, masters),
  ];
}

function slotsFinding(
  state: Map<string, string>,
  masters: { node: string; info: Map<string, string> }[],
): Finding {
  const check = 'redis:cluster';
  const served = Number(state.get('cluster_slots_ok') ?? 0);
  if (state.get('cluster_state') !== 'ok' || served < CLUSTER_SLOTS)
    return {
      check,
      status: 'fail',
      detail:
        `cluster_state ${state.get('cluster_state') ?? '?'}, ${served} of ${CLUSTER_SLOTS} slots served: ` +
        'the keys (jobs, rate limits) of the other slots cannot be read or written',
    };
  const alone = masters.filter((m) => Number(m.info.get('connected_slaves') ?? 0) === 0).map((m) => m.node);
  if (alone.length > 0)
    return {
      check,
      status: 'warn',
      detail:
        `every slot served by ${masters.length} masters, but ${alone.join(', ')} has no replica: ` +
        'losing it leaves its slots without a master until it is back',
    };
  return {
    check,
    status: 'ok',
    detail: `every slot served by ${masters.length} masters, each with a replica`,
  };
}
