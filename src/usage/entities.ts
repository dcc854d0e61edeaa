import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * One developer-API call. Written in batches by the usage drain (never on the request path); the id is
 * minted by the API when the call finishes, so a batch replayed after a crash inserts nothing twice.
 */
export const UsageRecordSchema = defineEntity({
  name: 'UsageRecord',
  tableName: 'usage_records',
  indexes: [{ properties: ['accountId', 'at', 'id'] }],
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
    at: p.datetime(),
  },
});
export type UsageRecord = InferEntity<typeof UsageRecordSchema>;
