import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** Who made a change: an API key, a JWT user (`sub`), or an operator at the command line. */
export const ACTOR_TYPES = ['api_key', 'user', 'operator'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/**
 * One change, written in the transaction of the change itself (src/audit/log.ts). Append-only: a trigger
 * (migration 20261128024154) refuses UPDATE, TRUNCATE and any DELETE but the retention prune's.
 * `account_id` is null for changes that belong to no account (a sanctions import). `before`/`after` hold
 * only the changed fields, never a secret (no API key, key hash or webhook secret).
 */
export const AuditRecordSchema = defineEntity({
  name: 'AuditRecord',
  tableName: 'audit_log',
  indexes: [{ properties: ['accountId', 'at', 'id'] }, { properties: ['at', 'id'] }],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40).nullable(),
    /** Part of the key: the table is partitioned by day on it (src/db/partitions.ts). */
    at: p.datetime().primary(),
    actorType: p.enum(ACTOR_TYPES),
    /** The API key id, the JWT `sub`, or the operator's name. */
    actorId: p.string().length(300),
    /** The API key's prefix (`rwk_abcd`), the JWT's issuer; null for operators. */
    actorLabel: p.string().length(300).nullable(),
    /** `<resource>.<verb>`: `api_key.created`, `list_entry.deleted`, `webhook_endpoint.rotated`, … */
    action: p.string().length(100),
    resourceType: p.string().length(60),
    resourceId: p.string().length(200).nullable(),
    requestId: p.string().length(200).nullable(),
    clientAddress: p.string().length(100).nullable(),
    before: p.json<Record<string, unknown>>().nullable(),
    after: p.json<Record<string, unknown>>().nullable(),
  },
});
export type AuditRecord = InferEntity<typeof AuditRecordSchema>;
