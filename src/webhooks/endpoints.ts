import { randomBytes } from 'node:crypto';
import { lockAccount } from '../accounts/lock.js';
import { clip } from '../chains/registry.js';
import type { Orm } from '../db/orm.js';
import { Patch, run, time, Where, type Db } from '../db/sql.js';
import type { EventLog } from '../events/log.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { AppError, conflict, invalidRequest, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { DeliveryStatus } from './entities.js';
import { insertDeliveries } from './fan-out.js';
import type { EndpointUpdate, NewEndpoint } from './schemas.js';
import { endpointSecretContext, SecretBox } from './secrets.js';
import type { WebhookUrlPolicy } from './ssrf.js';
import {
  emptyStats,
  ENDPOINT_COLUMNS,
  endpointOf,
  type CreatedEndpointView,
  type DeliveryStats,
  type EndpointRow,
  type EndpointView,
  type RotatedSecret,
  type TestSent,
} from './views.js';

/*
 * An account's webhook endpoints (the webhook_endpoints table): CRUD, secret rotation and test events. The
 * delivery log, redelivery and recovery are deliveries.ts; sending is delivery.ts, in the workers. Nothing
 * is sent here: a change that makes deliveries due asks the workers to drain the endpoint
 * (`webhook-drain`), and the periodic sweep finds anything a failed request left behind. Every query names
 * the caller's account, so another account's id is simply not found. Signing secrets are stored sealed
 * (secrets.ts): without a key to seal them, no endpoint is created or rotated.
 */

/** Endpoints an account may have. */
export const MAX_ENDPOINTS_PER_ACCOUNT = 50;

/** Why an endpoint the account disabled itself is disabled. */
export const DISABLED_BY_ACCOUNT = 'Disabled through the API (enabled: false).';

/** Asks the workers to drain an endpoint (webhooks' fan-out does; best effort where it is called). */
export interface DrainRequests {
  requestDrain(endpointId: string): Promise<void>;
}

export interface WebhookEndpointsOptions {
  /** The SSRF guard's creation-time check (`webhooks.allow_cidrs`, `webhooks.allow_http`). */
  urlPolicy: Pick<WebhookUrlPolicy, 'checkUrl'>;
  /** `webhooks.secret_overlap_s`: how long the old secret signs after a rotation. */
  secretOverlapS: number;
  /** Seals the signing secrets (`webhooks.secrets_key`). */
  secrets: SecretBox;
  /** The event log a test event is appended to. */
  events: EventLog;
  /** Where drains are asked for; absent where nothing is to be sent. */
  drains?: DrainRequests;
  /**
   * Which of `ids` are watchlists of the account: the watchlists feature answers, handed in at
   * composition (webhooks reads none of its tables).
   */
  watchlistsOf: (accountId: string, ids: readonly string[]) => Promise<ReadonlySet<string>>;
  maxEndpointsPerAccount?: number;
}

/** A signing secret: `whsec_` + base64 of 24 random bytes (Standard Webhooks). */
const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

export const endpointNotFound = (id: string) => notFound(`Webhook endpoint "${clip(id)}"`);
export const endpointDisabled = (id: string, why: string) =>
  conflict(
    `Webhook endpoint ${id} is disabled${why ? ` (${why})` : ''}: enable it first ` +
      '(PATCH with { "enabled": true }).',
  );

/**
 * Asks the workers to drain the endpoint. Best effort: the state is committed, and the periodic sweep finds
 * due deliveries whatever happens here, so a Redis hiccup must not turn a done change into an error.
 */
export async function requestDrain(drains: DrainRequests | undefined, endpointId: string): Promise<void> {
  await drains?.requestDrain(endpointId).catch(() => undefined);
}

/** Webhook endpoints of an account: CRUD, secret rotation, test events. Every query is scoped to the account. */
export class WebhookEndpointsService {
  private readonly maxEndpoints: number;

  constructor(
    private readonly orm: Orm,
    private readonly options: WebhookEndpointsOptions,
  ) {
    this.maxEndpoints = options.maxEndpointsPerAccount ?? MAX_ENDPOINTS_PER_ACCOUNT;
  }

  /** Creates an endpoint with a fresh secret, returned here only (stored sealed). */
  async createEndpoint(accountId: string, input: NewEndpoint): Promise<CreatedEndpointView> {
    const url = this.checkUrl(input.url);
    const box = this.sealer();
    const secret = newSecret();
    const now = new Date();
    const id = newId('we', now.getTime());
    await this.requireWatchlists(accountId, input.watchlist_ids);
    const row = await this.orm.em.fork().transactional(async (em) => {
      // Concurrent creations of one account are counted one after the other.
      const account = await lockAccount(em, accountId);
      const [counted] = await em.execute<{ n: number }[]>(
        'select count(*)::int as n from webhook_endpoints where account_id = ?',
        [accountId],
      );
      const n = counted?.n ?? 0;
      if (n >= this.maxEndpoints)
        throw new AppError(
          'limit_exceeded',
          `Account ${account} already has ${n} webhook endpoints; the limit is ${this.maxEndpoints}. ` +
            'Delete one to create another (an endpoint takes several event types and watchlists).',
        );
      const enabled = input.enabled ?? true;
      const [inserted] = await em.execute<EndpointRow[]>(
        `insert into webhook_endpoints (id, account_id, url, description, events, watchlist_ids, enabled, secret,
                previous_secret, previous_secret_expires_at, disabled_at, disabled_reason, failing_since,
                created_at, updated_at)
         values (?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, null, null, ?::timestamptz, ?, null, ?::timestamptz,
                ?::timestamptz)
         returning ${ENDPOINT_COLUMNS}`,
        [
          id,
          accountId,
          url,
          input.description ?? null,
          JSON.stringify(input.events),
          input.watchlist_ids ? JSON.stringify(unique(input.watchlist_ids)) : null,
          enabled,
          box.seal(secret, endpointSecretContext(id)),
          enabled ? null : now.toISOString(),
          enabled ? null : DISABLED_BY_ACCOUNT,
          now.toISOString(),
          now.toISOString(),
        ],
      );
      return inserted!;
    });
    return { ...endpointOf(row, emptyStats()), secret };
  }

  /** The account's endpoints, newest first. */
  async listEndpoints(
    accountId: string,
    q: { limit: number; cursor?: string | undefined },
  ): Promise<Page<EndpointView>> {
    const where = new Where('account_id = ?', accountId).before(q.cursor, 'we', 'created_at', 'id');
    const rows = await run<EndpointRow[]>(
      this.orm,
      `select ${ENDPOINT_COLUMNS} from webhook_endpoints where ${where.sql}
        order by created_at desc, id desc limit ?`,
      [...where.params, q.limit + 1],
    );
    const page = keysetPage(rows, q.limit, (r) => ({ at: time(r.created_at).toISOString(), id: r.id }));
    const stats = await this.stats(
      this.orm,
      accountId,
      page.items.map((r) => r.id),
    );
    return { items: page.items.map((r) => endpointOf(r, stats.get(r.id))), nextCursor: page.nextCursor };
  }

  async getEndpoint(accountId: string, id: string): Promise<EndpointView> {
    const [row] = await run<EndpointRow[]>(
      this.orm,
      `select ${ENDPOINT_COLUMNS} from webhook_endpoints where id = ? and account_id = ?`,
      [id, accountId],
    );
    if (!row) throw endpointNotFound(id);
    return endpointOf(row, (await this.stats(this.orm, accountId, [id])).get(id));
  }

  /**
   * Changes the fields given. `url` is checked again; `enabled: true` on a disabled endpoint clears why and
   * since when it was disabled and failing, and asks for its pending deliveries to be sent.
   */
  async updateEndpoint(accountId: string, id: string, patch: EndpointUpdate): Promise<EndpointView> {
    const url = patch.url === undefined ? undefined : this.checkUrl(patch.url);
    if (patch.watchlist_ids) await this.requireWatchlists(accountId, patch.watchlist_ids);
    const { row, reenabled } = await this.orm.em.fork().transactional(async (em) => {
      const [current] = await em.execute<EndpointRow[]>(
        `select ${ENDPOINT_COLUMNS} from webhook_endpoints where id = ? and account_id = ? for update`,
        [id, accountId],
      );
      if (!current) throw endpointNotFound(id);
      const set = new Patch();
      if (url !== undefined) set.set('url', url);
      if (patch.events !== undefined) set.set('events', JSON.stringify(patch.events), '::jsonb');
      if (patch.watchlist_ids !== undefined)
        set.set(
          'watchlist_ids',
          patch.watchlist_ids ? JSON.stringify(unique(patch.watchlist_ids)) : null,
          '::jsonb',
        );
      if (patch.description !== undefined) set.set('description', patch.description);
      const now = new Date();
      const enabling = patch.enabled === true && !current.enabled;
      const disabling = patch.enabled === false && current.enabled;
      if (enabling)
        set.set('enabled', true).raw('disabled_at = null, disabled_reason = null, failing_since = null');
      else if (disabling)
        set
          .set('enabled', false)
          .set('disabled_at', now.toISOString(), '::timestamptz')
          .set('disabled_reason', DISABLED_BY_ACCOUNT);
      if (set.empty) return { row: current, reenabled: false };
      set.set('updated_at', now.toISOString(), '::timestamptz');
      const [updated] = await em.execute<EndpointRow[]>(
        `update webhook_endpoints set ${set.sql} where id = ? and account_id = ? returning ${ENDPOINT_COLUMNS}`,
        [...set.params, id, accountId],
      );
      return { row: updated!, reenabled: enabling };
    });
    if (reenabled) await requestDrain(this.options.drains, id);
    return endpointOf(row, (await this.stats(this.orm, accountId, [id])).get(id));
  }

  /** Deletes the endpoint with its deliveries and their attempts; returns it as it was. */
  async deleteEndpoint(accountId: string, id: string): Promise<EndpointView> {
    return this.orm.em.fork().transactional(async (em) => {
      const [row] = await em.execute<EndpointRow[]>(
        `select ${ENDPOINT_COLUMNS} from webhook_endpoints where id = ? and account_id = ? for update`,
        [id, accountId],
      );
      if (!row) throw endpointNotFound(id);
      const stats = await this.stats(em, accountId, [id]);
      for (const sql of [
        'delete from webhook_attempts where endpoint_id = ? and account_id = ?',
        'delete from webhook_deliveries where endpoint_id = ? and account_id = ?',
        'delete from webhook_endpoints where id = ? and account_id = ?',
      ])
        await em.execute(sql, [id, accountId], 'run');
      return endpointOf(row, stats.get(id));
    });
  }

  /**
   * A new secret; the current one becomes the previous secret and keeps signing beside it for
   * `secretOverlapS` (a secret rotated before was already dropped: two sign at most).
   */
  async rotateSecret(accountId: string, id: string): Promise<RotatedSecret> {
    const box = this.sealer();
    const context = endpointSecretContext(id);
    const secret = newSecret();
    const now = new Date();
    const expiresAt = new Date(now.getTime() + this.options.secretOverlapS * 1000);
    await this.orm.em.fork().transactional(async (em) => {
      const [current] = await em.execute<{ secret: string }[]>(
        'select secret from webhook_endpoints where id = ? and account_id = ? for update',
        [id, accountId],
      );
      if (!current) throw endpointNotFound(id);
      // A secret stored before encryption is sealed as it becomes the previous one.
      const previous = SecretBox.isSealed(current.secret)
        ? current.secret
        : box.seal(current.secret, context);
      await em.execute(
        `update webhook_endpoints
            set previous_secret = ?, previous_secret_expires_at = ?::timestamptz, secret = ?,
                updated_at = ?::timestamptz
          where id = ? and account_id = ?`,
        [previous, expiresAt.toISOString(), box.seal(secret, context), now.toISOString(), id, accountId],
        'run',
      );
    });
    return { secret, previousSecretExpiresAt: expiresAt };
  }

  /**
   * A `webhook.test` event delivered to this endpoint alone (whatever it subscribes to), in the event log
   * like any other; the workers are asked to send it at once. A disabled endpoint is a conflict.
   */
  async sendTest(accountId: string, id: string): Promise<TestSent> {
    const now = new Date();
    const sent = await this.orm.em.fork().transactional(async (em) => {
      const [endpoint] = await em.execute<{ enabled: boolean; disabled_reason: string | null }[]>(
        'select enabled, disabled_reason from webhook_endpoints where id = ? and account_id = ? for share',
        [id, accountId],
      );
      if (!endpoint) throw endpointNotFound(id);
      if (!endpoint.enabled) throw endpointDisabled(id, endpoint.disabled_reason ?? '');
      // No endpoint subscribes to `webhook.test`: the log's fan-out delivers it nowhere, this one here.
      const { events } = await this.options.events.append(
        em,
        [
          {
            accountId,
            type: 'webhook.test',
            watchlistId: null,
            data: { endpoint_id: id, message: 'riskwatch test event' },
          },
        ],
        now,
      );
      const event = events[0]!;
      await insertDeliveries(em, [event], now, id);
      const [delivery] = await em.execute<{ id: string }[]>(
        'select id from webhook_deliveries where event_id = ? and endpoint_id = ?',
        [event.id, id],
      );
      if (!delivery) throw new Error(`webhook.test: no delivery was written for endpoint ${id}`);
      return { eventId: event.id, deliveryId: delivery.id };
    });
    await requestDrain(this.options.drains, id);
    return sent;
  }

  /** The secrets box when it has a key to seal new secrets under, or `secrets_key_missing`. */
  private sealer(): SecretBox {
    if (this.options.secrets.kid === undefined)
      throw new AppError(
        'secrets_key_missing',
        'Webhook signing secrets are stored encrypted, and this installation has no key to encrypt them ' +
          'with: its operator must set RISKWATCH_SECRETS_KEY. No endpoint can be created or rotated until then.',
      );
    return this.options.secrets;
  }

  /** The URL as stored (normalised), or `invalid_webhook_url` with the SSRF guard's reason. */
  private checkUrl(raw: string): string {
    const checked = this.options.urlPolicy.checkUrl(raw);
    if (checked.ok) return checked.url.href;
    throw new AppError('invalid_webhook_url', `The webhook URL is refused: ${checked.reason}.`, {
      errors: [{ path: 'url', message: checked.reason }],
    });
  }

  /** Each id must be a watchlist of the account: else `invalid_request` naming the index of each other one. */
  private async requireWatchlists(accountId: string, ids: readonly string[] | null | undefined) {
    if (!ids?.length) return;
    const found = await this.options.watchlistsOf(accountId, ids);
    const missing = ids.flatMap((id, index) => (found.has(id) ? [] : [{ id, index }]));
    if (missing.length)
      throw invalidRequest(
        `${missing.map((m) => `"${clip(m.id)}"`).join(', ')} ${missing.length === 1 ? 'is not a watchlist' : 'are not watchlists'} of this account.`,
        missing.map((m) => ({
          path: `watchlist_ids.${m.index}`,
          message: 'not a watchlist of this account',
        })),
      );
  }

  /** Delivery counts by status of each endpoint: one grouped query. */
  private async stats(db: Db, accountId: string, endpointIds: readonly string[]) {
    const stats = new Map<string, DeliveryStats>();
    if (endpointIds.length === 0) return stats;
    const rows = await run<{ endpoint_id: string; status: DeliveryStatus; n: number }[]>(
      db,
      `select endpoint_id, status, count(*)::int as n from webhook_deliveries
        where account_id = ? and endpoint_id in (select jsonb_array_elements_text(?::jsonb))
        group by endpoint_id, status`,
      [accountId, JSON.stringify(endpointIds)],
    );
    for (const r of rows) {
      const s = stats.get(r.endpoint_id) ?? emptyStats();
      s[r.status] = r.n;
      stats.set(r.endpoint_id, s);
    }
    return stats;
  }
}

const unique = (ids: readonly string[]) => [...new Set(ids)];
