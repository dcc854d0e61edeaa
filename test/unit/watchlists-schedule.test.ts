import { describe, expect, it } from 'vitest';
import { DueTimes, nextRunAfter, scheduleProblem } from '../../src/watchlists/schedule.js';

/*
 * Watchlist schedules (src/watchlists/schedule.ts): a schedule must run within a year of being saved; once
 * it has run, its next run is found however far the calendar puts it, at a bounded cost.
 */

const at = (iso: string) => new Date(iso);

describe('watchlist schedules', () => {
  it('refuses a cron with no run within the next year, and accepts one that runs within it', () => {
    // The fifth Thursday of February: next in 2052.
    expect(scheduleProblem('59 23 * 2 4#5', at('2026-11-25T00:00:00Z'))).toMatch(/within the next year/);
    // A leap day: refused while the next one is more than a year away, accepted in the year before it.
    expect(scheduleProblem('0 0 29 2 *', at('2026-11-25T00:00:00Z'))).toMatch(/within the next year/);
    expect(scheduleProblem('0 0 29 2 *', at('2027-03-05T00:00:00Z'))).toBeUndefined();
    expect(scheduleProblem('*/5 * * * *')).toBeUndefined();
    expect(scheduleProblem('0 0 30 2 *')).toMatch(/not a valid cron expression/);
    expect(scheduleProblem('* * * * * *')).toMatch(/seconds field/);
  });

  it('computes the next run after the current minute, in UTC', () => {
    expect(nextRunAfter('*/5 * * * *', at('2026-11-25T10:02:30Z'))).toEqual(at('2026-11-25T10:05:00Z'));
    // A run due this very minute is not "next": the one after it is.
    expect(nextRunAfter('*/5 * * * *', at('2026-11-25T10:05:00Z'))).toEqual(at('2026-11-25T10:10:00Z'));
    expect(nextRunAfter('0 3 * * *', at('2026-11-25T03:00:10Z'))).toEqual(at('2026-11-26T03:00:00Z'));
  });

  it('after a run, finds a leap-day schedule again four years later: an accepted schedule never stops', () => {
    const due = new DueTimes(at('2028-02-29T00:00:00Z'));
    expect(due.next('0 0 29 2 *')).toEqual(at('2032-02-29T00:00:00Z'));
    expect(due.next('* * 29 2 *')).toEqual(at('2028-02-29T00:01:00Z'));
    expect(new DueTimes(at('2028-02-29T23:59:00Z')).next('* * 29 2 *')).toEqual(at('2032-02-29T00:00:00Z'));
    // Saving the same schedule right after its run is refused: its next run is not within a year.
    expect(nextRunAfter('0 0 29 2 *', at('2028-02-29T00:00:00Z'))).toBeNull();
  });
});
