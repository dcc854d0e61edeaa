import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../audit/actor.js';
import { changedFields, recordAudit } from '../audit/log.js';
import type { Account, ApiKey, Entitlement, EntitlementStatus } from './entities.js';

/*
 * The audit records of the accounts feature, each written with the transaction's manager that makes the
 * change. Fields are named as the API and the CLI show them; the key itself and its hash never appear.
 *
 * Actions: `account.created`, `api_key.created`, `api_key.revoked`, `entitlement.granted` (created, or
 * active again), `entitlement.changed` (an active one's expiry or rate limit), `entitlement.suspended`,
 * `entitlement.revoked`.
 */

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

/** An entitlement's fields as the audit log compares them. */
export const entitlementFields = (e: Entitlement) => ({
  plan: e.plan,
  status: e.status,
  expires_at: iso(e.expiresAt),
  rate_limit_per_min: e.rateLimitPerMin ?? null,
});
export type EntitlementFields = ReturnType<typeof entitlementFields>;

export const auditAccountCreated = (em: EntityManager, actor: Actor, account: Account) =>
  recordAudit(em, actor, {
    accountId: account.id,
    action: 'account.created',
    resourceType: 'account',
    resourceId: account.id,
    after: { name: account.name, org_id: account.orgId },
  });

/**
 * A grant: `entitlement.granted` when the entitlement is new (`before` null) or becomes active again,
 * `entitlement.changed` when an active one changes otherwise; nothing when nothing changed.
 */
export async function auditEntitlementGrant(
  em: EntityManager,
  actor: Actor,
  accountId: string,
  before: EntitlementFields | null,
  row: Entitlement,
): Promise<void> {
  const after = entitlementFields(row);
  const change = before ? changedFields(before, after) : { before: null, after };
  if (Object.keys(change.after).length === 0) return;
  await recordAudit(em, actor, {
    accountId,
    action: before?.status === 'active' ? 'entitlement.changed' : 'entitlement.granted',
    resourceType: 'entitlement',
    resourceId: row.id,
    ...change,
  });
}

/** `entitlement.suspended` / `entitlement.revoked`, when the status really moved. */
export async function auditEntitlementStatus(
  em: EntityManager,
  actor: Actor,
  accountId: string,
  before: EntitlementStatus,
  row: Entitlement,
): Promise<void> {
  if (before === row.status) return;
  await recordAudit(em, actor, {
    accountId,
    action: `entitlement.${row.status}`,
    resourceType: 'entitlement',
    resourceId: row.id,
    before: { status: before },
    after: { status: row.status },
  });
}

/** `api_key.created`: the key's name, prefix and expiry (the prefix is what listings show). */
export const auditKeyCreated = (em: EntityManager, actor: Actor, accountId: string, key: ApiKey) =>
  recordAudit(em, actor, {
    accountId,
    action: 'api_key.created',
    resourceType: 'api_key',
    resourceId: key.id,
    after: { name: key.name, prefix: key.prefix, expires_at: iso(key.expiresAt) },
  });

/** `api_key.revoked`: the status the key had (active or expired) and its revocation time. */
export const auditKeyRevoked = (
  em: EntityManager,
  actor: Actor,
  accountId: string,
  key: ApiKey,
  statusBefore: string,
) =>
  recordAudit(em, actor, {
    accountId,
    action: 'api_key.revoked',
    resourceType: 'api_key',
    resourceId: key.id,
    before: { status: statusBefore, revoked_at: null },
    after: { status: 'revoked', revoked_at: iso(key.revokedAt) },
  });
