import type { Context, Next } from 'koa';
import { newId } from '../../platform/ids.js';

const VALID_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echoes a well-formed incoming X-Request-Id, else mints one; every response carries it. */
export async function requestIdMiddleware(ctx: Context, next: Next) {
  const incoming = ctx.get('x-request-id');
  const id = VALID_ID.test(incoming) ? incoming : newId('req');
  ctx.state.requestId = id;
  ctx.state.startedAt = performance.now();
  ctx.set('X-Request-Id', id);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Cache-Control', 'no-store');
  await next();
}
