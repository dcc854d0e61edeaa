import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { ImpactBody } from './schemas.js';

/**
 * Hourly activity counters fed by the features that do the work (assessments, scans, preflights,
 * findings, alerts). The public impact endpoint never reads these per request: a worker job folds them
 * into ImpactSnapshot, and API processes keep the latest snapshot in memory.
 */
export const ImpactCounterSchema = defineEntity({
  name: 'ImpactCounter',
  tableName: 'impact_counters',
  properties: {
    metric: p.string().length(60).primary(),
    hour: p.datetime().primary(),
    count: p.bigint('number'),
  },
});
export type ImpactCounter = InferEntity<typeof ImpactCounterSchema>;

/** The latest impact numbers, as the public endpoint serves them (one row, id 1). */
export const ImpactSnapshotSchema = defineEntity({
  name: 'ImpactSnapshot',
  tableName: 'impact_snapshots',
  properties: {
    id: p.smallint().primary(),
    body: p.json<ImpactBody>(),
    generatedAt: p.datetime(),
  },
});
export type ImpactSnapshot = InferEntity<typeof ImpactSnapshotSchema>;
