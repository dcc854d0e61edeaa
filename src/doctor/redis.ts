import type { Redis } from 'ioredis';
import { createRedis } from '../platform/redis.js';
import type { Finding } from './report.js';
import { maskUrl } from './secrets.js';
import { describeError, withTimeout } from './timeout.js';

/** BullMQ refuses older servers; below the recommended version it works with caveats (its own warning). */
export const MIN_REDIS_VERSION = '5.0.0';
export const RECOMMENDED_REDIS_VERSION = '6.2.0';

/** The findings, and the connection when Redis answered (for the queue checks; the caller closes it). */
export interface RedisConnection {
  redis?: Redis;
  findings: Finding[];
}

/**
 * Connects once (no reconnection: an unreachable Redis is a finding, not a retry loop) and reads what the
 * queues need of the server: its version, its eviction policy, its persistence. The open connection is
 * handed on to the queue checks.
 */
export async function checkRedis(url: string, timeoutMs: number): Promise<RedisConnection> {
  const where = maskUrl(url);
  let lastError: Error | undefined;
  const redis = createRedis(url, {
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
