import { z } from 'zod';
import { pageQuery } from '../http/route.js';
import { LIST_NAMES } from './entities.js';

/*
 * What lists look like outside the service: the requests and bodies of the organisation-list routes, the
 * list entries and sanctions matches the risk engine shows in findings' evidence, and the JSON the
 * `riskwatch lists` commands print. Routes validate and document with these objects; the types below are
 * derived from them.
 */

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
export type ListEntryBody = z.infer<typeof listEntrySchema>;

export const listEntryPageSchema = z
  .object({ data: z.array(listEntrySchema), next_cursor: z.string().nullable() })
  .meta({ id: 'ListEntryPage' });
export type ListEntryPageBody = z.infer<typeof listEntryPageSchema>;

/**
 * Any string, so that a list other than deny/allow is a 404 (a resource that does not exist) rather than
 * a 400; the document still shows the two lists.
 */
const listParam = z
  .string()
  .max(40)
  .meta({ description: 'The list: `deny` or `allow`.', override: { enum: [...LIST_NAMES] } });

export const listParamsSchema = z.object({ list: listParam });
export const entryParamsSchema = z.object({ list: listParam, id: z.string().min(1).max(40) });

export const listEntriesQuerySchema = z
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
export type ListEntriesQuery = z.output<typeof listEntriesQuerySchema>;

const optionalText = (max: number) => z.string().trim().max(max).nullable().optional();
const optionalName = (description: string) =>
  z.string().trim().min(1).max(100).nullable().optional().meta({ description });

export const newListEntrySchema = z
  .object({
    target: z.string().trim().min(1).max(200).meta({ description: 'A Solana or EVM address.' }),
    chain: optionalName('Chain name or CAIP-2 id; omitted: every chain.'),
    network: optionalName('A network of the chain (or a CAIP-2 id): only resolves the chain.'),
    label: optionalText(200),
    reason: optionalText(1000),
  })
  .strict();
export type NewListEntry = z.output<typeof newListEntrySchema>;

/** A sanctions list naming an address (finding evidence of `sanctioned_address` and the like). */
export const sanctionMatchSchema = z.object({
  source: z.string(),
  currency: z.string(),
  name: z.string(),
  uid: z.string().nullable(),
  list_as_of: z.string().meta({ description: 'YYYY-MM-DD: the publication date of the list.' }),
});
export type SanctionMatchBody = z.infer<typeof sanctionMatchSchema>;

const byCurrency = z.record(z.string(), z.int()).meta({ description: 'Addresses per currency label.' });

/** `riskwatch lists import`: what an import changed. */
export const sanctionsImportSchema = z.object({
  source: z.string(),
  list_as_of: z.string(),
  total: z.int(),
  added: z.int(),
  removed: z.int(),
  by_currency: byCurrency,
});
export type SanctionsImportBody = z.infer<typeof sanctionsImportSchema>;

/** `riskwatch lists sources`: one imported sanctions source. */
export const sanctionsSourceSchema = z.object({
  source: z.string(),
  list_as_of: z.string(),
  imported_at: z.string(),
  total: z.int(),
  by_currency: byCurrency,
});
export type SanctionsSourceBody = z.infer<typeof sanctionsSourceSchema>;
