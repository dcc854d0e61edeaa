import { describe, expect, it } from 'vitest';
import {
  addHist,
  bucketPlan,
  decompose,
  emptyHist,
  HIST_BINS,
  HIST_LOWER_BOUNDS,
  histBin,
  histP95,
  type Segment,
} from '../../src/usage/rollups.js';

const t = (iso: string) => new Date(iso);
const iso = (d?: Date) => d?.toISOString();
const show = (segments: Segment[]) => segments.map((s) => [s.source, iso(s.from), iso(s.to)]);

/** percentile_disc(0.95): the smallest value with at least 95% of the values at or below it. */
function exactP95(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil((sorted.length * 95) / 100) - 1]!;
}

function histOf(values: number[]) {
  const hist = emptyHist();
  for (const v of values) hist[histBin(v)]!++;
  return hist;
}

describe('latency histogram', () => {
  it('has exact bins below 10 ms, then bins at most 20% wide, and an overflow bin from 60 s', () => {
    expect(HIST_BINS).toBe(59);
    expect(HIST_LOWER_BOUNDS.slice(0, 11)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for (let i = 1; i < HIST_BINS; i++)
      expect(HIST_LOWER_BOUNDS[i]!).toBeGreaterThan(HIST_LOWER_BOUNDS[i - 1]!);
    for (let i = 10; i < HIST_BINS - 1; i++)
      expect((HIST_LOWER_BOUNDS[i + 1]! - 1) / HIST_LOWER_BOUNDS[i]!).toBeLessThanOrEqual(1.2);
    expect(HIST_LOWER_BOUNDS.at(-1)).toBe(60_000);
  });

  it('puts each latency in the last bin whose lower bound is at or below it', () => {
    expect(histBin(0)).toBe(0);
    expect(histBin(9)).toBe(9);
    expect(histBin(10)).toBe(10);
    expect(histBin(11)).toBe(10);
    expect(histBin(12)).toBe(11);
    expect(histBin(59_999)).toBe(HIST_BINS - 2);
    expect(histBin(60_000)).toBe(HIST_BINS - 1);
    expect(histBin(10_000_000)).toBe(HIST_BINS - 1);
    for (let ms = 0; ms < 70_000; ms += 7) {
      const b = histBin(ms);
      expect(HIST_LOWER_BOUNDS[b]!).toBeLessThanOrEqual(ms);
      if (b + 1 < HIST_BINS) expect(HIST_LOWER_BOUNDS[b + 1]!).toBeGreaterThan(ms);
    }
  });

  it('adds histograms bin by bin', () => {
    const a = histOf([1, 1, 50]);
    addHist(a, histOf([1, 70_000]));
    expect(a).toEqual(histOf([1, 1, 1, 50, 70_000]));
  });

  it('estimates p95 at or above the exact value, within 20%, exact below 10 ms and at the maximum', () => {
    expect(histP95(emptyHist(), 0)).toBe(0);
    expect(histP95(histOf([7]), 7)).toBe(7);
    expect(histP95(histOf([1, 2, 3, 4, 5, 6, 7, 8, 9, 9]), 9)).toBe(9);
    // The p95 is the maximum: capped by it, so exact.
    expect(histP95(histOf([10, 20, 30, 40]), 40)).toBe(40);
    expect(histP95(histOf([5, 90_000]), 90_000)).toBe(90_000);
    // 20 values: rank ceil(19) = 19 → the 19th smallest.
    const twenty = Array.from({ length: 20 }, (_, i) => (i + 1) * 100);
    expect(exactP95(twenty)).toBe(1900);
    const est = histP95(histOf(twenty), 2000);
    expect(est).toBeGreaterThanOrEqual(1900);
    expect(est).toBeLessThanOrEqual(1900 * 1.2);

    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let run = 0; run < 200; run++) {
      const n = 1 + Math.floor(random() * 500);
      const values = Array.from({ length: n }, () =>
        Math.round(Math.exp(Math.log(35) + 2 * (random() - 0.5) * 3)),
      );
      const exact = exactP95(values);
      const p95 = histP95(histOf(values), Math.max(...values));
      expect(p95).toBeGreaterThanOrEqual(exact);
      expect(p95).toBeLessThanOrEqual(exact < 10 ? exact : Math.ceil(exact * 1.2));
    }
  });
});

describe('range decomposition', () => {
  it('reads an unbounded range from day rollups alone', () => {
    expect(show(decompose({}))).toEqual([['day', undefined, undefined]]);
    expect(show(decompose({ to: t('2026-03-05T00:00:00Z') }))).toEqual([
      ['day', undefined, '2026-03-05T00:00:00.000Z'],
    ]);
  });

  it('never sends PostgreSQL a bound past year 9999, however late in 9999-12-31 the range starts', () => {
    const last = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
    const within = (d?: Date) => d === undefined || d.getTime() <= last;
    for (const from of ['9999-12-31T12:00:00Z', '9999-12-31T23:30:00Z', '9999-12-31T23:59:59.999Z']) {
      const span = { from: t(from) };
      expect(decompose(span).every((seg) => within(seg.from) && within(seg.to))).toBe(true);
      for (const grain of ['hour', 'day'] as const) {
        const plan = bucketPlan(span, grain);
        const segments = [plan.older, plan.newer].flatMap((edge) => edge?.segments ?? []);
        expect(segments.length > 0 || plan.whole !== undefined).toBe(true);
        expect(segments.every((seg) => within(seg.from) && within(seg.to))).toBe(true);
        expect(within(plan.whole?.from) && within(plan.whole?.to)).toBe(true);
      }
    }
    expect(show(decompose({ from: t('9999-12-31T23:30:00Z') }))).toEqual([
      ['raw', '9999-12-31T23:30:00.000Z', undefined],
    ]);
  });

  it('splits unaligned ends into raw partial hours and hour rollups around whole days', () => {
    expect(show(decompose({ from: t('2026-03-01T10:30:00Z'), to: t('2026-03-04T05:15:00Z') }))).toEqual([
      ['raw', '2026-03-01T10:30:00.000Z', '2026-03-01T11:00:00.000Z'],
      ['hour', '2026-03-01T11:00:00.000Z', '2026-03-02T00:00:00.000Z'],
      ['day', '2026-03-02T00:00:00.000Z', '2026-03-04T00:00:00.000Z'],
      ['hour', '2026-03-04T00:00:00.000Z', '2026-03-04T05:00:00.000Z'],
      ['raw', '2026-03-04T05:00:00.000Z', '2026-03-04T05:15:00.000Z'],
    ]);
    expect(show(decompose({ from: t('2026-03-01T10:30:00.001Z') }))).toEqual([
      ['raw', '2026-03-01T10:30:00.001Z', '2026-03-01T11:00:00.000Z'],
      ['hour', '2026-03-01T11:00:00.000Z', '2026-03-02T00:00:00.000Z'],
      ['day', '2026-03-02T00:00:00.000Z', undefined],
    ]);
  });

  it('uses only finer sources when no whole day (or hour) fits', () => {
    expect(show(decompose({ from: t('2026-03-01T10:30:00Z'), to: t('2026-03-02T05:15:00Z') }))).toEqual([
      ['raw', '2026-03-01T10:30:00.000Z', '2026-03-01T11:00:00.000Z'],
      ['hour', '2026-03-01T11:00:00.000Z', '2026-03-02T05:00:00.000Z'],
      ['raw', '2026-03-02T05:00:00.000Z', '2026-03-02T05:15:00.000Z'],
    ]);
    expect(show(decompose({ from: t('2026-03-01T10:30:00Z'), to: t('2026-03-01T11:15:00Z') }))).toEqual([
      ['raw', '2026-03-01T10:30:00.000Z', '2026-03-01T11:15:00.000Z'],
    ]);
    expect(show(decompose({ from: t('2026-03-01T10:00:00Z'), to: t('2026-03-01T12:00:00Z') }))).toEqual([
      ['hour', '2026-03-01T10:00:00.000Z', '2026-03-01T12:00:00.000Z'],
    ]);
    expect(decompose({ from: t('2026-03-01T10:00:00Z'), to: t('2026-03-01T10:00:00Z') })).toEqual([]);
    expect(decompose({ from: t('2026-03-02T00:00:00Z'), to: t('2026-03-01T00:00:00Z') })).toEqual([]);
  });

  it('covers the range exactly once: adjacent, disjoint segments, under two hours of raw calls', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const base = Date.parse('2026-03-01T00:00:00Z');
    for (let run = 0; run < 500; run++) {
      const a = base + Math.floor(random() * 10 * 86_400_000);
      const b = a + Math.floor(random() * (random() < 0.5 ? 7_200_000 : 5 * 86_400_000)) + 1;
      const segments = decompose({ from: new Date(a), to: new Date(b) });
      expect(segments[0]!.from!.getTime()).toBe(a);
      expect(segments.at(-1)!.to!.getTime()).toBe(b);
      for (let i = 1; i < segments.length; i++) expect(segments[i]!.from).toEqual(segments[i - 1]!.to);
      for (const s of segments) {
        expect(s.to!.getTime()).toBeGreaterThan(s.from!.getTime());
        if (s.source === 'hour') expect(s.from!.getTime() % 3_600_000).toBe(0);
        if (s.source === 'day') {
          expect(s.from!.getTime() % 86_400_000).toBe(0);
          expect(s.to!.getTime() % 86_400_000).toBe(0);
        }
      }
      // The calls read directly: at most two edges, less than two hours in all.
      const raw = segments.filter((s) => s.source === 'raw');
      expect(raw.length).toBeLessThanOrEqual(2);
      expect(raw.reduce((ms, s) => ms + s.to!.getTime() - s.from!.getTime(), 0)).toBeLessThan(7_200_000);
    }
  });
});

describe('bucket plan', () => {
  it('reads whole buckets from the grain and partial end buckets from finer sources', () => {
    const plan = bucketPlan({ from: t('2026-03-01T10:30:00Z'), to: t('2026-03-04T05:15:00Z') }, 'day');
    expect([iso(plan.whole?.from), iso(plan.whole?.to)]).toEqual([
      '2026-03-02T00:00:00.000Z',
      '2026-03-04T00:00:00.000Z',
    ]);
    expect(iso(plan.newer?.start)).toBe('2026-03-04T00:00:00.000Z');
    expect(show(plan.newer!.segments)).toEqual([
      ['hour', '2026-03-04T00:00:00.000Z', '2026-03-04T05:00:00.000Z'],
      ['raw', '2026-03-04T05:00:00.000Z', '2026-03-04T05:15:00.000Z'],
    ]);
    expect(iso(plan.older?.start)).toBe('2026-03-01T00:00:00.000Z');
    expect(show(plan.older!.segments)).toEqual([
      ['raw', '2026-03-01T10:30:00.000Z', '2026-03-01T11:00:00.000Z'],
      ['hour', '2026-03-01T11:00:00.000Z', '2026-03-02T00:00:00.000Z'],
    ]);
  });

  it('has only whole buckets for aligned or open ends', () => {
    expect(bucketPlan({}, 'hour')).toEqual({ whole: { from: undefined, to: undefined } });
    const plan = bucketPlan({ from: t('2026-03-01T10:00:00Z'), to: t('2026-03-01T12:00:00Z') }, 'hour');
    expect(plan.newer).toBeUndefined();
    expect(plan.older).toBeUndefined();
    expect(plan.whole).toEqual({ from: t('2026-03-01T10:00:00Z'), to: t('2026-03-01T12:00:00Z') });
  });

  it('makes one partial bucket when the range lies inside it, two when it straddles a boundary', () => {
    const inside = bucketPlan({ from: t('2026-03-01T10:10:00Z'), to: t('2026-03-01T10:50:00Z') }, 'hour');
    expect(inside.whole).toBeUndefined();
    expect(inside.newer).toBeUndefined();
    expect(iso(inside.older?.start)).toBe('2026-03-01T10:00:00.000Z');
    expect(show(inside.older!.segments)).toEqual([
      ['raw', '2026-03-01T10:10:00.000Z', '2026-03-01T10:50:00.000Z'],
    ]);

    const straddle = bucketPlan({ from: t('2026-03-01T10:30:00Z'), to: t('2026-03-01T11:15:00Z') }, 'hour');
    expect(straddle.whole).toBeUndefined();
    expect(iso(straddle.newer?.start)).toBe('2026-03-01T11:00:00.000Z');
    expect(iso(straddle.older?.start)).toBe('2026-03-01T10:00:00.000Z');
    expect(bucketPlan({ from: t('2026-03-01T11:00:00Z'), to: t('2026-03-01T11:00:00Z') }, 'day')).toEqual({});
  });
});
