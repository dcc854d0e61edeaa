import { decodeTimeCursor, keysetPage, type Page } from '../platform/cursor.js';
import type { Orm } from '../db/orm.js';
import { run, time, type Time } from '../db/sql.js';
import { countBuckets, pageEnd, type UsageBucket } from './buckets.js';
import { pruneCalls, type UsagePrune } from './prune.js';
import { UsageReads, type UsageCall, type UsageFilter, type UsageSummary } from './repository.js';
import { bucketPlan, decompose, type Grain, type Span } from './rollups.js';
import type { UsageQuery } from './schemas.js';

/** A recorded call as `POST /api/v1/feedback` names it: by its request id, for what it was about. */
export interface NamedCall {
  id: string;
  at: Date;
  endpoint: string;
  target: string | null;
  chain: string | null;
  network: string | null;
}

/** One page of calls, or of buckets with `group_by`, and the summary of the range. */
export type UsageHistory = { summary: UsageSummary } & (
  ({ kind: 'calls' } & Page<UsageCall>) | ({ kind: 'buckets' } & Page<UsageBucket>)
);

/**
 * The account's developer-API call history: filters, cursor pagination (newest first), hour/day buckets,
 * and a summary over the whole filtered range. Every query is scoped to the caller's account.
 *
 * Cost does not grow with the calls of the range: the summary and the buckets read the usage rollups
 * (hour and day counts kept by a trigger on usage_records, see the UsageRollup entity), whole days from
 * day rollups, whole hours from hour rollups, and only the partial hours at the ends of the range from
 * the calls themselves (src/usage/rollups.ts `decompose`); a page of calls is one range of the index
 * that fits its filter (status, endpoint or key, then time), read newest first from its cursor.
 */
export class UsageService {
  constructor(private readonly orm: Orm) {}

  /**
   * One answer is one SQL statement (the summary, the buckets or the page, as parts of a `union all`), so
   * it reads one snapshot: calls the drain stores meanwhile cannot make the summary, the page and the
   * buckets disagree. One statement is one round trip; the read-only REPEATABLE READ transaction this
   * replaced cost five (begin, isolation, the reads, commit), most of an answer's time.
   */
  query(accountId: string, q: UsageQuery): Promise<UsageHistory> {
    const range: Span = { from: q.from, to: q.to };
    const reads = () => {
      const r = new UsageReads(accountId, filterOf(q));
      r.summary(decompose(range));
      return r;
    };
    return q.group_by ? this.bucketPage(reads(), q, q.group_by) : this.callPage(reads, q, range);
  }

  /**
   * The summary and a page of calls, newest first from the query's cursor. The calls are in day partitions
   * (src/db/partitions.ts), and a page over all of them has every partition planned (about 15 ms for 90
   * days): the page is first read from the day before its top, where an account with any traffic has it
   * whole, and read again over the whole range only when that day held less than a page.
   */
  private async callPage(reads: () => UsageReads, q: UsageQuery, range: Span): Promise<UsageHistory> {
    const read = (span: Span) => {
      const r = reads();
      r.page(span, q.cursor, q.limit + 1);
      return r.execute(this.orm);
    };
    const top = q.cursor ? Date.parse(decodeTimeCursor(q.cursor).at) : (range.to ?? new Date()).getTime();
    const recent = new Date(top - RECENT_MS);
    const windowed = !range.from || range.from < recent;
    let rows = await read(windowed ? { from: recent, to: range.to } : range);
    if (windowed && rows.calls().length <= q.limit) rows = await read(range);
    return {
      kind: 'calls',
      summary: rows.summary(),
      ...keysetPage(rows.calls(), q.limit, (c) => ({ at: c.at.toISOString(), id: c.id })),
    };
  }

  /** The summary and a page of buckets of `grain`, newest first from the query's cursor. */
  private async bucketPage(reads: UsageReads, q: UsageQuery, grain: Grain): Promise<UsageHistory> {
    const cursor = q.cursor ? decodeTimeCursor(q.cursor) : undefined;
    const plan = bucketPlan({ from: q.from, to: pageEnd(q.to, cursor && new Date(cursor.at)) }, grain);
    if (plan.whole) reads.wholeBuckets(grain, plan.whole, q.limit + 1);
    if (plan.newer) reads.edgeBucket('newer', plan.newer);
    if (plan.older) reads.edgeBucket('older', plan.older);
    const rows = await reads.execute(this.orm);
    return {
      kind: 'buckets',
      summary: rows.summary(),
      ...keysetPage(countBuckets(plan, rows.buckets()), q.limit, (b) => ({ at: b.start.toISOString() })),
    };
  }

  /**
   * The account's newest recorded call whose response carried `requestId` (one index range: account,
   * request id, time); null when there is none, or it is not recorded yet (calls appear within seconds).
   */
  async callByRequestId(accountId: string, requestId: string): Promise<NamedCall | null> {
    const [row] = await run<(Omit<NamedCall, 'at'> & { at: Time })[]>(
      this.orm,
      `select id, at, endpoint, target, chain, network from usage_records
        where account_id = ? and request_id = ? order by at desc, id desc limit 1`,
      [accountId, requestId],
    );
    return row ? { ...row, at: time(row.at) } : null;
  }

  /** Removes calls past the retention window and their rollups (see `pruneCalls`). */
  prune(retentionDays: number, now = new Date()): Promise<UsagePrune> {
    return pruneCalls(this.orm, retentionDays, now);
  }
}

/** How far back from its top a page of calls is looked for first (see `callPage`). */
const RECENT_MS = 86_400_000;

/** The query's filter. An empty `endpoint=` or `api_key_id=` filters nothing, as it always has. */
const filterOf = (q: UsageQuery): UsageFilter => ({
  endpoint: q.endpoint || undefined,
  status: q.status,
  apiKeyId: q.api_key_id || undefined,
});
