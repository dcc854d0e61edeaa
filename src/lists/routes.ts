import { actorOf } from '../audit/actor.js';
import { defineRoute } from '../http/route.js';
import { apiKeyOf } from '../http/state.js';
import { presentListEntry, presentListEntryPage } from './present.js';
import {
  entryParamsSchema,
  listEntriesQuerySchema,
  listEntryPageSchema,
  listEntrySchema,
  listParamsSchema,
  newListEntrySchema,
} from './schemas.js';
import type { ListsService } from './service.js';

const LIST_404 = 'Not found: a list other than `deny` or `allow`';

/** The key's account's deny and allow lists (API key + entitlement), every call scoped to that account. */
export function listRoutes(lists: ListsService) {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/lists/{list}/entries',
      operationId: 'listListEntries',
      summary: 'List the entries of the account’s deny or allow list',
      description:
        'Newest first, paginated with `limit` and the opaque `next_cursor`. A deny-listed target gets the ' +
        'critical finding `org_denylisted`; on an allow-listed target the other findings are `suppressed` ' +
        '(sanctions never are).',
      tag: 'Developer API',
      auth: 'api_key',
      params: listParamsSchema,
      query: listEntriesQuerySchema,
      responses: {
        200: { description: 'One page of entries', schema: listEntryPageSchema },
        404: { description: LIST_404 },
      },
      handler: async (ctx, { params, query }) => ({
        body: presentListEntryPage(await lists.listEntries(apiKeyOf(ctx).accountId, params.list, query)),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/lists/{list}/entries',
      operationId: 'addListEntry',
      summary: 'Add a target to the account’s deny or allow list',
      description:
        'The target is checked against the chain’s address rules (EVM: 0x + 40 hex, mixed case must pass ' +
        'EIP-55; Solana: base58 of 32 bytes). With `chain` (or `network`) the entry applies to that chain; ' +
        'without, to every chain, and the address format decides the check. Stored normalised, returned in ' +
        'EIP-55 form for EVM.',
      tag: 'Developer API',
      auth: 'api_key',
      params: listParamsSchema,
      body: newListEntrySchema,
      responses: {
        201: { description: 'Added', schema: listEntrySchema },
        400: {
          description:
            '`invalid_request` (`errors[]` per field), `invalid_address` or `unsupported_chain` (the ' +
            'detail lists the known networks)',
        },
        404: { description: LIST_404 },
        409: {
          description:
            '`conflict`: the target is already on this list for this chain. `limit_exceeded`: the ' +
            'account’s deny and allow lists together already hold the most entries an account may have ' +
            '(100,000 unless the operator set `lists.max_entries_per_account`)',
        },
      },
      handler: async (ctx, { params, body }) => {
        const entry = await lists.addEntry(apiKeyOf(ctx).accountId, params.list, body, actorOf(ctx));
        return { status: 201 as const, body: presentListEntry(entry) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/api/v1/lists/{list}/entries/{id}',
      operationId: 'removeListEntry',
      summary: 'Remove an entry from the account’s deny or allow list',
      description: 'Answers with the removed entry. Another account’s entry id is not found.',
      tag: 'Developer API',
      auth: 'api_key',
      params: entryParamsSchema,
      responses: {
        200: { description: 'The removed entry', schema: listEntrySchema },
        404: { description: 'Not found: no such entry on this list of the account, or no such list' },
      },
      handler: async (ctx, { params }) => ({
        body: presentListEntry(
          await lists.removeEntry(apiKeyOf(ctx).accountId, params.list, params.id, actorOf(ctx)),
        ),
      }),
    }),
  ];
}
