import type { Logger } from '../platform/logger.js';
import type { Orm } from './orm.js';

/** Applies every pending committed migration; returns the names applied. */
export async function applyMigrations(orm: Orm, logger: Logger): Promise<string[]> {
  const applied = await orm.migrator.up();
  for (const m of applied) logger.info({ migration: m.name }, 'migration applied');
  return applied.map((m) => m.name);
}

export async function pendingMigrations(orm: Orm): Promise<number> {
  return (await orm.migrator.getPending()).length;
}

/** Developer tool: writes a migration for the difference between the entities and the last snapshot. */
export async function createMigration(orm: Orm): Promise<string | undefined> {
  const result = await orm.migrator.create();
  return result.diff.up.length > 0 ? result.fileName : undefined;
}
