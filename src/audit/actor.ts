import { userInfo } from 'node:os';
import type { Context } from 'koa';
import type { ActorType } from './entities.js';

/**
 * Who makes a change, and from where: what every audit record carries. Built from the request for the
 * HTTP API (`actorOf`), or named at the command line for operators (`operatorActor`).
 */
export interface Actor {
  type: ActorType;
  /** The API key id, the JWT `sub`, or the operator's name. */
  id: string;
  /** The API key's prefix, or the JWT user's organisation; null for operators. */
  label: string | null;
  requestId: string | null;
  clientAddress: string | null;
}

/** The caller of an authenticated request (API key first, then the JWT user). */
export function actorOf(ctx: Context): Actor {
  const { apiKey, user, requestId } = ctx.state;
  const where = { requestId, clientAddress: ctx.ip || null };
  if (apiKey) return { type: 'api_key', id: apiKey.keyId, label: apiKey.keyPrefix, ...where };
  if (user) return { type: 'user', id: user.subject, label: user.orgId, ...where };
  throw new Error('actorOf: the route has no api_key or jwt auth');
}

/**
 * An operator at the command line: `--actor`, else RISKWATCH_OPERATOR, else the OS user (what `whoami`
 * prints), else `operator`.
 */
export function operatorActor(name?: string, env: NodeJS.ProcessEnv = process.env): Actor {
  let os: string | undefined;
  try {
    os = userInfo().username;
  } catch {
    os = undefined; // no passwd entry for the uid (a container's arbitrary user)
  }
  const id = (name || env.RISKWATCH_OPERATOR || os || 'operator').slice(0, 300);
  return { type: 'operator', id, label: null, requestId: null, clientAddress: null };
}

/**
 * The actor as the `created_by` strings tables keep: `api_key:<id>`, `jwt:<sub>` (as API keys made over
 * HTTP always recorded), `operator:<name>`.
 */
export const actorName = (actor: Actor): string =>
  `${actor.type === 'user' ? 'jwt' : actor.type}:${actor.id}`;
