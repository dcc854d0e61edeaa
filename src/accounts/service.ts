import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { AppError, conflict, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { Orm } from '../platform/orm.js';
import { displayPrefix, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key-format.js';
import {
  AccountSchema,
  ApiKeySchema,
  EntitlementSchema,
  type Account,
  type ApiKey,
  type Entitlement,
  type EntitlementStatus,
} from './entities.js';

export const ENTERPRISE_PLAN = 'enterprise';

/** Who is calling `/api/v1/*`: the key, its account, and the account's entitlement at lookup time. */
export interface ApiKeyPrincipal {
  keyId: string;
  keyPrefix: string;
  accountId: string;
  accountName: string;
  rateLimitPerMin: number;
}

/** A raw-query row: timestamps come back from the driver as strings, not Dates. */
interface KeyRow {
  key_id: string;
  prefix: string;
  key_expires_at: Date | string | null;
  revoked_at: Date | string | null;
  account_id: string;
  account_name: string;
  ent_status: EntitlementStatus | null;
  ent_expires_at: Date | string | null;
  rate_limit_per_min: number | null;
}

export interface ApiKeyView {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  created_by: string;
  expires_at: string | null;
  revoked_at: string | null;
  status: 'active' | 'expired' | 'revoked';
}

export interface EntitlementView {
  account_id: string;
  plan: string;
  status: EntitlementStatus;
  active: boolean;
  expires_at: string | null;
  rate_limit_per_min: number;
}

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export class AccountsService {
  /** Key lookups are cached briefly (≤ 5 s by config) so revocation reaches every replica in time. */
  private readonly keyCache = new Map<string, { row: KeyRow | null; until: number }>();
  private static readonly KEY_CACHE_MAX = 10_000;

  constructor(
    private readonly orm: Orm,
    private readonly options: { keyCacheMs: number; defaultRateLimitPerMin: number },
  ) {}

  async createAccount(input: { name: string; orgId?: string }): Promise<Account> {
    const em = this.orm.em.fork();
    const account = em.create(AccountSchema, {
      id: newId('acc'),
      name: input.name,
      orgId: input.orgId ?? input.name,
    });
    try {
      await em.persist(account).flush();
    } catch (err) {
      if (err instanceof UniqueConstraintViolationException)
        throw conflict(`An account with org_id "${account.orgId}" already exists.`);
      throw err;
    }
    return account;
  }

  /** Finds an account by its id (`acc_…`) or its org_id. */
  async getAccount(ref: string): Promise<Account> {
    const em = this.orm.em.fork();
    const account = await em.findOne(AccountSchema, { $or: [{ id: ref }, { orgId: ref }] });
    if (!account) throw notFound(`Account "${ref}"`);
    return account;
  }

  async findAccountByOrgId(orgId: string): Promise<Account | null> {
    return this.orm.em.fork().findOne(AccountSchema, { orgId });
  }

  async grantEntitlement(
    accountRef: string,
    input: { expiresAt?: Date | null; rateLimitPerMin?: number | null },
  ): Promise<EntitlementView> {
    const account = await this.getAccount(accountRef);
    const em = this.orm.em.fork();
    let entitlement = await em.findOne(EntitlementSchema, { account: account.id, plan: ENTERPRISE_PLAN });
    if (!entitlement) {
      entitlement = em.create(EntitlementSchema, {
        id: newId('ent'),
        account: account.id,
        plan: ENTERPRISE_PLAN,
        status: 'active',
        expiresAt: input.expiresAt ?? null,
        rateLimitPerMin: input.rateLimitPerMin ?? null,
      });
    } else {
      entitlement.status = 'active';
      if (input.expiresAt !== undefined) entitlement.expiresAt = input.expiresAt;
      if (input.rateLimitPerMin !== undefined) entitlement.rateLimitPerMin = input.rateLimitPerMin;
    }
    await em.persist(entitlement).flush();
    return this.entitlementView(account.id, entitlement);
  }

  async setEntitlementStatus(accountRef: string, status: 'suspended' | 'revoked'): Promise<EntitlementView> {
    const account = await this.getAccount(accountRef);
    const em = this.orm.em.fork();
    const entitlement = await em.findOne(EntitlementSchema, { account: account.id, plan: ENTERPRISE_PLAN });
    if (!entitlement) throw notFound(`An Enterprise entitlement of account "${accountRef}"`);
    entitlement.status = status;
    await em.flush();
    return this.entitlementView(account.id, entitlement);
  }

  async getEntitlement(accountId: string): Promise<EntitlementView | null> {
    const em = this.orm.em.fork();
    const entitlement = await em.findOne(EntitlementSchema, { account: accountId, plan: ENTERPRISE_PLAN });
    return entitlement ? this.entitlementView(accountId, entitlement) : null;
  }

  async createKey(
    accountId: string,
    input: { name: string; expiresAt?: Date | null; createdBy: string },
  ): Promise<{ key: string; view: ApiKeyView }> {
    if (input.expiresAt && input.expiresAt.getTime() <= Date.now())
      throw new AppError('invalid_request', 'expires_at must be in the future.', {
        errors: [{ path: 'expires_at', message: 'must be in the future' }],
      });
    const em = this.orm.em.fork();
    const raw = generateApiKey();
    const record = em.create(ApiKeySchema, {
      id: newId('key'),
      account: accountId,
      name: input.name,
      prefix: displayPrefix(raw),
      keyHash: hashApiKey(raw),
      createdBy: input.createdBy,
      expiresAt: input.expiresAt ?? null,
      revokedAt: null,
    });
    await em.persist(record).flush();
    return { key: raw, view: this.keyView(record) };
  }

  async listKeys(accountId: string): Promise<ApiKeyView[]> {
    const em = this.orm.em.fork();
    const keys = await em.find(
      ApiKeySchema,
      { account: accountId },
      { orderBy: { createdAt: 'desc', id: 'desc' } },
    );
    return keys.map((k) => this.keyView(k));
  }

  /** Revokes a key of this account; another account's key id is simply not found. Idempotent. */
  async revokeKey(accountId: string, keyId: string): Promise<ApiKeyView> {
    const em = this.orm.em.fork();
    const key = await em.findOne(ApiKeySchema, { id: keyId, account: accountId });
    if (!key) throw notFound(`API key "${keyId}"`);
    if (!key.revokedAt) {
      key.revokedAt = new Date();
      await em.flush();
    }
    return this.keyView(key);
  }

  /**
   * Resolves an `X-API-Key` to its principal, or throws `unauthorized` / `entitlement_required`. Malformed
   * keys (bad shape or checksum) are refused before any lookup. Expiry and entitlement state are judged
   * at each call against the (briefly cached) row.
   */
  async authenticateApiKey(raw: string, now = Date.now()): Promise<ApiKeyPrincipal> {
    if (!isWellFormedApiKey(raw)) throw new AppError('unauthorized', 'The API key is malformed.');
    const row = await this.lookupKey(hashApiKey(raw), now);
    if (!row) throw new AppError('unauthorized', 'The API key is not valid.');
    if (row.revoked_at) throw new AppError('unauthorized', 'The API key has been revoked.');
    if (row.key_expires_at && new Date(row.key_expires_at).getTime() <= now)
      throw new AppError('unauthorized', 'The API key has expired.');
    const active =
      row.ent_status === 'active' && (!row.ent_expires_at || new Date(row.ent_expires_at).getTime() > now);
    if (!active)
      throw new AppError(
        'entitlement_required',
        `Account ${row.account_name} has no active Enterprise subscription.`,
      );
    return {
      keyId: row.key_id,
      keyPrefix: row.prefix,
      accountId: row.account_id,
      accountName: row.account_name,
      rateLimitPerMin: row.rate_limit_per_min ?? this.options.defaultRateLimitPerMin,
    };
  }

  private async lookupKey(hash: string, now: number): Promise<KeyRow | null> {
    const cached = this.keyCache.get(hash);
    if (cached && cached.until > now) return cached.row;
    const rows = await this.orm.em.getConnection().execute<KeyRow[]>(
      `select k.id as key_id, k.prefix, k.expires_at as key_expires_at, k.revoked_at,
              a.id as account_id, a.name as account_name,
              e.status as ent_status, e.expires_at as ent_expires_at, e.rate_limit_per_min
         from api_keys k
         join accounts a on a.id = k.account_id
         left join entitlements e on e.account_id = k.account_id and e.plan = ?
        where k.key_hash = ?`,
      [ENTERPRISE_PLAN, hash],
    );
    const row = rows[0] ?? null;
    if (this.options.keyCacheMs > 0) {
      if (this.keyCache.size >= AccountsService.KEY_CACHE_MAX) this.keyCache.clear();
      this.keyCache.set(hash, { row, until: now + this.options.keyCacheMs });
    }
    return row;
  }

  /** Idempotent demo set-up: the account, an active entitlement, and (when asked) a fresh key. */
  async bootstrap(input: { orgId: string; name: string; withKey: boolean }) {
    const account = (await this.findAccountByOrgId(input.orgId)) ?? (await this.createAccount(input));
    const current = await this.getEntitlement(account.id);
    const entitlement = current?.active
      ? current
      : await this.grantEntitlement(account.id, { expiresAt: null });
    const created = input.withKey
      ? await this.createKey(account.id, { name: 'bootstrap', createdBy: 'cli:bootstrap' })
      : null;
    return { account, entitlement, created };
  }

  private keyView(k: ApiKey): ApiKeyView {
    const status = k.revokedAt
      ? 'revoked'
      : k.expiresAt && k.expiresAt.getTime() <= Date.now()
        ? 'expired'
        : 'active';
    return {
      id: k.id,
      name: k.name,
      prefix: k.prefix,
      created_at: k.createdAt.toISOString(),
      created_by: k.createdBy,
      expires_at: iso(k.expiresAt),
      revoked_at: iso(k.revokedAt),
      status,
    };
  }

  private entitlementView(accountId: string, e: Entitlement): EntitlementView {
    return {
      account_id: accountId,
      plan: e.plan,
      status: e.status,
      active: e.status === 'active' && (!e.expiresAt || e.expiresAt.getTime() > Date.now()),
      expires_at: iso(e.expiresAt),
      rate_limit_per_min: e.rateLimitPerMin ?? this.options.defaultRateLimitPerMin,
    };
  }
}
