import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * One developer-API call. Written in batches by the usage drain (never on the request path); the id is
 * minted by the API when the call finishes, with its time, so a batch replayed after a crash inserts
 * nothing twice. Partitioned by UTC day on `at` (migration 20261128120000), so the key holds `at` too.
 */
export const UsageRecordSchema = defineEntity({
  name: 'UsageRecord',
  tableName: 'usage_records',
  // Pages newest first, unfiltered or filtered by status, endpoint or key, are each one index range.
  indexes: [
    { properties: ['accountId', 'at', 'id'] },
    { properties: ['accountId', 'status', 'at', 'id'] },
    { properties: ['accountId', 'endpoint', 'at', 'id'] },
    { properties: ['accountId', 'apiKeyId', 'at', 'id'] },
    // POST /api/v1/feedback names a call by its request id: the account's newest call with it.
    { properties: ['accountId', 'requestId', 'at'] },
  ],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    apiKeyId: p.string().length(40),
    apiKeyPrefix: p.string().length(8),
    method: p.string().length(10),
    endpoint: p.string().length(200),
    status: p.smallint(),
    latencyMs: p.integer(),
    requestId: p.string().length(200),
    /** Part of the key: the table is partitioned by day on it (src/db/partitions.ts). */
    at: p.datetime().primary(),
    /** The target a risk call was about (feedback acts on it); null for calls without one. */
    target: p.string().length(200).nullable(),
    chain: p.string().length(40).nullable(),
    network: p.string().length(40).nullable(),
    /** Targets a bulk call carried (a screening): one call, this many targets. */
    targets: p.integer().nullable(),
  },
});
export type UsageRecord = InferEntity<typeof UsageRecordSchema>;

/** The grains of usage rollups: hour buckets, and day buckets (UTC). */
export const USAGE_GRAINS = ['hour', 'day'] as const;
export type UsageGrain = (typeof USAGE_GRAINS)[number];

/**
 * The calls of one account in one hour or day (UTC), counted per combination of endpoint, status and key
 * and per every coarser combination (a cube): `dims` says which of the three are concrete (1 endpoint,
 * 2 status, 4 key); the others hold the wildcard ('' or 0). Any filter, and any breakdown the usage
 * endpoint shows, is then one index range of rows per bucket, never a walk over the calls. Kept by the
 * usage drain in the statement that stores the calls (only calls actually inserted are counted), built for
 * existing calls by the migration that created it. `latencyHist` counts calls per latency bin (see
 * src/usage/rollups.ts) for the p95.
 */
export const UsageRollupSchema = defineEntity({
  name: 'UsageRollup',
  tableName: 'usage_rollups',
  properties: {
    accountId: p.string().length(40).primary(),
    grain: p.enum(USAGE_GRAINS).primary(),
    dims: p.smallint().primary(),
    start: p.datetime().primary(),
    endpoint: p.string().length(200).primary(),
    status: p.smallint().primary(),
    apiKeyId: p.string().length(40).primary(),
    calls: p.bigint('number'),
    latencyMsSum: p.bigint('number'),
    latencyMsMax: p.integer(),
    latencyHist: p.array().columnType('int[]'),
  },
});
export type UsageRollup = InferEntity<typeof UsageRollupSchema>;
