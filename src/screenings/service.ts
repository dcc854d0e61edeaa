import { Readable } from 'node:stream';
import { recordAudit } from '../audit/log.js';
import { actorName, type Actor } from '../audit/actor.js';
import type { Orm } from '../db/orm.js';
import type { AfterCommit } from '../events/log.js';
import type { JobQueues } from '../jobs/queues.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { AppError, invalidRequest } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { ScreenTarget } from '../risk/screen.js';
import type { ScreeningDepth } from './entities.js';
import { csvHeader, csvLine, decodeSeqCursor, encodeSeqCursor } from './present.js';
import {
  findScreening,
  insertResults,
  insertScreening,
  lockAccount,
  resultRows,
  screeningPage,
  setTotals,
  type NewResult,
  type ResultRow,
  type ScreeningRow,
} from './repository.js';
import type { ScreeningRunner } from './runner.js';
import { MAX_WAIT_TARGETS, type NewScreening, type ResultsQuery, type ScreeningsQuery } from './schemas.js';

/** Codes a target can be refused with at submission; the screening goes on with the others. */
const PER_TARGET_CODES = new Set(['invalid_address', 'unsupported_chain', 'invalid_request']);
/** Results per statement of the CSV download. */
const CSV_BATCH = 5000;

export interface TargetError {
  index: number;
  target: string;
  code: 'invalid_address' | 'unsupported_chain' | 'invalid_request';
  message: string;
}

/** A target as a file or a request gives it. */
export interface GivenTarget {
  target: string;
  chain?: string | undefined;
  network?: string | undefined;
  label?: string | undefined;
}

/**
 * Bulk screenings as the API and the CLI see them: submission (targets checked, stored and audited in one
 * transaction, then handed to the workers), progress, and results paged or as CSV. The workers' side is
 * ScreeningRunner (runner.ts).
 */
export class ScreeningsService {
  constructor(
    private readonly orm: Orm,
    /** Checks a target as a preflight would (the risk engine's Screener; the CLI's own without a runtime). */
    private readonly targets: { resolve(target: string, chain?: string, network?: string): ScreenTarget },
    private readonly queues: JobQueues,
    /** Screens `wait: true` screenings inline (the API); absent in the CLI, which never waits. */
    private readonly runner?: ScreeningRunner,
  ) {}

  /**
   * Each target resolved (network, address) or refused with its error; `index` is its position. `valid`
   * pairs each pending row with its resolved target.
   */
  checkTargets(
    targets: readonly GivenTarget[],
    indexBase = 0,
  ): { rows: NewResult[]; errors: TargetError[]; valid: { row: NewResult; target: ScreenTarget }[] } {
    const rows: NewResult[] = [];
    const errors: TargetError[] = [];
    const valid: { row: NewResult; target: ScreenTarget }[] = [];
    targets.forEach((t, i) => {
      const seq = indexBase + i;
      const label = t.label || null;
      try {
        if (label && label.length > 200)
          throw new AppError('invalid_request', 'label: at most 200 characters.');
        const resolved = this.targets.resolve(t.target, t.chain, t.network);
        const row: NewResult = {
          seq,
          target: resolved.address,
          chain: resolved.network.chain,
          network: resolved.network.network,
          label,
          status: 'pending',
          error: null,
        };
        rows.push(row);
        valid.push({ row, target: resolved });
      } catch (err) {
        if (!(err instanceof AppError) || !PER_TARGET_CODES.has(err.code)) throw err;
        const error = { code: err.code as TargetError['code'], message: err.message };
        errors.push({ index: seq, target: t.target, ...error });
        rows.push({
          seq,
          target: t.target.slice(0, 200),
          chain: t.chain?.slice(0, 40) ?? null,
          network: t.network?.slice(0, 40) ?? null,
          label: label?.slice(0, 200) ?? null,
          status: 'invalid',
          error,
        });
      }
    });
    return { rows, errors, valid };
  }

  /**
   * Stores a screening: the row, every target (refused ones as `invalid` rows with their error) and the
   * audit record in one transaction; the workers are asked to start it in that transaction too, so a
   * screening the workers never heard of is never stored (Redis down → nothing stored, 503).
   */
  async submit(
    accountId: string,
    actor: Actor,
    body: NewScreening,
  ): Promise<{ screening: ScreeningRow; errors: TargetError[]; results?: ResultRow[] }> {
    if (body.wait && body.targets.length > MAX_WAIT_TARGETS)
      throw invalidRequest(
        `wait: true answers inline for at most ${MAX_WAIT_TARGETS} targets; this screening has ` +
          `${body.targets.length}. Leave wait out and follow its progress.`,
        [{ path: 'wait', message: `at most ${MAX_WAIT_TARGETS} targets with wait` }],
      );
    const { rows, errors, valid } = this.checkTargets(body.targets);
    // `lists` reads memory only: judged here and stored done, so the screening is complete when this answers.
    const judgeNow = body.depth === 'lists' && this.runner !== undefined;
    if (judgeNow) {
      const verdicts = await this.runner.judge(
        accountId,
        body.depth,
        valid.map((v) => v.target),
      );
      valid.forEach(({ row }, i) => Object.assign(row, verdicts[i], { status: 'done' }));
    }
    const id = await this.store(accountId, actor, body.depth, [rows], { start: !body.wait && !judgeNow });
    if (!body.wait || !this.runner) return { screening: (await findScreening(this.orm, id))!, errors };
    if (!judgeNow) await this.runner.runChunk(id, 0, rows.length);
    const results = await resultRows(this.orm, id, {}, rows.length);
    return { screening: (await findScreening(this.orm, id))!, errors, results };
  }

  /**
   * Writes a screening and its targets, given in batches (the CLI streams a file of any size through
   * here), the audit record and, with `start`, the job that starts it: all in one transaction, so an
   * error in any batch (a CSV syntax error) stores nothing. Returns its id and counts.
   */
  async store(
    accountId: string,
    actor: Actor,
    depth: ScreeningDepth,
    batches: Iterable<NewResult[]> | AsyncIterable<NewResult[]>,
    opts: { start: boolean },
  ): Promise<string> {
    const id = newId('scr');
    let afterCommit: AfterCommit | undefined;
    await this.orm.em.fork().transactional(async (em) => {
      // A screening answered inline runs at once; any other waits for the workers to start it.
      const status = opts.start ? 'queued' : 'running';
      await insertScreening(em, { id, account_id: accountId, created_by: actorName(actor), depth, status });
      const counts = { total: 0, invalid: 0, processed: 0 };
      for await (const rows of batches) {
        await insertResults(em, id, rows);
        counts.total += rows.length;
        for (const r of rows) {
          if (r.status === 'invalid') counts.invalid++;
          else if (r.status === 'done') counts.processed++;
        }
      }
      await setTotals(em, id, counts);
      await recordAudit(em, actor, {
        accountId,
        action: 'screening.created',
        resourceType: 'screening',
        resourceId: id,
        after: { depth, total: counts.total, invalid: counts.invalid },
      });
      if (this.runner && counts.invalid + counts.processed === counts.total) {
        // Nothing left for the workers (judged at submission, or every target refused).
        afterCommit = await this.runner.complete(em, id);
      } else if (opts.start) {
        // The start job takes this lock too: one that runs before this commits waits for it.
        await lockAccount(em, accountId);
        await this.queues.enqueue(
          'screening-start',
          { account_id: accountId, screening_id: id },
          `start-${id}`,
        );
      }
    });
    await afterCommit?.();
    return id;
  }

  /** One screening of the account; another account's id is not found. */
  async get(accountId: string, id: string): Promise<ScreeningRow> {
    const row = await findScreening(this.orm, id, accountId);
    if (!row) throw new AppError('not_found', `Screening "${id.slice(0, 60)}" was not found.`);
    return row;
  }

  async list(accountId: string, q: ScreeningsQuery): Promise<Page<ScreeningRow>> {
    const rows = await screeningPage(this.orm, accountId, q.cursor, q.limit);
    return keysetPage(rows, q.limit, (r) => ({ at: new Date(r.created_at).toISOString(), id: r.id }));
  }

  /** One page of results in input order, filtered by level, decision or status. */
  async results(accountId: string, id: string, q: ResultsQuery): Promise<Page<ResultRow>> {
    await this.get(accountId, id);
    const afterSeq = q.cursor === undefined ? undefined : decodeSeqCursor(q.cursor);
    const rows = await resultRows(this.orm, id, { ...q, afterSeq }, q.limit + 1);
    const items = rows.slice(0, q.limit);
    const more = rows.length > q.limit;
    return { items, nextCursor: more ? encodeSeqCursor(items[items.length - 1]!.seq) : null };
  }

  /** Every result (filtered) as CSV, streamed in batches: a header line, then one line per target. */
  async csv(accountId: string, id: string, q: Omit<ResultsQuery, 'limit' | 'cursor'>): Promise<Readable> {
    await this.get(accountId, id);
    const orm = this.orm;
    async function* lines() {
      yield csvHeader();
      let afterSeq: number | undefined;
      for (;;) {
        const rows = await resultRows(orm, id, { ...q, afterSeq }, CSV_BATCH);
        if (rows.length > 0) yield rows.map(csvLine).join('');
        if (rows.length < CSV_BATCH) return;
        afterSeq = rows[rows.length - 1]!.seq;
      }
    }
    return Readable.from(lines());
  }
}
