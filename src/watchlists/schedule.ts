import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';

/*
 * Watchlist schedules are 5-field cron expressions (minute hour day-of-month month day-of-week), read in
 * UTC. Five fields cannot fire more than once a minute, which is the most often a list may be re-read
 * (docs/api.md, "Watchlists").
 */

/** Why `expr` is not a valid schedule, or undefined when it is. */
export function scheduleProblem(expr: string): string | undefined {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5)
    return fields.length === 6
      ? 'expected 5 fields (minute hour day month weekday): a seconds field would run more often than once a minute'
      : 'expected a cron expression of 5 fields (minute hour day month weekday)';
  try {
    CronExpressionParser.parse(expr, { tz: 'UTC' });
    return undefined;
  } catch (err) {
    return `not a valid cron expression: ${(err as Error).message}`;
  }
}

/** A schedule in a request or the configuration: a valid 5-field cron expression. */
export const scheduleSchema = z
  .string()
  .trim()
  .max(100)
  .superRefine((expr, ctx) => {
    const problem = scheduleProblem(expr);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** Whether `expr` fires at the minute that starts at `minute` (seconds and milliseconds are ignored). */
export function isDueAt(expr: string, minute: Date): boolean {
  const start = Math.floor(minute.getTime() / 60_000) * 60_000;
  const next = CronExpressionParser.parse(expr, { currentDate: new Date(start - 1), tz: 'UTC' }).next();
  return next.getTime() === start;
}
