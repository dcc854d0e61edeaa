import type { Orm } from '../db/orm.js';
import { dropPartitionsBefore, startOfUtcDay, USAGE_RECORDS } from '../db/partitions.js';
import { run } from '../db/sql.js';

/** What a usage prune removed: rows deleted one by one, and whole day partitions dropped. */
export interface UsagePrune {
  deleted: number;
  dropped: string[];
}

/**
 * Removes calls past the retention window, and their rollups. The cut-off is the start of the UTC day
 * `retentionDays` ago, so every rollup (hour or day) is either wholly kept or wholly deleted and never
 * counts a deleted call; up to one day more than the retention is kept. Day partitions before the cut-off
 * are dropped whole, each with its rollups in its transaction; the historical partition (until its whole
 * range is past the cut-off) and the default one lose their old rows by DELETE, with the rollups left.
 */
export async function pruneCalls(orm: Orm, retentionDays: number, now = new Date()): Promise<UsagePrune> {
  const cutoff = new Date(startOfUtcDay(now) - retentionDays * 86_400_000);
  const dropped = await dropPartitionsBefore(orm, USAGE_RECORDS, cutoff, {
    beforeDrop: (em, p) => run(em, 'delete from usage_rollups where start < ?', [p.to], 'run'),
  });
  const rows = await run<{ deleted: string }[]>(
    orm,
    `with rollups as (delete from usage_rollups where start < ?),
          calls as (delete from usage_records where at < ? returning 1)
     select count(*) as deleted from calls`,
    [cutoff, cutoff],
  );
  return { deleted: Number(rows[0]?.deleted ?? 0), dropped };
}
