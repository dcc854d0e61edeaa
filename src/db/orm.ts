import type { EntitySchema } from '@mikro-orm/core';
import { MikroORM } from '@mikro-orm/postgresql';
import { ormOptions } from './config.js';

/** The ORM connection every feature takes (features name no other feature's entities: the composition does). */
export type Orm = MikroORM;

/** How a feature's command connects: the composition hands it in (src/database.ts, `connectDatabase`). */
export type Connect = (databaseUrl: string, poolMax?: number) => Promise<Orm>;

/** Connects with `entities` (the composition's list: src/database.ts). */
export async function connectOrm(
  databaseUrl: string,
  entities: readonly EntitySchema[],
  poolMax?: number,
): Promise<MikroORM> {
  return MikroORM.init(ormOptions(databaseUrl, entities, poolMax));
}
