import { z } from 'zod';
import { defineRoute, pageQuery } from '../http/route.js';
import { apiKeyOf } from '../http/state.js';
import { LIST_NAMES } from './entities.js';
import type { ListsService } from './service.js';

export const listEntrySchema = z
  .object({
    id: z.string(),
    list: z.enum(LIST_NAMES),
    target: z.string().meta({ description: 'The address; EVM addresses in EIP-55 form.' }),
    chain: z.string().nullable().meta({ description: 'The chain the entry applies to; null: every chain.' }),
    label: z.string().nullable(),
    reason: z.string().nullable(),
    created_at: z.string(),
    created_by: z.string().meta({ description: 'Who added it, e.g. `api_key:key_…`.' }),
  })
  .meta({ id: 'ListEntry' });

/**
 * Any string, so that a list other than deny/allow is a 404 (a resource that does not exist) rather than
 * a 400; the document still shows the two lists.
 */
const listParam = z
  .string()
  .max(40)
  .meta({ description: 'The list: `deny` or `allow`.', override: { enum: [...LIST_NAMES] } });

const listParams = z.object({ list: listParam });
const entryParams = z.object({ list: listParam, id: z.string().min(1).max(40) });

const entriesQuery = z
  .object({
    target: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .meta({ description: 'Only the entries for this address (any case for EVM).' }),
    ...pageQuery,
  })
  .strict();

const optionalText = (max: number) => z.string().trim().max(max).nullable().optional();

const newEntryBody = z
  .object({
    target: z.string().trim().min(1).max(200).meta({ description: 'A Solana or EVM address.' }),
    chain: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .nullable()
      .optional()
      .meta({ description: 'Chain name or CAIP-2 id; omitted: every chain.' }),
    network: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .nullable()
      .optional()
      .meta({ description: 'A network of the chain (or a CAIP-2 id): only resolves the chain.' }),
    label: optionalText(200),
    reason: optionalText(1000),
  })
  .strict();

const entryPage = z
  .object({ data: z.array(listEntrySchema), next_cursor: z.string().nullable() })
  .meta({ id: 'ListEntryPage' });

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
      params: listParams,
      query: entriesQuery,
      responses: {
        200: { description: 'One page of entries', schema: entryPage },
        404: { description: LIST_404 },
      },
      handler: async (ctx, { params, query }) => ({
        body: await lists.listEntries(apiKeyOf(ctx).accountId, params.list, query),
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
      params: listParams,
      body: newEntryBody,
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
        const key = apiKeyOf(ctx);
        const entry = await lists.addEntry(key.accountId, params.list, body, `api_key:${key.keyId}`);
        return { status: 201 as const, body: entry };
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
      params: entryParams,
      responses: {
        200: { description: 'The removed entry', schema: listEntrySchema },
        404: { description: 'Not found: no such entry on this list of the account, or no such list' },
      },
      handler: async (ctx, { params }) => ({
        body: await lists.removeEntry(apiKeyOf(ctx).accountId, params.list, params.id),
      }),
    }),
  ];
}
