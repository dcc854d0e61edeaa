import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const AccountSchema = defineEntity({
  name: 'Account',
  tableName: 'accounts',
  properties: {
    id: p.string().length(40).primary(),
    /** The value of the JWT account claim (default `org_id`) that maps a user token to this account. */
    orgId: p.string().length(200).unique(),
    name: p.string().length(200),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Account = InferEntity<typeof AccountSchema>;

export const ENTITLEMENT_STATUSES = ['active', 'suspended', 'revoked'] as const;
export type EntitlementStatus = (typeof ENTITLEMENT_STATUSES)[number];

/** A key's state at a given moment (derived from `revokedAt` and `expiresAt`, not stored). */
export const API_KEY_STATUSES = ['active', 'expired', 'revoked'] as const;
export type ApiKeyStatus = (typeof API_KEY_STATUSES)[number];

/** One Enterprise entitlement per account; grant/suspend/revoke move its status. */
export const EntitlementSchema = defineEntity({
  name: 'Entitlement',
  tableName: 'entitlements',
  uniques: [{ properties: ['account', 'plan'] }],
  properties: {
    id: p.string().length(40).primary(),
    account: () => p.manyToOne(AccountSchema),
    plan: p.string().length(40),
    status: p.enum(ENTITLEMENT_STATUSES),
    expiresAt: p.datetime().nullable(),
    rateLimitPerMin: p.integer().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type Entitlement = InferEntity<typeof EntitlementSchema>;

/** An API key: only its SHA-256 and its first 8 characters are kept; the raw key is shown once. */
export const ApiKeySchema = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  indexes: [{ properties: ['account', 'createdAt'] }],
  properties: {
    id: p.string().length(40).primary(),
    account: () => p.manyToOne(AccountSchema),
    name: p.string().length(200),
    prefix: p.string().length(8),
    keyHash: p.string().length(64).unique(),
    createdBy: p.string().length(300),
    createdAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
});
export type ApiKey = InferEntity<typeof ApiKeySchema>;
