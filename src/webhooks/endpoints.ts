import { randomBytes } from 'node:crypto';
import { lockAccount } from '../accounts/lock.js';
import type { Actor } from '../audit/actor.js';
import { clip } from '../chains/registry.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Patch, time, timeOrNull } from '../db/sql.js';
import type { EventLog } from '../events/log.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { AppError, conflict, invalidRequest, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import {
  auditEndpointCreated,
  auditEndpointDeleted,
  auditEndpointUpdated,
  auditSecretRotated,
  auditTestSent,
} from './audit.js';
import type { WebhookRepository } from './repository.js';
import type { EndpointUpdate, NewEndpoint } from './schemas.js';
import { endpointSecretContext, SecretBox } from './secrets.js';
import type { WebhookUrlPolicy } from './ssrf.js';
import {
  emptyStats,
  endpointOf,
  type CreatedEndpointView,
  type DeliveryStats,
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
 * (secrets.ts): without a key to seal them, no endpoint is created or rotated. Every change is audited
 * (audit.ts) in its own transaction, by the `Actor` that asked for it.
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
    private readonly repo: WebhookRepository,
    private readonly options: WebhookEndpointsOptions,
  ) {
    this.maxEndpoints = options.maxEndpointsPerAccount ?? MAX_ENDPOINTS_PER_ACCOUNT;
  }

  /** Creates an endpoint with a fresh secret, returned here only (stored sealed). */
  async createEndpoint(accountId: string, input: NewEndpoint, actor: Actor): Promise<CreatedEndpointView> {
    const url = this.checkUrl(input.url);
    const box = this.sealer();
    const secret = newSecret();
    const now = new Date();
    const id = newId('we', now.getTime());
    const row = await this.repo.transactional(async (em) => {
      // Concurrent creations of one account are counted one after the other.
      const account = await lockAccount(em, accountId);
      await this.requireWatchlists(accountId, input.watchlist_ids);
      const n = await this.repo.endpoints.count(em, accountId);
      if (n >= this.maxEndpoints)
        throw new AppError(
          'limit_exceeded',
          `Account ${account} already has ${n} webhook endpoints; the limit is ${this.maxEndpoints}. ` +
            'Delete one to create another (an endpoint takes several event types and watchlists).',
        );
      const enabled = input.enabled ?? true;
      const created = await this.repo.endpoints.insert(em, {
        id,
        accountId,
        url,
        description: input.description ?? null,
        events: input.events,
        watchlistIds: input.watchlist_ids ? unique(input.watchlist_ids) : null,
        enabled,
        sealedSecret: box.seal(secret, endpointSecretContext(id)),
        disabledReason: enabled ? null : DISABLED_BY_ACCOUNT,
        now,
      });
      await auditEndpointCreated(em, actor, accountId, created);
      return created;
    });
    return { ...endpointOf(row, emptyStats()), secret };
  }

  /** The account's endpoints, newest first. */
  async listEndpoints(
    accountId: string,
    q: { limit: number; cursor?: string | undefined },
  ): Promise<Page<EndpointView>> {
    const rows = await this.repo.endpoints.page(accountId, q.limit, q.cursor);
    const page = keysetPage(rows, q.limit, (r) => ({ at: time(r.created_at).toISOString(), id: r.id }));
    const stats = await this.stats(
      undefined,
      accountId,
      page.items.map((r) => r.id),
    );
    return { items: page.items.map((r) => endpointOf(r, stats.get(r.id))), nextCursor: page.nextCursor };
  }

  async getEndpoint(accountId: string, id: string): Promise<EndpointView> {
    const row = await this.repo.endpoints.get(accountId, id);
    if (!row) throw endpointNotFound(id);
    return endpointOf(row, (await this.stats(undefined, accountId, [id])).get(id));
  }

  /**
   * Changes the fields given. `url` is checked again; `enabled: true` on a disabled endpoint clears why and
   * since when it was disabled and failing, and asks for its pending deliveries to be sent.
   */
  async updateEndpoint(
    accountId: string,
    id: string,
    patch: EndpointUpdate,
    actor: Actor,
  ): Promise<EndpointView> {
    const url = patch.url === undefined ? undefined : this.checkUrl(patch.url);
    const { row, reenabled } = await this.repo.transactional(async (em) => {
      const current = await this.repo.endpoints.get(accountId, id, em);
      if (!current) throw endpointNotFound(id);
      if (patch.watchlist_ids) await this.requireWatchlists(accountId, patch.watchlist_ids);
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
      const updated = await this.repo.endpoints.update(em, accountId, id, set);
      await auditEndpointUpdated(em, actor, accountId, current, updated);
      return { row: updated, reenabled: enabling };
    });
    if (reenabled) await requestDrain(this.options.drains, id);
    return endpointOf(row, (await this.stats(undefined, accountId, [id])).get(id));
  }

  /** Deletes the endpoint with its deliveries and their attempts; returns it as it was. */
  async deleteEndpoint(accountId: string, id: string, actor: Actor): Promise<EndpointView> {
    return this.repo.transactional(async (em) => {
      const row = await this.repo.endpoints.get(accountId, id, em);
      if (!row) throw endpointNotFound(id);
      const stats = await this.stats(em, accountId, [id]);
      await this.repo.endpoints.delete(em, accountId, id);
      const view = endpointOf(row, stats.get(id));
      const { pending, succeeded, failed, expired } = view.stats;
      await auditEndpointDeleted(em, actor, accountId, row, pending + succeeded + failed + expired);
      return view;
    });
  }

  /**
   * A new secret; the current one becomes the previous secret and keeps signing beside it for
   * `secretOverlapS` (a secret rotated before was already dropped: two sign at most).
   */
  async rotateSecret(accountId: string, id: string, actor: Actor): Promise<RotatedSecret> {
    const box = this.sealer();
    const context = endpointSecretContext(id);
    const secret = newSecret();
    const now = new Date();
    const expiresAt = new Date(now.getTime() + this.options.secretOverlapS * 1000);
    await this.repo.transactional(async (em) => {
      const locked = await this.repo.endpoints.lockSecret(em, accountId, id);
      if (locked === undefined) throw endpointNotFound(id);
      const current = locked.secret;
      // A secret stored before encryption is sealed as it becomes the previous one.
      const previous = SecretBox.isSealed(current) ? current : box.seal(current, context);
      await this.repo.endpoints.rotate(em, accountId, id, {
        secret: box.seal(secret, context),
        previous,
        expiresAt,
        now,
      });
      // Until when the secret before this one signed (null: none did any more).
      const before = timeOrNull(locked.previous_secret_expires_at);
      await auditSecretRotated(em, actor, accountId, id, {
        before: before && before > now ? before : null,
        after: expiresAt,
      });
    });
    return { secret, previousSecretExpiresAt: expiresAt };
  }

  /**
   * A `webhook.test` event delivered to this endpoint alone (whatever it subscribes to), in the event log
   * like any other; the workers are asked to send it at once. A disabled endpoint is a conflict.
   */
  async sendTest(accountId: string, id: string, actor: Actor): Promise<TestSent> {
    const now = new Date();
    const sent = await this.repo.transactional(async (em) => {
      const endpoint = await this.repo.endpoints.state(accountId, id, em);
      if (!endpoint) throw endpointNotFound(id);
      if (!endpoint.enabled) throw endpointDisabled(id, endpoint.disabled_reason ?? '');
      // No endpoint subscribes to `webhook.test`: the log's fan-out delivers it nowhere, this one here.
      const { events, afterCommit } = await this.options.events.append(
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
      await this.repo.deliveries.insertFor(em, [event], now, id);
      const deliveryId = await this.repo.deliveries.idOf(em, event.id, id);
      if (!deliveryId) throw new Error(`webhook.test: no delivery was written for endpoint ${id}`);
      await auditTestSent(em, actor, accountId, id, { eventId: event.id, deliveryId });
      return { eventId: event.id, deliveryId, afterCommit };
    });
    await sent.afterCommit().catch(() => undefined); // best effort, as the drain below
    await requestDrain(this.options.drains, id);
    return { eventId: sent.eventId, deliveryId: sent.deliveryId };
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
  private async stats(em: EntityManager | undefined, accountId: string, endpointIds: readonly string[]) {
    const stats = new Map<string, DeliveryStats>();
    if (endpointIds.length === 0) return stats;
    for (const r of await this.repo.deliveries.countsOf(accountId, endpointIds, em)) {
      const s = stats.get(r.endpoint_id) ?? emptyStats();
      s[r.status] = r.n;
      stats.set(r.endpoint_id, s);
    }
    return stats;
  }
}

const unique = (ids: readonly string[]) => [...new Set(ids)];
