import { hostname } from 'node:os';
import { Worker } from 'bullmq';
import { startHeartbeat } from '../src/jobs/heartbeat.js';
import { startRedisLossWatch } from '../src/jobs/redis-loss.js';
import { JOB_NAMES, queueAt, type JobName } from '../src/jobs/queues.js';
import { createBullConnection, createRedis } from '../src/platform/redis.js';
import type { Runtime } from '../src/runtime.js';
import { WatchMetrics } from '../src/watchlists/metrics.js';
import { WebhookMetrics } from '../src/webhooks/metrics.js';
import { usageStreamKey } from '../src/usage/recorder.js';
import { UsageDrain } from '../src/usage/drain.js';
import { auditPrune } from './audit.worker.js';
import { impactRefresh } from './impact-refresh.worker.js';
import { checkHandlers, jobProcessor, type JobHandlers } from './job-handler.js';
import { partitionsMaintain } from './partitions.worker.js';
import { screeningChunk, screeningStart, screeningsPrune } from './screenings.worker.js';
import { usagePrune } from './usage-prune.worker.js';
import { watchlistChunk, watchlistsDue, watchlistTick } from './watchlists.worker.js';
import { eventsPrune, webhookDrain, webhooksSweep } from './webhooks.worker.js';

/** How often a worker writes the impact counts it gathered (alerts raised). */
const IMPACT_FLUSH_MS = 2000;

/** One handler per job name (the type says so; checkHandlers says so again at start-up). */
function handlers(rt: Runtime): JobHandlers {
  const scanner = rt.watchlistScanner;
  const deliverer = rt.webhookDeliverer;
  return {
    'webhooks-sweep': webhooksSweep(deliverer),
    'webhook-drain': webhookDrain(deliverer),
    'events-prune': eventsPrune(rt.events),
    'impact-refresh': impactRefresh(rt),
    'usage-prune': usagePrune(rt),
    'watchlists-due': watchlistsDue(scanner),
    'watchlist-tick': watchlistTick(scanner),
    'watchlist-chunk': watchlistChunk(scanner),
    'audit-prune': auditPrune(rt),
    'screenings-prune': screeningsPrune(rt),
    'partitions-maintain': partitionsMaintain(rt),
    'screening-start': screeningStart(rt),
    'screening-chunk': screeningChunk(rt),
  };
}

/**
 * Per queue: jobs a worker process runs at once, and for the watchlist scans and webhook drains a short
 * lock, so the job of a worker that died (kill -9, a lost node) is run again within 15 s instead of
 * BullMQ's 30 + 30 s. A
 * running job's lock is renewed every half lock, so this bounds nothing but the recovery.
 */
const workerOptionsOf = (rt: Runtime, name: JobName) =>
  name === 'screening-chunk'
    ? { concurrency: rt.config.screenings.chunk_concurrency, lockDuration: 30_000, stalledInterval: 10_000 }
    : name === 'watchlist-chunk' || name === 'watchlist-tick'
      ? {
          concurrency: name === 'watchlist-chunk' ? rt.config.watchlists.scan_concurrency : 2,
          lockDuration: 10_000,
          stalledInterval: 5_000,
        }
      : name === 'webhook-drain'
        ? {
            concurrency: rt.config.webhooks.delivery_concurrency,
            lockDuration: 30_000,
            stalledInterval: 10_000,
          }
        : { concurrency: 2 };

/** The `worker` role: one BullMQ Worker per queue, the usage drain, and a liveness heartbeat. */
export function startWorkers(rt: Runtime): void {
  const { config, logger } = rt;
  const deliverer = rt.webhookDeliverer;
  const scanner = rt.watchlistScanner;
  // An upgrade from plaintext secrets: sealed by the first worker that starts with a key (in the background).
  void rt.webhookSecretStore.sealPlaintextAtStart(logger);
  deliverer.useMetrics(new WebhookMetrics(rt.metrics.registry, () => deliverer.backlog()));
  scanner.useMetrics(new WatchMetrics(rt.metrics.registry, () => scanner.overview()));
  const table = handlers(rt);
  checkHandlers(table);
  const processorOf = <N extends JobName>(name: N) => jobProcessor(name, table[name]);

  const connection = createBullConnection(config.redis);
  const workers = JOB_NAMES.map((name) => {
    const at = queueAt(connection, config.redis.key_prefix, name);
    const worker = new Worker(at.name, processorOf(name), {
      connection,
      prefix: at.prefix,
      ...workerOptionsOf(rt, name),
    });
    worker.on('failed', (job, err) =>
      logger.warn({ job: name, job_id: job?.id, err: { message: err.message } }, 'job failed'),
    );
    worker.on('error', (err) => logger.warn({ job: name, err: { message: err.message } }, 'worker error'));
    return worker;
  });

  const drainRedis = createRedis(config.redis, { maxRetriesPerRequest: null, enableOfflineQueue: true });
  drainRedis.on('error', () => undefined);
  const drain = new UsageDrain(drainRedis, rt.orm, usageStreamKey(config.redis.key_prefix), logger);
  drain.start();
  rt.impact.startFlushing(IMPACT_FLUSH_MS);
  // The deep scans read the accounts' deny/allow lists: keep this process's copy current.
  void rt.listsCache.start();
  const stopHeartbeat = startHeartbeat(rt.redis, config.redis.key_prefix, `${hostname()}-${process.pid}`);
  // Redis emptied (flushed, restarted without its data): the jobs it held are enqueued again from PostgreSQL.
  const stopLossWatch = startRedisLossWatch({
    redis: rt.redis,
    prefix: config.redis.key_prefix,
    owner: `${hostname()}-${process.pid}`,
    logger,
    registry: rt.metrics.registry,
    recover: async () => ({
      screening_accounts: await rt.screeningRunner.reconcile(),
      rescans: await rt.watchlists.rescans.requeueUnfinished(),
    }),
  });
  logger.info({ queues: JOB_NAMES }, 'workers started');

  rt.shutdown.add('workers', async () => {
    await stopHeartbeat();
    // worker.close() waits for running jobs without a limit of its own: bound it.
    const closing = Promise.all([...workers.map((w) => w.close()), drain.stop(), stopLossWatch()]);
    await Promise.race([closing, new Promise((r) => setTimeout(r, config.server.shutdown_timeout_ms / 2))]);
    rt.listsCache.stop();
    await rt.impact.stopFlushing().catch(() => undefined);
    await Promise.allSettled([connection.quit(), drainRedis.quit()]);
  });
}
