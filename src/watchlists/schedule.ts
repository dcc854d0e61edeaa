import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';

/*
 * Watchlist schedules are 5-field cron expressions (minute hour day-of-month month day-of-week), read in
 * UTC. Five fields cannot fire more than once a minute, which is the most often a list may be re-read
 * (docs/api.md, "Watchlists").
 *
 * A cron is evaluated only when a list is saved and when it runs: its next due time is stored
 * (`next_tick_at`, `next_deep_at`), so the minute's `watchlists-due` job is one indexed query whatever the
 * expressions. Every evaluation is bounded by a horizon (cron-parser's `endDate`), so its cost is bounded
 * whatever the expression: a year when a schedule is saved (it must run within one), 28 years after a run
 * (the calendar's cycle of leap years and weekdays: a leap-day schedule saved in the year before one runs
 * again four years later, and must not stop after its first run).
 */

const MINUTE_MS = 60_000;
/** A new schedule must run within this long of being saved. */
const SCHEDULE_HORIZON_MS = 366 * 86_400_000;
/** How far ahead a schedule's next run is looked for after it ran. */
const RUN_HORIZON_MS = 28 * 366 * 86_400_000;

/** Why `expr` is not a valid schedule, or undefined when it is. `now`: when it is being saved. */
export function scheduleProblem(expr: string, now = new Date()): string | undefined {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5)
    return fields.length === 6
      ? 'expected 5 fields (minute hour day month weekday): a seconds field would run more often than once a minute'
      : 'expected a cron expression of 5 fields (minute hour day month weekday)';
  try {
    CronExpressionParser.parse(expr, { tz: 'UTC' });
  } catch (err) {
    return `not a valid cron expression: ${(err as Error).message}`;
  }
  if (nextRunAfter(expr, now) === null)
    return 'it would not run within the next year (UTC): choose a schedule that runs at least once a year';
  return undefined;
}

/** A schedule in a request or the configuration: a valid 5-field cron expression that runs within a year. */
export const scheduleSchema = z
  .string()
  .trim()
  .max(100)
  .superRefine((expr, ctx) => {
    const problem = scheduleProblem(expr);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/**
 * The first minute after the minute of `after` at which `expr` fires, within `horizonMs`; null when it does
 * not fire in that time (or is not a valid expression: a stored one from before a rule).
 */
export function nextRunAfter(expr: string, after: Date, horizonMs = SCHEDULE_HORIZON_MS): Date | null {
  const minute = Math.floor(after.getTime() / MINUTE_MS) * MINUTE_MS;
  try {
    return CronExpressionParser.parse(expr, {
      currentDate: new Date(minute + MINUTE_MS - 1),
      endDate: new Date(minute + horizonMs),
      tz: 'UTC',
    })
      .next()
      .toDate();
  } catch {
    return null; // no run before the horizon ("Out of the time span range"), or an expression now refused
  }
}

/**
 * The next due times of the lists that ran at `after` (the minute's job), memoised per expression for one
 * pass, within RUN_HORIZON_MS.
 */
export class DueTimes {
  private readonly memo = new Map<string, Date | null>();

  constructor(private readonly after: Date) {}

  next(expr: string): Date | null {
    let at = this.memo.get(expr);
    if (at === undefined) {
      at = nextRunAfter(expr, this.after, RUN_HORIZON_MS);
      this.memo.set(expr, at);
    }
    return at;
  }
}
