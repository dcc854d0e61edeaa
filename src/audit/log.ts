import { newId } from '../platform/ids.js';
import { run, type Db } from '../db/sql.js';
import type { Actor } from './actor.js';

/** One change as a feature reports it; who and from where come from the Actor. */
export interface AuditEntry {
  /** The account the change belongs to; null for changes of no account (a sanctions import). */
  accountId: string | null;
  /** `<resource>.<verb>` in the past tense: `api_key.created`, `list_entry.deleted`, … */
  action: string;
  resourceType: string;
  resourceId?: string | null;
  /** The fields as they were (null for a creation) and as they are (null for a deletion). */
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/** Field names that hold credentials: never written to the audit log, whatever a caller passes. */
const SECRET_FIELD = /secret|hash|password|private|^(api_)?key$|^token$/i;

/** A copy without secret fields (at any depth) and without `undefined` values. */
function scrub(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(scrub);
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== undefined && !SECRET_FIELD.test(k)) out[k] = scrub(v);
  return out;
}

/**
 * Only what changed between two views of a resource: the fields whose values differ (compared as JSON),
 * each side with its own value. Equal views give `{ before: {}, after: {} }`.
 */
export function changedFields(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): { before: Record<string, unknown>; after: Record<string, unknown> } {
  const b: Record<string, unknown> = {};
  const a: Record<string, unknown> = {};
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (JSON.stringify(before[k]) === JSON.stringify(after[k])) continue;
    b[k] = before[k] ?? null;
    a[k] = after[k] ?? null;
  }
  return { before: b, after: a };
}

const json = (v: Record<string, unknown> | null | undefined): string | null =>
  v === null || v === undefined ? null : JSON.stringify(scrub(v));

/**
 * Appends a record. Call it with the transaction's manager that makes the change, so the record and the
 * change commit (or roll back) together. `at` is the transaction's time cut to the millisecond, the
 * precision of the API's cursors and of the export's keyset (a finer time would skip or repeat records).
 */
export async function recordAudit(db: Db, actor: Actor, entry: AuditEntry): Promise<void> {
  await run(
    db,
    `insert into audit_log (id, account_id, at, actor_type, actor_id, actor_label, action, resource_type,
        resource_id, request_id, client_address, before, after)
     values (?, ?, date_trunc('milliseconds', now()), ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb)`,
    [
      newId('aud'),
      entry.accountId,
      actor.type,
      actor.id,
      actor.label,
      entry.action,
      entry.resourceType,
      entry.resourceId ?? null,
      actor.requestId,
      actor.clientAddress,
      json(entry.before),
      json(entry.after),
    ],
    'run',
  );
}
