import type { EntityManager } from '@mikro-orm/postgresql';
import { run, runBound, textArray, Where, type Db, type Time } from '../db/sql.js';
import type { ScreeningDepth, ScreeningStatus } from './entities.js';

/*
 * The screenings' SQL: a screening row, its results in input order (seq), and the statements of the
 * chunk that writes verdicts. A chunk updates only rows still `pending`, and adds to `processed` exactly
 * the rows it updated, so a chunk run twice (a worker killed after the commit) counts nothing twice.
 */

export interface ScreeningRow {
  id: string;
  account_id: string;
  created_by: string;
  depth: ScreeningDepth;
  status: ScreeningStatus;
  total: number;
  invalid: number;
  processed: number;
  counts: Record<string, number>;
  created_at: Time;
  started_at: Time | null;
  completed_at: Time | null;
}

export type ResultStatus = 'pending' | 'done' | 'invalid';

export interface ResultRow {
  seq: number;
  target: string;
  chain: string | null;
  network: string | null;
  label: string | null;
  status: ResultStatus;
  level: string | null;
  score: number | null;
  decision: string | null;
  complete: boolean | null;
  findings: unknown[] | null;
  error: { code: string; message: string } | null;
}

/**
 * A target as submitted: valid (`pending`), refused (`invalid`, with its error), or already judged (`done`,
 * with its verdict: `lists` screenings submitted through the API).
 */
export type NewResult = Pick<
  ResultRow,
  'seq' | 'target' | 'chain' | 'network' | 'label' | 'status' | 'error'
> &
  Partial<Pick<ResultRow, 'level' | 'score' | 'decision' | 'complete' | 'findings'>>;

/** A verdict a chunk writes. */
export type Written = Pick<ResultRow, 'seq' | 'level' | 'score' | 'decision' | 'complete' | 'findings'>;

const SCREENING_COLUMNS =
  'id, account_id, created_by, depth, status, total, invalid, processed, counts, created_at, started_at, ' +
  'completed_at';
const RESULT_COLUMNS =
  'seq, target, chain, network, label, status, level, score, decision, complete, findings, error';
/** Rows per INSERT of a submission (one JSON parameter each). */
const INSERT_BATCH = 10_000;

export async function insertScreening(
  em: EntityManager,
  s: Pick<ScreeningRow, 'id' | 'account_id' | 'created_by' | 'depth'> & { status: 'queued' | 'running' },
): Promise<void> {
  await run(
    em,
    `insert into screenings (id, account_id, created_by, depth, status, total, invalid, processed, counts,
        created_at, started_at)
     values (?, ?, ?, ?, ?, 0, 0, 0, '{}'::jsonb, now(), case when ? = 'running' then now() end)`,
    [s.id, s.account_id, s.created_by, s.depth, s.status, s.status],
    'run',
  );
}

/** The targets' counts, once every batch of them is stored. */
export async function setTotals(
  em: EntityManager,
  id: string,
  counts: { total: number; invalid: number; processed: number },
) {
  await run(
    em,
    `update screenings set total = ?, invalid = ?, processed = ? where id = ?`,
    [counts.total, counts.invalid, counts.processed, id],
    'run',
  );
}

/** Appends results (any number, in statements of INSERT_BATCH rows). */
export async function insertResults(em: EntityManager, screeningId: string, rows: readonly NewResult[]) {
  for (let i = 0; i < rows.length; i += INSERT_BATCH) {
    const batch = rows.slice(i, i + INSERT_BATCH);
    await runBound(
      em,
      `insert into screening_results (screening_id, seq, target, chain, network, label, status, error, level,
              score, decision, complete, findings)
       select $1, seq, target, chain, network, label, status, error, level, score, decision, complete, findings
         from jsonb_to_recordset($2::jsonb) as r(seq int, target text, chain text, network text, label text,
              status text, error jsonb, level text, score smallint, decision text, complete boolean,
              findings jsonb)`,
      [screeningId, JSON.stringify(batch)],
    );
  }
}

export async function findScreening(db: Db, id: string, accountId?: string): Promise<ScreeningRow | null> {
  const where = new Where('id = ?', id).andIf(accountId, 'account_id = ?');
  const [row] = await run<ScreeningRow[]>(
    db,
    `select ${SCREENING_COLUMNS} from screenings where ${where.sql}`,
    [...where.params],
  );
  return row ?? null;
}

/** The account's screenings, newest first. */
export function screeningPage(db: Db, accountId: string, cursor: string | undefined, limit: number) {
  const where = new Where('account_id = ?', accountId).before(cursor, 'scr', 'created_at', 'id');
  return run<ScreeningRow[]>(
    db,
    `select ${SCREENING_COLUMNS} from screenings where ${where.sql} order by created_at desc, id desc limit ?`,
    [...where.params, limit + 1],
  );
}

/** Results after `afterSeq` in input order, filtered; `limit` rows (pass limit + 1 to learn of a next page). */
export function resultRows(
  db: Db,
  screeningId: string,
  f: {
    afterSeq?: number;
    level?: string;
    decision?: string;
    status?: string;
    fromSeq?: number;
    toSeq?: number;
  },
  limit: number,
) {
  const where = new Where('screening_id = ?', screeningId)
    .andIf(f.afterSeq, 'seq > ?')
    .andIf(f.fromSeq, 'seq >= ?')
    .andIf(f.toSeq, 'seq < ?')
    .andIf(f.level, 'level = ?')
    .andIf(f.decision, 'decision = ?')
    .andIf(f.status, 'status = ?');
  return run<ResultRow[]>(
    db,
    `select ${RESULT_COLUMNS} from screening_results where ${where.sql} order by seq limit ?`,
    [...where.params, limit],
  );
}

/** Serialises the start of an account's screenings (one `state`/`full` running at a time). */
export async function lockAccount(em: EntityManager, accountId: string): Promise<void> {
  await run(em, `select pg_advisory_xact_lock(hashtext('riskwatch:screenings:' || ?))`, [accountId]);
}

/** The account's queued and running screenings, oldest first. */
export function openScreenings(em: EntityManager, accountId: string) {
  return run<ScreeningRow[]>(
    em,
    `select ${SCREENING_COLUMNS} from screenings
      where account_id = ? and status in ('queued', 'running') order by created_at, id`,
    [accountId],
  );
}

export async function markRunning(em: EntityManager, id: string): Promise<void> {
  await run(em, `update screenings set status = 'running', started_at = now() where id = ?`, [id], 'run');
}

/**
 * Writes the verdicts of rows still pending and adds their number to `processed`; returns the screening
 * as it now stands (row-locked until the transaction ends).
 */
export async function writeVerdicts(
  em: EntityManager,
  screeningId: string,
  verdicts: readonly Written[],
): Promise<{ written: number; screening: ScreeningRow }> {
  const seqs = verdicts.reduce((r, v) => ({ min: Math.min(r.min, v.seq), max: Math.max(r.max, v.seq) }), {
    min: Number.MAX_SAFE_INTEGER,
    max: -1,
  });
  const written = await runBound(
    em,
    `update screening_results r
        set status = 'done', level = v.level, score = v.score, decision = v.decision, complete = v.complete,
            findings = v.findings
       from jsonb_to_recordset($1::jsonb) as v(seq int, level text, score smallint, decision text,
            complete boolean, findings jsonb)
      where r.screening_id = $2 and r.seq between $3 and $4 and r.seq = v.seq and r.status = 'pending'`,
    // The seq range keeps the plan to the chunk's rows whatever the statistics say: on a table whose
    // statistics predate a 100,000-row screening, the planner looped over every pending row per verdict.
    [JSON.stringify(verdicts), screeningId, seqs.min, seqs.max],
  );
  const [screening] = await run<ScreeningRow[]>(
    em,
    `update screenings set processed = processed + ? where id = ? returning ${SCREENING_COLUMNS}`,
    [written, screeningId],
  );
  return { written, screening: screening! };
}

/** Results per level, decision and completeness: the counts of a finished screening. */
export async function countResults(db: Db, screeningId: string): Promise<Record<string, number>> {
  const rows = await run<{ key: string; n: string }[]>(
    db,
    `select 'level:' || level as key, count(*) as n from screening_results
      where screening_id = ? and status = 'done' group by level
     union all
     select 'decision:' || decision, count(*) from screening_results
      where screening_id = ? and status = 'done' group by decision
     union all
     select 'incomplete', count(*) from screening_results
      where screening_id = ? and status = 'done' and complete = false`,
    [screeningId, screeningId, screeningId],
  );
  return Object.fromEntries(rows.map((r) => [r.key, Number(r.n)]));
}

export async function markCompleted(em: EntityManager, id: string, counts: Record<string, number>) {
  await run(
    em,
    `update screenings set status = 'completed', completed_at = now(), counts = ?::jsonb,
            started_at = coalesce(started_at, now())
      where id = ?`,
    [JSON.stringify(counts), id],
    'run',
  );
}

/** Deletes up to 100 screenings created before `before` with their results; how many went. */
export async function pruneScreenings(em: EntityManager, before: Date): Promise<number> {
  const ids = await run<{ id: string }[]>(
    em,
    `select id from screenings where created_at < ? order by created_at limit 100`,
    [before],
  );
  if (ids.length === 0) return 0;
  const list = textArray(ids.map((r) => r.id));
  await run(em, `delete from screening_results where screening_id = any(?::text[])`, [list], 'run');
  await run(em, `delete from screenings where id = any(?::text[])`, [list], 'run');
  return ids.length;
}
