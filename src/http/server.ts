import {
  createServer,
  STATUS_CODES,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { accountRoutes } from '../accounts/routes.js';
import { HealthService } from '../health/service.js';
import { healthRoutes } from '../health/routes.js';
import { impactRoutes } from '../impact/routes.js';
import { listRoutes } from '../lists/routes.js';
import { riskRoutes } from '../risk/routes.js';
import { newId } from '../platform/ids.js';
import { RELEASE_ID, VERSION, type Runtime } from '../runtime.js';
import { UsageRecorder, usageStreamKey } from '../usage/recorder.js';
import { usageRoutes } from '../usage/routes.js';
import { createApp } from './app.js';
import { JwtVerifier } from './jwt.js';

/**
 * A shutting-down API keeps accepting until no connection has arrived for SHUTDOWN_QUIET_MS (the accept
 * backlog is drained and those requests are read), at most SHUTDOWN_GRACE_MAX_MS: closing the listener
 * earlier resets connections the kernel already accepted, with their requests unanswered.
 */
const SHUTDOWN_QUIET_MS = 200;
const SHUTDOWN_GRACE_MAX_MS = 2000;
/** How often an API process writes the impact counts it gathered (assessments, scans, preflights). */
const IMPACT_FLUSH_MS = 2000;

/** The `api` role: serves every endpoint; enqueues work, never does it inline. */
export async function startApi(rt: Runtime): Promise<Server> {
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
    ...riskRoutes(rt.risk),
    ...listRoutes(rt.lists),
    ...accountRoutes(rt.accounts),
  ];
  const jwt = new JwtVerifier(config.auth.jwt, logger);
  jwt.start(); // not awaited: the JWKS is fetched in the background (a JWT call meanwhile waits for it)
  shutdown.add('jwks', () => jwt.stop());
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

  // requireHostHeader off: a missing Host is refused by the app as problem+json (see createApp).
  const server = createServer({ requireHostHeader: false }, app.callback());
  server.listen(config.server.port, config.server.host);
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 30_000;
  // Malformed HTTP never reaches Koa; answer it as problem+json too (with a request id, like every response).
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || err.code === 'ECONNRESET') return socket.destroy();
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const requestId = newId('req');
    const body = JSON.stringify({
      type: 'https://riskwatch.dev/errors/invalid_request',
      title: 'Invalid request',
      status,
      code: 'invalid_request',
      detail: 'The HTTP request could not be parsed.',
      request_id: requestId,
    });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\nX-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  // An `Expect` other than 100-continue: Node would answer a bare 417; the expectation is ignored instead
  // (RFC 9110 makes the 417 optional) and the request is served like any other.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) =>
    server.emit('request', req, res),
  );
  await new Promise<void>((resolve) => server.once('listening', resolve));
  logger.info({ port: config.server.port }, 'api listening');

  let lastConnectionAt = 0;
  server.on('connection', () => {
    lastConnectionAt = Date.now();
  });
  // While shutting down, every response closes its connection: keep-alive clients move on.
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    if (shutdown.shuttingDown && !res.headersSent) res.setHeader('Connection', 'close');
  });
  shutdown.add('http', async () => {
    rt.impact.stopReloading();
    // close() also destroys every connection not yet inside a request: let requests on their way arrive.
    const graceUntil = Date.now() + SHUTDOWN_GRACE_MAX_MS;
    while (Date.now() < graceUntil && Date.now() - lastConnectionAt < SHUTDOWN_QUIET_MS)
      await new Promise((r) => setTimeout(r, 50));
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Connections whose in-flight response ends after close() would otherwise idle until keepAliveTimeout.
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      server.once('close', () => clearInterval(sweep));
    });
  });
  shutdown.add('usage-flush', () => usage.flush(5000));
  shutdown.add('impact-counters', () => rt.impact.stopFlushing());
  shutdown.add('lists-cache', () => rt.listsCache.stop());
  return server;
}
