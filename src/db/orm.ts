import { MikroORM } from '@mikro-orm/postgresql';
import { ormOptions } from './config.js';

export type Orm = MikroORM;

export async function connectOrm(databaseUrl: string, poolMax?: number): Promise<MikroORM> {
  return MikroORM.init(ormOptions(databaseUrl, poolMax));
}
