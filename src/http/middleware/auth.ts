import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { AppError } from '../../platform/errors.js';
import type { JwtVerifier } from '../jwt.js';
import type { AuthScheme } from '../route.js';
import type { ApiKeyPrincipal } from '../state.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Agent keys are compared as SHA-256 digests with timingSafeEqual: equal length, constant time, every key tried. */
export function agentKeyMatches(given: string, keys: readonly string[]): boolean {
  const g = digest(given);
  let ok = false;
  for (const key of keys) ok = timingSafeEqual(g, digest(key)) || ok;
  return ok;
}

/** A browser is talking: an Origin header, or Sec-Fetch-Site present and not `none` (docs/api.md#credentials). */
export function isBrowserRequest(ctx: Context): boolean {
  if (ctx.get('origin')) return true;
  const site = ctx.get('sec-fetch-site');
  return site !== '' && site !== 'none';
}

/** What authentication asks of the accounts feature (AccountsService implements it). */
export interface AccountDirectory {
  /** The principal of a raw X-API-Key, or a thrown `unauthorized` / `entitlement_required`. */
  authenticateApiKey(raw: string): Promise<ApiKeyPrincipal>;
  /** The account a JWT's account claim names, or null. */
  findAccountByOrgId(orgId: string): Promise<{ id: string } | null>;
}

export interface AuthDeps {
  accounts: AccountDirectory;
  jwt: JwtVerifier;
  agentKeys: readonly string[];
  keyAdminRole: string;
}

/**
 * Sets ctx.state.apiKey / ctx.state.user / ctx.state.agent, or throws the matching problem. A step of a
 * route's handler (src/http/app.ts), not a Koa middleware: it has no `next` to call.
 */
export function authenticator(scheme: Exclude<AuthScheme, 'none'>, deps: AuthDeps) {
  return async (ctx: Context): Promise<void> => {
    switch (scheme) {
      case 'agent': {
        const given = ctx.get('x-service-agent-key');
        if (!given || deps.agentKeys.length === 0 || !agentKeyMatches(given, deps.agentKeys))
          throw new AppError('unauthorized', 'A valid x-service-agent-key header is required.');
        ctx.state.agent = true;
        break;
      }
      case 'jwt':
      case 'jwt_key_admin': {
        const user = await deps.jwt.verify(ctx.get('authorization') || undefined);
        const account = await deps.accounts.findAccountByOrgId(user.orgId);
        if (!account) throw new AppError('forbidden', `No account is provisioned for "${user.orgId}".`);
        if (scheme === 'jwt_key_admin' && !user.roles.includes(deps.keyAdminRole))
          throw new AppError('forbidden', `Managing API keys needs the "${deps.keyAdminRole}" role.`);
        ctx.state.user = { ...user, accountId: account.id };
        break;
      }
      case 'api_key': {
        if (isBrowserRequest(ctx))
          throw new AppError(
            'browser_request_forbidden',
            'API keys are server-side credentials; call this endpoint from your backend, not a browser.',
          );
        const raw = ctx.get('x-api-key');
        if (!raw) throw new AppError('unauthorized', 'An X-API-Key header is required.');
        ctx.state.apiKey = await deps.accounts.authenticateApiKey(raw);
        break;
      }
    }
  };
}
