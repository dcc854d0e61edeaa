import { run, runBound, time, Where, type Db, type Time } from '../db/sql.js';
import { decodeCursor } from '../platform/cursor.js';
import type { BucketCounts, BucketRows } from './buckets.js';
import type { UsageEntry } from './recorder.js';
import type { EdgeBucket, Grain, Segment, Span } from './rollups.js';

/*
 * Every statement on the usage tables (usage_records and usage_rollups, see entities.ts): the drain's
 * insert and the one aggregate statement that answers `GET /api/v1/usage` (the retention prune: prune.ts).
 */

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
  /** What a risk call was about; null for other calls (and calls recorded before these were kept). */
  target: string | null;
  chain: string | null;
  network: string | null;
  /** Targets a bulk call carried. */
  targets: number | null;
}

/** Counts over the whole filtered range (every page). */
export interface UsageSummary {
  total: number;
  byEndpoint: Record<string, number>;
  byStatus: Record<string, number>;
}

/** What a query keeps of the account's calls, besides their time. */
export interface UsageFilter {
  endpoint?: string;
  status?: number;
  apiKeyId?: string;
}

/**
 * Stores calls, each once: a batch replayed after a crash inserts nothing twice. A statement trigger on
 * usage_records adds the calls it inserted to the rollups (see UsageDrain). An entry without `target`,
 * `chain`, `network` or `targets` (any call about nothing, and entries streamed before they existed)
 * stores null there; text longer than its column is cut, so no entry can fail its whole batch.
 */
export async function insertCalls(db: Db, rows: readonly UsageEntry[]): Promise<void> {
  if (rows.length === 0) return;
  await runBound(
    db,
    `insert into usage_records
       (id, account_id, api_key_id, api_key_prefix, method, endpoint, status, latency_ms, request_id, at,
        target, chain, network, targets)
     select id, account_id, api_key_id, api_key_prefix, method, endpoint, status, latency_ms, request_id, at,
            left(target, 200), left(chain, 40), left(network, 40), targets
       from jsonb_to_recordset($1::jsonb) as r(id varchar, account_id varchar, api_key_id varchar,
            api_key_prefix varchar, method varchar, endpoint varchar, status smallint, latency_ms int,
            request_id varchar, at timestamptz, target text, chain text, network text, targets int)
     on conflict (id, at) do nothing`,
    [JSON.stringify(rows)],
  );
}

/** The `dims` bits of a rollup row: which of endpoint, status and key are concrete (see UsageRollup). */
const ENDPOINT = 1;
const STATUS = 2;
const KEY = 4;

/** One row of the aggregate statement; which columns are set depends on `part` (see `UsageReads`). */
interface AggregateRow {
  part: string;
  start: Time | null;
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

const PAGE_COLUMNS =
  'id, at, method, endpoint, status, latency_ms, api_key_id, api_key_prefix, request_id, target, chain, ' +
  'network, targets';
/** A call of the page as `json_build_array(PAGE_COLUMNS)` gives it. */
type PageCall = [string, string, string, string, number, number, string, string, string, ...About];
type About = [target: string | null, chain: string | null, network: string | null, targets: number | null];
/** The columns of every part, in order, and their types. */
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
const COLUMNS = Object.keys(COLUMN_TYPES);

/**
 * The parts of one aggregate statement (`union all` of rows of one shape, tagged by `part`): the summary
 * and the buckets of an answer, read in one round trip from rollup rows and the calls of the edge hours.
 */
export class UsageReads {
  private readonly parts: string[] = [];
  private readonly params: unknown[] = [];
  private main: string | undefined;
  private mainParams: unknown[] = [];

  constructor(
    private readonly accountId: string,
    private readonly filter: UsageFilter,
  ) {}

  /** Where-clause of rollup rows of `grain` with concrete `dims` over `span`, matching the filter. */
  private rollupWhere(grain: Grain, dims: number, span: Span): Where {
    const where = new Where('account_id = ? and grain = ? and dims = ?', this.accountId, grain, dims);
    return this.matching(where, 'start', span);
  }

  /** Where-clause of the calls over `span` matching the filter. */
  private rawWhere(span: Span): Where {
    return this.matching(new Where('account_id = ?', this.accountId), 'at', span);
  }

  /** Narrows `where` to `span` (on `column`) and to the filter. */
  private matching(where: Where, column: string, span: Span): Where {
    const f = this.filter;
    return where
      .andIf(span.from, `${column} >= ?`)
      .andIf(span.to, `${column} < ?`)
      .andIf(f.endpoint, 'endpoint = ?')
      .andIf(f.status, 'status = ?')
      .andIf(f.apiKeyId, 'api_key_id = ?');
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
    const where = this.rollupWhere(grain, dims, span);
    this.add(part, select, `from usage_rollups where ${where.sql} ${tail}`, where.params);
  }

  private rawPart(part: string, span: Span, select: Record<string, string>, groupBy: string) {
    const where = this.rawWhere(span);
    this.add(part, select, `from usage_records where ${where.sql} group by ${groupBy}`, where.params);
  }

  private get dims(): number {
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
    const where = this.rollupWhere(grain, this.dims, span);
    this.main = `with main as (
      select start, status, calls, latency_ms_sum, latency_ms_max, latency_hist from usage_rollups
       where ${where.sql} order by start desc limit ?)`;
    this.mainParams = [...where.params, limit];
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

  /**
   * A partial bucket, the newer (`…n`) or the older (`…o`): hour rollups per status (`e…`), and calls per
   * status and latency bin (`r…`).
   */
  edgeBucket(which: 'newer' | 'older', edge: EdgeBucket) {
    const tag = which === 'newer' ? 'n' : 'o';
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

  /**
   * A page of calls newest first (`pc`, one JSON array per call), after the API cursor `cursor` (a forged
   * one is `invalid_request`).
   */
  page(span: Span, cursor: string | undefined, limit: number) {
    const where = this.rawWhere(span).before(cursor, 'use', 'at', 'id');
    // The row comparison prunes no day partition; its time alone does.
    if (cursor) where.and('at <= ?', decodeCursor(cursor, 'use').at);
    this.add(
      'pc',
      { call: `json_build_array(${PAGE_COLUMNS})` },
      `from (select ${PAGE_COLUMNS} from usage_records where ${where.sql} order by at desc, id desc limit ?) p`,
      [...where.params, limit],
    );
  }

  /** Runs the statement (none when it has no part). */
  async execute(db: Db): Promise<UsageRows> {
    const statusFixed = (this.dims & STATUS) !== 0;
    if (this.parts.length === 0) return new UsageRows([], statusFixed);
    const body = this.parts.map((p) => `(${p})`).join('\nunion all\n');
    const rows = await run<AggregateRow[]>(db, this.main ? `${this.main}\n${body}` : body, [
      ...this.mainParams,
      ...this.params,
    ]);
    return new UsageRows(rows, statusFixed);
  }
}

const bump = (into: Record<string, number>, key: string, n: number) => (into[key] = (into[key] ?? 0) + n);

/** The counts of a row; its status too when `perStatus` (the row counts one status). */
const countsOf = (r: AggregateRow, perStatus: boolean): BucketCounts => ({
  calls: Number(r.calls),
  latencyMsSum: Number(r.latency_ms_sum),
  latencyMsMax: r.latency_ms_max ?? 0,
  hist: r.latency_hist,
  bin: r.bin,
  status: perStatus ? r.status : null,
});

/** The rows of an aggregate statement, read part by part. */
export class UsageRows {
  constructor(
    private readonly rows: readonly AggregateRow[],
    /** The filter fixes the status: the rows of whole buckets count that one status. */
    private readonly statusFixed: boolean,
  ) {}

  /** The summary from the `s…` rows. */
  summary(): UsageSummary {
    const summary: UsageSummary = { total: 0, byEndpoint: {}, byStatus: {} };
    for (const r of this.rows) {
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

  /** The page of calls (`pc`), newest first. */
  calls(): UsageCall[] {
    const calls: UsageCall[] = [];
    for (const r of this.rows) {
      if (r.part !== 'pc') continue;
      const [id, at, method, endpoint, status, latencyMs, apiKeyId, apiKeyPrefix, requestId, ...about] =
        r.call as PageCall;
      const [target, chain, network, targets] = about;
      calls.push({
        id,
        at: time(at),
        method,
        endpoint,
        status,
        latencyMs,
        apiKeyId,
        apiKeyPrefix,
        requestId,
        target,
        chain,
        network,
        targets,
      });
    }
    // `union all` keeps no order between parts: the page's own order (at, id) descending.
    calls.sort((a, b) => b.at.getTime() - a.at.getTime() || (b.id > a.id ? 1 : b.id < a.id ? -1 : 0));
    return calls;
  }

  /** The rows of the buckets: whole ones (`bm`, and `bs` per status) and partial ones (`e…`, `r…`). */
  buckets(): BucketRows {
    const rows: BucketRows = { whole: [], wholeStatuses: [], newer: [], older: [] };
    for (const r of this.rows) {
      const p = r.part;
      if (p === 'bm') rows.whole.push({ start: time(r.start!), ...countsOf(r, this.statusFixed) });
      else if (p === 'bs')
        rows.wholeStatuses.push({ start: time(r.start!), byStatus: r.call as Record<string, number> });
      else if (p === 'en' || p === 'rn') rows.newer.push(countsOf(r, true));
      else if (p === 'eo' || p === 'ro') rows.older.push(countsOf(r, true));
    }
    return rows;
  }
}
