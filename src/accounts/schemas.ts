import { z } from 'zod';
import { pageQuery } from '../http/route.js';
import { API_KEY_STATUSES, ENTITLEMENT_STATUSES } from './entities.js';

/*
 * What API keys, entitlements and accounts look like outside the service: the HTTP requests and bodies
 * of the self-service key routes, and the JSON the operator CLI prints. Routes validate and document
 * with these objects; the types below are derived from them.
 */

export const apiKeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string().meta({ description: 'First 8 characters of the key, for recognising it.' }),
    created_at: z.string(),
    created_by: z.string(),
    expires_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
    status: z.enum(API_KEY_STATUSES),
  })
  .meta({ id: 'ApiKey' });
export type ApiKeyBody = z.infer<typeof apiKeySchema>;

export const createdApiKeySchema = apiKeySchema.extend({ key: z.string() }).meta({ id: 'CreatedApiKey' });
export type CreatedApiKeyBody = z.infer<typeof createdApiKeySchema>;

export const apiKeyPageSchema = z
  .object({
    data: z.array(apiKeySchema),
    next_cursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  })
  .meta({ id: 'ApiKeyPage' });
export type ApiKeyPageBody = z.infer<typeof apiKeyPageSchema>;

export const createKeyRequestSchema = z
  .object({
    name: z.string().trim().min(1).max(200),
    expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
  })
  .strict();

export const keyIdParamsSchema = z.object({ id: z.string().min(1).max(40) });

export const listKeysQuerySchema = z.object({ ...pageQuery }).strict();

/** An account's Enterprise entitlement (`riskwatch entitlements …`). */
export const entitlementSchema = z.object({
  account_id: z.string(),
  plan: z.string(),
  status: z.enum(ENTITLEMENT_STATUSES),
  active: z.boolean().meta({ description: 'Active and not expired: API keys of the account work.' }),
  expires_at: z.string().nullable(),
  rate_limit_per_min: z.int(),
});
export type EntitlementBody = z.infer<typeof entitlementSchema>;

/** An account (`riskwatch accounts create`). */
export const accountSchema = z.object({
  id: z.string(),
  name: z.string(),
  org_id: z.string().meta({ description: 'The JWT account claim value that maps a token to this account.' }),
  created_at: z.string(),
});
export type AccountBody = z.infer<typeof accountSchema>;
