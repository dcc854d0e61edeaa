import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AuditLogService } from './audit/service.js';
import { AccountsService } from './accounts/service.js';
import { ChainProviders } from './chains/providers.js';
import { EventLog } from './events/log.js';
import { chainNames } from './chains/registry.js';
import { loadConfig, type Config } from './config.js';
import { JobQueues } from './jobs/queues.js';
import { ImpactService } from './impact/service.js';
import { ListsCache, listsChannel } from './lists/cache.js';
import { ListsService } from './lists/service.js';
import { FeedbackService } from './feedback/service.js';
import { createLogger, type Logger } from './platform/logger.js';
import { Metrics } from './platform/metrics.js';
import { connectDatabase } from './database.js';
import type { Orm } from './db/orm.js';
import { PROJECT_ROOT } from './platform/paths.js';
import { createBullConnection, createRedis, type RedisClient } from './platform/redis.js';
import { Shutdown } from './platform/shutdown.js';
import { mergeKnownWalletImplementations } from './risk/known/evm.js';
import { RiskService } from './risk/service.js';
import { ScreeningRunner } from './screenings/runner.js';
import { ScreeningsService } from './screenings/service.js';
import { UsageService } from './usage/service.js';
import { WatchlistEntriesService } from './watchlists/entries.js';
import { WatchlistHistoryService } from './watchlists/history.js';
import { WatchlistsService } from './watchlists/lists.js';
import { RescansService } from './watchlists/rescans.js';
import { WatchlistRepository } from './watchlists/repository.js';
import { WatchlistScanner } from './watchlists/scan.js';
import { WebhookDeliveriesService } from './webhooks/deliveries.js';
import { WebhookDeliverer } from './webhooks/delivery.js';
import { WebhookEndpointsService } from './webhooks/endpoints.js';
import { WebhookFanOut } from './webhooks/fan-out.js';
import { WebhookHttpClient } from './webhooks/http.js';
import { WebhookRepository } from './webhooks/repository.js';
import { WebhookSecretStore } from './webhooks/secret-store.js';
import { SecretBox } from './webhooks/secrets.js';
import { WebhookUrlPolicy } from './webhooks/ssrf.js';

export const VERSION = (
  JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
export const RELEASE_ID = process.env.RISKWATCH_RELEASE_ID || 'unknown';

/**
 * The composition root: configuration, connections and the feature services, built once per process
 * and shared by whichever roles the process runs. Closing order is registered on `shutdown` by the roles
 * (HTTP and workers first), then the connections here (queues → ORM → Redis).
 */
export interface Runtime {
  config: Readonly<Config>;
  logger: Logger;
  orm: Orm;
  redis: RedisClient;
  bull: RedisClient;
  queues: JobQueues;
  shutdown: Shutdown;
  metrics: Metrics;
  providers: ChainProviders;
  accounts: AccountsService;
  /** The audit log as it is read (features append to it in their own transactions: src/audit/log.ts). */
  audit: AuditLogService;
  usage: UsageService;
  impact: ImpactService;
  lists: ListsService;
  /** The lists as the risk engine reads them (memory, dropped on every change; `start()` in the API). */
  listsCache: ListsCache;
  /** Verdict feedback (/api/v1/feedback), applied to the lists in its own transaction. */
  feedback: FeedbackService;
  risk: RiskService;
  /**
   * The event log (GET /api/v1/events) and its outbox: features append events in their own transactions;
   * webhooks subscribes here, at composition, and fans each event out to its endpoints.
   */
  events: EventLog;
  /** Watchlists as the HTTP API serves them: lists, entries, snapshots and alerts, rescans asked for. */
  watchlists: {
    lists: WatchlistsService;
    entries: WatchlistEntriesService;
    history: WatchlistHistoryService;
    /** Full re-analyses of a list asked for through the API (the workers do them). */
    rescans: RescansService;
  };
  /** Bulk screenings as the API and the CLI serve them (submission, progress, results). */
  screenings: ScreeningsService;
  /** Runs the screenings (the workers' side): starts them per account, screens their chunks. */
  screeningRunner: ScreeningRunner;
  /** Runs the watchlist scans (the workers' side of watchlists); alerts reach the event log. */
  watchlistScanner: WatchlistScanner;
  /** Webhooks as the HTTP API serves them: endpoints, and their delivery log. */
  webhooks: { endpoints: WebhookEndpointsService; deliveries: WebhookDeliveriesService };
  /** Seals and opens the webhook signing secrets (`webhooks.secrets_key`). */
  webhookSecrets: SecretBox;
  /** The stored signing secrets: sealed at a worker's start, resealed by `riskwatch secrets`. */
  webhookSecretStore: WebhookSecretStore;
  /** Sends webhook deliveries (the workers' side of webhooks; metrics attached by the worker role). */
  webhookDeliverer: WebhookDeliverer;
}

export async function createRuntime(role: string, config: Readonly<Config> = loadConfig()): Promise<Runtime> {
  const logger = createLogger(config.log.level, { role });
  const orm = await connectDatabase(config.database.url, config.database.pool_max);
  const redis = createRedis(config.redis, { enableAutoPipelining: true });
  const bull = createBullConnection(config.redis);
  const queues = new JobQueues(bull, config.redis.key_prefix);
  const shutdown = new Shutdown(logger, config.server.shutdown_timeout_ms);
  const metrics = new Metrics({ version: VERSION, releaseId: RELEASE_ID, role });
  const providers = ChainProviders.fromConfig(config.chains, {
    redis,
    redisKeyPrefix: config.redis.key_prefix,
    metrics: metrics.registry,
    logger,
  });
  const watchlistRows = new WatchlistRepository(orm);
  const impact = new ImpactService(orm, chainNames, logger, () => watchlistRows.scans.countEntries());
  // The service tells the cache of each change; the cache reads through the service.
  const lists: ListsService = new ListsService(
    orm,
    providers.networks,
    (scope) => listsCache.changed(scope),
    { maxEntriesPerAccount: config.lists.max_entries_per_account },
  );
  const webhookSecrets = SecretBox.fromSettings(config.webhooks);
  // Webhooks subscribes to the event log: a delivery per matching endpoint, in the event's transaction.
  const events = new EventLog(orm, config.webhooks.event_retention_days);
  const webhookRows = new WebhookRepository(orm);
  const fanOut = new WebhookFanOut(webhookRows.deliveries, queues, config.webhooks);
  events.subscribe(fanOut);
  // One URL policy for the endpoints the API accepts and the addresses the deliverer connects to.
  const urlPolicy = new WebhookUrlPolicy({
    allowCidrs: config.webhooks.allow_cidrs,
    allowHttp: config.webhooks.allow_http,
  });
  const webhookDeliverer = new WebhookDeliverer({
    repo: webhookRows,
    drains: fanOut,
    http: new WebhookHttpClient(urlPolicy),
    logger,
    settings: config.webhooks,
    userAgent: `riskwatch-webhooks/${VERSION}`,
    secrets: webhookSecrets,
    events,
  });
  const listsCache: ListsCache = new ListsCache(lists, {
    redis,
    channel: listsChannel(config.redis.key_prefix),
    logger,
  });
  const watchlistLists = new WatchlistsService(watchlistRows, {
    defaultSchedule: config.watchlists.default_schedule,
    defaultDeepSchedule: config.watchlists.default_deep_schedule,
    maxWatchlistsPerAccount: config.watchlists.max_per_account,
  });
  const risk = new RiskService({
    providers,
    redis,
    redisKeyPrefix: config.redis.key_prefix,
    lists: listsCache,
    logger,
    settings: config.risk,
    walletImplementations: mergeKnownWalletImplementations(
      undefined,
      config.risk.known_wallet_implementations,
    ),
    metrics: metrics.registry,
  });
  const screeningRunner = new ScreeningRunner({
    orm,
    screener: risk.screener,
    queues,
    events,
    providers,
    redis,
    redisKeyPrefix: config.redis.key_prefix,
    settings: config.screenings,
    logger,
    metrics: metrics.registry,
  });
  const runtime: Runtime = {
    config,
    logger,
    orm,
    redis,
    bull,
    queues,
    shutdown,
    metrics,
    providers,
    accounts: new AccountsService(orm, {
      keyCacheMs: config.auth.api_key_cache_ms,
      unknownKeyCacheMs: config.auth.unknown_key_cache_ms,
      defaultRateLimitPerMin: config.rate_limit.default_per_min,
      maxKeysPerAccount: config.auth.max_api_keys_per_account,
    }),
    audit: new AuditLogService(orm),
    usage: new UsageService(orm),
    impact,
    lists,
    listsCache,
    feedback: new FeedbackService(orm, lists, new UsageService(orm), providers.networks),
    risk,
    events,
    watchlists: {
      lists: watchlistLists,
      entries: new WatchlistEntriesService(watchlistRows, providers, {
        maxEntriesPerAccount: config.watchlists.max_entries_per_account,
      }),
      history: new WatchlistHistoryService(watchlistRows, providers.networks),
      rescans: new RescansService(watchlistRows, queues, config.watchlists.rescan_min_interval_s),
    },
    screenings: new ScreeningsService(orm, risk.screener, queues, screeningRunner),
    screeningRunner,
    watchlistScanner: new WatchlistScanner({
      repo: watchlistRows,
      redis,
      redisKeyPrefix: config.redis.key_prefix,
      providers,
      risk,
      queues,
      impact,
      logger,
      settings: config.watchlists,
      events,
    }),
    webhooks: {
      endpoints: new WebhookEndpointsService(webhookRows, {
        urlPolicy,
        secretOverlapS: config.webhooks.secret_overlap_s,
        secrets: webhookSecrets,
        events,
        drains: fanOut,
        // webhooks reads no watchlist table: the watchlists feature says which lists exist
        watchlistsOf: (accountId, ids) => watchlistLists.existing(accountId, ids),
      }),
      deliveries: new WebhookDeliveriesService(webhookRows, fanOut),
    },
    webhookSecrets,
    webhookSecretStore: new WebhookSecretStore(webhookRows, webhookSecrets),
    webhookDeliverer,
  };
  redis.on('error', (err: Error) => logger.warn({ err: { message: err.message } }, 'redis error'));
  bull.on('error', (err: Error) => logger.warn({ err: { message: err.message } }, 'redis (queues) error'));
  return runtime;
}

/** Connections close last, after every role's own shutdown steps. */
export function registerConnectionShutdown(rt: Runtime): void {
  rt.shutdown.add('providers', () => rt.providers.close());
  rt.shutdown.add('queues', () => rt.queues.close());
  rt.shutdown.add('orm', () => rt.orm.close());
  rt.shutdown.add('redis', async () => {
    await Promise.allSettled([rt.redis.quit(), rt.bull.quit()]);
  });
}
