import { z } from 'zod';
import { defineRoute, pageQuery } from '../http/route.js';
import { userOf } from '../http/state.js';
import type { AccountsService } from './service.js';

export const apiKeyViewSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string().meta({ description: 'First 8 characters of the key, for recognising it.' }),
    created_at: z.string(),
    created_by: z.string(),
    expires_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
    status: z.enum(['active', 'expired', 'revoked']),
  })
  .meta({ id: 'ApiKey' });

const createKeyBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
  })
  .strict();

const keyIdParams = z.object({ id: z.string().min(1).max(40) });

const listKeysQuery = z
  .object({
    ...pageQuery,
  })
  .strict();

const apiKeyPage = z
  .object({
    data: z.array(apiKeyViewSchema),
    next_cursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  })
  .meta({ id: 'ApiKeyPage' });

/** Self-service API keys for JWT users holding the key-admin role, always scoped to the token's account. */
export function accountRoutes(accounts: AccountsService) {
  return [
    defineRoute({
      method: 'post',
      path: '/api/account/api-keys',
      operationId: 'createApiKey',
      summary: 'Create an API key (the raw key is returned once)',
      tag: 'Account',
      auth: 'jwt_key_admin',
      body: createKeyBody,
      responses: {
        201: {
          description: 'Created; `key` is shown only in this response',
          schema: apiKeyViewSchema.extend({ key: z.string() }).meta({ id: 'CreatedApiKey' }),
        },
        409: {
          description:
            '`limit_exceeded`: the account already holds the most active (neither revoked nor expired) ' +
            'keys an account may have (100 unless the operator set `auth.max_api_keys_per_account`); ' +
            'revoking one makes room',
        },
      },
      handler: async (ctx, { body }) => {
        const user = userOf(ctx);
        const { key, view } = await accounts.createKey(user.accountId, {
          name: body.name,
          expiresAt: body.expires_at ? new Date(body.expires_at) : null,
          createdBy: `jwt:${user.subject}`,
        });
        return { status: 201 as const, body: { ...view, key } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/account/api-keys',
      operationId: 'listApiKeys',
      summary: 'List the account’s API keys',
      description:
        'Every key of the account (revoked and expired ones included), newest first, paginated with ' +
        '`limit` and the opaque `next_cursor`.',
      tag: 'Account',
      auth: 'jwt_key_admin',
      query: listKeysQuery,
      responses: { 200: { description: 'One page of keys', schema: apiKeyPage } },
      handler: async (ctx, { query }) => ({
        body: await accounts.listKeys(userOf(ctx).accountId, query),
      }),
    }),
    defineRoute({
      method: 'delete',
      path: '/api/account/api-keys/{id}',
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key (effective on every replica within 5 s)',
      tag: 'Account',
      auth: 'jwt_key_admin',
      params: keyIdParams,
      responses: { 200: { description: 'The revoked key', schema: apiKeyViewSchema } },
      handler: async (ctx, { params }) => ({
        body: await accounts.revokeKey(userOf(ctx).accountId, params.id),
      }),
    }),
  ];
}
