import { join } from 'node:path';
import type { EntitySchema } from '@mikro-orm/core';
import { defineConfig } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { PROJECT_ROOT } from '../platform/paths.js';
import { migrations } from './migrations/index.js';

/**
 * MikroORM options for the entities the composition names (src/database.ts). Migrations are listed explicitly (src/db/migrations/index.ts) so the built image needs
 * no file globbing; `npm run migration:create` writes new ones (and the schema snapshot) into
 * src/db/migrations, to be added to that list and committed.
 */
export function ormOptions(databaseUrl: string, entities: readonly EntitySchema[], poolMax = 10) {
  return defineConfig({
    clientUrl: databaseUrl,
    entities: [...entities],
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
