import type { EntitySchema } from '@mikro-orm/core';
import { AccountSchema, ApiKeySchema, EntitlementSchema } from './accounts/entities.js';
import { AuditRecordSchema } from './audit/entities.js';
import { connectOrm, type Orm } from './db/orm.js';
import { EventSchema, EventSequenceSchema } from './events/entities.js';
import { FeedbackSchema } from './feedback/entities.js';
import { ImpactCounterSchema, ImpactSnapshotSchema } from './impact/entities.js';
import { ListEntrySchema, SanctionedAddressSchema } from './lists/entities.js';
import { ScreeningResultSchema, ScreeningSchema } from './screenings/entities.js';
import { UsageRecordSchema, UsageRollupSchema } from './usage/entities.js';
import {
  WatchlistAlertSchema,
  WatchlistEntryCountSchema,
  WatchlistEntrySchema,
  WatchlistRescanSchema,
  WatchlistSchema,
  WatchlistSnapshotSchema,
} from './watchlists/entities.js';
import { WebhookAttemptSchema, WebhookDeliverySchema, WebhookEndpointSchema } from './webhooks/entities.js';

/*
 * Every feature's entities, named here and nowhere else: the composition (the runtime, `migrate`, the
 * command line) connects with them, so src/db stays below the features it serves.
 */
export const ENTITIES: readonly EntitySchema[] = [
  AccountSchema,
  EntitlementSchema,
  ApiKeySchema,
  UsageRecordSchema,
  UsageRollupSchema,
  ImpactCounterSchema,
  ImpactSnapshotSchema,
  SanctionedAddressSchema,
  ListEntrySchema,
  WatchlistSchema,
  WatchlistEntrySchema,
  WatchlistEntryCountSchema,
  WatchlistSnapshotSchema,
  WatchlistAlertSchema,
  WatchlistRescanSchema,
  EventSchema,
  EventSequenceSchema,
  WebhookEndpointSchema,
  WebhookDeliverySchema,
  WebhookAttemptSchema,
  AuditRecordSchema,
  ScreeningSchema,
  ScreeningResultSchema,
  FeedbackSchema,
];

/** The database with every entity: what the runtime, `migrate` and the CLI commands connect to. */
export function connectDatabase(databaseUrl: string, poolMax?: number): Promise<Orm> {
  return connectOrm(databaseUrl, ENTITIES, poolMax);
}
