import type { UsageBody, UsageBucketBody, UsageCallBody } from './schemas.js';
import type { UsageBucket } from './buckets.js';
import type { UsageCall } from './repository.js';
import type { UsageHistory } from './service.js';

const presentCall = (c: UsageCall): UsageCallBody => ({
  id: c.id,
  at: c.at.toISOString(),
  method: c.method,
  endpoint: c.endpoint,
  status: c.status,
  latency_ms: c.latencyMs,
  api_key_id: c.apiKeyId,
  api_key_prefix: c.apiKeyPrefix,
  request_id: c.requestId,
  target: c.target,
  chain: c.chain,
  network: c.network,
  targets: c.targets,
});

const presentBucket = (b: UsageBucket): UsageBucketBody => ({
  bucket_start: b.start.toISOString(),
  total: b.total,
  by_status: b.byStatus,
  latency_ms_avg: b.latencyMsAvg,
  latency_ms_p95: b.latencyMsP95,
});

/** The body of `GET /api/v1/usage`. */
export const presentUsage = (h: UsageHistory): UsageBody => ({
  data: h.kind === 'calls' ? h.items.map(presentCall) : h.items.map(presentBucket),
  summary: { total: h.summary.total, by_endpoint: h.summary.byEndpoint, by_status: h.summary.byStatus },
  next_cursor: h.nextCursor,
});
