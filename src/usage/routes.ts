import { z } from 'zod';
import { defineRoute, pageQuery } from '../http/route.js';
import { apiKeyOf } from '../http/state.js';
import type { UsageService } from './service.js';

const rfc3339 = z.iso
  .datetime({ offset: true })
  .transform((s) => new Date(s))
  // Years PostgreSQL's timestamptz round-trips (year 0000 or an offset past 9999 would fail the query).
  .refine((d) => d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999, 'year must be 0001–9999 (UTC)');

export const usageQuerySchema = z
  .object({
    from: rfc3339.optional().meta({ description: 'Inclusive start (RFC 3339).' }),
    to: rfc3339.optional().meta({ description: 'Exclusive end (RFC 3339).' }),
    endpoint: z
      .string()
      .max(200)
      .optional()
      .meta({ description: 'Route template, e.g. /api/v1/scan/token.' }),
    status: z.coerce.number().int().min(100).max(599).optional(),
    api_key_id: z.string().max(40).optional(),
    ...pageQuery,
    group_by: z
      .enum(['hour', 'day'])
      .optional()
      .meta({ description: 'Return hour/day buckets instead of calls.' }),
  })
  .strict();

const summarySchema = z.object({
  total: z.int(),
  by_endpoint: z.record(z.string(), z.int()),
  by_status: z.record(z.string(), z.int()),
});

const callSchema = z.object({
  id: z.string(),
  at: z.string(),
  method: z.string(),
  endpoint: z.string(),
  status: z.int(),
  latency_ms: z.int(),
  api_key_id: z.string(),
  api_key_prefix: z.string(),
  request_id: z.string(),
});

const bucketSchema = z.object({
  bucket_start: z.string(),
  total: z.int(),
  by_status: z.record(z.string(), z.int()),
  latency_ms_avg: z.number(),
  latency_ms_p95: z.number(),
});

export const usageResponseSchema = z
  .object({
    data: z.union([z.array(callSchema), z.array(bucketSchema)]),
    summary: summarySchema,
    next_cursor: z.string().nullable(),
  })
  .meta({ id: 'UsageHistory' });

export function usageRoutes(usage: UsageService) {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/usage',
      operationId: 'getUsage',
      summary: 'Developer-API call history of the key’s account',
      description:
        'Every /api/v1/* call made with any of the account’s keys, newest first. A call appears within 5 s. ' +
        '`summary` covers the whole filtered range, not just the page. With `group_by`, `data` holds buckets.',
      tag: 'Developer API',
      auth: 'api_key',
      query: usageQuerySchema,
      responses: { 200: { description: 'Usage history', schema: usageResponseSchema } },
      handler: async (ctx, { query }) => ({
        body: await usage.query(apiKeyOf(ctx).accountId, query),
      }),
    }),
  ];
}
