import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../../db/orm.js';
import { run, Where, type Patch, type Time } from '../../db/sql.js';
import type { EndpointRow } from '../views.js';

const ENDPOINT_COLUMNS =
  'id, url, description, events, watchlist_ids, enabled, disabled_at, disabled_reason, failing_since, ' +
  'previous_secret_expires_at, created_at, updated_at';

/** A new endpoint's row (its secret already sealed). */
export interface NewEndpointRow {
  id: string;
  accountId: string;
  url: string;
  description: string | null;
  events: readonly string[];
  watchlistIds: readonly string[] | null;
  enabled: boolean;
  sealedSecret: string;
  disabledReason: string | null;
  now: Date;
}

/** An endpoint as a drain uses it (its secrets as stored: sealed). */
export interface SendingEndpointRow {
  id: string;
  account_id: string;
  url: string;
  enabled: boolean;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
}

/** Whether an endpoint is enabled, and why not. */
export interface EndpointState {
  enabled: boolean;
  disabled_reason: string | null;
}

/**
 * The webhook_endpoints table. The API's statements name the account, so another account's endpoint is not
 * found; the workers' (sending, sealing secrets) go by id.
 */
export class EndpointRows {
  constructor(private readonly orm: Orm) {}

  async count(em: EntityManager, accountId: string): Promise<number> {
    const [row] = await em.execute<{ n: number }[]>(
      'select count(*)::int as n from webhook_endpoints where account_id = ?',
      [accountId],
    );
    return row?.n ?? 0;
  }

  async insert(em: EntityManager, r: NewEndpointRow): Promise<EndpointRow> {
    const now = r.now.toISOString();
    const [row] = await em.execute<EndpointRow[]>(
      `insert into webhook_endpoints (id, account_id, url, description, events, watchlist_ids, enabled, secret,
              previous_secret, previous_secret_expires_at, disabled_at, disabled_reason, failing_since,
              created_at, updated_at)
       values (?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, null, null, ?::timestamptz, ?, null, ?::timestamptz,
              ?::timestamptz)
       returning ${ENDPOINT_COLUMNS}`,
      [
        r.id,
        r.accountId,
        r.url,
        r.description,
        JSON.stringify(r.events),
        r.watchlistIds ? JSON.stringify(r.watchlistIds) : null,
        r.enabled,
        r.sealedSecret,
        r.enabled ? null : now,
        r.disabledReason,
        now,
        now,
      ],
    );
    return row!;
  }

  /** One page of the account's endpoints, newest first (`limit + 1` rows). */
  page(accountId: string, limit: number, cursor: string | undefined): Promise<EndpointRow[]> {
    const where = new Where('account_id = ?', accountId).before(cursor, 'we', 'created_at', 'id');
    return run<EndpointRow[]>(
      this.orm,
      `select ${ENDPOINT_COLUMNS} from webhook_endpoints where ${where.sql}
        order by created_at desc, id desc limit ?`,
      [...where.params, limit + 1],
    );
  }

  /** The account's endpoint; in `em`'s transaction, locked FOR UPDATE. */
  async get(accountId: string, id: string, em?: EntityManager): Promise<EndpointRow | undefined> {
    const [row] = await run<EndpointRow[]>(
      em ?? this.orm,
      `select ${ENDPOINT_COLUMNS} from webhook_endpoints where id = ? and account_id = ?${em ? ' for update' : ''}`,
      [id, accountId],
    );
    return row;
  }

  /** Sets the patch's columns. */
  async update(em: EntityManager, accountId: string, id: string, patch: Patch): Promise<EndpointRow> {
    const [row] = await em.execute<EndpointRow[]>(
      `update webhook_endpoints set ${patch.sql} where id = ? and account_id = ? returning ${ENDPOINT_COLUMNS}`,
      [...patch.params, id, accountId],
    );
    return row!;
  }

  /** Deletes the endpoint with its deliveries and their attempts. */
  async delete(em: EntityManager, accountId: string, id: string): Promise<void> {
    for (const sql of [
      'delete from webhook_attempts where endpoint_id = ? and account_id = ?',
      'delete from webhook_deliveries where endpoint_id = ? and account_id = ?',
      'delete from webhook_endpoints where id = ? and account_id = ?',
    ])
      await em.execute(sql, [id, accountId], 'run');
  }

  /**
   * The endpoint's secret as stored, and until when its previous one signs, locked FOR UPDATE for a
   * rotation.
   */
  async lockSecret(
    em: EntityManager,
    accountId: string,
    id: string,
  ): Promise<{ secret: string; previous_secret_expires_at: Time | null } | undefined> {
    const [row] = await em.execute<{ secret: string; previous_secret_expires_at: Time | null }[]>(
      'select secret, previous_secret_expires_at from webhook_endpoints where id = ? and account_id = ? for update',
      [id, accountId],
    );
    return row;
  }

  /** A rotation: the new secret, and the previous one signing until `expiresAt` (both sealed). */
  async rotate(
    em: EntityManager,
    accountId: string,
    id: string,
    s: { secret: string; previous: string; expiresAt: Date; now: Date },
  ): Promise<void> {
    await em.execute(
      `update webhook_endpoints
          set previous_secret = ?, previous_secret_expires_at = ?::timestamptz, secret = ?,
              updated_at = ?::timestamptz
        where id = ? and account_id = ?`,
      [s.previous, s.expiresAt.toISOString(), s.secret, s.now.toISOString(), id, accountId],
      'run',
    );
  }

  /** Whether the account's endpoint is enabled; in `em`'s transaction, held FOR SHARE. */
  async state(accountId: string, id: string, em?: EntityManager): Promise<EndpointState | undefined> {
    const [row] = await run<EndpointState[]>(
      em ?? this.orm,
      `select enabled, disabled_reason from webhook_endpoints where id = ? and account_id = ?${em ? ' for share' : ''}`,
      [id, accountId],
    );
    return row;
  }

  // ---- the workers' side ------------------------------------------------------------------------------

  /** The endpoint as a drain sends to it. */
  async forSending(id: string): Promise<SendingEndpointRow | undefined> {
    const [row] = await run<SendingEndpointRow[]>(
      this.orm,
      `select id, account_id, url, enabled, secret, previous_secret, previous_secret_expires_at, failing_since
         from webhook_endpoints where id = ?`,
      [id],
    );
    return row;
  }

  async setFailingSince(em: EntityManager, id: string, failingSince: Date | null): Promise<void> {
    await em.execute(
      'update webhook_endpoints set failing_since = ? where id = ?',
      [failingSince, id],
      'run',
    );
  }

  /** Disables the endpoint (if it still is enabled), saying why. */
  async disable(em: EntityManager, id: string, reason: string, now: Date): Promise<void> {
    await em.execute(
      `update webhook_endpoints set enabled = false, disabled_at = ?, disabled_reason = ?, updated_at = ?
        where id = ? and enabled`,
      [now, reason, now, id],
      'run',
    );
  }

  /**
   * Up to `limit` endpoints (ids after `after`) with a secret or previous secret not matching `fresh` (a
   * LIKE pattern of the secrets already sealed as wanted), locked FOR UPDATE in `em`'s transaction.
   */
  lockUnsealed(
    em: EntityManager,
    after: string,
    fresh: string,
    limit: number,
  ): Promise<{ id: string; secret: string; previous_secret: string | null; previous_expired: boolean }[]> {
    return em.execute(
      `select id, secret, previous_secret,
              coalesce(previous_secret_expires_at <= now(), true) as previous_expired
         from webhook_endpoints
        where id > ? and (secret not like ? or previous_secret not like ?)
        order by id limit ${limit} for update`,
      [after, fresh, fresh],
    );
  }

  async storeSecrets(em: EntityManager, id: string, secret: string, previous: string | null): Promise<void> {
    await em.execute(
      'update webhook_endpoints set secret = ?, previous_secret = ? where id = ?',
      [secret, previous, id],
      'run',
    );
  }

  /** Stored secrets counted by the key id they are sealed under (`sealed`: a LIKE pattern; null: plaintext). */
  secretKids(sealed: string): Promise<{ kid: string | null; n: number }[]> {
    return run<{ kid: string | null; n: number }[]>(
      this.orm,
      `select case when v like ? then split_part(v, ':', 3) end as kid, count(*)::int as n
         from webhook_endpoints cross join lateral (values (secret), (previous_secret)) s(v)
        where v is not null group by 1`,
      [sealed],
    );
  }

  /** Endpoints of every account. */
  async countAll(): Promise<number> {
    const [row] = await run<{ n: number }[]>(this.orm, 'select count(*)::int as n from webhook_endpoints');
    return row?.n ?? 0;
  }
}
