import type { AnyEntity, EntityData } from '@mikro-orm/core';
import { decodeCursor, decodeTimeCursor, keysetPage, type Page } from '../platform/cursor.js';
import type { Orm } from '../db/orm.js';
import {
  addHist,
  bucketPlan,
  decompose,
  emptyHist,
  histP95,
  type EdgeBucket,
  type Grain,
  type Segment,
  type Span,
} from './rollups.js';
import type { UsageQuery } from './schemas.js';

/** One developer-API call. */
export interface UsageCall {
  id: string;
  at: Date;
  method: string;
  /** The route template. */
  endpoint: string;
  status: number;
  latencyMs: number;
  apiKeyId: string;
  apiKeyPrefix: string;
  requestId: string;
}

/** The calls of one hour or day. */
export interface UsageBucket {
  start: Date;
  total: number;
  byStatus: Record<string, number>;
  latencyMsAvg: number;
  /** Estimated from the bucket's latency histogram: see `histP95`. */
  latencyMsP95: number;
}

/** Counts over the whole filtered range (every page). */
export interface UsageSummary {
  total: number;
  byEndpoint: Record<string, number>;
  byStatus: Record<string, number>;
}

/** One page of calls, or of buckets with `group_by`, and the summary of the range. */
export type UsageHistory = { summary: UsageSummary } & (
  ({ kind: 'calls' } & Page<UsageCall>) | ({ kind: 'buckets' } & Page<UsageBucket>)
);

type Run = <T extends EntityData<AnyEntity>[]>(sql: string, params: unknown[]) => Promise<T>;

/** The `dims` bits of a rollup row: which of endpoint, status and key are concrete (see UsageRollup). */
const ENDPOINT = 1;
const STATUS = 2;
const KEY = 4;

interface Filter {
  endpoint?: string;
  status?: number;
  apiKeyId?: string;
}

/** One row of the aggregate statement; which columns are set depends on `part` (see `Reads`). */
interface AggregateRow {
  part: string;
  start: Date | null;
  endpoint: string | null;
  status: number | null;
  calls: string;
  latency_ms_sum: string | null;
  latency_ms_max: number | null;
  latency_hist: number[] | null;
  bin: number | null;
  /** A call of the page (`pc`: its PAGE_COLUMNS as an array), or a bucket's calls per status (`bs`). */
  call: unknown;
}

const COLUMNS = [
  'start',
  'endpoint',
  'status',
  'calls',
  'latency_ms_sum',
  'latency_ms_max',
  'latency_hist',
  'bin',
  'call',
];
const PAGE_COLUMNS = 'id, at, method, endpoint, status, latency_ms, api_key_id, api_key_prefix, request_id';
const COLUMN_TYPES: Record<string, string> = {
  start: 'timestamptz',
  endpoint: 'text',
  status: 'int',
  calls: 'bigint',
  latency_ms_sum: 'bigint',
  latency_ms_max: 'int',
  latency_hist: 'json',
  bin: 'int',
  call: 'json',
};

/**
 * The parts of one aggregate statement (`union all` of rows of one shape, tagged by `part`): the summary
 * and the buckets of an answer, read in one round trip from rollup rows and the calls of the edge hours.
 */
class Reads {
  private readonly parts: string[] = [];
  readonly params: unknown[] = [];
  private main: string | undefined;
  private mainParams: unknown[] = [];

  constructor(
    private readonly accountId: string,
    private readonly filter: Filter,
  ) {}

  /** Where-clause of rollup rows of `grain` with concrete `dims` over `span`, matching the filter. */
  private rollupWhere(grain: Grain, dims: number, span: Span, params: unknown[]): string {
    const where = ['account_id = ?', 'grain = ?', 'dims = ?'];
    params.push(this.accountId, grain, dims);
    this.bound(where, params, 'start', span);
    this.filtered(where, params);
    return where.join(' and ');
  }

  /** Where-clause of the calls over `span` matching the filter. */
  rawWhere(span: Span, params: unknown[]): string {
    const where = ['account_id = ?'];
    params.push(this.accountId);
    this.bound(where, params, 'at', span);
    this.filtered(where, params);
    return where.join(' and ');
  }

  private bound(where: string[], params: unknown[], column: string, span: Span) {
    if (span.from) {
      where.push(`${column} >= ?`);
      params.push(span.from);
    }
    if (span.to) {
      where.push(`${column} < ?`);
      params.push(span.to);
    }
  }

  private filtered(where: string[], params: unknown[]) {
    const f = this.filter;
    if (f.endpoint !== undefined) {
      where.push('endpoint = ?');
      params.push(f.endpoint);
    }
    if (f.status !== undefined) {
      where.push('status = ?');
      params.push(f.status);
    }
    if (f.apiKeyId !== undefined) {
      where.push('api_key_id = ?');
      params.push(f.apiKeyId);
    }
  }

  /** Adds a part: `select` gives some of COLUMNS (`expr as column`), the rest are null. */
  private add(part: string, select: Record<string, string>, rest: string, params: unknown[]) {
    const columns = COLUMNS.map((c) => `${select[c] ?? 'null'}::${COLUMN_TYPES[c]} as ${c}`);
    this.parts.push(`select '${part}' as part, ${columns.join(', ')} ${rest}`);
    this.params.push(...params);
  }

  private rollupPart(
    part: string,
    grain: Grain,
    dims: number,
    span: Span,
    select: Record<string, string>,
    tail = '',
  ) {
    const params: unknown[] = [];
    this.add(
      part,
      select,
      `from usage_rollups where ${this.rollupWhere(grain, dims, span, params)} ${tail}`,
      params,
    );
  }

  private rawPart(part: string, span: Span, select: Record<string, string>, groupBy: string) {
    const params: unknown[] = [];
    this.add(
      part,
      select,
      `from usage_records where ${this.rawWhere(span, params)} group by ${groupBy}`,
      params,
    );
  }

  get dims(): number {
    const f = this.filter;
    return (
      (f.endpoint !== undefined ? ENDPOINT : 0) |
      (f.status !== undefined ? STATUS : 0) |
      (f.apiKeyId !== undefined ? KEY : 0)
    );
  }

  /**
   * The summary: per endpoint and per status over each segment (`se` / `ss` from rollups whose dims are
   * the filter's plus endpoint, or plus status; `sr` from the calls of an edge hour).
   */
  summary(segments: Segment[]) {
    for (const seg of segments) {
      if (seg.source === 'raw')
        this.rawPart(
          'sr',
          seg,
          { endpoint: 'endpoint', status: 'status', calls: 'count(*)' },
          'endpoint, status',
        );
      else {
        this.rollupPart(
          'se',
          seg.source,
          this.dims | ENDPOINT,
          seg,
          { endpoint: 'endpoint', calls: 'sum(calls)' },
          'group by endpoint',
        );
        this.rollupPart(
          'ss',
          seg.source,
          this.dims | STATUS,
          seg,
          { status: 'status', calls: 'sum(calls)' },
          'group by status',
        );
      }
    }
  }

  /**
   * The newest `limit` whole buckets (`bm`, from the CTE `main`: one rollup row per bucket, dims = the
   * filter's) and their calls per status (`bs`, unless the filter fixes the status).
   */
  wholeBuckets(grain: Grain, span: Span, limit: number) {
    const params: unknown[] = [];
    this.main = `with main as (
      select start, status, calls, latency_ms_sum, latency_ms_max, latency_hist from usage_rollups
       where ${this.rollupWhere(grain, this.dims, span, params)} order by start desc limit ?)`;
    this.mainParams = [...params, limit];
    this.parts.push(
      `select 'bm' as part, start, null::text, status::int, calls, latency_ms_sum, latency_ms_max, to_json(latency_hist), null::int, null::json from main`,
    );
    if (!(this.dims & STATUS))
      this.rollupPart(
        'bs',
        grain,
        this.dims | STATUS,
        { to: span.to },
        // One row per bucket, its calls per status as a JSON object (fewer rows to the client).
        { start: 'start', calls: 'sum(calls)', call: 'json_object_agg(status, calls)' },
        'and start >= (select min(start) from main) group by start',
      );
  }

  /** A partial bucket (`e…`): hour rollups per status, and calls per status and latency bin (`r…`). */
  edgeBucket(tag: string, edge: EdgeBucket) {
    for (const seg of edge.segments) {
      if (seg.source === 'raw')
        this.rawPart(
          `r${tag}`,
          seg,
          {
            status: 'status',
            bin: 'usage_hist_bin(latency_ms)',
            calls: 'count(*)',
            latency_ms_sum: 'sum(latency_ms)',
            latency_ms_max: 'max(latency_ms)',
          },
          'status, usage_hist_bin(latency_ms)',
        );
      else
        this.rollupPart(`e${tag}`, seg.source, this.dims | STATUS, seg, {
          status: 'status',
          calls: 'calls',
          latency_ms_sum: 'latency_ms_sum',
          latency_ms_max: 'latency_ms_max',
          latency_hist: 'to_json(latency_hist)',
        });
    }
  }

  /** A page of calls newest first (`pc`, one JSON array per call), from a keyset cursor. */
  page(span: Span, cursor: { at: string; id: string } | undefined, limit: number) {
    const params: unknown[] = [];
    let where = this.rawWhere(span, params);
    if (cursor) {
      where += ' and (at, id) < (?, ?)';
      params.push(cursor.at, cursor.id);
    }
    params.push(limit);
    this.add(
      'pc',
      { call: `json_build_array(${PAGE_COLUMNS})` },
      `from (select ${PAGE_COLUMNS} from usage_records where ${where} order by at desc, id desc limit ?) p`,
      params,
    );
  }

  async run(run: Run): Promise<AggregateRow[]> {
    if (this.parts.length === 0) return [];
    const body = this.parts.map((p) => `(${p})`).join('\nunion all\n');
    return run<AggregateRow[]>(this.main ? `${this.main}\n${body}` : body, [
      ...this.mainParams,
      ...this.params,
    ]);
  }
}

/** Calls, latency sum and max, latency histogram and calls per status of one bucket being counted. */
class BucketCount {
  calls = 0;
  latencySum = 0;
  latencyMax = 0;
  readonly hist = emptyHist();
  readonly byStatus: Record<string, number> = {};

  constructor(readonly start: Date) {}

  add(r: AggregateRow, statusToo: boolean) {
    const n = Number(r.calls);
    this.calls += n;
    this.latencySum += Number(r.latency_ms_sum);
    this.latencyMax = Math.max(this.latencyMax, r.latency_ms_max ?? 0);
    if (r.latency_hist) addHist(this.hist, r.latency_hist);
    else if (r.bin !== null) this.hist[r.bin]! += n;
    if (statusToo) this.addStatus(r.status!, n);
  }

  addStatus(status: number | string, n: number) {
    this.byStatus[String(status)] = (this.byStatus[String(status)] ?? 0) + n;
  }

  bucket(): UsageBucket {
    return {
      start: this.start,
      total: this.calls,
      byStatus: this.byStatus,
      latencyMsAvg: Math.round(this.latencySum / this.calls),
      latencyMsP95: histP95(this.hist, this.latencyMax),
    };
  }
}

const bump = (into: Record<string, number>, key: string, n: number) => (into[key] = (into[key] ?? 0) + n);

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
    const em = this.orm.em.fork();
    return this.read(accountId, q, (sql, params) => em.execute(sql, params));
  }

  private async read(accountId: string, q: UsageQuery, run: Run): Promise<UsageHistory> {
    // An empty `endpoint=` or `api_key_id=` filters nothing, as it always has.
    const filter: Filter = {
      endpoint: q.endpoint || undefined,
      status: q.status,
      apiKeyId: q.api_key_id || undefined,
    };
    const range: Span = { from: q.from, to: q.to };
    const reads = new Reads(accountId, filter);
    reads.summary(decompose(range));

    if (q.group_by) {
      const cursor = q.cursor ? decodeTimeCursor(q.cursor) : undefined;
      // The next page: the buckets of the calls before the last bucket shown.
      const before = cursor ? new Date(cursor.at) : undefined;
      const to = before && (!q.to || before < q.to) ? before : q.to;
      const plan = bucketPlan({ from: q.from, to }, q.group_by);
      if (plan.whole) reads.wholeBuckets(q.group_by, plan.whole, q.limit + 1);
      if (plan.newer) reads.edgeBucket('n', plan.newer);
      if (plan.older) reads.edgeBucket('o', plan.older);
      const rows = await reads.run(run);

      const whole = new Map<number, BucketCount>();
      const newer = plan.newer && new BucketCount(plan.newer.start);
      const older = plan.older && new BucketCount(plan.older.start);
      for (const r of rows) {
        if (r.part === 'bm') {
          const b = new BucketCount(new Date(r.start!));
          b.add(r, (reads.dims & STATUS) !== 0);
          whole.set(b.start.getTime(), b);
        }
      }
      for (const r of rows) {
        const p = r.part;
        if (p === 'bs') {
          const bucket = whole.get(new Date(r.start!).getTime());
          if (bucket)
            for (const [status, n] of Object.entries(r.call as Record<string, number>))
              bucket.addStatus(status, n);
        } else if (p === 'en' || p === 'rn') newer!.add(r, true);
        else if (p === 'eo' || p === 'ro') older!.add(r, true);
      }
      const counted = [
        ...(newer ? [newer] : []),
        ...[...whole.values()].sort((a, b) => b.start.getTime() - a.start.getTime()),
        ...(older ? [older] : []),
      ];
      const buckets = counted.filter((b) => b.calls > 0).map((b) => b.bucket());
      return {
        kind: 'buckets',
        summary: summaryOf(rows),
        ...keysetPage(buckets, q.limit, (b) => ({ at: b.start.toISOString() })),
      };
    }

    const cursor = q.cursor ? decodeCursor(q.cursor, 'use') : undefined;
    reads.page(range, cursor, q.limit + 1);
    const rows = await reads.run(run);
    const calls: UsageCall[] = [];
    for (const r of rows) {
      if (r.part !== 'pc') continue;
      const [id, at, method, endpoint, status, latencyMs, apiKeyId, apiKeyPrefix, requestId] = r.call as [
        string,
        string,
        string,
        string,
        number,
        number,
        string,
        string,
        string,
      ];
      calls.push({
        id,
        at: new Date(at),
        method,
        endpoint,
        status,
        latencyMs,
        apiKeyId,
        apiKeyPrefix,
        requestId,
      });
    }
    // `union all` keeps no order between parts: the page's own order (at, id) descending.
    calls.sort((a, b) => b.at.getTime() - a.at.getTime() || (b.id > a.id ? 1 : b.id < a.id ? -1 : 0));
    const summary = summaryOf(rows);
    return {
      kind: 'calls',
      summary,
      ...keysetPage(calls, q.limit, (c) => ({ at: c.at.toISOString(), id: c.id })),
    };
  }

  /**
   * Deletes calls past the retention window, and their rollups, in one statement. The cut-off is the
   * start of the UTC day `retentionDays` ago, so every rollup (hour or day) is either wholly kept or
   * wholly deleted and never counts a deleted call; up to one day more than the retention is kept.
   * Returns how many calls went.
   */
  async prune(retentionDays: number): Promise<number> {
    const rows = await this.orm.em.getConnection().execute<{ deleted: string }[]>(
      `with cutoff as (select date_trunc('day', now() - (? * interval '1 day'), 'UTC') as at),
            rollups as (delete from usage_rollups where start < (select at from cutoff)),
            calls as (delete from usage_records where at < (select at from cutoff) returning 1)
       select count(*) as deleted from calls`,
      [retentionDays],
    );
    return Number(rows[0]?.deleted ?? 0);
  }
}

/** The summary from the `s…` rows of the aggregate statement. */
function summaryOf(rows: AggregateRow[]): UsageSummary {
  const summary: UsageSummary = { total: 0, byEndpoint: {}, byStatus: {} };
  for (const r of rows) {
    const n = Number(r.calls);
    if (r.part === 'se') bump(summary.byEndpoint, r.endpoint!, n);
    else if (r.part === 'ss') {
      bump(summary.byStatus, String(r.status), n);
      summary.total += n;
    } else if (r.part === 'sr') {
      bump(summary.byEndpoint, r.endpoint!, n);
      bump(summary.byStatus, String(r.status), n);
      summary.total += n;
    }
  }
  return summary;
}
