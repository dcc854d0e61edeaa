import { actorOf } from '../audit/actor.js';
import { defineRoute } from '../http/route.js';
import { userOf } from '../http/state.js';
import { presentApiKey, presentApiKeyPage, presentCreatedKey } from './present.js';
import {
  apiKeyPageSchema,
  apiKeySchema,
  createdApiKeySchema,
  createKeyRequestSchema,
  keyIdParamsSchema,
  listKeysQuerySchema,
} from './schemas.js';
import type { AccountsService } from './service.js';

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
      body: createKeyRequestSchema,
      responses: {
        201: {
          description: 'Created; `key` is shown only in this response',
          schema: createdApiKeySchema,
        },
        409: {
          description:
            '`limit_exceeded`: the account already holds the most active (neither revoked nor expired) ' +
            'keys an account may have (100 unless the operator set `auth.max_api_keys_per_account`); ' +
            'revoking one makes room',
        },
      },
      handler: async (ctx, { body }) => {
        const created = await accounts.createKey(
          userOf(ctx).accountId,
          { name: body.name, expiresAt: body.expires_at ? new Date(body.expires_at) : null },
          actorOf(ctx),
        );
        return { status: 201 as const, body: presentCreatedKey(created) };
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
      query: listKeysQuerySchema,
      responses: { 200: { description: 'One page of keys', schema: apiKeyPageSchema } },
      handler: async (ctx, { query }) => ({
        body: presentApiKeyPage(await accounts.listKeys(userOf(ctx).accountId, query)),
      }),
    }),
    defineRoute({
      method: 'delete',
      path: '/api/account/api-keys/{id}',
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key (effective on every replica within 5 s)',
      tag: 'Account',
      auth: 'jwt_key_admin',
      params: keyIdParamsSchema,
      responses: { 200: { description: 'The revoked key', schema: apiKeySchema } },
      handler: async (ctx, { params }) => ({
        body: presentApiKey(await accounts.revokeKey(userOf(ctx).accountId, params.id, actorOf(ctx))),
      }),
    }),
  ];
}
