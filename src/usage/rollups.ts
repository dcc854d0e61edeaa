/*
 * Pure pieces of the usage rollups (the table is UsageRollup in entities.ts): the latency histogram and its
 * p95, and how a time range splits into whole days, whole hours and the raw edges between, so a summary
 * or a bucket reads O(buckets) rollup rows plus at most an hour of calls at either end.
 */

/**
 * Lower bounds (ms) of the latency histogram's bins: exact bins for 0–9 ms, then bounds growing by 20%
 * (rounded) up to 60 s, and a last bin for everything from 60 s. The migration's `usage_hist_bin(int)`
 * holds the same bounds (an e2e test compares the two); changing them needs a migration that rebuilds
 * every histogram.
 */
export const HIST_LOWER_BOUNDS: readonly number[] = [
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 17, 21, 25, 30, 36, 43, 52, 62, 74, 89, 107, 128, 154, 185, 222,
  266, 319, 383, 460, 552, 662, 795, 954, 1145, 1374, 1648, 1978, 2374, 2849, 3418, 4102, 4922, 5907, 7088,
  8506, 10207, 12248, 14698, 17637, 21165, 25398, 30477, 36573, 43887, 52665, 60000,
];
export const HIST_BINS = HIST_LOWER_BOUNDS.length;

/** The bin of a latency (what `usage_hist_bin` returns): the last bin whose lower bound is ≤ ms. */
export function histBin(ms: number): number {
  let lo = 0;
  let hi = HIST_BINS - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (HIST_LOWER_BOUNDS[mid]! <= ms) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** An empty histogram. */
export const emptyHist = (): number[] => new Array<number>(HIST_BINS).fill(0);

/** Adds `b` into `into`, bin by bin. */
export function addHist(into: number[], b: readonly number[]): void {
  for (let i = 0; i < HIST_BINS; i++) into[i]! += b[i] ?? 0;
}

/**
 * The 95th percentile as `percentile_disc(0.95)` defines it (the smallest latency with at least 95% of the
 * calls at or below it), estimated from the histogram: the largest latency the bin holding it can contain,
 * capped by the largest latency seen. Exact below 10 ms and for a bucket whose p95 is its maximum; else at
 * most 20% above the exact value, never below it. 0 for no calls.
 */
export function histP95(hist: readonly number[], maxMs: number): number {
  let calls = 0;
  for (const n of hist) calls += n;
  if (calls === 0) return 0;
  const rank = Math.ceil((calls * 95) / 100);
  let seen = 0;
  for (let i = 0; i < HIST_BINS; i++) {
    seen += hist[i] ?? 0;
    if (seen >= rank) return i + 1 < HIST_BINS ? Math.min(HIST_LOWER_BOUNDS[i + 1]! - 1, maxMs) : maxMs;
  }
  return maxMs;
}

export type Grain = 'hour' | 'day';
/** Where a segment's calls are counted: the calls themselves, or the rollups of a grain. */
export type Source = 'raw' | Grain;

/** A half-open time range [from, to); an absent end is unbounded. */
export interface Span {
  from?: Date;
  to?: Date;
}

export interface Segment extends Span {
  source: Source;
}

const MS = { hour: 3_600_000, day: 86_400_000 } as const;

/** The start of the UTC hour or day holding `t`. */
export const floorTo = (grain: Grain, t: Date): Date =>
  new Date(Math.floor(t.getTime() / MS[grain]) * MS[grain]);
/** The first UTC hour or day boundary at or after `t`. */
export const ceilTo = (grain: Grain, t: Date): Date =>
  new Date(Math.ceil(t.getTime() / MS[grain]) * MS[grain]);

/** The last instant the API accepts (9999-12-31, UTC): no bound sent to PostgreSQL may pass it. */
const LAST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
/** `t` rounded up to the grain would be past LAST_MS: that end is counted from finer sources. */
const pastLast = (t: Date | undefined) => t !== undefined && t.getTime() > LAST_MS;

const finer = (source: Source): Source | undefined =>
  source === 'day' ? 'hour' : source === 'hour' ? 'raw' : undefined;

/**
 * Splits [from, to) into disjoint segments, each counted from the coarsest source that holds it whole:
 * whole UTC days from day rollups, whole hours from hour rollups, and the partial hours at either end
 * from the calls (at most one hour each). Unbounded ends stay unbounded (the rollups hold everything).
 * Ordered oldest first.
 */
export function decompose(span: Span, coarsest: Source = 'day'): Segment[] {
  const { from, to } = span;
  if (from && to && from >= to) return [];
  if (coarsest === 'raw') return [{ source: 'raw', from, to }];
  const start = from && ceilTo(coarsest, from);
  const end = to && floorTo(coarsest, to);
  // No whole unit inside (or none before year 10000): the finer sources cover it all.
  if ((start && end && start >= end) || pastLast(start)) return decompose(span, finer(coarsest));
  const segments: Segment[] = [];
  if (from && start && from < start) segments.push(...decompose({ from, to: start }, finer(coarsest)));
  segments.push({ source: coarsest, from: start, to: end });
  if (to && end && end < to) segments.push(...decompose({ from: end, to }, finer(coarsest)));
  return segments;
}

/** A bucket that the range covers only in part: counted from the finer sources of its segments. */
export interface EdgeBucket {
  start: Date;
  segments: Segment[];
}

/** How the buckets of `grain` over [from, to) are counted. */
export interface BucketPlan {
  /** Whole buckets, read from the rollups of the grain (absent when none). */
  whole?: Span;
  /** The newer partial bucket (to not on a boundary), if any. */
  newer?: EdgeBucket;
  /** The older partial bucket (from not on a boundary), if any. */
  older?: EdgeBucket;
}

/**
 * The buckets of `grain` over [from, to): whole ones from the grain's rollups, and the partial ones at
 * either end (a bucket is dated by its start even when `from` cuts into it, as `date_trunc` would) from
 * finer rollups and the calls.
 */
export function bucketPlan(span: Span, grain: Grain): BucketPlan {
  const { from, to } = span;
  if (from && to && from >= to) return {};
  const sub = finer(grain)!;
  const start = from && ceilTo(grain, from);
  const end = to && floorTo(grain, to);
  // The range lies inside one bucket (also when its end would round up past year 9999).
  if ((from && to && start! > end!) || pastLast(start))
    return { older: { start: floorTo(grain, from!), segments: decompose(span, sub) } };
  const plan: BucketPlan = {};
  if (!(start && end && start >= end)) plan.whole = { from: start, to: end };
  if (to && end && end < to) plan.newer = { start: end, segments: decompose({ from: end, to }, sub) };
  if (from && start && from < start)
    plan.older = { start: floorTo(grain, from), segments: decompose({ from, to: start }, sub) };
  return plan;
}
