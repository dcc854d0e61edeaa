import cron from 'node-cron';
import { JOBS, SCHEDULED_JOB_NAMES, scheduledJobId } from '../src/jobs/queues.js';
import type { Runtime } from '../src/runtime.js';

/**
 * The `scheduler` role: cron ticks that only enqueue. Each periodic job's contract (src/jobs/queues.ts)
 * names the setting holding its cron expression; every scheduler replica enqueues the same id for the
 * same tick, so BullMQ runs it once.
 */
export function startScheduler(rt: Runtime): void {
  const { config, logger, queues } = rt;
  const schedules = SCHEDULED_JOB_NAMES.map((name) => [name, config.scheduler[JOBS[name].cron]] as const);
  const tasks = schedules.map(([name, expression]) =>
    cron.schedule(
      expression,
      async (ctx) => {
        try {
          await queues.enqueue(
            name,
            { scheduled_at: ctx.date.toISOString() },
            scheduledJobId(name, ctx.date),
          );
        } catch (err) {
          logger.warn({ job: name, err: { message: (err as Error).message } }, 'enqueue failed');
        }
      },
      { name, noOverlap: true },
    ),
  );
  logger.info({ schedules: Object.fromEntries(schedules) }, 'scheduler started');
  rt.shutdown.add('scheduler', async () => {
    for (const task of tasks) await task.stop();
  });
}
