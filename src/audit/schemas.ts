import { z } from 'zod';
import { pageQuery } from '../http/route.js';
import { ACTOR_TYPES } from './entities.js';

/*
 * What the audit log looks like outside the service: `GET /api/v1/audit-log` (its query and its answer)
 * and the NDJSON lines of `riskwatch audit export`. The route validates and documents with these objects.
 */

const rfc3339 = z.iso
  .datetime({ offset: true })
  .transform((s) => new Date(s))
  // Years PostgreSQL's timestamptz round-trips (year 0000 or an offset past 9999 would fail the query).
  .refine((d) => d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999, 'year must be 0001–9999 (UTC)');

const fields = z
  .record(z.string(), z.unknown())
  .nullable()
  .meta({ description: 'The changed fields only; never a secret (no key, key hash or webhook secret).' });

export const auditRecordSchema = z
  .object({
    id: z.string().meta({ description: '`aud_…`' }),
    at: z.string().meta({ description: 'When the change was committed (RFC 3339, millisecond precision).' }),
    actor: z
      .object({
        type: z.enum(ACTOR_TYPES),
        id: z.string().meta({ description: 'The API key id, the JWT `sub`, or the operator’s name.' }),
        label: z
          .string()
          .nullable()
          .meta({ description: 'The API key’s prefix, or the JWT user’s organisation; null for operators.' }),
      })
      .meta({ description: 'Who made the change.' }),
    action: z.string().meta({ description: '`<resource>.<verb>`, e.g. `api_key.created`.' }),
    resource_type: z.string(),
    resource_id: z.string().nullable(),
    request_id: z
      .string()
      .nullable()
      .meta({ description: 'The `X-Request-Id` of the call that made the change; null from the CLI.' }),
    client_address: z.string().nullable().meta({
      description: 'The caller’s address (behind a proxy: with `server.trust_proxy`); null from the CLI.',
    }),
    before: fields.meta({ description: 'The changed fields as they were; null for a creation.' }),
    after: fields.meta({ description: 'The changed fields as they are; null for a deletion.' }),
  })
  .meta({ id: 'AuditRecord' });
export type AuditRecordBody = z.infer<typeof auditRecordSchema>;

/** One line of `riskwatch audit export`: the record and its account (null: a change of no account). */
export const auditExportLineSchema = auditRecordSchema.extend({ account_id: z.string().nullable() });
export type AuditExportLine = z.infer<typeof auditExportLineSchema>;

export const auditPageSchema = z
  .object({
    data: z.array(auditRecordSchema).meta({ description: 'Newest first.' }),
    next_cursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  })
  .meta({ id: 'AuditRecordPage' });
export type AuditPageBody = z.infer<typeof auditPageSchema>;

const filter = (max: number, description: string) =>
  z.string().trim().min(1).max(max).optional().meta({ description });

export const auditQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(500).default(50),
    cursor: pageQuery.cursor,
    action: filter(100, 'Only this action, e.g. `api_key.revoked`.'),
    resource_type: filter(60, 'Only changes of this kind of resource, e.g. `api_key`.'),
    resource_id: filter(200, 'Only changes of this resource.'),
    actor_id: filter(300, 'Only changes by this API key id, JWT `sub` or operator name.'),
    since: rfc3339.optional().meta({ description: 'Inclusive start (RFC 3339).' }),
    until: rfc3339.optional().meta({ description: 'Exclusive end (RFC 3339).' }),
  })
  .strict();
/** The validated query (times as Dates): what AuditLogService.page takes. */
export type AuditQueryInput = z.output<typeof auditQuerySchema>;

export const auditParamsSchema = z.object({ id: z.string().min(1).max(40) });
