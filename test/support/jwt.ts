import { generateKeyPairSync } from 'node:crypto';
import jwt, { type SignOptions } from 'jsonwebtoken';

export const JWT_ISSUER = 'https://idp.test.example';
export const JWT_AUDIENCE = 'riskwatch-test';
export const KEY_ADMIN_ROLE = 'riskwatch:key-admin';

/** An RSA key pair for a test identity provider: sign tokens the service must accept (or refuse). */
export function testIdentityProvider() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const sign = (claims: Record<string, unknown>, options: SignOptions = {}) =>
    jwt.sign(claims, privatePem, {
      algorithm: 'RS256',
      issuer: JWT_ISSUER,
      audience: JWT_AUDIENCE,
      expiresIn: '5m',
      ...options,
    });
  return {
    publicPem,
    privatePem,
    sign,
    env: {
      JWT_ALGORITHMS: 'RS256',
      JWT_ISSUER,
      JWT_AUDIENCE,
      JWT_PUBLIC_KEY: publicPem,
    },
  };
}
