import { IsolationLevel, type AnyEntity, type EntityData } from '@mikro-orm/core';
import { decodeCursor, decodeTimeCursor, keysetPage, type Page } from '../platform/cursor.js';
import type { Orm } from '../db/orm.js';
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
  query(accountId: string, q: UsageQuery): Promise<UsageHistory> {
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
  ): Promise<UsageHistory> {
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
    const summary: UsageSummary = { total: 0, byEndpoint: {}, byStatus: {} };
    for (const r of summaryRows) {
      const n = Number(r.n);
      summary.total += n;
      summary.byEndpoint[r.endpoint] = (summary.byEndpoint[r.endpoint] ?? 0) + n;
      summary.byStatus[String(r.status)] = (summary.byStatus[String(r.status)] ?? 0) + n;
    }

    if (q.group_by) {
      const cursor = q.cursor ? decodeTimeCursor(q.cursor) : undefined;
      const bucket = `date_trunc('${q.group_by}', at, 'UTC')`;
      const bucketWhere = cursor ? `${filter} and at < ?` : filter;
      const bucketParams = cursor ? [...params, cursor.at] : params;
      const rows = await run<{ bucket: Date; total: string; avg: string; p95: number }[]>(
        `select ${bucket} as bucket, count(*) as total, round(avg(latency_ms)) as avg,
                percentile_disc(0.95) within group (order by latency_ms) as p95
           from usage_records where ${bucketWhere} group by 1 order by 1 desc limit ?`,
        [...bucketParams, q.limit + 1],
      );
      const shown = rows.slice(0, q.limit);
      const statusRows = shown.length
        ? await run<{ bucket: Date; status: number; n: string }[]>(
            `select ${bucket} as bucket, status, count(*) as n from usage_records
              where ${filter} and ${bucket} in (select jsonb_array_elements_text(?::jsonb)::timestamptz)
              group by 1, 2`,
            [...params, JSON.stringify(shown.map((r) => new Date(r.bucket).toISOString()))],
          )
        : [];
      const buckets = rows.map((r): UsageBucket => {
        const start = new Date(r.bucket);
        const byStatus: Record<string, number> = {};
        for (const s of statusRows)
          if (new Date(s.bucket).getTime() === start.getTime()) byStatus[String(s.status)] = Number(s.n);
        return {
          start,
          total: Number(r.total),
          byStatus,
          latencyMsAvg: Number(r.avg),
          latencyMsP95: Number(r.p95),
        };
      });
      return {
        kind: 'buckets',
        summary,
        ...keysetPage(buckets, q.limit, (b) => ({ at: b.start.toISOString() })),
      };
    }

    const cursor = q.cursor ? decodeCursor(q.cursor, 'use') : undefined;
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
    const calls = rows.map((r): UsageCall => ({
      id: r.id,
      at: new Date(r.at),
      method: r.method,
      endpoint: r.endpoint,
      status: r.status,
      latencyMs: r.latency_ms,
      apiKeyId: r.api_key_id,
      apiKeyPrefix: r.api_key_prefix,
      requestId: r.request_id,
    }));
    return {
      kind: 'calls',
      summary,
      ...keysetPage(calls, q.limit, (c) => ({ at: c.at.toISOString(), id: c.id })),
    };
  }

  /** Deletes records past the retention window; returns how many went. */
  async prune(retentionDays: number): Promise<number> {
    const res = await this.orm.em
      .getConnection()
      .execute(`delete from usage_records where at < now() - (? * interval '1 day')`, [retentionDays], 'run');
    return Number((res as { affectedRows?: number }).affectedRows ?? 0);
  }
}
