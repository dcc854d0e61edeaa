import { createPublicKey, type KeyObject } from 'node:crypto';
import { parseJwks } from '../http/jwks.js';
import type { JwtSettings } from '../http/settings.js';
import { GuardedHttpClient } from '../platform/http-client.js';
import type { Finding } from './report.js';
import { maskUrl } from './secrets.js';
import { describeError, withTimeout } from './timeout.js';

/** As the service reads a key set (src/http/jwks.ts). */
const MAX_JWKS_BYTES = 1024 * 1024;

/** The key types each algorithm family verifies with. */
const KEY_TYPES: Record<string, readonly string[]> = {
  RS: ['rsa'],
  PS: ['rsa', 'rsa-pss'],
  ES: ['ec'],
};

/** Whether `key` can verify at least one of `algorithms` (asymmetric ones). */
const fits = (key: KeyObject, algorithms: readonly string[]) =>
  algorithms.some((alg) => KEY_TYPES[alg.slice(0, 2)]?.includes(key.asymmetricKeyType ?? ''));

/**
 * Which kind of bearer-token verification is configured, as the verifier decides it (src/http/jwt.ts):
 * HS* algorithms use the secret, the others a PEM public key or else the JWKS URL; and the verifier
 * accepts tokens only with an issuer AND an audience set, so a key without them leaves JWTs off.
 */
export async function checkAuth(jwt: JwtSettings, timeoutMs: number): Promise<Finding[]> {
  const hs = jwt.algorithms.every((a) => a.startsWith('HS'));
  const algs = jwt.algorithms.join(',');
  const mode = hs
    ? jwt.secret
      ? 'shared secret (JWT_SECRET)'
      : undefined
    : jwt.public_key
      ? 'PEM public key (JWT_PUBLIC_KEY)'
      : jwt.jwks_url
        ? `JWKS (${maskUrl(jwt.jwks_url)})`
        : undefined;
  const unused = hs
    ? [jwt.public_key && 'JWT_PUBLIC_KEY', jwt.jwks_url && 'JWT_JWKS_URL']
    : [jwt.secret && 'JWT_SECRET'];
  const unusedText = unused.filter(Boolean).join(' and ');
  const check = 'auth:jwt';
  const findings: Finding[] = [];

  if (!mode) {
    findings.push(
      unusedText || jwt.issuer || jwt.audience
        ? {
            check,
            status: 'warn',
            detail:
              `JWT_ALGORITHMS is ${algs} but no key for them is set${unusedText ? ` (${unusedText} is for the other family)` : ''}: ` +
              'bearer tokens are refused',
          }
        : {
            check,
            status: 'info',
            detail: 'off: no JWT key is configured, bearer tokens are refused (callers use API keys)',
          },
    );
    return findings;
  }
  const missing = [!jwt.issuer && 'JWT_ISSUER', !jwt.audience && 'JWT_AUDIENCE'].filter(Boolean);
  if (missing.length > 0)
    findings.push({
      check,
      status: 'warn',
      detail:
        `${algs} with a ${mode}, but ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} empty: ` +
        'riskwatch verifies tokens only with both set, so bearer tokens are refused',
    });
  else
    findings.push({
      check,
      status: unusedText ? 'warn' : 'ok',
      detail:
        `${algs} with a ${mode}; issuer ${jwt.issuer}; audience ${jwt.audience}` +
        (unusedText ? `; ${unusedText} is set but unused by ${algs}` : ''),
    });
  if (!hs && jwt.public_key) findings.push(publicKeyFinding(jwt.public_key, jwt.algorithms));
  else if (!hs && jwt.jwks_url) findings.push(await jwksFinding(jwt.jwks_url, jwt.algorithms, timeoutMs));
  return findings;
}

function publicKeyFinding(pem: string, algorithms: readonly string[]): Finding {
  const check = 'auth:public-key';
  let key: KeyObject;
  try {
    key = createPublicKey(pem.replace(/\\n/g, '\n'));
  } catch (err) {
    return {
      check,
      status: 'fail',
      detail: `JWT_PUBLIC_KEY is not a PEM public key (${describeError(err)})`,
    };
  }
  const what = `${key.asymmetricKeyType ?? 'unknown'} key`;
  return fits(key, algorithms)
    ? { check, status: 'ok', detail: `a ${what}, fit for ${algorithms.join(',')}` }
    : { check, status: 'fail', detail: `a ${what}, which verifies none of ${algorithms.join(',')}` };
}

/** Fetches the key set as the service does (no redirects, 1 MiB at most) and reads its signing keys. */
async function jwksFinding(url: string, algorithms: readonly string[], timeoutMs: number): Promise<Finding> {
  const check = 'auth:jwks';
  const where = maskUrl(url);
  const http = new GuardedHttpClient();
  try {
    const res = await withTimeout(
      http.request(url, {
        method: 'GET',
        headers: { accept: 'application/json' },
        timeoutMs,
        maxBytes: MAX_JWKS_BYTES,
      }),
      timeoutMs + 100,
    );
    if (res.status < 200 || res.status >= 300 || res.text === undefined)
      throw new Error(res.text === undefined ? 'answer over 1 MiB' : `HTTP ${res.status}`);
    const keys = parseJwks(res.text);
    if (keys.size === 0) throw new Error('no usable signing key in the set');
    const usable = [...keys].filter(([, key]) => fits(key, algorithms)).map(([kid]) => kid);
    if (usable.length === 0)
      return {
        check,
        status: 'fail',
        detail: `${where} holds ${keys.size} signing key(s), none fit for ${algorithms.join(',')}`,
      };
    return {
      check,
      status: 'ok',
      detail: `${where} holds ${keys.size} signing key(s); fit for ${algorithms.join(',')}: ${usable.join(', ')}`,
    };
  } catch (err) {
    return {
      check,
      status: 'fail',
      detail: `cannot read the key set at ${where}: ${describeError(err)} (bearer tokens get 503 until it can)`,
    };
  } finally {
    http.close();
  }
}
