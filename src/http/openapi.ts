import { z } from 'zod';
import {
  createDocument,
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponseObject,
} from 'zod-openapi';
import { PROBLEM_TYPE_BASE, PROBLEMS } from './problem.js';
import type { AuthScheme, RouteSpec } from './route.js';

const problemSchema = z
  .object({
    type: z.string().meta({ example: `${PROBLEM_TYPE_BASE}entitlement_required` }),
    title: z.string(),
    status: z.int(),
    code: z.enum(Object.keys(PROBLEMS) as [string, ...string[]]).meta({
      description: 'Stable machine-readable error code (extended, never renamed).',
    }),
    detail: z.string(),
    request_id: z.string(),
    retryable: z.boolean().optional(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details.' });

const SECURITY: Record<AuthScheme, Record<string, string[]>[] | undefined> = {
  none: [],
  agent: [{ agentKey: [] }],
  jwt: [{ bearer: [] }],
  jwt_key_admin: [{ bearer: [] }],
  api_key: [{ apiKey: [] }],
};

/** Error responses each credential scheme (and a body) can produce, beyond those a route lists itself. */
function commonErrors(spec: RouteSpec): number[] {
  const codes = [400];
  if (spec.auth !== 'none') codes.push(401);
  if (spec.auth === 'jwt_key_admin' || spec.auth === 'jwt' || spec.auth === 'api_key') codes.push(403);
  if (spec.params) codes.push(404);
  if (spec.body) codes.push(413, 415);
  if (spec.auth === 'api_key') codes.push(429);
  codes.push(503);
  return codes;
}

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid request (problem+json; `errors[]` lists each field)',
  401: 'Missing or invalid credential',
  403: 'Authenticated but not allowed: `entitlement_required`, `browser_request_forbidden` or `forbidden`',
  404: 'Not found (also for another account’s resources)',
  413: 'Body too large',
  415: 'Body is not application/json',
  429: 'Rate limited; see Retry-After and RateLimit headers',
  503: 'A dependency is unavailable; retry',
};

const DESCRIPTION = `Self-hosted, read-only blockchain risk service.

**Errors** are RFC 9457 \`application/problem+json\` with a stable \`code\` (see the Problem schema).
Every response carries \`X-Request-Id\` (a valid incoming one is echoed).

**Credentials**: \`/api/v1/*\` needs \`X-API-Key\` *and* an active Enterprise entitlement of the key's
account, and refuses browser-origin calls (an \`Origin\` header, or \`Sec-Fetch-Site\` other than \`none\`).
\`/api/account/*\` takes a bearer JWT whose account claim names the account and whose roles include the
key-admin role. \`/api/agent/health\` takes \`x-service-agent-key\`.

**Rate limits**: per API key, from the entitlement (default 600/min), in a fixed one-minute window shared by
every replica (never more than the quota in all). Responses carry \`RateLimit-Policy\` and \`RateLimit\` (IETF
httpapi draft; \`r=\` is what is left as the answering replica knows it); a 429 adds \`Retry-After\`.

**Limits**: request bodies up to 64 KiB unless stated; times are RFC 3339 UTC; big integers are decimal strings.`;

export function buildOpenApiDocument(routes: RouteSpec[], info: { version: string }) {
  const paths: ZodOpenApiPathsObject = {};
  for (const spec of routes) {
    const responses: Record<string, ZodOpenApiResponseObject> = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      // An error response a route lists without a schema is still a problem document.
      const schema = r.schema ?? (Number(status) >= 400 ? problemSchema : undefined);
      const contentType = r.contentType ?? (r.schema ? 'application/json' : 'application/problem+json');
      responses[status] = {
        description: r.description,
        ...(schema ? { content: { [contentType]: { schema } } } : {}),
      };
    }
    for (const status of commonErrors(spec)) {
      responses[String(status)] ??= {
        description: ERROR_TEXT[status] ?? 'Error',
        content: { 'application/problem+json': { schema: problemSchema } },
      };
    }
    const operation: ZodOpenApiOperationObject = {
      operationId: spec.operationId,
      summary: spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      tags: [spec.tag],
      security: SECURITY[spec.auth] ?? [],
      responses,
      ...(spec.query || spec.params
        ? {
            requestParams: {
              ...(spec.query ? { query: spec.query as z.ZodObject } : {}),
              ...(spec.params ? { path: spec.params as z.ZodObject } : {}),
            },
          }
        : {}),
      ...(spec.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: spec.body } } } }
        : {}),
    };
    paths[spec.path] = { ...paths[spec.path], [spec.method]: operation };
  }
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'riskwatch API',
      version: info.version,
      description: DESCRIPTION,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: '/', description: 'This riskwatch install' }],
    tags: [
      { name: 'Public', description: 'No credential' },
      { name: 'Operations', description: 'Health and readiness' },
      { name: 'Developer API', description: 'X-API-Key plus an active Enterprise entitlement' },
      { name: 'Risk', description: 'Bearer JWT whose account claim names the account' },
      { name: 'Account', description: 'Bearer JWT with the key-admin role' },
    ],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'Server-side only: `rwk_…`' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        agentKey: { type: 'apiKey', in: 'header', name: 'x-service-agent-key' },
      },
    },
  });
}
