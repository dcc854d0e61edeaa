import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { LRUCache } from 'lru-cache';
import { decodeCursor, keysetPage, type Page } from '../platform/cursor.js';
import { AppError, conflict, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { Orm } from '../db/orm.js';
import { run, time, type Time } from '../db/sql.js';
import { actorName, type Actor } from '../audit/actor.js';
import { displayPrefix, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key-format.js';
import {
  auditAccountCreated,
  auditEntitlementGrant,
  auditEntitlementStatus,
  auditKeyCreated,
  auditKeyRevoked,
  entitlementFields,
} from './audit.js';
import {
  AccountSchema,
  ApiKeySchema,
  EntitlementSchema,
  type Account,
  type ApiKey,
  type ApiKeyStatus,
  type Entitlement,
  type EntitlementStatus,
} from './entities.js';
import type { ApiKeyPrincipal } from '../http/state.js';

export const ENTERPRISE_PLAN = 'enterprise';

/** A row read to be changed: locked until the transaction ends, so concurrent changes audit one by one. */
const LOCKED = { lockMode: LockMode.PESSIMISTIC_WRITE } as const;

/** A raw-query row: timestamps come back from the driver as strings, not Dates. */
interface KeyRow {
  key_id: string;
  prefix: string;
  key_expires_at: Time | null;
  revoked_at: Time | null;
  account_id: string;
  account_name: string;
  ent_status: EntitlementStatus | null;
  ent_expires_at: Time | null;
  rate_limit_per_min: number | null;
}

/** An API key as the service shows it: everything but its hash, and its status at the time of the call. */
export interface ApiKeyInfo {
  id: string;
  name: string;
  prefix: string;
  createdAt: Date;
  createdBy: string;
  expiresAt: Date | null;
  revokedAt: Date | null;
  status: ApiKeyStatus;
}

/** A new key: the raw key (shown once, never stored) and the stored key. */
export interface CreatedKey {
  key: string;
  view: ApiKeyInfo;
}

/** An account's Enterprise entitlement, judged at the time of the call, with the rate limit in force. */
export interface EnterpriseEntitlement {
  accountId: string;
  plan: string;
  status: EntitlementStatus;
  /** Active and not expired: the account's keys work. */
  active: boolean;
  expiresAt: Date | null;
  /** The entitlement's own limit, else the configured default. */
  rateLimitPerMin: number;
}

export interface AccountsOptions {
  /** `auth.api_key_cache_ms`: how long a looked-up key is reused (0: every call queries). */
  keyCacheMs: number;
  defaultRateLimitPerMin: number;
  /** `auth.unknown_key_cache_ms`: how long a well-formed key that matched no row stays unknown (unset: 0). */
  unknownKeyCacheMs?: number | undefined;
  /** `auth.max_api_keys_per_account`: active keys an account may hold (unset: no ceiling). */
  maxKeysPerAccount?: number | undefined;
}

/** An LRU of at most `max` entries, each gone `ttlMs` after it was stored (use does not extend it). 0: none. */
function expiringLru<V extends object | boolean>(max: number, ttlMs: number): LRUCache<string, V> | null {
  return ttlMs > 0 ? new LRUCache<string, V>({ max, ttl: ttlMs, updateAgeOnGet: false }) : null;
}

export class AccountsService {
  /** Known keys a process remembers at most; past it the least recently used is dropped. */
  static readonly KNOWN_KEYS_MAX = 10_000;
  /** Unknown key hashes remembered at most: a cache of its own, so bogus keys only ever evict bogus keys. */
  static readonly UNKNOWN_KEYS_MAX = 5_000;

  /**
   * Rows of keys that exist (revoked and expired ones too: they are refused without a query), each reused
   * for `keyCacheMs` from its lookup, never longer, so a revocation reaches every replica in time.
   */
  private readonly knownKeys: LRUCache<string, KeyRow> | null;
  /** Hashes of well-formed keys that matched no row, so a client repeating one costs no query. */
  private readonly unknownKeys: LRUCache<string, true> | null;

  constructor(
    private readonly orm: Orm,
    private readonly options: AccountsOptions,
  ) {
    this.knownKeys = expiringLru(AccountsService.KNOWN_KEYS_MAX, options.keyCacheMs);
    this.unknownKeys = expiringLru(AccountsService.UNKNOWN_KEYS_MAX, options.unknownKeyCacheMs ?? 0);
  }

  /** Creates an account; `account.created` in the audit log, in the same transaction. */
  async createAccount(input: { name: string; orgId?: string }, actor: Actor): Promise<Account> {
    const orgId = input.orgId ?? input.name;
    try {
      return await this.orm.em.fork().transactional(async (em) => {
        const account = em.create(AccountSchema, { id: newId('acc'), name: input.name, orgId });
        await em.persist(account).flush();
        await auditAccountCreated(em, actor, account);
        return account;
      });
    } catch (err) {
      if (err instanceof UniqueConstraintViolationException)
        throw conflict(`An account with org_id "${orgId}" already exists.`);
      throw err;
    }
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

  /** Grants (or re-activates) the Enterprise entitlement; audited in the same transaction (./audit.ts). */
  async grantEntitlement(
    accountRef: string,
    input: { expiresAt?: Date | null; rateLimitPerMin?: number | null },
    actor: Actor,
  ): Promise<EnterpriseEntitlement> {
    const account = await this.getAccount(accountRef);
    const entitlement = await this.orm.em.fork().transactional(async (em) => {
      let row = await em.findOne(EntitlementSchema, { account: account.id, plan: ENTERPRISE_PLAN }, LOCKED);
      const before = row ? entitlementFields(row) : null;
      if (!row) {
        row = em.create(EntitlementSchema, {
          id: newId('ent'),
          account: account.id,
          plan: ENTERPRISE_PLAN,
          status: 'active',
          expiresAt: input.expiresAt ?? null,
          rateLimitPerMin: input.rateLimitPerMin ?? null,
        });
      } else {
        row.status = 'active';
        if (input.expiresAt !== undefined) row.expiresAt = input.expiresAt;
        if (input.rateLimitPerMin !== undefined) row.rateLimitPerMin = input.rateLimitPerMin;
      }
      await em.persist(row).flush();
      await auditEntitlementGrant(em, actor, account.id, before, row);
      return row;
    });
    return this.entitlementOf(account.id, entitlement);
  }

  /** Suspends or revokes the entitlement: `entitlement.suspended` / `entitlement.revoked`, when it changes. */
  async setEntitlementStatus(
    accountRef: string,
    status: 'suspended' | 'revoked',
    actor: Actor,
  ): Promise<EnterpriseEntitlement> {
    const account = await this.getAccount(accountRef);
    const entitlement = await this.orm.em.fork().transactional(async (em) => {
      const row = await em.findOne(EntitlementSchema, { account: account.id, plan: ENTERPRISE_PLAN }, LOCKED);
      if (!row) throw notFound(`An Enterprise entitlement of account "${accountRef}"`);
      const before = row.status;
      row.status = status;
      await em.flush();
      await auditEntitlementStatus(em, actor, account.id, before, row);
      return row;
    });
    return this.entitlementOf(account.id, entitlement);
  }

  async getEntitlement(accountId: string): Promise<EnterpriseEntitlement | null> {
    const em = this.orm.em.fork();
    const entitlement = await em.findOne(EntitlementSchema, { account: accountId, plan: ENTERPRISE_PLAN });
    return entitlement ? this.entitlementOf(accountId, entitlement) : null;
  }

  /** A new key (its `created_by` names the actor); `api_key.created` in the same transaction. */
  async createKey(
    accountId: string,
    input: { name: string; expiresAt?: Date | null },
    actor: Actor,
  ): Promise<CreatedKey> {
    if (input.expiresAt && input.expiresAt.getTime() <= Date.now())
      throw new AppError('invalid_request', 'expires_at must be in the future.', {
        errors: [{ path: 'expires_at', message: 'must be in the future' }],
      });
    const raw = generateApiKey();
    const record = await this.orm.em.fork().transactional(async (em) => {
      await this.checkKeyCeiling(em, accountId);
      const created = em.create(ApiKeySchema, {
        id: newId('key'),
        account: accountId,
        name: input.name,
        prefix: displayPrefix(raw),
        keyHash: hashApiKey(raw),
        createdBy: actorName(actor),
        expiresAt: input.expiresAt ?? null,
        revokedAt: null,
      });
      await em.persist(created).flush();
      await auditKeyCreated(em, actor, accountId, created);
      return created;
    });
    return { key: raw, view: this.keyInfo(record) };
  }

  /**
   * Locks the account's row and refuses a new key when the account already holds the ceiling of active
   * keys (neither revoked nor expired: those authenticate nothing, so they never block a new one). The
   * lock (`for no key update`: it does not hold up inserts that merely reference the account) lasts until
   * the creating transaction ends, so concurrent creations are counted one after the other.
   */
  private async checkKeyCeiling(em: EntityManager, accountId: string): Promise<void> {
    const [account] = await em.execute<{ name: string }[]>(
      'select name from accounts where id = ? for no key update',
      [accountId],
    );
    if (!account) throw notFound(`Account "${accountId}"`);
    const max = this.options.maxKeysPerAccount;
    if (max === undefined) return;
    const [counted] = await em.execute<{ n: number }[]>(
      `select count(*)::int as n from api_keys
        where account_id = ? and revoked_at is null and (expires_at is null or expires_at > ?)`,
      [accountId, new Date()],
    );
    const n = counted?.n ?? 0;
    if (n >= max)
      throw new AppError(
        'limit_exceeded',
        `Account ${account.name} already has ${n} active API keys; the limit is ${max} ` +
          '(auth.max_api_keys_per_account / RISKWATCH_MAX_API_KEYS_PER_ACCOUNT). Revoke a key to create another.',
      );
  }

  /** One page of the account's keys (revoked and expired ones included), newest first. */
  async listKeys(
    accountId: string,
    q: { limit: number; cursor?: string | undefined },
  ): Promise<Page<ApiKeyInfo>> {
    const after = q.cursor ? decodeCursor(q.cursor, 'key') : undefined;
    const at = after ? new Date(after.at) : undefined;
    const keys = await this.orm.em.fork().find(
      ApiKeySchema,
      {
        account: accountId,
        ...(after ? { $or: [{ createdAt: { $lt: at } }, { createdAt: at, id: { $lt: after.id } }] } : {}),
      },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: q.limit + 1 },
    );
    return keysetPage(
      keys.map((k) => this.keyInfo(k)),
      q.limit,
      (k) => ({ at: k.createdAt.toISOString(), id: k.id }),
    );
  }

  /**
   * Revokes a key of this account; another account's key id is simply not found. Idempotent: only the
   * revocation itself is audited (`api_key.revoked`, in its transaction).
   */
  async revokeKey(accountId: string, keyId: string, actor: Actor): Promise<ApiKeyInfo> {
    const key = await this.orm.em.fork().transactional(async (em) => {
      const row = await em.findOne(ApiKeySchema, { id: keyId, account: accountId }, LOCKED);
      if (!row) throw notFound(`API key "${keyId}"`);
      if (row.revokedAt) return row;
      const before = this.keyInfo(row).status;
      row.revokedAt = new Date();
      await em.flush();
      await auditKeyRevoked(em, actor, accountId, row, before);
      return row;
    });
    // At once in this process; other replicas drop their copy within keyCacheMs.
    this.knownKeys?.delete(key.keyHash);
    return this.keyInfo(key);
  }

  /**
   * Resolves an `X-API-Key` to its principal, or throws `unauthorized` / `entitlement_required`. Malformed
   * keys (bad shape or checksum) are refused before any lookup. Expiry and entitlement state are judged
   * at each call against the (briefly cached) row.
   */
  async authenticateApiKey(raw: string, now = Date.now()): Promise<ApiKeyPrincipal> {
    if (!isWellFormedApiKey(raw)) throw new AppError('unauthorized', 'The API key is malformed.');
    const row = await this.lookupKey(hashApiKey(raw));
    if (!row) throw new AppError('unauthorized', 'The API key is not valid.');
    if (row.revoked_at) throw new AppError('unauthorized', 'The API key has been revoked.');
    if (row.key_expires_at && time(row.key_expires_at).getTime() <= now)
      throw new AppError('unauthorized', 'The API key has expired.');
    const active =
      row.ent_status === 'active' && (!row.ent_expires_at || time(row.ent_expires_at).getTime() > now);
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

  /**
   * The key's row by hash, or null when no key has it. Remembered for a while either way (see the two
   * caches). Remembering a miss delays nothing real: a key exists from its creation, and its raw value is
   * random and never shown before, so nobody presents it while it is still unknown.
   */
  private async lookupKey(hash: string): Promise<KeyRow | null> {
    const known = this.knownKeys?.get(hash);
    if (known) return known;
    if (this.unknownKeys?.get(hash)) return null;
    const rows = await run<KeyRow[]>(
      this.orm,
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
    if (row) this.knownKeys?.set(hash, row);
    else this.unknownKeys?.set(hash, true);
    return row;
  }

  /** Idempotent demo set-up: the account, an active entitlement, and (when asked) a fresh key. */
  async bootstrap(input: { orgId: string; name: string; withKey: boolean }, actor: Actor) {
    const account = (await this.findAccountByOrgId(input.orgId)) ?? (await this.createAccount(input, actor));
    const current = await this.getEntitlement(account.id);
    const entitlement = current?.active
      ? current
      : await this.grantEntitlement(account.id, { expiresAt: null }, actor);
    const created = input.withKey ? await this.createKey(account.id, { name: 'bootstrap' }, actor) : null;
    return { account, entitlement, created };
  }

  private keyInfo(k: ApiKey): ApiKeyInfo {
    const status = k.revokedAt
      ? 'revoked'
      : k.expiresAt && k.expiresAt.getTime() <= Date.now()
        ? 'expired'
        : 'active';
    return {
      id: k.id,
      name: k.name,
      prefix: k.prefix,
      createdAt: k.createdAt,
      createdBy: k.createdBy,
      expiresAt: k.expiresAt ?? null,
      revokedAt: k.revokedAt ?? null,
      status,
    };
  }

  private entitlementOf(accountId: string, e: Entitlement): EnterpriseEntitlement {
    return {
      accountId,
      plan: e.plan,
      status: e.status,
      active: e.status === 'active' && (!e.expiresAt || e.expiresAt.getTime() > Date.now()),
      expiresAt: e.expiresAt ?? null,
      rateLimitPerMin: e.rateLimitPerMin ?? this.options.defaultRateLimitPerMin,
    };
  }
}
