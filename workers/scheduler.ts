import cron from 'node-cron';
import type { JobName } from '../src/jobs/queues.js';
import type { Runtime } from '../src/runtime.js';

/**
 * The `scheduler` role: cron ticks that only enqueue. The job id is the job name plus the tick's
 * scheduled time, so every scheduler replica enqueues the same id and BullMQ runs it once.
 */
export function startScheduler(rt: Runtime): void {
  const { config, logger, queues } = rt;
  const schedules: [JobName, string][] = [
    ['impact-refresh', config.scheduler.impact_refresh_cron],
    ['usage-prune', config.scheduler.usage_prune_cron],
  ];
  const tasks = schedules.map(([name, expression]) =>
    cron.schedule(
      expression,
      async (ctx) => {
        const scheduledAt = ctx.date.toISOString();
        try {
          await queues.enqueue(
            name,
            { scheduled_at: scheduledAt },
            // BullMQ refuses custom ids containing ':' (its own key separator).
            `${name}-${Math.floor(ctx.date.getTime() / 1000)}`,
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
