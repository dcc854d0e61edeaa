import type { Server } from 'node:http';
import { accountRoutes } from './accounts/routes.js';
import { auditRoutes } from './audit/routes.js';
import { eventRoutes } from './events/routes.js';
import { feedbackRoutes } from './feedback/routes.js';
import { healthRoutes } from './health/routes.js';
import { HealthService } from './health/service.js';
import { createApp } from './http/app.js';
import { JwtVerifier } from './http/jwt.js';
import { serve } from './http/server.js';
import { impactRoutes } from './impact/routes.js';
import { listRoutes } from './lists/routes.js';
import { VerdictMetrics } from './risk/metrics.js';
import { riskRoutes } from './risk/routes.js';
import { screeningRoutes } from './screenings/routes.js';
import { RELEASE_ID, VERSION, type Runtime } from './runtime.js';
import { UsageRecorder, usageStreamKey } from './usage/recorder.js';
import { usageRoutes } from './usage/routes.js';
import { watchlistRoutes } from './watchlists/routes.js';
import { webhookRoutes } from './webhooks/routes.js';

/** How often an API process writes the impact counts it gathered (assessments, scans, preflights). */
const IMPACT_FLUSH_MS = 2000;

/**
 * The `api` role, the counterpart of workers/main.ts: which features' routes are served, over the services
 * of the runtime, by the HTTP toolkit of src/http. It serves every endpoint; work is enqueued, never done
 * inline. `sharedPort`: one of several API processes of src/cluster.ts.
 */
export async function startApi(rt: Runtime, { sharedPort = false } = {}): Promise<Server> {
  const { config, logger, shutdown } = rt;
  const usage = new UsageRecorder(rt.redis, usageStreamKey(config.redis.key_prefix), logger);
  const health = new HealthService({
    orm: rt.orm,
    redis: rt.redis,
    queues: rt.queues,
    providers: rt.providers,
    usageStreamKey: usageStreamKey(config.redis.key_prefix),
    version: VERSION,
    releaseId: RELEASE_ID,
  });
  const routes = [
    ...healthRoutes(health, () => shutdown.shuttingDown),
    ...impactRoutes(rt.impact),
    ...usageRoutes(rt.usage),
    ...riskRoutes(rt.risk, rt.impact, VerdictMetrics.for(rt.metrics.registry)),
    ...listRoutes(rt.lists),
    ...feedbackRoutes(rt.feedback, rt.metrics.registry),
    ...watchlistRoutes(rt.watchlists),
    ...webhookRoutes(rt.webhooks.endpoints, rt.webhooks.deliveries),
    ...screeningRoutes(rt.screenings, rt.orm),
    ...eventRoutes(rt.events),
    ...accountRoutes(rt.accounts),
    ...auditRoutes(rt.audit),
  ];
  const jwt = new JwtVerifier(config.auth.jwt, logger);
  jwt.start(); // not awaited: the JWKS is fetched in the background (a JWT call meanwhile waits for it)
  const app = createApp({
    logger,
    metrics: rt.metrics,
    auth: {
      accounts: rt.accounts,
      jwt,
      agentKeys: config.auth.agent_keys,
      keyAdminRole: config.auth.jwt.key_admin_role,
    },
    redis: rt.redis,
    redisKeyPrefix: config.redis.key_prefix,
    usage,
    bodyLimitKb: config.server.body_limit_kb,
    trustProxy: config.server.trust_proxy,
    version: VERSION,
    routes,
  });
  await rt.impact.startReloading(config.impact.reload_ms);
  rt.impact.startFlushing(IMPACT_FLUSH_MS);
  void rt.listsCache.start(); // not awaited: the API starts (and answers 503) while Redis is down

  const http = await serve(app, {
    host: config.server.host,
    port: config.server.port,
    shuttingDown: () => shutdown.shuttingDown,
    sharedPort,
  });
  logger.info({ port: config.server.port }, 'api listening');
  shutdown.add('http', async () => {
    rt.impact.stopReloading();
    await http.close();
  });
  shutdown.add('usage-flush', () => usage.flush(5000));
  shutdown.add('impact-counters', () => rt.impact.stopFlushing());
  shutdown.add('lists-cache', () => rt.listsCache.stop());
  shutdown.add('jwks', () => jwt.stop());
  return http.server;
}
