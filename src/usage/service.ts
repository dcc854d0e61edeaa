import { IsolationLevel, type AnyEntity, type EntityData } from '@mikro-orm/core';
import { AppError } from '../platform/errors.js';
import type { Orm } from '../platform/orm.js';

export interface UsageQuery {
  from?: Date | undefined;
  to?: Date | undefined;
  endpoint?: string | undefined;
  status?: number | undefined;
  api_key_id?: string | undefined;
  limit: number;
  cursor?: string | undefined;
  group_by?: 'hour' | 'day' | undefined;
}

interface Cursor {
  at: string;
  id?: string;
}

const encodeCursor = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');

/** Exactly what encodeCursor writes: `toISOString()` of a year PostgreSQL stores, and a usage id. */
const CURSOR_AT = /^(?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const CURSOR_ID = /^use_[0-9a-f]{28}$/;

function decodeCursor(raw: string, grouped: boolean): Cursor {
  try {
    const c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Cursor;
    if (
      typeof c.at === 'string' &&
      CURSOR_AT.test(c.at) &&
      !Number.isNaN(Date.parse(c.at)) &&
      new Date(c.at).toISOString() === c.at &&
      (grouped || (typeof c.id === 'string' && CURSOR_ID.test(c.id)))
    )
      return c;
  } catch {
    // fall through to the error below
  }
  throw new AppError('invalid_request', 'The cursor is not valid for this query.', {
    errors: [{ path: 'cursor', message: 'not a cursor returned by this endpoint' }],
  });
}

/**
 * The account's developer-API call history: filters, cursor pagination (newest first), hour/day buckets,
 * and a summary over the whole filtered range. Every query is scoped to the caller's account.
 */
export class UsageService {
  constructor(private readonly orm: Orm) {}

  /**
   * One answer reads one snapshot (a read-only REPEATABLE READ transaction): calls the drain stores while
   * the summary, the page and the buckets are read cannot make them disagree.
   */
  query(accountId: string, q: UsageQuery) {
    return this.orm.em.fork().transactional(
      // em.execute runs inside the transaction.
      (em) => this.read(accountId, q, (sql, params) => em.execute(sql, params)),
      { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
    );
  }

  private async read(
    accountId: string,
    q: UsageQuery,
    run: <T extends EntityData<AnyEntity>[]>(sql: string, params: unknown[]) => Promise<T>,
  ) {
    const where: string[] = ['account_id = ?'];
    const params: unknown[] = [accountId];
    if (q.from) {
      where.push('at >= ?');
      params.push(q.from);
    }
    if (q.to) {
      where.push('at < ?');
      params.push(q.to);
    }
    if (q.endpoint) {
      where.push('endpoint = ?');
      params.push(q.endpoint);
    }
    if (q.status !== undefined) {
      where.push('status = ?');
      params.push(q.status);
    }
    if (q.api_key_id) {
      where.push('api_key_id = ?');
      params.push(q.api_key_id);
    }
    const filter = where.join(' and ');

    const summaryRows = await run<{ endpoint: string; status: number; n: string }[]>(
      `select endpoint, status, count(*) as n from usage_records where ${filter} group by endpoint, status`,
      params,
    );
    const summary = {
      total: 0,
      by_endpoint: {} as Record<string, number>,
      by_status: {} as Record<string, number>,
    };
    for (const r of summaryRows) {
      const n = Number(r.n);
      summary.total += n;
      summary.by_endpoint[r.endpoint] = (summary.by_endpoint[r.endpoint] ?? 0) + n;
      summary.by_status[String(r.status)] = (summary.by_status[String(r.status)] ?? 0) + n;
    }

    const cursor = q.cursor ? decodeCursor(q.cursor, Boolean(q.group_by)) : undefined;
    if (q.group_by) {
      const bucket = `date_trunc('${q.group_by}', at, 'UTC')`;
      const bucketWhere = cursor ? `${filter} and at < ?` : filter;
      const bucketParams = cursor ? [...params, cursor.at] : params;
      const rows = await run<{ bucket: Date; total: string; avg: string; p95: number }[]>(
        `select ${bucket} as bucket, count(*) as total, round(avg(latency_ms)) as avg,
                percentile_disc(0.95) within group (order by latency_ms) as p95
           from usage_records where ${bucketWhere} group by 1 order by 1 desc limit ?`,
        [...bucketParams, q.limit + 1],
      );
      const page = rows.slice(0, q.limit);
      const statusRows = page.length
        ? await run<{ bucket: Date; status: number; n: string }[]>(
            `select ${bucket} as bucket, status, count(*) as n from usage_records
              where ${filter} and ${bucket} in (select jsonb_array_elements_text(?::jsonb)::timestamptz)
              group by 1, 2`,
            [...params, JSON.stringify(page.map((r) => new Date(r.bucket).toISOString()))],
          )
        : [];
      const data = page.map((r) => {
        const start = new Date(r.bucket).toISOString();
        const by_status: Record<string, number> = {};
        for (const s of statusRows)
          if (new Date(s.bucket).toISOString() === start) by_status[String(s.status)] = Number(s.n);
        return {
          bucket_start: start,
          total: Number(r.total),
          by_status,
          latency_ms_avg: Number(r.avg),
          latency_ms_p95: Number(r.p95),
        };
      });
      const last = data.at(-1);
      const next_cursor = rows.length > q.limit && last ? encodeCursor({ at: last.bucket_start }) : null;
      return { data, summary, next_cursor };
    }

    const pageWhere = cursor ? `${filter} and (at, id) < (?, ?)` : filter;
    const pageParams = cursor ? [...params, cursor.at, cursor.id] : params;
    const rows = await run<
      {
        id: string;
        at: Date;
        method: string;
        endpoint: string;
        status: number;
        latency_ms: number;
        api_key_id: string;
        api_key_prefix: string;
        request_id: string;
      }[]
    >(
      `select id, at, method, endpoint, status, latency_ms, api_key_id, api_key_prefix, request_id
         from usage_records where ${pageWhere} order by at desc, id desc limit ?`,
      [...pageParams, q.limit + 1],
    );
    const page = rows.slice(0, q.limit);
    const data = page.map((r) => ({
      id: r.id,
      at: new Date(r.at).toISOString(),
      method: r.method,
      endpoint: r.endpoint,
      status: r.status,
      latency_ms: r.latency_ms,
      api_key_id: r.api_key_id,
      api_key_prefix: r.api_key_prefix,
      request_id: r.request_id,
    }));
    const last = data.at(-1);
    const next_cursor = rows.length > q.limit && last ? encodeCursor({ at: last.at, id: last.id }) : null;
    return { data, summary, next_cursor };
  }

  /** Deletes records past the retention window; returns how many went. */
  async prune(retentionDays: number): Promise<number> {
    const res = await this.orm.em
      .getConnection()
      .execute(`delete from usage_records where at < now() - (? * interval '1 day')`, [retentionDays], 'run');
    return Number((res as { affectedRows?: number }).affectedRows ?? 0);
  }
}
