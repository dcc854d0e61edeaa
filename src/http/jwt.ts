import jwt, { type Algorithm, type GetPublicKeyOrSecret, type JwtPayload } from 'jsonwebtoken';
import { JwksClient } from 'jwks-rsa';
import type { Config } from '../platform/config.js';
import { AppError } from '../platform/errors.js';

export interface JwtPrincipal {
  subject: string;
  orgId: string;
  roles: string[];
}

const invalidToken = (detail: string) =>
  new AppError('unauthorized', detail, { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });

/**
 * Verifies bearer tokens with pinned algorithms, issuer, audience, expiry and clock tolerance. The key is
 * an HS secret, a PEM public key, or a JWKS URL (key chosen by `kid`). `alg: none` is never accepted:
 * jsonwebtoken refuses it whenever a key is given and `algorithms` does not list it.
 */
export class JwtVerifier {
  private readonly key: string | GetPublicKeyOrSecret | null;
  private readonly options: jwt.VerifyOptions & { complete: false };

  constructor(private readonly cfg: Config['auth']['jwt']) {
    this.options = {
      algorithms: cfg.algorithms satisfies Algorithm[],
      clockTolerance: cfg.clock_tolerance_s,
      complete: false,
      ...(cfg.issuer ? { issuer: cfg.issuer } : {}),
      ...(cfg.audience ? { audience: cfg.audience } : {}),
    };
    const hs = cfg.algorithms.every((a) => a.startsWith('HS'));
    if (hs) this.key = cfg.secret || null;
    else if (cfg.public_key) this.key = cfg.public_key.replace(/\\n/g, '\n');
    else if (cfg.jwks_url) {
      const client = new JwksClient({
        jwksUri: cfg.jwks_url,
        cache: true,
        cacheMaxAge: 10 * 60_000,
        rateLimit: true,
        jwksRequestsPerMinute: 10,
        timeout: 3000,
      });
      this.key = (header, callback) => {
        client
          .getSigningKey(header.kid)
          .then((k) => callback(null, k.getPublicKey()))
          .catch((err: Error) => callback(err));
      };
    } else this.key = null;
  }

  get configured(): boolean {
    return this.key !== null && Boolean(this.cfg.issuer) && Boolean(this.cfg.audience);
  }

  async verify(authorization: string | undefined): Promise<JwtPrincipal> {
    // The auth scheme is case-insensitive (RFC 9110 §11.1): `bearer` is as good as `Bearer`.
    const match = /^Bearer ([A-Za-z0-9_\-.=]+)$/i.exec(authorization?.trim() ?? '');
    if (!match) throw invalidToken('A bearer token is required: Authorization: Bearer <JWT>.');
    if (!this.configured || this.key === null)
      throw invalidToken('Bearer tokens are not accepted: JWT verification is not configured.');
    const key = this.key;
    const payload = await new Promise<JwtPayload>((resolve, reject) => {
      jwt.verify(match[1]!, key, this.options, (err, decoded) => {
        if (err || !decoded || typeof decoded === 'string') reject(err ?? new Error('no payload'));
        else resolve(decoded);
      });
    }).catch((err: Error) => {
      throw invalidToken(describe(err));
    });
    const orgId: unknown = payload[this.cfg.account_claim];
    if (typeof orgId !== 'string' || orgId.length === 0)
      throw invalidToken(`The token has no "${this.cfg.account_claim}" claim naming an account.`);
    if (typeof payload.sub !== 'string' || payload.sub.length === 0)
      throw invalidToken('The token has no "sub" claim.');
    const rawRoles: unknown = payload[this.cfg.roles_claim];
    const roles = Array.isArray(rawRoles)
      ? rawRoles.filter((r): r is string => typeof r === 'string')
      : typeof rawRoles === 'string'
        ? rawRoles.split(' ').filter(Boolean)
        : [];
    return { subject: payload.sub, orgId, roles };
  }
}

function describe(err: Error): string {
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
