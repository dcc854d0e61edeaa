import type { Context, Next } from 'koa';
import { ConnectionException } from '@mikro-orm/core';
import { AppError, type ErrorCode } from '../../platform/errors.js';
import type { Logger } from '../../platform/logger.js';
import { writeProblem } from '../problem.js';
import { requestLogFields } from './request-id.js';

const HTTP_STATUS_CODES = new Map<number, ErrorCode>([
  [400, 'invalid_request'],
  [404, 'not_found'],
  [405, 'method_not_allowed'],
  [413, 'payload_too_large'],
  [415, 'unsupported_media_type'],
  [501, 'method_not_allowed'],
]);

/** Redis or PostgreSQL unreachable: the caller gets 503 dependency_unavailable, not 500. */
export function isDependencyFailure(err: unknown): boolean {
  if (err instanceof ConnectionException) return true;
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (!e || typeof e !== 'object') return false;
  if (e.name === 'MaxRetriesPerRequestError') return true;
  if (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', '57P01', '57P03'].includes(e.code ?? '')
  )
    return true;
  if (
    /Connection is closed|Redis connection is not ready|Stream isn't writeable|enableOfflineQueue|Connection terminated|timeout exceeded when trying to connect/i.test(
      e.message ?? '',
    )
  )
    return true;
  return e.cause ? isDependencyFailure(e.cause) : false;
}

/**
 * The one place errors become responses: every error is RFC 9457 problem+json with a stable `code`;
 * nothing internal (stack, SQL, hostnames) reaches the body.
 */
export function errorMiddleware(logger: Logger) {
  return async (ctx: Context, next: Next) => {
    try {
      // Node accepts an HTTP/1.1 request without Host; RFC 9112 says it must be refused.
      if (ctx.req.httpVersion === '1.1' && ctx.req.headers.host === undefined)
        throw new AppError('invalid_request', 'HTTP/1.1 requests must carry a Host header.');
      await next();
      if (ctx.status === 404 && ctx.body === undefined)
        writeProblem(ctx, 'not_found', `No route for ${ctx.method} ${ctx.path}.`);
    } catch (err) {
      if (err instanceof AppError) {
        writeProblem(ctx, err.code, err.message, err.extra.errors);
        if (err.extra.headers) ctx.set(err.extra.headers);
        // A node provider that asked to be left alone (its Retry-After, capped): the caller is told the same.
        if (err.extra.retryAfterS !== undefined) ctx.set('Retry-After', String(err.extra.retryAfterS));
        return;
      }
      const status = (err as { status?: number }).status;
      const mapped = typeof status === 'number' ? HTTP_STATUS_CODES.get(status) : undefined;
      if (mapped === 'method_not_allowed') {
        // koa-router's 501 for a method it does not implement (PROPFIND, TRACE…) carries no Allow: list the
        // path's methods; a path with none is simply not found.
        const allow = (err as { headers?: Record<string, string> }).headers?.Allow ?? allowedMethods(ctx);
        if (!allow) writeProblem(ctx, 'not_found', describeHttpError('not_found', ctx));
        else {
          writeProblem(ctx, mapped, describeHttpError(mapped, ctx));
          ctx.set('Allow', allow);
        }
        return;
      }
      if (mapped) {
        writeProblem(ctx, mapped, describeHttpError(mapped, ctx));
        return;
      }
      if (typeof status === 'number' && status >= 400 && status < 500) {
        writeProblem(ctx, 'invalid_request', 'The request could not be processed.');
        return;
      }
      if (isDependencyFailure(err)) {
        logger.warn(
          { err: { message: (err as Error).message }, ...requestLogFields(ctx) },
          'dependency unavailable',
        );
        writeProblem(ctx, 'dependency_unavailable', 'A service dependency is unavailable; retry shortly.');
        ctx.set('Retry-After', '5');
        return;
      }
      logger.error({ err, ...requestLogFields(ctx), route: ctx.state.route }, 'unhandled error');
      writeProblem(ctx, 'internal_error', 'An internal error occurred.');
    }
  };
}

/** The methods of the routes @koa/router matched on this path (`GET, HEAD`), or '' when none did. */
function allowedMethods(ctx: Context): string {
  const matched = (ctx as Context & { matched?: { methods: string[] }[] }).matched ?? [];
  return [...new Set(matched.flatMap((layer) => layer.methods))].join(', ');
}

function describeHttpError(code: ErrorCode, ctx: Context): string {
  switch (code) {
    case 'invalid_request':
      return 'The request body is not valid JSON.';
    case 'payload_too_large':
      return 'The request body is larger than this endpoint accepts.';
    case 'unsupported_media_type':
      return 'Request bodies must be JSON sent as Content-Type: application/json (UTF-8).';
    case 'method_not_allowed':
      return `${ctx.method} is not allowed on ${ctx.path}.`;
    default:
      return `No route for ${ctx.method} ${ctx.path}.`;
  }
}
