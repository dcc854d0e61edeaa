import { addHist, emptyHist, histP95 } from './rollups.js';

/*
 * Pure pieces of the usage buckets (the hour and day buckets of `group_by`): where the next page of
 * buckets ends, and how a page's buckets are counted from the rows that hold their calls. Which rows those
 * are (whole buckets from the rollups of the grain, partial ones from finer sources) is `bucketPlan` in
 * rollups.ts.
 */

/** The calls of one hour or day. */
export interface UsageBucket {
  start: Date;
  total: number;
  byStatus: Record<string, number>;
  latencyMsAvg: number;
  /** Estimated from the bucket's latency histogram: see `histP95`. */
  latencyMsP95: number;
}

/** Some calls of one bucket, as one rollup row or one group of calls counts them. */
export interface BucketCounts {
  calls: number;
  latencyMsSum: number;
  latencyMsMax: number;
  /** Their latency histogram (a rollup row) … */
  hist: readonly number[] | null;
  /** … or the one histogram bin they all fall in (calls grouped by bin). */
  bin: number | null;
  /** Their status, when the row counts one status; null: they count towards no status. */
  status: number | null;
}

/** The rows of a page of buckets, by the bucket they count. */
export interface BucketRows {
  /** One row per whole bucket. */
  whole: (BucketCounts & { start: Date })[];
  /** A whole bucket's calls per status (when its own row counts no status), by its start. */
  wholeStatuses: { start: Date; byStatus: Record<string, number> }[];
  /** The rows of the newer partial bucket, and of the older one. */
  newer: BucketCounts[];
  older: BucketCounts[];
}

/** Calls, latency sum and max, latency histogram and calls per status of one bucket being counted. */
class BucketCount {
  calls = 0;
  latencySum = 0;
  latencyMax = 0;
  readonly hist = emptyHist();
  readonly byStatus: Record<string, number> = {};

  constructor(readonly start: Date) {}

  add(c: BucketCounts) {
    this.calls += c.calls;
    this.latencySum += c.latencyMsSum;
    this.latencyMax = Math.max(this.latencyMax, c.latencyMsMax);
    if (c.hist) addHist(this.hist, c.hist);
    else if (c.bin !== null) this.hist[c.bin]! += c.calls;
    if (c.status !== null) this.addStatus(c.status, c.calls);
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

/**
 * The end of the range whose buckets make a page: the start of the last bucket shown (`cursorAt`, the
 * next page holds the buckets of the calls before it), unless the query's own end `to` is earlier.
 */
export function pageEnd(to: Date | undefined, cursorAt: Date | undefined): Date | undefined {
  return cursorAt && (!to || cursorAt < to) ? cursorAt : to;
}

/**
 * The buckets of a page, newest first: the newer partial bucket, the whole buckets, the older partial
 * bucket (each partial one present when `edges` plans it). A bucket without calls is left out.
 */
export function countBuckets(
  edges: { newer?: { start: Date }; older?: { start: Date } },
  rows: BucketRows,
): UsageBucket[] {
  const whole = new Map<number, BucketCount>();
  for (const row of rows.whole) {
    const b = new BucketCount(row.start);
    b.add(row);
    whole.set(b.start.getTime(), b);
  }
  for (const { start, byStatus } of rows.wholeStatuses) {
    const bucket = whole.get(start.getTime());
    if (bucket) for (const [status, n] of Object.entries(byStatus)) bucket.addStatus(status, n);
  }
  const edge = (planned: { start: Date } | undefined, counts: BucketCounts[]) => {
    if (!planned) return [];
    const b = new BucketCount(planned.start);
    for (const c of counts) b.add(c);
    return [b];
  };
  const counted = [
    ...edge(edges.newer, rows.newer),
    ...[...whole.values()].sort((a, b) => b.start.getTime() - a.start.getTime()),
    ...edge(edges.older, rows.older),
  ];
  return counted.filter((b) => b.calls > 0).map((b) => b.bucket());
}
