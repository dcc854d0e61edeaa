import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { demoJwt, renderExamples, standardExamples, type ExampleCall } from '../../src/accounts/bootstrap.js';
import { loadConfig } from '../../src/config.js';
import { JwtVerifier } from '../../src/http/jwt.js';

const SECRET = 'a'.repeat(64);
const hsEnv = {
  JWT_ALGORITHMS: 'HS256',
  JWT_SECRET: SECRET,
  JWT_ISSUER: 'riskwatch-local',
  JWT_AUDIENCE: 'local',
};

describe('riskwatch bootstrap: the banner', () => {
  it('renders each call as a comment with its answer and a curl line a shell runs as printed', () => {
    const call: ExampleCall = {
      say: "a body with a ' quote",
      method: 'POST',
      path: '/api/v1/scan/token',
      auth: 'api_key',
      body: { mint: "it's", network: 'demo' },
      expect: { status: 200, field: 'risk_level', equals: 'critical' },
    };
    const [comment, curl] = renderExamples([call], 'http://localhost:8080', { apiKey: 'rwk_x' });
    expect(comment).toBe(`# a body with a ' quote → 200, risk_level "critical"`);
    expect(curl).toMatch(
      /^curl -s -X POST 'http:\/\/localhost:8080\/api\/v1\/scan\/token' -H 'X-API-Key: rwk_x' /,
    );
    // The shell hands curl the body unchanged: echo stands in for curl.
    const echoed = execFileSync('bash', ['-c', curl!.replace(/^curl -s .* -d /, 'printf %s ')], {
      encoding: 'utf8',
    });
    expect(JSON.parse(echoed)).toEqual(call.body);
  });

  it('leaves out the calls whose credential it does not have', () => {
    const lines = renderExamples(standardExamples(false), 'http://h', {});
    expect(lines.filter((l) => l.startsWith('curl'))).toEqual([
      "curl -s 'http://h/api/public/impact'",
      "curl -s 'http://h/docs'",
    ]);
  });
});

describe('riskwatch bootstrap --demo-jwt', () => {
  it('signs a short-lived key-admin token that the API accepts', async () => {
    const cfg = loadConfig(hsEnv).auth.jwt;
    const { token, expiresInS } = demoJwt(cfg, 'demo');
    expect(expiresInS).toBe(3600);
    const principal = await new JwtVerifier(cfg).verify(`Bearer ${token}`);
    expect(principal).toEqual({ subject: 'demo-user', orgId: 'demo', roles: [cfg.key_admin_role] });
  });

  it('lives no longer than JWT_MAX_AGE_S', () => {
    expect(demoJwt(loadConfig({ ...hsEnv, JWT_MAX_AGE_S: '600' }).auth.jwt, 'demo').expiresInS).toBe(600);
  });

  it('refuses without a shared secret, issuer and audience (an identity provider is configured)', () => {
    expect(() => demoJwt(loadConfig({ JWT_ISSUER: 'i', JWT_AUDIENCE: 'a' }).auth.jwt, 'demo')).toThrow(
      /local mode only/,
    );
    expect(() => demoJwt(loadConfig({ ...hsEnv, JWT_ISSUER: '' }).auth.jwt, 'demo')).toThrow(/JWT_ISSUER/);
  });
});
