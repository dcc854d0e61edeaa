import type { Actor } from '../audit/actor.js';
import { changedFields, recordAudit } from '../audit/log.js';
import type { Db } from '../db/sql.js';
import type { AlertStatus } from '../events/schemas.js';
import type { EntryRow, WatchlistRow } from './views.js';

/*
 * What watchlists writes to the audit log (src/audit), always in the transaction of the change it
 * records: lists created, changed and deleted; entries added or removed in bulk, summarised in one record
 * per call (counts and the first few entries, never every item); one entry removed; rescans asked for;
 * alerts' status set. A call that changes nothing writes nothing.
 */

/** Entries a bulk record names (the counts cover every one). */
export const AUDIT_SAMPLE = 10;

/** A list's settings as the audit log shows them (its entries are counted, not listed). */
export function watchlistFields(r: WatchlistRow): Record<string, unknown> {
  return {
    name: r.name,
    schedule: r.schedule,
    deep_schedule: r.deep_schedule,
    thresholds: r.thresholds,
  };
}

/** `watchlist.created`: its settings, after. */
export const auditWatchlistCreated = (em: Db, actor: Actor, accountId: string, row: WatchlistRow) =>
  recordAudit(em, actor, {
    accountId,
    action: 'watchlist.created',
    resourceType: 'watchlist',
    resourceId: row.id,
    after: watchlistFields(row),
  });

/** `watchlist.updated`: the settings that changed, before and after; nothing when none did. */
export async function auditWatchlistUpdated(
  em: Db,
  actor: Actor,
  accountId: string,
  before: WatchlistRow,
  after: WatchlistRow,
): Promise<void> {
  const changed = changedFields(watchlistFields(before), watchlistFields(after));
  if (Object.keys(changed.after).length === 0) return;
  await recordAudit(em, actor, {
    accountId,
    action: 'watchlist.updated',
    resourceType: 'watchlist',
    resourceId: after.id,
    ...changed,
  });
}

/** `watchlist.deleted`: its settings and how many entries went with it, before. */
export const auditWatchlistDeleted = (em: Db, actor: Actor, accountId: string, row: WatchlistRow) =>
  recordAudit(em, actor, {
    accountId,
    action: 'watchlist.deleted',
    resourceType: 'watchlist',
    resourceId: row.id,
    before: { ...watchlistFields(row), entry_count: Number(row.entry_count) },
  });

/** One call's bulk add as its record summarises it. */
export interface EntriesAdded {
  /** Items in the call. */
  entries: number;
  created: number;
  exists: number;
  failed: number;
  /** The first AUDIT_SAMPLE entries created. */
  sample: { id: string; target: string; network: string }[];
}

/**
 * `watchlist_entries.added`, one record per call whatever its size (resource: the list): the counts, the
 * first entries created, and what the caller adds (an import's file and lines). Nothing when none was
 * created.
 */
export async function auditEntriesAdded(
  em: Db,
  actor: Actor,
  accountId: string,
  watchlistId: string,
  added: EntriesAdded,
  context: Record<string, unknown> = {},
): Promise<void> {
  if (added.created === 0) return;
  await recordAudit(em, actor, {
    accountId,
    action: 'watchlist_entries.added',
    resourceType: 'watchlist_entries',
    resourceId: watchlistId,
    after: { ...added, ...context },
  });
}

/** One call's bulk removal as its record summarises it. */
export interface EntriesRemoved {
  /** Targets in the call. */
  targets: number;
  /** Entries removed (a target without a network may remove one per network). */
  removed: number;
  not_found: number;
  failed: number;
  /** The first AUDIT_SAMPLE targets removed, with their entries' ids. */
  sample: { target: string; ids: string[] }[];
}

/** `watchlist_entries.removed`, one record per call (resource: the list); nothing when none was removed. */
export async function auditEntriesRemoved(
  em: Db,
  actor: Actor,
  accountId: string,
  watchlistId: string,
  removed: EntriesRemoved,
): Promise<void> {
  if (removed.removed === 0) return;
  await recordAudit(em, actor, {
    accountId,
    action: 'watchlist_entries.removed',
    resourceType: 'watchlist_entries',
    resourceId: watchlistId,
    before: { ...removed },
  });
}

/** `watchlist_entry.removed`: the entry as it was. */
export const auditEntryRemoved = (em: Db, actor: Actor, accountId: string, row: EntryRow) =>
  recordAudit(em, actor, {
    accountId,
    action: 'watchlist_entry.removed',
    resourceType: 'watchlist_entry',
    resourceId: row.id,
    before: {
      watchlist_id: row.watchlist_id,
      target: row.target,
      chain: row.chain,
      network: row.network,
      label: row.label,
      target_type: row.target_type,
    },
  });

/** `watchlist.rescan_requested`: the rescan and the entries it covers. */
export const auditRescanRequested = (
  em: Db,
  actor: Actor,
  accountId: string,
  watchlistId: string,
  rescan: { id: string; total: number },
) =>
  recordAudit(em, actor, {
    accountId,
    action: 'watchlist.rescan_requested',
    resourceType: 'watchlist',
    resourceId: watchlistId,
    after: { rescan_id: rescan.id, total: Number(rescan.total) },
  });

/**
 * `watchlist.rescan_withdrawn`: a rescan asked for (and audited) whose job could not be queued, deleted
 * again; the call failed.
 */
export const auditRescanWithdrawn = (
  em: Db,
  actor: Actor,
  accountId: string,
  watchlistId: string,
  rescanId: string,
) =>
  recordAudit(em, actor, {
    accountId,
    action: 'watchlist.rescan_withdrawn',
    resourceType: 'watchlist',
    resourceId: watchlistId,
    before: { rescan_id: rescanId },
    after: { rescan_id: null, reason: 'the rescan job could not be queued' },
  });

/** `watchlist_alert.updated`: its status before and after; nothing when it was already that. */
export async function auditAlertUpdated(
  em: Db,
  actor: Actor,
  accountId: string,
  alertId: string,
  status: { before: AlertStatus; after: AlertStatus },
): Promise<void> {
  if (status.before === status.after) return;
  await recordAudit(em, actor, {
    accountId,
    action: 'watchlist_alert.updated',
    resourceType: 'watchlist_alert',
    resourceId: alertId,
    before: { status: status.before },
    after: { status: status.after },
  });
}
