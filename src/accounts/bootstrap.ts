import { readFileSync } from 'node:fs';
import jwt, { type Algorithm } from 'jsonwebtoken';
import { z } from 'zod';
import type { JwtSettings } from '../http/settings.js';

/*
 * What `riskwatch bootstrap` prints after the demo set-up: curl lines to try, each preceded by a comment
 * saying the answer it gets (test/e2e/quickstart.test.ts runs every line and holds the banner to it), and,
 * in local mode only, a short-lived demo bearer token.
 */

/** One call of the banner: what it shows, the request, and the answer it gets. */
const exampleCall = z.strictObject({
  say: z.string().min(1),
  method: z.enum(['GET', 'POST']),
  path: z.string().startsWith('/'),
  auth: z.enum(['none', 'api_key', 'jwt', 'agent']),
  body: z.record(z.string(), z.unknown()).optional(),
  expect: z.strictObject({
    status: z.int().min(100).max(599),
    /** A top-level field of the JSON answer and the value it holds. */
    field: z.string().optional(),
    equals: z.string().optional(),
  }),
});

/** `--examples FILE`: the demo chain's calls (demo/examples.ts writes it) and lines said before them. */
const examplesFile = z.strictObject({ notice: z.array(z.string()), calls: z.array(exampleCall) });

export type ExampleCall = z.infer<typeof exampleCall>;
export type ExamplesFile = z.infer<typeof examplesFile>;

export function readExamples(path: string): ExamplesFile {
  return examplesFile.parse(JSON.parse(readFileSync(path, 'utf8')));
}

/** The calls every install can try: impact, usage, agent health, the docs page. */
export function standardExamples(hasAgentKey: boolean): ExampleCall[] {
  return [
    {
      say: 'public impact counters (no credential)',
      method: 'GET',
      path: '/api/public/impact',
      auth: 'none',
      expect: { status: 200 },
    },
    {
      say: "this account's call history",
      method: 'GET',
      path: '/api/v1/usage',
      auth: 'api_key',
      expect: { status: 200 },
    },
    {
      say: 'the same, by hour',
      method: 'GET',
      path: '/api/v1/usage?group_by=hour',
      auth: 'api_key',
      expect: { status: 200 },
    },
    ...(hasAgentKey
      ? [
          {
            say: 'deep health for monitoring agents',
            method: 'GET',
            path: '/api/agent/health',
            auth: 'agent',
            expect: { status: 200 },
          } as const,
        ]
      : []),
    {
      say: 'the API reference (HTML; also /openapi.json)',
      method: 'GET',
      path: '/docs',
      auth: 'none',
      expect: { status: 200 },
    },
  ];
}

export interface Credentials {
  apiKey?: string;
  jwt?: string;
  agentKey?: string;
}

const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * Each call as a comment (`# what it shows → 200, risk_level "critical"`) and a curl line. Calls whose
 * credential is missing are left out.
 */
export function renderExamples(calls: readonly ExampleCall[], baseUrl: string, creds: Credentials): string[] {
  const lines: string[] = [];
  for (const call of calls) {
    const header =
      call.auth === 'api_key'
        ? creds.apiKey && `X-API-Key: ${creds.apiKey}`
        : call.auth === 'jwt'
          ? creds.jwt && `Authorization: Bearer ${creds.jwt}`
          : call.auth === 'agent'
            ? creds.agentKey && `x-service-agent-key: ${creds.agentKey}`
            : '';
    if (header === undefined) continue;
    const { status, field, equals } = call.expect;
    const answer = field && equals !== undefined ? `${status}, ${field} "${equals}"` : String(status);
    const parts = ['curl -s'];
    if (call.method !== 'GET') parts.push(`-X ${call.method}`);
    parts.push(quote(`${baseUrl}${call.path}`));
    if (header) parts.push(`-H ${quote(header)}`);
    if (call.body)
      parts.push(`-H 'Content-Type: application/json'`, `-d ${quote(JSON.stringify(call.body))}`);
    lines.push(`# ${call.say} → ${answer}`, parts.join(' '));
  }
  return lines;
}

/** How long the demo bearer token lives. */
export const DEMO_JWT_TTL_S = 3600;

/**
 * A demo bearer token for `orgId` with the key-admin role, signed with the configured HS secret. Local
 * mode only (deploy/local.sh makes up the secret and asks for it); refused unless riskwatch verifies
 * tokens with a shared secret, the only case where whoever runs this command could sign tokens anyway.
 */
export function demoJwt(cfg: JwtSettings, orgId: string): { token: string; expiresInS: number } {
  const hs = cfg.algorithms.every((a) => a.startsWith('HS'));
  if (!hs || !cfg.secret || !cfg.issuer || !cfg.audience)
    throw new Error(
      '--demo-jwt needs JWT_ALGORITHMS=HS256 (or HS384/HS512), JWT_SECRET, JWT_ISSUER and JWT_AUDIENCE: local mode only',
    );
  const expiresInS = cfg.max_age_s > 0 ? Math.min(DEMO_JWT_TTL_S, cfg.max_age_s) : DEMO_JWT_TTL_S;
  const token = jwt.sign(
    { [cfg.account_claim]: orgId, [cfg.roles_claim]: [cfg.key_admin_role] },
    cfg.secret,
    {
      algorithm: cfg.algorithms[0] as Algorithm,
      subject: 'demo-user',
      expiresIn: expiresInS,
      issuer: cfg.issuer,
      audience: cfg.audience,
    },
  );
  return { token, expiresInS };
}
