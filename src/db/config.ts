import { join } from 'node:path';
import { defineConfig } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { AccountSchema, ApiKeySchema, EntitlementSchema } from '../accounts/entities.js';
import { ImpactCounterSchema, ImpactSnapshotSchema } from '../impact/entities.js';
import { ListEntrySchema, SanctionedAddressSchema } from '../lists/entities.js';
import { UsageRecordSchema, UsageRollupSchema } from '../usage/entities.js';
import {
  WatchlistAlertSchema,
  WatchlistEntrySchema,
  WatchlistRescanSchema,
  WatchlistSchema,
  WatchlistSnapshotSchema,
} from '../watchlists/entities.js';
import {
  EventSchema,
  EventSequenceSchema,
  WebhookAttemptSchema,
  WebhookDeliverySchema,
  WebhookEndpointSchema,
} from '../webhooks/entities.js';
import { PROJECT_ROOT } from '../platform/paths.js';
import { migrations } from './migrations/index.js';

export const ENTITIES = [
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
  WatchlistSnapshotSchema,
  WatchlistAlertSchema,
  WatchlistRescanSchema,
  EventSchema,
  EventSequenceSchema,
  WebhookEndpointSchema,
  WebhookDeliverySchema,
  WebhookAttemptSchema,
];

/**
 * MikroORM options. Migrations are listed explicitly (src/db/migrations/index.ts) so the built image needs
 * no file globbing; `npm run migration:create` writes new ones (and the schema snapshot) into
 * src/db/migrations, to be added to that list and committed.
 */
export function ormOptions(databaseUrl: string, poolMax = 10) {
  return defineConfig({
    clientUrl: databaseUrl,
    entities: ENTITIES,
    extensions: [Migrator],
    pool: { min: 0, max: poolMax },
    debug: false,
    migrations: {
      path: join(PROJECT_ROOT, 'src', 'db', 'migrations'),
      tableName: 'mikro_orm_migrations',
      transactional: true,
      // applyMigrations logs each migration as structured JSON instead of the migrator's coloured lines
      silent: true,
      allOrNothing: true,
      snapshot: true,
      snapshotOnMigrate: false,
      snapshotName: '.snapshot-riskwatch',
      emit: 'ts',
      migrationsList: migrations,
    },
  });
}
