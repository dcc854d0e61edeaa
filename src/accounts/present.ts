import type { Page } from '../platform/cursor.js';
import type { Account } from './entities.js';
import type {
  AccountBody,
  ApiKeyBody,
  ApiKeyPageBody,
  CreatedApiKeyBody,
  EntitlementBody,
} from './schemas.js';
import type { ApiKeyInfo, CreatedKey, EnterpriseEntitlement } from './service.js';

/*
 * Accounts, entitlements and keys (service.ts, domain objects) as the JSON schemas.ts describes: HTTP
 * bodies and the operator CLI's output alike.
 */

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const presentApiKey = (k: ApiKeyInfo): ApiKeyBody => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  created_at: k.createdAt.toISOString(),
  created_by: k.createdBy,
  expires_at: iso(k.expiresAt),
  revoked_at: iso(k.revokedAt),
  status: k.status,
});

export const presentCreatedKey = (created: CreatedKey): CreatedApiKeyBody => ({
  ...presentApiKey(created.view),
  key: created.key,
});

export const presentApiKeyPage = (page: Page<ApiKeyInfo>): ApiKeyPageBody => ({
  data: page.items.map(presentApiKey),
  next_cursor: page.nextCursor,
});

export const presentEntitlement = (e: EnterpriseEntitlement): EntitlementBody => ({
  account_id: e.accountId,
  plan: e.plan,
  status: e.status,
  active: e.active,
  expires_at: iso(e.expiresAt),
  rate_limit_per_min: e.rateLimitPerMin,
});

export const presentAccount = (a: Account): AccountBody => ({
  id: a.id,
  name: a.name,
  org_id: a.orgId,
  created_at: a.createdAt.toISOString(),
});
