import { z } from 'zod';
import { screeningSummarySchema } from '../events/schemas.js';
import { pageQuery } from '../http/route.js';
import { AppError } from '../platform/errors.js';
import { DECISIONS } from '../risk/policy.js';
import { chainField, findingSchema, networkField } from '../risk/schemas.js';
import { RISK_LEVELS } from '../risk/scoring.js';
import { SCREENING_DEPTHS } from './entities.js';

/** Targets one screening takes over HTTP (the CLI import takes more). */
export const MAX_TARGETS_PER_CALL = 100_000;
/** Targets a `wait: true` screening may hold (answered inline). */
export const MAX_WAIT_TARGETS = 100;
/** POST /api/v1/screenings body limit: 100,000 targets with labels fit. */
export const SCREENING_BODY_LIMIT_KB = 8192;

const targetSchema = z.object({
  target: z.string().trim().min(1).max(200).meta({ description: 'Solana base58 or EVM `0x` address.' }),
  chain: chainField.optional(),
  network: networkField.optional(),
  label: z.string().max(200).optional().meta({ description: 'Yours: kept with the row, shown in results.' }),
});

export const newScreeningSchema = z
  .object({
    targets: z.preprocess((value) => {
      if (Array.isArray(value) && value.length > MAX_TARGETS_PER_CALL)
        throw new AppError(
          'too_many_entries',
          `${value.length.toLocaleString('en-US')} targets: one screening takes at most ` +
            `${MAX_TARGETS_PER_CALL.toLocaleString('en-US')} over HTTP (the CLI import takes files of any ` +
            'size). Nothing was stored.',
          { errors: [{ path: 'targets', message: `at most ${MAX_TARGETS_PER_CALL} items` }] },
        );
      return value;
    }, z.array(targetSchema).min(1).max(MAX_TARGETS_PER_CALL)),
    depth: z
      .enum(SCREENING_DEPTHS)
      .default('state')
      .meta({
        description:
          '`lists`: sanctions and your deny/allow lists only, from memory, no provider call. `state` ' +
          '(default): plus one batched read of each account and what state alone shows (kind, EIP-7702 ' +
          'delegation, EIP-1967 proxy, unused address). `full`: the whole risk-v2 analysis of each target, ' +
          'bound by the provider rate limit (several calls per target).',
      }),
    wait: z
      .boolean()
      .default(false)
      .meta({
        description: `Answer with the results (200) instead of 202: at most ${MAX_WAIT_TARGETS} targets.`,
      }),
  })
  .meta({ id: 'NewScreening' });
export type NewScreening = z.infer<typeof newScreeningSchema>;

export const targetErrorSchema = z.object({
  index: z.int().meta({ description: 'Position in `targets` (0-based), or the CSV line for an import.' }),
  target: z.string(),
  code: z.enum(['invalid_address', 'unsupported_chain', 'invalid_request']),
  message: z.string(),
});

/** A screening (declared with the events' contract: a `screening.completed` event carries it). */
export const screeningSchema = screeningSummarySchema;
export type ScreeningBody = z.infer<typeof screeningSchema>;

export const resultSchema = z
  .object({
    index: z.int(),
    target: z.string(),
    chain: z.string().nullable(),
    network: z.string().nullable(),
    label: z.string().nullable(),
    status: z.enum(['pending', 'done', 'invalid']),
    risk_level: z.enum(RISK_LEVELS).nullable(),
    risk_score: z.int().nullable(),
    decision: z.enum(DECISIONS).nullable().meta({
      description: 'What a shield preflight with intent `transfer` would answer for this target.',
    }),
    complete: z
      .boolean()
      .nullable()
      .meta({
        description:
          'Judged against what the depth reads: a `lists` row is complete once the lists were read; a ' +
          '`state` row whose read failed is not (and its decision falls back to the fail mode).',
      }),
    findings: z.array(findingSchema).nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .meta({ id: 'ScreeningResult' });
export type ResultBody = z.infer<typeof resultSchema>;

export const submittedSchema = z
  .object({
    screening_id: z.string(),
    screening: screeningSchema,
    errors: z.array(targetErrorSchema),
  })
  .meta({ id: 'ScreeningSubmitted' });

export const waitedSchema = submittedSchema
  .extend({ results: z.array(resultSchema) })
  .meta({ id: 'ScreeningAnswered' });

export const screeningParams = z.object({ id: z.string().max(60) });

export const screeningsQuery = z.object({ ...pageQuery, limit: pageQuery.limit.default(50) });
export type ScreeningsQuery = z.infer<typeof screeningsQuery>;

export const screeningPageSchema = z
  .object({ data: z.array(screeningSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'ScreeningPage' });

export const resultsQuery = z.object({
  limit: pageQuery.limit,
  cursor: z.string().max(40).optional().meta({ description: 'Opaque: the previous page’s next_cursor.' }),
  level: z.enum(RISK_LEVELS).optional(),
  decision: z.enum(DECISIONS).optional(),
  status: z.enum(['pending', 'done', 'invalid']).optional(),
});
export type ResultsQuery = z.infer<typeof resultsQuery>;

export const resultPageSchema = z
  .object({ data: z.array(resultSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'ScreeningResultPage' });

export const csvQuery = resultsQuery.omit({ limit: true, cursor: true });
