import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { lockAccount } from '../accounts/lock.js';
import { clip } from '../chains/registry.js';
import type { Orm } from '../db/orm.js';
import type { JobQueues } from '../jobs/queues.js';
import { decodeCursor, encodeCursor, keysetPage, type Page } from '../platform/cursor.js';
import { AppError, conflict, invalidRequest, notFound } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { DeliveryStatus } from './entities.js';
import { appendEvents } from './outbox.js';
import {
  ATTEMPT_LOG_SIZE,
  type DeliveriesQuery,
  type EndpointUpdate,
  type EventsQuery,
  type NewEndpoint,
} from './schemas.js';
import { endpointSecretContext, SecretBox } from './secrets.js';
import type { WebhookUrlPolicy } from './ssrf.js';

/*
 * The webhook API over the tables of entities.ts: an account's endpoints, their deliveries and attempts
 * (written by the outbox and the delivery workers), redelivery and recovery, and the pull-able event log.
 * Nothing is sent here: state changes make deliveries due, and the workers are asked to drain the endpoint
 * (`webhook-drain`); the periodic sweep finds anything a failed enqueue left behind. Every query names the
 * caller's account, so another account's id is simply not found. Signing secrets are stored sealed
 * (secrets.ts): without a key to seal them, no endpoint is created or rotated.
 */

/** Endpoints an account may have. */
export const MAX_ENDPOINTS_PER_ACCOUNT = 50;

/** Why an endpoint the account disabled itself is disabled. */
export const DISABLED_BY_ACCOUNT = 'Disabled through the API (enabled: false).';

export interface WebhooksOptions {
  /** The SSRF guard's creation-time check (`webhooks.allow_cidrs`, `webhooks.allow_http`). */
  urlPolicy: Pick<WebhookUrlPolicy, 'checkUrl'>;
  /** `webhooks.secret_overlap_s`: how long the old secret signs after a rotation. */
  secretOverlapS: number;
  /** `webhooks.event_retention_days`: older events are not served (and are pruned). */
  eventRetentionDays: number;
  /** Seals the signing secrets (`webhooks.secrets_key`). */
  secrets: SecretBox;
  maxEndpointsPerAccount?: number;
}

export interface DeliveryStats {
  pending: number;
  succeeded: number;
  failed: number;
  expired: number;
}

export interface EndpointView {
  id: string;
  url: string;
  events: string[];
  watchlistIds: string[] | null;
  description: string | null;
  enabled: boolean;
  disabledReason: string | null;
  disabledAt: Date | null;
  failingSince: Date | null;
  /** Null when the previous secret no longer signs (never rotated, or past its overlap). */
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  stats: DeliveryStats;
}

export interface CreatedEndpointView extends EndpointView {
  secret: string;
}

export interface RotatedSecret {
  secret: string;
  previousSecretExpiresAt: Date;
}

export interface TestSent {
  eventId: string;
  deliveryId: string;
}

export interface AttemptView {
  attemptedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  responseBody: string | null;
}

export interface DeliveryView {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string | null;
  eventSeq: number;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: Date;
  succeededAt: Date | null;
  /** The last ATTEMPT_LOG_SIZE attempts, newest first. */
  attemptLog: AttemptView[];
}

export interface EventView {
  id: string;
  seq: number;
  type: string;
  createdAt: Date;
  data: Record<string, unknown>;
}

export interface EventPage {
  items: EventView[];
  /** Always set: after the last event read, or the cursor given when none was. */
  nextCursor: string;
  hasMore: boolean;
}

type Time = Date | string;
const time = (t: Time): Date => new Date(t);
const timeOrNull = (t: Time | null): Date | null => (t === null ? null : new Date(t));

interface EndpointRow {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  watchlist_ids: string[] | null;
  enabled: boolean;
  disabled_at: Time | null;
  disabled_reason: string | null;
  failing_since: Time | null;
  previous_secret_expires_at: Time | null;
  created_at: Time;
  updated_at: Time;
}

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string | null;
  event_seq: string | number;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Time | null;
  last_attempt_at: Time | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Time;
  succeeded_at: Time | null;
}

interface AttemptRow {
  delivery_id: string;
  attempted_at: Time;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  response_body: string | null;
}

interface EventRow {
  id: string;
  seq: string | number;
  type: string;
  created_at: Time;
  data: Record<string, unknown>;
}

const ENDPOINT_COLUMNS =
  'id, url, description, events, watchlist_ids, enabled, disabled_at, disabled_reason, failing_since, ' +
  'previous_secret_expires_at, created_at, updated_at';
const DELIVERY_COLUMNS =
  'd.id, d.endpoint_id, d.event_id, e.type as event_type, d.event_seq, d.status, d.attempts, ' +
  'd.next_attempt_at, d.last_attempt_at, d.last_status_code, d.last_error, d.created_at, d.succeeded_at';

/** A signing secret: `whsec_` + base64 of 24 random bytes (Standard Webhooks). */
const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/*
 * The events cursor is the `seq` of the last event read, carried in the project's cursor codec as the id
 * `evs_` + 28 hex digits (the codec's id shape), with that event's time: opaque to callers, decoded
 * without a query, and still valid once retention has pruned the event it names.
 */
const SEQ_PREFIX = 'evs';
const EPOCH = new Date(0).toISOString();
const encodeSeq = (seq: number, at: string) =>
  encodeCursor({ at, id: `${SEQ_PREFIX}_${seq.toString(16).padStart(28, '0')}` });

function decodeSeq(raw: string): number {
  try {
    const seq = Number.parseInt(decodeCursor(raw, SEQ_PREFIX).id.slice(SEQ_PREFIX.length + 1), 16);
    if (Number.isSafeInteger(seq)) return seq;
  } catch {
    // refused below, naming the parameter this endpoint calls it by
  }
  throw invalidRequest('The cursor is not valid for this query.', [
    { path: 'query.after', message: 'not a next_cursor returned by GET /api/v1/events' },
  ]);
}

const endpointNotFound = (id: string) => notFound(`Webhook endpoint "${clip(id)}"`);
const deliveryNotFound = (id: string) => notFound(`Webhook delivery "${clip(id)}"`);
const endpointDisabled = (id: string, why: string) =>
  conflict(
    `Webhook endpoint ${id} is disabled${why ? ` (${why})` : ''}: enable it first ` +
      '(PATCH with { "enabled": true }).',
  );

/**
 * Webhook endpoints of an account (CRUD, secret rotation, test events), their delivery log, redelivery and
 * recovery, and the account's event log. Every query is scoped to the caller's account.
 */
export class WebhooksService {
  private readonly maxEndpoints: number;

  constructor(
    private readonly orm: Orm,
    private readonly options: WebhooksOptions,
    /** Where drains are asked for (the API); absent where nothing is to be sent. */
    private readonly queues?: Pick<JobQueues, 'enqueueOnce'>,
  ) {
    this.maxEndpoints = options.maxEndpointsPerAccount ?? MAX_ENDPOINTS_PER_ACCOUNT;
  }

  // ---- endpoints ----------------------------------------------------------------------------------

  /** Creates an endpoint with a fresh secret, returned here only (stored sealed). */
  async createEndpoint(accountId: string, input: NewEndpoint): Promise<CreatedEndpointView> {
    const url = this.checkUrl(input.url);
    const box = this.sealer();
    const secret = newSecret();
    const now = new Date();
    const id = newId('we', now.getTime());
    const row = await this.orm.em.fork().transactional(async (em) => {
      // Concurrent creations of one account are counted one after the other.
      const account = await lockAccount(em, accountId);
      await requireWatchlists(em, accountId, input.watchlist_ids);
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
    const where = ['account_id = ?'];
    const params: unknown[] = [accountId];
    if (q.cursor) {
      const c = decodeCursor(q.cursor, 'we');
      where.push('(created_at, id) < (?, ?)');
      params.push(c.at, c.id);
    }
    const rows = await this.run<EndpointRow[]>(
      `select ${ENDPOINT_COLUMNS} from webhook_endpoints where ${where.join(' and ')}
        order by created_at desc, id desc limit ?`,
      [...params, q.limit + 1],
    );
    const page = keysetPage(rows, q.limit, (r) => ({ at: time(r.created_at).toISOString(), id: r.id }));
    const stats = await this.stats(
      accountId,
      page.items.map((r) => r.id),
    );
    return { items: page.items.map((r) => endpointOf(r, stats.get(r.id))), nextCursor: page.nextCursor };
  }

  async getEndpoint(accountId: string, id: string): Promise<EndpointView> {
    const [row] = await this.run<EndpointRow[]>(
      `select ${ENDPOINT_COLUMNS} from webhook_endpoints where id = ? and account_id = ?`,
      [id, accountId],
    );
    if (!row) throw endpointNotFound(id);
    return endpointOf(row, (await this.stats(accountId, [id])).get(id));
  }

  /**
   * Changes the fields given. `url` is checked again; `enabled: true` on a disabled endpoint clears why and
   * since when it was disabled and failing, and asks for its pending deliveries to be sent.
   */
  async updateEndpoint(accountId: string, id: string, patch: EndpointUpdate): Promise<EndpointView> {
    const url = patch.url === undefined ? undefined : this.checkUrl(patch.url);
    const { row, reenabled } = await this.orm.em.fork().transactional(async (em) => {
      const [current] = await em.execute<EndpointRow[]>(
        `select ${ENDPOINT_COLUMNS} from webhook_endpoints where id = ? and account_id = ? for update`,
        [id, accountId],
      );
      if (!current) throw endpointNotFound(id);
      if (patch.watchlist_ids) await requireWatchlists(em, accountId, patch.watchlist_ids);
      const sets: string[] = [];
      const params: unknown[] = [];
      const set = (column: string, value: unknown, cast = '') => {
        sets.push(`${column} = ?${cast}`);
        params.push(value);
      };
      if (url !== undefined) set('url', url);
      if (patch.events !== undefined) set('events', JSON.stringify(patch.events), '::jsonb');
      if (patch.watchlist_ids !== undefined)
        set(
          'watchlist_ids',
          patch.watchlist_ids ? JSON.stringify(unique(patch.watchlist_ids)) : null,
          '::jsonb',
        );
      if (patch.description !== undefined) set('description', patch.description);
      const now = new Date();
      const enabling = patch.enabled === true && !current.enabled;
      const disabling = patch.enabled === false && current.enabled;
      if (enabling) {
        set('enabled', true);
        sets.push('disabled_at = null', 'disabled_reason = null', 'failing_since = null');
      } else if (disabling) {
        set('enabled', false);
        set('disabled_at', now.toISOString(), '::timestamptz');
        set('disabled_reason', DISABLED_BY_ACCOUNT);
      }
      if (sets.length === 0) return { row: current, reenabled: false };
      set('updated_at', now.toISOString(), '::timestamptz');
      const [updated] = await em.execute<EndpointRow[]>(
        `update webhook_endpoints set ${sets.join(', ')} where id = ? and account_id = ?
         returning ${ENDPOINT_COLUMNS}`,
        [...params, id, accountId],
      );
      return { row: updated!, reenabled: enabling };
    });
    if (reenabled) await this.drain(id);
    return endpointOf(row, (await this.stats(accountId, [id])).get(id));
  }

  /** Deletes the endpoint with its deliveries and their attempts; returns it as it was. */
  async deleteEndpoint(accountId: string, id: string): Promise<EndpointView> {
    return this.orm.em.fork().transactional(async (em) => {
      const [row] = await em.execute<EndpointRow[]>(
        `select ${ENDPOINT_COLUMNS} from webhook_endpoints where id = ? and account_id = ? for update`,
        [id, accountId],
      );
      if (!row) throw endpointNotFound(id);
      const stats = await this.stats(accountId, [id], em);
      await em.execute(
        'delete from webhook_attempts where endpoint_id = ? and account_id = ?',
        [id, accountId],
        'run',
      );
      await em.execute(
        'delete from webhook_deliveries where endpoint_id = ? and account_id = ?',
        [id, accountId],
        'run',
      );
      await em.execute(
        'delete from webhook_endpoints where id = ? and account_id = ?',
        [id, accountId],
        'run',
      );
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
      await appendEvents(
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
        id,
      );
      // The account's counter row is locked by this transaction until it commits: its value is our event.
      const [row] = await em.execute<{ event_id: string; delivery_id: string | null }[]>(
        `select e.id as event_id, d.id as delivery_id
           from event_sequences s
           join events e on e.account_id = s.account_id and e.seq = s.last_seq
           left join webhook_deliveries d on d.event_id = e.id and d.endpoint_id = ?
          where s.account_id = ?`,
        [id, accountId],
      );
      if (!row?.delivery_id) throw new Error(`webhook.test: no delivery was written for endpoint ${id}`);
      return { eventId: row.event_id, deliveryId: row.delivery_id };
    });
    await this.drain(id);
    return sent;
  }

  // ---- deliveries ---------------------------------------------------------------------------------

  /** One page of the account's deliveries, newest first, each with its last attempts. Two queries. */
  async listDeliveries(accountId: string, q: DeliveriesQuery): Promise<Page<DeliveryView>> {
    const where = ['d.account_id = ?'];
    const params: unknown[] = [accountId];
    if (q.endpoint_id) {
      where.push('d.endpoint_id = ?');
      params.push(q.endpoint_id);
    }
    if (q.status) {
      where.push('d.status = ?');
      params.push(q.status);
    }
    if (q.event_id) {
      where.push('d.event_id = ?');
      params.push(q.event_id);
    }
    if (q.cursor) {
      const c = decodeCursor(q.cursor, 'whd');
      where.push('(d.created_at, d.id) < (?, ?)');
      params.push(c.at, c.id);
    }
    const rows = await this.run<DeliveryRow[]>(
      `select ${DELIVERY_COLUMNS} from webhook_deliveries d left join events e on e.id = d.event_id
        where ${where.join(' and ')} order by d.created_at desc, d.id desc limit ?`,
      [...params, q.limit + 1],
    );
    return keysetPage(await this.withAttempts(rows), q.limit, (d) => ({
      at: d.createdAt.toISOString(),
      id: d.id,
    }));
  }

  /**
   * Sends a delivery again: `pending`, due now (its attempts and their log are kept), and the workers are
   * asked to drain its endpoint. A delivery of a disabled endpoint is a conflict.
   */
  async redeliver(accountId: string, deliveryId: string): Promise<DeliveryView> {
    const now = new Date();
    const [updated] = await this.run<{ id: string; endpoint_id: string }[]>(
      `update webhook_deliveries d set status = 'pending', next_attempt_at = ?::timestamptz
         from webhook_endpoints w
        where d.id = ? and d.account_id = ? and w.id = d.endpoint_id and w.account_id = d.account_id
          and w.enabled
        returning d.id, d.endpoint_id`,
      [now.toISOString(), deliveryId, accountId],
    );
    if (!updated) {
      const [found] = await this.run<{ endpoint_id: string; disabled_reason: string | null }[]>(
        `select d.endpoint_id, w.disabled_reason from webhook_deliveries d
           join webhook_endpoints w on w.id = d.endpoint_id
          where d.id = ? and d.account_id = ?`,
        [deliveryId, accountId],
      );
      if (!found) throw deliveryNotFound(deliveryId);
      throw endpointDisabled(found.endpoint_id, found.disabled_reason ?? '');
    }
    await this.drain(updated.endpoint_id);
    const rows = await this.run<DeliveryRow[]>(
      `select ${DELIVERY_COLUMNS} from webhook_deliveries d left join events e on e.id = d.event_id
        where d.id = ? and d.account_id = ?`,
      [deliveryId, accountId],
    );
    const [view] = await this.withAttempts(rows);
    if (!view) throw deliveryNotFound(deliveryId); // deleted with its endpoint meanwhile
    return view;
  }

  /**
   * Every `failed` delivery of the endpoint created at or after `since` back to `pending`, due now (one
   * statement); the workers are asked to drain the endpoint. A disabled endpoint is a conflict.
   */
  async recover(accountId: string, endpointId: string, since: Date): Promise<number> {
    const [endpoint] = await this.run<{ enabled: boolean; disabled_reason: string | null }[]>(
      'select enabled, disabled_reason from webhook_endpoints where id = ? and account_id = ?',
      [endpointId, accountId],
    );
    if (!endpoint) throw endpointNotFound(endpointId);
    if (!endpoint.enabled) throw endpointDisabled(endpointId, endpoint.disabled_reason ?? '');
    const [counted] = await this.run<{ n: number }[]>(
      `with recovered as (
         update webhook_deliveries set status = 'pending', next_attempt_at = ?::timestamptz
          where endpoint_id = ? and account_id = ? and status = 'failed' and created_at >= ?::timestamptz
          returning 1)
       select count(*)::int as n from recovered`,
      [new Date().toISOString(), endpointId, accountId, since.toISOString()],
    );
    const n = counted?.n ?? 0;
    if (n > 0) await this.drain(endpointId);
    return n;
  }

  // ---- events -------------------------------------------------------------------------------------

  /**
   * The account's events after the cursor, oldest first (by `seq`, through the (account_id, seq) index),
   * optionally of some types only; events past the retention are not served. The next cursor is always
   * given, so a poller keeps it whether or not anything arrived.
   */
  async listEvents(accountId: string, q: EventsQuery): Promise<EventPage> {
    const after = q.after === undefined ? 0 : decodeSeq(q.after);
    const where = ['account_id = ?', 'seq > ?', 'created_at >= ?::timestamptz'];
    const retainedSince = new Date(Date.now() - this.options.eventRetentionDays * 86_400_000);
    const params: unknown[] = [accountId, after, retainedSince.toISOString()];
    if (q.types) {
      where.push('type in (select jsonb_array_elements_text(?::jsonb))');
      params.push(JSON.stringify(q.types));
    }
    const rows = await this.run<EventRow[]>(
      `select id, seq, type, created_at, data from events where ${where.join(' and ')} order by seq limit ?`,
      [...params, q.limit + 1],
    );
    const items = rows.slice(0, q.limit).map((r): EventView => ({
      id: r.id,
      seq: Number(r.seq),
      type: r.type,
      createdAt: time(r.created_at),
      data: r.data,
    }));
    const last = items.at(-1);
    return {
      items,
      nextCursor: last ? encodeSeq(last.seq, last.createdAt.toISOString()) : (q.after ?? encodeSeq(0, EPOCH)),
      hasMore: rows.length > q.limit,
    };
  }

  // ---- helpers ------------------------------------------------------------------------------------

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

  /** Delivery counts by status of each endpoint: one grouped query. */
  private async stats(
    accountId: string,
    endpointIds: readonly string[],
    em?: EntityManager,
  ): Promise<Map<string, DeliveryStats>> {
    const stats = new Map<string, DeliveryStats>();
    if (endpointIds.length === 0) return stats;
    const sql = `select endpoint_id, status, count(*)::int as n from webhook_deliveries
                  where account_id = ? and endpoint_id in (select jsonb_array_elements_text(?::jsonb))
                  group by endpoint_id, status`;
    const params = [accountId, JSON.stringify(endpointIds)];
    const rows = em
      ? await em.execute<{ endpoint_id: string; status: DeliveryStatus; n: number }[]>(sql, params)
      : await this.run<{ endpoint_id: string; status: DeliveryStatus; n: number }[]>(sql, params);
    for (const r of rows) {
      const s = stats.get(r.endpoint_id) ?? emptyStats();
      s[r.status] = r.n;
      stats.set(r.endpoint_id, s);
    }
    return stats;
  }

  /** The deliveries with their last attempts, newest first: one query for all of them. */
  private async withAttempts(rows: readonly DeliveryRow[]): Promise<DeliveryView[]> {
    const byDelivery = new Map<string, AttemptView[]>();
    if (rows.length > 0) {
      const attempts = await this.run<AttemptRow[]>(
        `select d.id as delivery_id, a.attempted_at, a.status_code, a.latency_ms, a.error, a.response_body
           from jsonb_array_elements_text(?::jsonb) as d(id)
           cross join lateral (
             select attempted_at, status_code, latency_ms, error, response_body from webhook_attempts
              where delivery_id = d.id order by attempted_at desc, id desc limit ?) a`,
        [JSON.stringify(rows.map((r) => r.id)), ATTEMPT_LOG_SIZE],
      );
      for (const a of attempts) {
        const log = byDelivery.get(a.delivery_id) ?? [];
        log.push({
          attemptedAt: time(a.attempted_at),
          statusCode: a.status_code,
          latencyMs: a.latency_ms,
          error: a.error,
          responseBody: a.response_body,
        });
        byDelivery.set(a.delivery_id, log);
      }
    }
    return rows.map((r) => ({
      id: r.id,
      endpointId: r.endpoint_id,
      eventId: r.event_id,
      eventType: r.event_type,
      eventSeq: Number(r.event_seq),
      status: r.status,
      attempts: r.attempts,
      nextAttemptAt: timeOrNull(r.next_attempt_at),
      lastAttemptAt: timeOrNull(r.last_attempt_at),
      lastStatusCode: r.last_status_code,
      lastError: r.last_error,
      createdAt: time(r.created_at),
      succeededAt: timeOrNull(r.succeeded_at),
      attemptLog: byDelivery.get(r.id) ?? [],
    }));
  }

  /**
   * Asks the workers to drain the endpoint. Best effort: the state is committed, and the periodic sweep
   * finds due deliveries whatever happens here, so a Redis hiccup must not turn a done change into an error.
   */
  private async drain(endpointId: string): Promise<void> {
    await this.queues
      ?.enqueueOnce('webhook-drain', { endpoint_id: endpointId }, endpointId)
      .catch(() => undefined);
  }

  private run<T>(sql: string, params: unknown[]): Promise<T> {
    return this.orm.em.getConnection().execute(sql, params) as Promise<T>;
  }
}

const unique = (ids: readonly string[]) => [...new Set(ids)];

const emptyStats = (): DeliveryStats => ({ pending: 0, succeeded: 0, failed: 0, expired: 0 });

function endpointOf(r: EndpointRow, stats: DeliveryStats = emptyStats()): EndpointView {
  const previousExpires = timeOrNull(r.previous_secret_expires_at);
  return {
    id: r.id,
    url: r.url,
    events: r.events,
    watchlistIds: r.watchlist_ids,
    description: r.description,
    enabled: r.enabled,
    disabledReason: r.disabled_reason,
    disabledAt: timeOrNull(r.disabled_at),
    failingSince: timeOrNull(r.failing_since),
    previousSecretExpiresAt: previousExpires && previousExpires > new Date() ? previousExpires : null,
    createdAt: time(r.created_at),
    updatedAt: time(r.updated_at),
    stats,
  };
}

/** Each id must be a watchlist of the account: else `invalid_request` naming the index of each other one. */
async function requireWatchlists(
  em: EntityManager,
  accountId: string,
  ids: readonly string[] | null | undefined,
): Promise<void> {
  if (!ids?.length) return;
  const rows = await em.execute<{ id: string }[]>(
    `select id from watchlists where account_id = ? and id in (select jsonb_array_elements_text(?::jsonb))`,
    [accountId, JSON.stringify(ids)],
  );
  const found = new Set(rows.map((r) => r.id));
  const missing = ids.flatMap((id, index) => (found.has(id) ? [] : [{ id, index }]));
  if (missing.length)
    throw invalidRequest(
      `${missing.map((m) => `"${clip(m.id)}"`).join(', ')} ${missing.length === 1 ? 'is not a watchlist' : 'are not watchlists'} of this account.`,
      missing.map((m) => ({ path: `watchlist_ids.${m.index}`, message: 'not a watchlist of this account' })),
    );
}
