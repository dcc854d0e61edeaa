import { Migration } from '@mikro-orm/migrations';
import { CronExpressionParser } from 'cron-parser';

/** A new schedule must run within a year; the stored ones are judged the same way here (null: none). */
const HORIZON_MS = 366 * 86_400_000;

/** The first minute after `after`'s at which `expr` fires, within the horizon; null when none. */
function nextRun(expr: string, after: Date): string | null {
  const minute = Math.floor(after.getTime() / 60_000) * 60_000;
  try {
    return CronExpressionParser.parse(expr, {
      currentDate: new Date(minute + 59_999),
      endDate: new Date(minute + HORIZON_MS),
      tz: 'UTC',
    })
      .next()
      .toISOString();
  } catch {
    return null;
  }
}

/**
 * Watchlists keep their next due times (`next_tick_at`, `next_deep_at`, indexed): the minute's
 * `watchlists-due` job becomes one indexed query instead of evaluating every list's crons. The due times
 * of the lists stored before are computed here, in the application (a SQL migration cannot read cron),
 * from the time of the upgrade. A webhook delivery may end `expired`: its event was pruned before it was
 * delivered.
 */
export class Migration20261125220000 extends Migration {
  override name = 'Migration20261125220000';

  override async up(): Promise<void> {
    await this.execute(
      `alter table "watchlists" add column "next_tick_at" timestamptz null, add column "next_deep_at" timestamptz null;`,
    );
    const lists = (await this.execute('select id, schedule, deep_schedule from "watchlists"')) as {
      id: string;
      schedule: string;
      deep_schedule: string;
    }[];
    const now = new Date();
    for (let i = 0; i < lists.length; i += 1000) {
      const rows = lists.slice(i, i + 1000).map((wl) => ({
        id: wl.id,
        next_tick_at: nextRun(wl.schedule, now),
        next_deep_at: nextRun(wl.deep_schedule, now),
      }));
      await this.execute(
        `update "watchlists" w set next_tick_at = u.next_tick_at, next_deep_at = u.next_deep_at
           from jsonb_to_recordset(?::jsonb) as u(id text, next_tick_at timestamptz, next_deep_at timestamptz)
          where w.id = u.id`,
        [JSON.stringify(rows)],
      );
    }
    this.addSql(`create index "watchlists_next_tick_at_index" on "watchlists" ("next_tick_at");`);
    this.addSql(`create index "watchlists_next_deep_at_index" on "watchlists" ("next_deep_at");`);

    this.addSql(`alter table "webhook_deliveries" drop constraint "webhook_deliveries_status_check";`);
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_status_check" check ("status" in ('pending', 'succeeded', 'failed', 'expired'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webhook_deliveries" drop constraint "webhook_deliveries_status_check";`);
    this.addSql(`update "webhook_deliveries" set "status" = 'failed' where "status" = 'expired';`);
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_status_check" check ("status" in ('pending', 'succeeded', 'failed'));`,
    );
    this.addSql(`drop index "watchlists_next_deep_at_index";`);
    this.addSql(`drop index "watchlists_next_tick_at_index";`);
    this.addSql(`alter table "watchlists" drop column "next_tick_at", drop column "next_deep_at";`);
  }
}
