import { z } from 'zod';
import { pageQuery } from '../http/route.js';

/* `GET /api/v1/usage`: its query and its answer. The route validates and documents with these objects. */

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
/** The validated query (times as Dates): what UsageService.query takes. */
export type UsageQuery = z.output<typeof usageQuerySchema>;

export const usageSummarySchema = z.object({
  total: z.int(),
  by_endpoint: z.record(z.string(), z.int()),
  by_status: z.record(z.string(), z.int()),
});

export const usageCallSchema = z.object({
  id: z.string(),
  at: z.string(),
  method: z.string(),
  endpoint: z.string(),
  status: z.int(),
  latency_ms: z.int(),
  api_key_id: z.string(),
  api_key_prefix: z.string(),
  request_id: z.string(),
  target: z
    .string()
    .nullable()
    .meta({
      description:
        'The target the call was about (risk-v2, scan/token, preflight, approvals; a payload preflight only ' +
        'when it named one); `POST /api/v1/feedback` with this `request_id` acts on it. Null for other calls.',
    }),
  chain: z.string().nullable().meta({ description: 'The chain of `target`.' }),
  network: z.string().nullable().meta({ description: 'The network of `target`.' }),
  targets: z.int().nullable().meta({ description: 'How many targets a bulk call carried; null otherwise.' }),
});
export type UsageCallBody = z.infer<typeof usageCallSchema>;

export const usageBucketSchema = z.object({
  bucket_start: z.string(),
  total: z.int(),
  by_status: z.record(z.string(), z.int()),
  latency_ms_avg: z.number().meta({ description: 'Mean latency of the calls (exact, rounded to the ms).' }),
  latency_ms_p95: z.number().meta({
    description:
      '95th percentile latency, from a latency histogram: the upper bound of the bin holding the 95th ' +
      'percentile call, capped by the slowest call of the bucket. Never below the exact value; exact under ' +
      '10 ms, otherwise at most 20% above.',
  }),
});
export type UsageBucketBody = z.infer<typeof usageBucketSchema>;

export const usageResponseSchema = z
  .object({
    data: z.union([z.array(usageCallSchema), z.array(usageBucketSchema)]),
    summary: usageSummarySchema,
    next_cursor: z.string().nullable(),
  })
  .meta({ id: 'UsageHistory' });
export type UsageBody = z.infer<typeof usageResponseSchema>;
