import { describe, expect, it } from 'vitest';
import { countBuckets, pageEnd, type BucketCounts, type BucketRows } from '../../src/usage/buckets.js';
import { bucketPlan, emptyHist, histBin } from '../../src/usage/rollups.js';

const t = (iso: string) => new Date(iso);
const iso = (d?: Date) => d?.toISOString();

/** A group of `calls` calls of one status, all in the latency bin of `ms` (as the raw edge rows count). */
const grouped = (calls: number, ms: number, status: number | null = 200): BucketCounts => ({
  calls,
  latencyMsSum: calls * ms,
  latencyMsMax: ms,
  hist: null,
  bin: histBin(ms),
  status,
});

/** A rollup row of `calls` calls of one latency `ms` (its histogram holds them in that bin). */
const rollup = (calls: number, ms: number, status: number | null = null): BucketCounts => {
  const hist = emptyHist();
  hist[histBin(ms)] = calls;
  return { calls, latencyMsSum: calls * ms, latencyMsMax: ms, hist, bin: null, status };
};

const rows = (r: Partial<BucketRows>): BucketRows => ({
  whole: [],
  wholeStatuses: [],
  newer: [],
  older: [],
  ...r,
});

describe('the end of a page of buckets', () => {
  it('is the query’s end on the first page (no cursor), open when the query is', () => {
    expect(pageEnd(t('2026-03-04T00:00:00Z'), undefined)).toEqual(t('2026-03-04T00:00:00Z'));
    expect(pageEnd(undefined, undefined)).toBeUndefined();
  });

  it('is the cursor (the last bucket shown) when that is earlier than the query’s end or the end is open', () => {
    expect(pageEnd(t('2026-03-04T00:00:00Z'), t('2026-03-02T05:00:00Z'))).toEqual(t('2026-03-02T05:00:00Z'));
    expect(pageEnd(undefined, t('2026-03-02T05:00:00Z'))).toEqual(t('2026-03-02T05:00:00Z'));
  });

  it('stays the query’s end for a cursor at or past it (a page never reaches beyond the query)', () => {
    const to = t('2026-03-04T00:00:00Z');
    expect(pageEnd(to, t('2026-03-04T00:00:00Z'))).toBe(to);
    expect(pageEnd(to, t('2026-03-09T00:00:00Z'))).toBe(to);
  });

  it('makes the next page end on the shown bucket’s boundary: no partial bucket repeats it', () => {
    // First page of a range ending mid-hour: the newer bucket (10:00) is partial.
    const range = { from: t('2026-03-01T07:20:00Z'), to: t('2026-03-01T10:40:00Z') };
    const first = bucketPlan(range, 'hour');
    expect(iso(first.newer?.start)).toBe('2026-03-01T10:00:00.000Z');
    // The cursor of a bucket is its start, on a boundary: the next page has no newer partial bucket.
    const next = bucketPlan({ from: range.from, to: pageEnd(range.to, t('2026-03-01T09:00:00Z')) }, 'hour');
    expect(next.newer).toBeUndefined();
    expect([iso(next.whole?.from), iso(next.whole?.to)]).toEqual([
      '2026-03-01T08:00:00.000Z',
      '2026-03-01T09:00:00.000Z',
    ]);
    expect(iso(next.older?.start)).toBe('2026-03-01T07:00:00.000Z');
  });

  it('leaves nothing to read once the cursor reaches the query’s start', () => {
    const from = t('2026-03-01T07:00:00Z');
    expect(bucketPlan({ from, to: pageEnd(undefined, from) }, 'day')).toEqual({});
  });
});

describe('counting the buckets of a page', () => {
  it('has no bucket for no rows, and none for a planned partial bucket without calls', () => {
    expect(countBuckets({}, rows({}))).toEqual([]);
    const edges = {
      newer: { start: t('2026-03-04T00:00:00Z') },
      older: { start: t('2026-03-01T00:00:00Z') },
    };
    expect(countBuckets(edges, rows({}))).toEqual([]);
    expect(countBuckets(edges, rows({ older: [grouped(0, 5)] }))).toEqual([]);
  });

  it('orders the newer partial bucket, the whole ones newest first, then the older partial bucket', () => {
    const edges = {
      newer: { start: t('2026-03-04T00:00:00Z') },
      older: { start: t('2026-03-01T00:00:00Z') },
    };
    const buckets = countBuckets(
      edges,
      rows({
        // Rows of a `union all` arrive in no order.
        whole: [
          { start: t('2026-03-02T00:00:00Z'), ...rollup(2, 20) },
          { start: t('2026-03-03T00:00:00Z'), ...rollup(3, 30) },
        ],
        newer: [grouped(1, 5)],
        older: [grouped(4, 7)],
      }),
    );
    expect(buckets.map((b) => [iso(b.start), b.total])).toEqual([
      ['2026-03-04T00:00:00.000Z', 1],
      ['2026-03-03T00:00:00.000Z', 3],
      ['2026-03-02T00:00:00.000Z', 2],
      ['2026-03-01T00:00:00.000Z', 4],
    ]);
  });

  it('dates a partial bucket by the start of its grain, whatever its rows', () => {
    const plan = bucketPlan({ from: t('2026-03-01T10:30:00Z'), to: t('2026-03-01T10:45:00Z') }, 'day');
    const [bucket] = countBuckets(plan, rows({ older: [grouped(2, 3)] }));
    expect(iso(bucket?.start)).toBe('2026-03-01T00:00:00.000Z');
  });

  it('adds up a partial bucket from hour rollups and grouped calls: totals, statuses, mean and p95', () => {
    const [b] = countBuckets(
      { older: { start: t('2026-03-01T00:00:00Z') } },
      rows({ older: [rollup(10, 3, 200), grouped(9, 3, 200), grouped(1, 1000, 500)] }),
    );
    expect(b).toEqual({
      start: t('2026-03-01T00:00:00Z'),
      total: 20,
      byStatus: { '200': 19, '500': 1 },
      // (19 × 3 + 1000) / 20 = 52.85 → 53.
      latencyMsAvg: 53,
      // 95% of 20 is 19 calls, all at 3 ms: an exact bin.
      latencyMsP95: 3,
    });
  });

  it('rounds the mean latency half up', () => {
    const [b] = countBuckets(
      { newer: { start: t('2026-03-01T00:00:00Z') } },
      rows({ newer: [grouped(1, 2), grouped(1, 3)] }),
    );
    expect(b?.latencyMsAvg).toBe(3);
  });

  it('caps the p95 by the slowest call counted', () => {
    const [b] = countBuckets(
      { newer: { start: t('2026-03-01T00:00:00Z') } },
      rows({ newer: [grouped(1, 1000)] }),
    );
    // 1000 ms falls in the bin [954, 1145): the estimate would be 1144, the slowest call is 1000.
    expect(b?.latencyMsP95).toBe(1000);
  });

  it('counts a whole bucket’s statuses from its status rows, or from its own row when the filter fixes one', () => {
    const day = t('2026-03-02T00:00:00Z');
    const [unfixed] = countBuckets(
      {},
      rows({
        whole: [{ start: day, ...rollup(5, 10) }],
        // Status rows of a bucket not on the page (older than its newest `limit`) are ignored.
        wholeStatuses: [
          { start: new Date(day), byStatus: { '200': 4, '404': 1 } },
          { start: t('2026-03-01T00:00:00Z'), byStatus: { '200': 9 } },
        ],
      }),
    );
    expect(unfixed?.byStatus).toEqual({ '200': 4, '404': 1 });
    expect(unfixed?.total).toBe(5);

    const [fixed] = countBuckets({}, rows({ whole: [{ start: day, ...rollup(5, 10, 404) }] }));
    expect(fixed?.byStatus).toEqual({ '404': 5 });
  });

  it('counts no status for rows that count none', () => {
    const [b] = countBuckets(
      { older: { start: t('2026-03-01T00:00:00Z') } },
      rows({ older: [grouped(3, 5, null)] }),
    );
    expect(b?.total).toBe(3);
    expect(b?.byStatus).toEqual({});
  });
});
