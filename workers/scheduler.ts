import cron from 'node-cron';
import { exportJobCounts } from '../src/jobs/metrics.js';
import { JOBS, SCHEDULED_JOB_NAMES, scheduledJobId } from '../src/jobs/queues.js';
import type { Runtime } from '../src/runtime.js';

/**
 * The `scheduler` role: cron ticks that only enqueue. Each periodic job's contract (src/jobs/queues.ts)
 * names the setting holding its cron expression; every scheduler replica enqueues the same id for the
 * same tick, so BullMQ runs it once. It also exports the queues' job counts (`riskwatch_jobs`): one small
 * process, not one copy per API process or worker (src/jobs/metrics.ts says why).
 */
export function startScheduler(rt: Runtime): void {
  const { config, logger, queues } = rt;
  exportJobCounts(rt.metrics.registry, queues);
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
  // Partitions are made at start too, not only at the next tick: a scheduler down for longer than
  // `partitions.days_ahead` days has left rows in the default partitions (every replica may enqueue it:
  // the job is idempotent and serialised per table).
  void queues
    .enqueue(
      'partitions-maintain',
      { scheduled_at: new Date().toISOString() },
      `partitions-maintain-start-${Date.now()}`,
    )
    .catch((err: Error) =>
      logger.warn({ job: 'partitions-maintain', err: { message: err.message } }, 'enqueue failed'),
    );
  logger.info({ schedules: Object.fromEntries(schedules) }, 'scheduler started');
  rt.shutdown.add('scheduler', async () => {
    for (const task of tasks) await task.stop();
  });
}
