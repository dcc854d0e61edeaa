import type { KeyObject } from 'node:crypto';
import jwt, { type Algorithm, type JwtPayload } from 'jsonwebtoken';
import { AppError } from '../platform/errors.js';
import type { Logger } from '../platform/logger.js';
import { JwksKeySet } from './jwks.js';
import type { JwtSettings } from './settings.js';

export interface JwtPrincipal {
  subject: string;
  orgId: string;
  roles: string[];
}

/** What riskwatch stores or looks up from a token is bounded: `created_by` is `jwt:` + sub in 300 characters. */
export const MAX_SUBJECT_LENGTH = 256;
/** An account's org id column is 200 characters. */
export const MAX_ACCOUNT_CLAIM_LENGTH = 200;

const invalidToken = (detail: string) =>
  new AppError('unauthorized', detail, { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });

/**
 * Verifies bearer tokens with pinned algorithms, issuer, audience, a required `exp`, an optional maximum
 * age and a clock tolerance. The key is an HS secret, a PEM public key, or the identity provider's JWKS
 * (kept in memory by JwksKeySet; key chosen by `kid`). `alg: none` is never accepted: jsonwebtoken
 * refuses it whenever a key is given and `algorithms` does not list it.
 */
export class JwtVerifier {
  /** An HS secret or a PEM key; null with a JWKS (or when nothing is configured). */
  private readonly key: string | null;
  private readonly jwks: JwksKeySet | undefined;
  private readonly options: jwt.VerifyOptions & { complete: false };

  constructor(
    private readonly cfg: JwtSettings,
    logger?: Logger,
  ) {
    this.options = {
      algorithms: cfg.algorithms satisfies Algorithm[],
      clockTolerance: cfg.clock_tolerance_s,
      complete: false,
      ...(cfg.issuer ? { issuer: cfg.issuer } : {}),
      ...(cfg.audience ? { audience: cfg.audience } : {}),
      ...(cfg.max_age_s > 0 ? { maxAge: cfg.max_age_s } : {}),
    };
    const hs = cfg.algorithms.every((a) => a.startsWith('HS'));
    if (hs) this.key = cfg.secret || null;
    else if (cfg.public_key) this.key = cfg.public_key.replace(/\\n/g, '\n');
    else {
      this.key = null;
      if (cfg.jwks_url)
        this.jwks = new JwksKeySet({
          url: cfg.jwks_url,
          refreshMs: cfg.jwks_refresh_s * 1000,
          minRefreshMs: cfg.jwks_min_refresh_s * 1000,
          logger,
        });
    }
  }

  get configured(): boolean {
    return (
      (this.key !== null || this.jwks !== undefined) && Boolean(this.cfg.issuer) && Boolean(this.cfg.audience)
    );
  }

  /** Fetches the JWKS at start and keeps it fresh (no-op without a JWKS URL). Never waits for the network. */
  start(): void {
    if (this.configured) void this.jwks?.start();
  }

  stop(): void {
    this.jwks?.stop();
  }

  async verify(authorization: string | undefined): Promise<JwtPrincipal> {
    // The auth scheme is case-insensitive (RFC 9110 §11.1): `bearer` is as good as `Bearer`.
    const match = /^Bearer ([A-Za-z0-9_\-.=]+)$/i.exec(authorization?.trim() ?? '');
    if (!match) throw invalidToken('A bearer token is required: Authorization: Bearer <JWT>.');
    if (!this.configured)
      throw invalidToken('Bearer tokens are not accepted: JWT verification is not configured.');
    const token = match[1]!;
    const key = this.key ?? (await this.jwksKey(token));
    let payload: JwtPayload;
    try {
      const decoded = jwt.verify(token, key, this.options);
      if (typeof decoded === 'string') throw new Error('not a JSON payload');
      payload = decoded;
    } catch (err) {
      throw invalidToken(describe(err as Error));
    }
    if (typeof payload.exp !== 'number')
      throw invalidToken('The token has no "exp" claim: tokens that never expire are refused.');
    const claim = (name: string): unknown => (Object.hasOwn(payload, name) ? payload[name] : undefined);
    const orgId = claim(this.cfg.account_claim);
    if (typeof orgId !== 'string' || orgId.length === 0 || orgId.length > MAX_ACCOUNT_CLAIM_LENGTH)
      throw invalidToken(
        `The token has no "${this.cfg.account_claim}" claim naming an account (1–${MAX_ACCOUNT_CLAIM_LENGTH} characters).`,
      );
    if (typeof payload.sub !== 'string' || payload.sub.length === 0)
      throw invalidToken('The token has no "sub" claim.');
    if (payload.sub.length > MAX_SUBJECT_LENGTH)
      throw invalidToken(`The token's "sub" claim is longer than ${MAX_SUBJECT_LENGTH} characters.`);
    const rawRoles = claim(this.cfg.roles_claim);
    const roles = Array.isArray(rawRoles)
      ? rawRoles.filter((r): r is string => typeof r === 'string')
      : typeof rawRoles === 'string'
        ? rawRoles.split(' ').filter(Boolean)
        : [];
    return { subject: payload.sub, orgId, roles };
  }

  /** The JWKS key the token's header names; an unknown `kid` is refused here, before any signature work. */
  private async jwksKey(token: string): Promise<KeyObject> {
    const decoded = jwt.decode(token, { complete: true });
    if (!decoded) throw invalidToken('The token is not valid.');
    const kid = typeof decoded.header.kid === 'string' ? decoded.header.kid : undefined;
    const key = await this.jwks!.key(kid);
    if (!key)
      throw invalidToken(
        kid === undefined
          ? 'The token names no signing key (kid), and the identity provider publishes several.'
          : "The token's signing key (kid) is not one the identity provider publishes.",
      );
    return key;
  }
}

function describe(err: Error): string {
  if (err.message === 'maxAge exceeded')
    return 'The token was issued longer ago than the maximum token age (auth.jwt.max_age_s).';
  if (err.message === 'iat required when maxAge is specified')
    return 'The token has no "iat" claim, which a maximum token age needs.';
  switch (err.name) {
    case 'TokenExpiredError':
      return 'The token has expired.';
    case 'NotBeforeError':
      return 'The token is not valid yet.';
    default:
      return /audience|issuer|algorithm|signature/i.test(err.message)
        ? `The token was refused: ${err.message.replace(/^jwt /, '').split('.')[0]}.`
        : 'The token is not valid.';
  }
}
