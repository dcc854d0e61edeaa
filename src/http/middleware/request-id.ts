import type { Context } from 'koa';
import { newId } from '../../platform/ids.js';

const VALID_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Two ids per request. The server always mints its own (`serverRequestId`): log lines name the request by
 * it, so a client cannot forge or collide the id an operator correlates logs with. The response carries
 * the id the client knows (`requestId`: the X-Request-Id header, a problem's `request_id`, the usage
 * history): a well-formed incoming X-Request-Id is echoed, else it is the server's. Called first by the
 * app's edge middleware (src/http/app.ts), with the headers every response carries.
 */
export function startRequest(ctx: Context): void {
  const incoming = ctx.get('x-request-id');
  const serverId = newId('req');
  ctx.state.serverRequestId = serverId;
  if (VALID_ID.test(incoming)) ctx.state.clientRequestId = incoming;
  ctx.state.requestId = ctx.state.clientRequestId ?? serverId;
  ctx.state.startedAt = performance.now();
  ctx.set('X-Request-Id', ctx.state.requestId);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Cache-Control', 'no-store');
}

/** The fields naming the request in a log line: the server's id, and the client's beside it when one came. */
export function requestLogFields(ctx: Context): { request_id: string; client_request_id?: string } {
  const { serverRequestId, clientRequestId } = ctx.state;
  return clientRequestId === undefined
    ? { request_id: serverRequestId }
    : { request_id: serverRequestId, client_request_id: clientRequestId };
}
