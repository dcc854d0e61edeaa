import { z } from 'zod';
import { csv, int, isLoopbackUrl, type EnvVars } from '../platform/config.js';

const jwtAlgorithm = z.enum([
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
]);

/** How bearer tokens (JWTs from the organisation's identity provider) are verified. */
export const jwtSettings = z
  .object({
    algorithms: csv.pipe(
      z
        .array(jwtAlgorithm)
        .min(1)
        .refine(
          (algs) => algs.every((a) => a.startsWith('HS')) || !algs.some((a) => a.startsWith('HS')),
          'mixing HS* with asymmetric algorithms invites key confusion; pick one family',
        ),
    ),
    issuer: z.string(),
    audience: z.string(),
    secret: z.string(),
    public_key: z.string(),
    jwks_url: z
      .string()
      .refine(
        (url) => url === '' || (/^https:\/\//.test(url) && URL.canParse(url)) || isLoopbackUrl(url),
        'expected empty or an https:// URL (plain http:// only on loopback)',
      ),
    jwks_refresh_s: int(10, 86400),
    jwks_min_refresh_s: int(1, 3600),
    clock_tolerance_s: int(0, 300),
    max_age_s: int(0, 31_536_000),
    account_claim: z.string().min(1),
    roles_claim: z.string().min(1),
    key_admin_role: z.string().min(1),
  })
  .superRefine((jwt, ctx) => {
    const hs = jwt.algorithms.some((a) => a.startsWith('HS'));
    const asym = jwt.algorithms.some((a) => !a.startsWith('HS'));
    if (hs && jwt.secret && jwt.secret.length < 32)
      ctx.addIssue({ code: 'custom', path: ['secret'], message: 'an HS secret needs 32+ characters' });
    if (asym && jwt.public_key && jwt.jwks_url)
      ctx.addIssue({
        code: 'custom',
        path: ['public_key'],
        message: 'set either public_key or jwks_url, not both',
      });
  });

/** The HTTP layer's part of the `auth` section: agent keys and bearer tokens. */
export const httpAuthSettings = z.object({
  agent_keys: csv.refine((keys) => keys.every((k) => k.length >= 16), 'each agent key needs 16+ characters'),
  jwt: jwtSettings,
});

export type JwtSettings = z.infer<typeof jwtSettings>;

export const HTTP_ENV_VARS: EnvVars = {
  AGENT_KEYS: 'auth.agent_keys',
  JWT_ALGORITHMS: 'auth.jwt.algorithms',
  JWT_ISSUER: 'auth.jwt.issuer',
  JWT_AUDIENCE: 'auth.jwt.audience',
  JWT_SECRET: 'auth.jwt.secret',
  JWT_PUBLIC_KEY: 'auth.jwt.public_key',
  JWT_JWKS_URL: 'auth.jwt.jwks_url',
  JWT_JWKS_REFRESH_S: 'auth.jwt.jwks_refresh_s',
  JWT_JWKS_MIN_REFRESH_S: 'auth.jwt.jwks_min_refresh_s',
  JWT_MAX_AGE_S: 'auth.jwt.max_age_s',
  JWT_CLOCK_TOLERANCE_S: 'auth.jwt.clock_tolerance_s',
  JWT_ACCOUNT_CLAIM: 'auth.jwt.account_claim',
  JWT_ROLES_CLAIM: 'auth.jwt.roles_claim',
  JWT_KEY_ADMIN_ROLE: 'auth.jwt.key_admin_role',
};
