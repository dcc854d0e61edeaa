import type { Context } from 'koa';
import type { ApiKeyPrincipal } from '../accounts/service.js';
import type { JwtPrincipal } from './jwt.js';

/** What the middleware chain learns about a request, typed for every handler. */
declare module 'koa' {
  interface DefaultState {
    requestId: string;
    startedAt: number;
    /** The matched route's template (OpenAPI style): the usage and metrics label. */
    route?: string;
    apiKey?: ApiKeyPrincipal;
    user?: JwtPrincipal & { accountId: string };
    agent?: boolean;
  }
}

/** The API-key principal of a route whose auth is `api_key` (set by the auth middleware before handlers). */
export function apiKeyOf(ctx: Context): ApiKeyPrincipal {
  if (!ctx.state.apiKey) throw new Error('route has no api_key auth');
  return ctx.state.apiKey;
}

/** The JWT user of a route whose auth is `jwt` / `jwt_key_admin`. */
export function userOf(ctx: Context): JwtPrincipal & { accountId: string } {
  if (!ctx.state.user) throw new Error('route has no jwt auth');
  return ctx.state.user;
}
