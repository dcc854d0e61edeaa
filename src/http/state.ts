import type { Context } from 'koa';
import type { JwtPrincipal } from './jwt.js';

/** Who is calling `/api/v1/*`: the key, its account, and the account's entitlement at lookup time. */
export interface ApiKeyPrincipal {
  keyId: string;
  keyPrefix: string;
  accountId: string;
  accountName: string;
  rateLimitPerMin: number;
}

/** See DefaultState.usageDetail. */
export interface UsageDetail {
  target?: string;
  chain?: string;
  network?: string;
  targets?: number;
}

/** What the middleware chain learns about a request, typed for every handler. */
declare module 'koa' {
  interface DefaultState {
    /** The id the response carries (X-Request-Id, a problem's `request_id`, usage): the client's or the server's. */
    requestId: string;
    /** Minted for every request: the `request_id` of every log line, which no client can choose. */
    serverRequestId: string;
    /** A well-formed X-Request-Id the client sent (logged as `client_request_id`). */
    clientRequestId?: string;
    startedAt: number;
    /** The matched route's template (OpenAPI style): the usage and metrics label. */
    route?: string;
    apiKey?: ApiKeyPrincipal;
    /**
     * What the usage record of this call says beyond its route and status: the target a risk call was
     * about (POST /api/v1/feedback acts on it by request id), the targets a bulk call carried.
     */
    usageDetail?: UsageDetail;
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
