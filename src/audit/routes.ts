import { defineRoute } from '../http/route.js';
import { apiKeyOf } from '../http/state.js';
import { presentAuditPage, presentAuditRecord } from './present.js';
import { auditPageSchema, auditParamsSchema, auditQuerySchema, auditRecordSchema } from './schemas.js';
import type { AuditLogService } from './service.js';

const TAG = 'Developer API';

/** The key's account's audit log (API key + entitlement): read only, every call scoped to that account. */
export function auditRoutes(audit: AuditLogService) {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/audit-log',
      operationId: 'listAuditRecords',
      summary: 'The account’s audit log: every change by a key, a user or an operator',
      description:
        'Newest first, paginated with `limit` (1–500, default 50) and the opaque `next_cursor`. Filters ' +
        '`action`, `resource_type`, `resource_id`, `actor_id`, and the time range `since` (inclusive) to ' +
        '`until` (exclusive). Each record names who made the change (API key id and prefix, JWT `sub`, or ' +
        'operator), the request id and client address of the call, and the changed fields before and ' +
        'after, never a secret. Records are written in the transaction of the change and never altered; ' +
        'they are kept for `audit.retention_days` (400 by default).',
      tag: TAG,
      auth: 'api_key',
      query: auditQuerySchema,
      responses: {
        200: { description: 'One page of audit records', schema: auditPageSchema },
        400: {
          description:
            '`invalid_request`: a bad filter, `limit` outside 1–500, a time that is not RFC 3339, or a ' +
            'cursor this endpoint did not return (`errors[]` per field)',
        },
      },
      handler: async (ctx, { query }) => ({
        body: presentAuditPage(await audit.page(apiKeyOf(ctx).accountId, query)),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/audit-log/{id}',
      operationId: 'getAuditRecord',
      summary: 'One audit record of the account',
      description: 'Another account’s record id is not found.',
      tag: TAG,
      auth: 'api_key',
      params: auditParamsSchema,
      responses: {
        200: { description: 'The record', schema: auditRecordSchema },
        404: { description: 'Not found: no such record of the account' },
      },
      handler: async (ctx, { params }) => ({
        body: presentAuditRecord(await audit.get(apiKeyOf(ctx).accountId, params.id)),
      }),
    }),
  ];
}
