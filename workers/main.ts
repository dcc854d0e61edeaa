import { hostname } from 'node:os';
import { Worker } from 'bullmq';
import { startHeartbeat } from '../src/jobs/heartbeat.js';
import { JOB_NAMES, type JobName } from '../src/jobs/queues.js';
import { createBullConnection, createRedis } from '../src/platform/redis.js';
import type { Runtime } from '../src/runtime.js';
import { usageStreamKey } from '../src/usage/recorder.js';
import { UsageDrain } from '../src/usage/drain.js';
import { impactRefresh } from './impact-refresh.worker.js';
import { checkHandlers, jobProcessor, type JobHandlers } from './job-handler.js';
import { usagePrune } from './usage-prune.worker.js';

/** One handler per job name (the type says so; checkHandlers says so again at start-up). */
function handlers(rt: Runtime): JobHandlers {
  return {
    'impact-refresh': impactRefresh(rt),
    'usage-prune': usagePrune(rt),
  };
}

/** The `worker` role: one BullMQ Worker per queue, the usage drain, and a liveness heartbeat. */
export function startWorkers(rt: Runtime): void {
  const { config, logger } = rt;
  const table = handlers(rt);
  checkHandlers(table);
  const processorOf = <N extends JobName>(name: N) => jobProcessor(name, table[name]);

  const connection = createBullConnection(config.redis.url);
  const workers = JOB_NAMES.map((name) => {
    const worker = new Worker(name, processorOf(name), {
      connection,
      prefix: `${config.redis.key_prefix}bull`,
      concurrency: 2,
    });
    worker.on('failed', (job, err) =>
      logger.warn({ job: name, job_id: job?.id, err: { message: err.message } }, 'job failed'),
    );
    worker.on('error', (err) => logger.warn({ job: name, err: { message: err.message } }, 'worker error'));
    return worker;
  });

  const drainRedis = createRedis(config.redis.url, { maxRetriesPerRequest: null, enableOfflineQueue: true });
  drainRedis.on('error', () => undefined);
  const drain = new UsageDrain(drainRedis, rt.orm, usageStreamKey(config.redis.key_prefix), logger);
  drain.start();
  const stopHeartbeat = startHeartbeat(rt.redis, config.redis.key_prefix, `${hostname()}-${process.pid}`);
  logger.info({ queues: JOB_NAMES }, 'workers started');

  rt.shutdown.add('workers', async () => {
    await stopHeartbeat();
    // worker.close() waits for running jobs without a limit of its own: bound it.
    const closing = Promise.all([...workers.map((w) => w.close()), drain.stop()]);
    await Promise.race([closing, new Promise((r) => setTimeout(r, config.server.shutdown_timeout_ms / 2))]);
    await Promise.allSettled([connection.quit(), drainRedis.quit()]);
  });
}
