import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** How deep a screening reads (docs/api.md, "Screenings"). */
export const SCREENING_DEPTHS = ['lists', 'state', 'full'] as const;
export type ScreeningDepth = (typeof SCREENING_DEPTHS)[number];

export const SCREENING_STATUSES = ['queued', 'running', 'completed'] as const;
export type ScreeningStatus = (typeof SCREENING_STATUSES)[number];

/**
 * One bulk screening of an account: its targets are rows of screening_results, worked by the workers in
 * chunks. `processed` counts the results written (each once: a chunk updates only rows still pending).
 * `counts` holds results per level and per decision once written. Deleted with its results after
 * `screenings.retention_days`.
 */
export const ScreeningSchema = defineEntity({
  name: 'Screening',
  tableName: 'screenings',
  indexes: [{ properties: ['accountId', 'createdAt', 'id'] }, { properties: ['status', 'createdAt'] }],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    createdBy: p.string().length(300),
    depth: p.enum(SCREENING_DEPTHS),
    status: p.enum(SCREENING_STATUSES),
    /** Targets given, the valid ones (rows to screen), and the invalid ones (reported at submission). */
    total: p.integer(),
    invalid: p.integer(),
    processed: p.integer(),
    counts: p.json<Record<string, number>>(),
    createdAt: p.datetime(),
    startedAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
  },
});
export type Screening = InferEntity<typeof ScreeningSchema>;

/**
 * One target of a screening, in input order (`seq`, 0-based line of the targets array or CSV). `status`:
 * `pending` until its chunk writes the verdict, `done` with it, `invalid` when it was refused at
 * submission (`error` says why; such rows are never screened).
 */
export const ScreeningResultSchema = defineEntity({
  name: 'ScreeningResult',
  tableName: 'screening_results',
  indexes: [
    { properties: ['screeningId', 'level', 'seq'] },
    { properties: ['screeningId', 'decision', 'seq'] },
  ],
  properties: {
    screeningId: p.string().length(40).primary(),
    seq: p.integer().primary(),
    target: p.string().length(200),
    chain: p.string().length(40).nullable(),
    network: p.string().length(40).nullable(),
    label: p.string().length(200).nullable(),
    status: p.string().length(10),
    level: p.string().length(10).nullable(),
    score: p.smallint().nullable(),
    decision: p.string().length(10).nullable(),
    complete: p.boolean().nullable(),
    findings: p.json<unknown[]>().nullable(),
    error: p.json<{ code: string; message: string }>().nullable(),
  },
});
export type ScreeningResult = InferEntity<typeof ScreeningResultSchema>;
