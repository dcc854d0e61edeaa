import Koa, { type Context, type Next } from 'koa';
import './state.js';
import type { UsageDetail } from './state.js';
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import type { RedisClient } from '../platform/redis.js';
import { AppError } from '../platform/errors.js';
import type { Logger } from '../platform/logger.js';
import type { Metrics } from '../platform/metrics.js';
import { registerDocs } from './docs.js';
import { authenticator, type AuthDeps } from './middleware/auth.js';
import { errorMiddleware } from './middleware/errors.js';
import { rateLimiter, ReservingRateLimiter } from './middleware/rate-limit.js';
import { requestLogFields, startRequest } from './middleware/request-id.js';
import { buildOpenApiDocument } from './openapi.js';
import { koaPath, parseOrThrow, type RouteSpec } from './route.js';

/** A finished call of an API-key route, as the HTTP layer saw it. */
export interface FinishedCall {
  method: string;
  /** The route template (`/api/v1/scan/token`). */
  endpoint: string;
  status: number;
  latencyMs: number;
  accountId: string;
  apiKeyId: string;
  apiKeyPrefix: string;
  /** The id the response carried (see UsageEntry.request_id). */
  requestId: string;
  /** What the call was about, as its handler said (`ctx.state.usageDetail`): its target, the targets it carried. */
  detail?: UsageDetail;
}

/** Where finished API-key calls go (the usage feature's recorder): never a wait on the request path. */
export interface CallRecorder {
  recordCall(call: FinishedCall): void;
}

export interface AppDeps {
  logger: Logger;
  metrics: Metrics;
  auth: AuthDeps;
  redis: RedisClient;
  redisKeyPrefix: string;
  usage: CallRecorder;
  bodyLimitKb: number;
  trustProxy: boolean;
  version: string;
  routes: RouteSpec[];
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

function hasBody(ctx: Context): boolean {
  return Boolean(ctx.get('transfer-encoding')) || Number(ctx.get('content-length') || 0) > 0;
}

const parsed = () => Promise.resolve();

/**
 * Only `application/json` bodies, parsed strictly (objects/arrays) within the route's size limit. A step of
 * a route's handler: koa-body's middleware is called with a `next` that does nothing.
 */
function jsonBody(limitKb: number) {
  const parse = koaBody({
    json: true,
    jsonStrict: true,
    jsonLimit: `${limitKb}kb`,
    multipart: false,
    urlencoded: false,
    text: false,
    // Parser errors with a 4xx status (bad JSON, too large, bad charset) are answered by errorMiddleware;
    // anything else while reading a body (a gzip body that is not gzip, a connection the client broke)
    // is still the client's doing: 400, never 500.
    onError: (err) => {
      const status = (err as { status?: number }).status;
      if (typeof status === 'number' && status >= 400 && status < 500) throw err;
      throw new AppError('invalid_request', 'The request body could not be read.');
    },
  });
  return async (ctx: Context): Promise<void> => {
    if (!BODY_METHODS.has(ctx.method) || !hasBody(ctx)) return;
    if (!ctx.is('application/json'))
      throw new AppError(
        'unsupported_media_type',
        'Request bodies must be JSON sent with Content-Type: application/json.',
      );
    await parse(ctx, parsed);
  };
}

/** @koa/router's matched path for routes outside the specs (/docs assets, /openapi.json), as a template. */
const matchedRoute = (ctx: Context) =>
  (ctx as Context & { _matchedRoute?: string | RegExp })._matchedRoute?.toString().replace(/:(\w+)/g, '{$1}');

/**
 * The outermost middleware, one layer for what every request gets: its ids and common headers
 * (startRequest), errors answered as problem+json (errorMiddleware), then — once the final status is
 * known — metrics labelled by route template (`unmatched` for unknown paths, so cardinality stays bounded),
 * the access log (2xx/3xx at debug, 4xx at info, 5xx at warn) and, for API-key calls, the usage record.
 */
function edge(metrics: Metrics, logger: Logger, usage: CallRecorder) {
  const handleErrors = errorMiddleware(logger);
  const finish = (ctx: Context) => {
    const seconds = (performance.now() - ctx.state.startedAt) / 1000;
    const route = ctx.state.route ?? matchedRoute(ctx) ?? 'unmatched';
    metrics.observeHttp(ctx.method, route, ctx.status, seconds);
    const key = ctx.state.apiKey;
    if (key)
      usage.recordCall({
        method: ctx.method,
        endpoint: route,
        status: ctx.status,
        latencyMs: seconds * 1000,
        accountId: key.accountId,
        apiKeyId: key.keyId,
        apiKeyPrefix: key.keyPrefix,
        requestId: ctx.state.requestId,
        detail: ctx.state.usageDetail,
      });
    const level = ctx.status >= 500 ? 'warn' : ctx.status >= 400 ? 'info' : 'debug';
    if (logger.isLevelEnabled(level))
      logger[level](
        {
          ...requestLogFields(ctx),
          method: ctx.method,
          route: ctx.state.route ?? null,
          status: ctx.status,
          latency_ms: Math.round(seconds * 1000),
          account_id: ctx.state.apiKey?.accountId ?? ctx.state.user?.accountId ?? undefined,
        },
        'request',
      );
  };
  return async (ctx: Context, next: Next) => {
    startRequest(ctx);
    try {
      await handleErrors(ctx, next);
    } finally {
      finish(ctx);
    }
  };
}

/**
 * One Koa middleware per route, from its spec: name the route → authenticate → rate limit → read the body →
 * validate → call the handler (one service call) → present. The steps are plain calls in one async
 * function, not a chain of middlewares, so a request pays for the steps its route has and nothing else.
 */
function routeHandler(spec: RouteSpec, deps: AppDeps, rateLimit: ReturnType<typeof rateLimiter>) {
  const authenticate = spec.auth === 'none' ? undefined : authenticator(spec.auth, deps.auth);
  const limit = spec.auth === 'api_key' ? rateLimit.take : undefined;
  const cost = spec.auth === 'api_key' ? spec.rateCost : undefined;
  const readBody = spec.body ? jsonBody(spec.bodyLimitKb ?? deps.bodyLimitKb) : undefined;
  return async (ctx: Context): Promise<void> => {
    ctx.state.route = spec.path;
    if (authenticate) await authenticate(ctx);
    if (limit) await limit(ctx);
    if (readBody) await readBody(ctx);
    const input = {
      query: spec.query ? parseOrThrow(spec.query, ctx.query, 'query') : undefined,
      params: spec.params ? parseOrThrow(spec.params, ctx.params, 'path') : undefined,
      body: spec.body ? parseOrThrow(spec.body, ctx.request.body, 'body') : undefined,
    };
    if (cost && cost(input.body) > 1) await rateLimit.takeMore(ctx, cost(input.body) - 1);
    const result = await spec.handler(ctx, input);
    ctx.status = result.status ?? 200;
    if (result.headers) ctx.set(result.headers);
    // A full media type, set as is: before a text body (JSON serialised ahead), so Koa does not guess a
    // type from it; after an object, which Koa always marks as JSON.
    const text = typeof result.body === 'string';
    if (result.contentType && text) ctx.set('Content-Type', result.contentType);
    ctx.body = result.body;
    if (result.contentType && !text) ctx.set('Content-Type', result.contentType);
  };
}

/**
 * Routes whose path has no parameter, by `METHOD path`: served without the router's walk over every
 * route's pattern. Anything else (parameters, HEAD, a trailing slash, 404/405) goes on to the router.
 */
function staticRoutes(handlers: Map<string, (ctx: Context) => Promise<void>>) {
  return (ctx: Context, next: Next) => {
    const handler = handlers.get(`${ctx.method} ${ctx.path}`);
    return handler ? handler(ctx) : next();
  };
}

export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: deps.trustProxy });
  const router = new Router();
  const rateLimit = rateLimiter(new ReservingRateLimiter(deps.redis, deps.redisKeyPrefix));
  const fixed = new Map<string, (ctx: Context) => Promise<void>>();
  for (const spec of deps.routes) {
    const handler = routeHandler(spec, deps, rateLimit);
    router[spec.method](koaPath(spec.path), handler);
    if (!spec.path.includes('{')) fixed.set(`${spec.method.toUpperCase()} ${spec.path}`, handler);
  }
  registerDocs(router, buildOpenApiDocument(deps.routes, { version: deps.version }));

  app.use(edge(deps.metrics, deps.logger, deps.usage));
  app.use(staticRoutes(fixed));
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true }));
  // Errors are all answered by errorMiddleware; Koa's default handler would print them to stderr.
  app.silent = true;
  return app;
}
