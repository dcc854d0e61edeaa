import type { Actor } from '../audit/actor.js';
import { changedFields, recordAudit } from '../audit/log.js';
import type { Db } from '../db/sql.js';
import type { EndpointRow } from './views.js';

/*
 * What webhooks writes to the audit log (src/audit), always in the transaction of the change it records:
 * endpoints created, changed, rotated, tested and deleted; deliveries sent again (one, or an endpoint's
 * failed ones since a time, counted); secrets re-sealed by an operator. No record ever holds a signing
 * secret, sealed or not, nor anything derived from one (a rotation records when the previous secret stops
 * signing, nothing of the new one). A call that changes nothing writes nothing.
 */

/** An endpoint's fields as the audit log shows them: what its owner set, and whether it is enabled. */
export function endpointFields(r: EndpointRow): Record<string, unknown> {
  return {
    url: r.url,
    description: r.description,
    events: r.events,
    watchlist_ids: r.watchlist_ids,
    enabled: r.enabled,
    disabled_reason: r.disabled_reason,
  };
}

const ENDPOINT = 'webhook_endpoint';

/** `webhook_endpoint.created`: every field, after. */
export const auditEndpointCreated = (em: Db, actor: Actor, accountId: string, row: EndpointRow) =>
  recordAudit(em, actor, {
    accountId,
    action: `${ENDPOINT}.created`,
    resourceType: ENDPOINT,
    resourceId: row.id,
    after: endpointFields(row),
  });

/** `webhook_endpoint.updated`: the fields that changed, before and after; nothing when none did. */
export async function auditEndpointUpdated(
  em: Db,
  actor: Actor,
  accountId: string,
  before: EndpointRow,
  after: EndpointRow,
): Promise<void> {
  const changed = changedFields(endpointFields(before), endpointFields(after));
  if (Object.keys(changed.after).length === 0) return;
  await recordAudit(em, actor, {
    accountId,
    action: `${ENDPOINT}.updated`,
    resourceType: ENDPOINT,
    resourceId: after.id,
    ...changed,
  });
}

/** `webhook_endpoint.deleted`: every field, before, with the deliveries that went with it. */
export const auditEndpointDeleted = (
  em: Db,
  actor: Actor,
  accountId: string,
  row: EndpointRow,
  deliveries: number,
) =>
  recordAudit(em, actor, {
    accountId,
    action: `${ENDPOINT}.deleted`,
    resourceType: ENDPOINT,
    resourceId: row.id,
    before: { ...endpointFields(row), deliveries },
  });

/**
 * `webhook_endpoint.secret_rotated`: until when the previous secret signs beside the new one, before (null:
 * none did) and after. Nothing of either secret (no id or fingerprint exists that is not derived from it).
 */
export const auditSecretRotated = (
  em: Db,
  actor: Actor,
  accountId: string,
  id: string,
  previousSignsUntil: { before: Date | null; after: Date },
) =>
  recordAudit(em, actor, {
    accountId,
    action: `${ENDPOINT}.secret_rotated`,
    resourceType: ENDPOINT,
    resourceId: id,
    before: { previous_signs_until: previousSignsUntil.before },
    after: { previous_signs_until: previousSignsUntil.after },
  });

/** `webhook_endpoint.test_sent`: the test event and its delivery. */
export const auditTestSent = (
  em: Db,
  actor: Actor,
  accountId: string,
  id: string,
  sent: { eventId: string; deliveryId: string },
) =>
  recordAudit(em, actor, {
    accountId,
    action: `${ENDPOINT}.test_sent`,
    resourceType: ENDPOINT,
    resourceId: id,
    after: { event_id: sent.eventId, delivery_id: sent.deliveryId },
  });

/** `webhook_delivery.redelivered`: its status before, `pending` after (with its endpoint and event). */
export const auditRedelivered = (
  em: Db,
  actor: Actor,
  accountId: string,
  d: { id: string; endpoint_id: string; event_id: string; status: string },
) =>
  recordAudit(em, actor, {
    accountId,
    action: 'webhook_delivery.redelivered',
    resourceType: 'webhook_delivery',
    resourceId: d.id,
    before: { status: d.status },
    after: { status: 'pending', endpoint_id: d.endpoint_id, event_id: d.event_id },
  });

/** `webhook_endpoint.deliveries_recovered`: how many failed deliveries since `since` became pending. */
export const auditRecovered = (
  em: Db,
  actor: Actor,
  accountId: string,
  endpointId: string,
  r: { since: Date; recovered: number },
) =>
  recordAudit(em, actor, {
    accountId,
    action: `${ENDPOINT}.deliveries_recovered`,
    resourceType: ENDPOINT,
    resourceId: endpointId,
    before: { status: 'failed' },
    after: { status: 'pending', since: r.since, recovered: r.recovered },
  });

/**
 * `webhook_secrets.resealed`: a batch of endpoints whose secrets an operator re-sealed under the current
 * key (`riskwatch secrets rotate-key`), of every account (the record belongs to none): how many, and which
 * endpoints. The key is named by nothing (its id is derived from it).
 */
export const auditResealed = (
  em: Db,
  actor: Actor,
  r: { endpointIds: readonly string[]; secrets: number; plaintext: number },
) =>
  recordAudit(em, actor, {
    accountId: null,
    action: 'webhook_secrets.resealed',
    resourceType: 'webhook_secrets',
    after: {
      endpoints: r.endpointIds.length,
      sealed: r.secrets,
      from_plaintext: r.plaintext,
      endpoint_ids: r.endpointIds,
    },
  });
