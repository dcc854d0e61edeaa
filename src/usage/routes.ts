import { defineRoute } from '../http/route.js';
import { apiKeyOf } from '../http/state.js';
import { presentUsage } from './present.js';
import { usageQuerySchema, usageResponseSchema } from './schemas.js';
import type { UsageService } from './service.js';

export function usageRoutes(usage: UsageService) {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/usage',
      operationId: 'getUsage',
      summary: 'Developer-API call history of the key’s account',
      description:
        'Every /api/v1/* call made with any of the account’s keys, newest first. A call appears within 5 s. ' +
        '`summary` covers the whole filtered range, not just the page. With `group_by`, `data` holds buckets.',
      tag: 'Developer API',
      auth: 'api_key',
      query: usageQuerySchema,
      responses: { 200: { description: 'Usage history', schema: usageResponseSchema } },
      handler: async (ctx, { query }) => ({
        body: presentUsage(await usage.query(apiKeyOf(ctx).accountId, query)),
      }),
    }),
  ];
}
