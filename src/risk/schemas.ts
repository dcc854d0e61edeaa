import { z } from 'zod';
import { CATALOG, SEVERITIES, type FindingCode } from './findings.js';
import { RISK_LEVELS } from './scoring.js';
import { TARGET_TYPES } from './types.js';

/*
 * The risk feature's HTTP shapes, defined once: the routes validate requests and write the OpenAPI
 * document with these schemas, the presenters build the bodies typed by them, and tests read the same
 * types. Nothing else spells a risk request or response (the shield preflight's are in preflight-schemas.ts).
 */

export const address = (what: string) =>
  z
    .string()
    .trim()
    .min(1)
    .max(200)
    .meta({
      description: `${what}: Solana base58 (32 bytes) or EVM \`0x\` + 40 hex (mixed case must pass EIP-55).`,
    });
export const chainField = z.string().trim().min(1).max(100).meta({
  description: 'Chain name (`solana`, `ethereum`, `base`, …) or CAIP-2 id (`eip155:1`).',
  example: 'solana',
});
export const networkField = z.string().trim().min(1).max(100).meta({
  description:
    'Network name or alias (`mainnet`, `mainnet-beta`, `devnet`, `sepolia`) or CAIP-2 id. Default `mainnet`.',
});

/** Scoring (docs/risk.md#scoring), in the words of the OpenAPI descriptions. */
export const SCORING =
  'Each unsuppressed finding weighs by severity (critical 0.90, high 0.50, medium 0.25, low 0.10, info 0); ' +
  '`risk_score = round(100 × (1 − Π(1 − wᵢ)))`. `risk_level` is the highest unsuppressed severity (`low` when ' +
  'none is above low), raised to `high` at a score ≥ 70 and to `medium` at ≥ 40.';

export const evidenceSchema = z
  .object({
    method: z.string().meta({
      description:
        'The RPC method the value was read with (`getMultipleAccounts`, `eth_getCode`, …), or the list ' +
        '(`sanctions_list`, `org_deny_list`, `org_allow_list`) for list findings.',
    }),
    slot: z.int().optional().meta({ description: 'Solana slot the value was read at.' }),
    block: z.int().optional().meta({ description: 'EVM block the value was read at.' }),
    value: z.unknown().meta({ description: 'The raw value.' }),
  })
  .meta({ id: 'Evidence' });

export const findingSchema = z
  .object({
    code: z.enum(Object.keys(CATALOG) as [FindingCode, ...FindingCode[]]).meta({
      description:
        'Stable finding code (the findings catalog, docs/risk.md; codes are added, never renamed).',
    }),
    severity: z.enum(SEVERITIES),
    title: z.string(),
    detail: z.string().meta({ description: 'What was seen and why it matters, in words.' }),
    evidence: evidenceSchema,
    suppressed: z.boolean().meta({
      description: 'True when known-good context (a well-known mint, your allow list) outweighs the finding.',
    }),
    suppressed_reason: z.string().optional(),
  })
  .meta({ id: 'Finding' });

const dataAsOf = z
  .object({ slot: z.int().optional(), block: z.int().optional() })
  .meta({ id: 'DataAsOf', description: 'The chain position the verdict reflects.' });

// ---- POST /api/web3/risk-v2 ------------------------------------------------------------------------------

export const riskV2Body = z
  .object({
    target: address('The wallet, contract, program or mint'),
    chain: chainField,
    network: networkField.optional(),
    target_type: z
      .string()
      .trim()
      .min(1)
      .max(40)
      .meta({
        description:
          '`wallet` (every chain), `contract` (EVM), `program` (Solana), `token` (Solana: as scan/token). ' +
          'Another value → `400 unsupported_target_type`.',
        override: { enum: [...TARGET_TYPES] },
      }),
  })
  .strict();

export const assessmentSchema = z
  .object({
    assessment_id: z.string(),
    target: z.string().meta({ description: 'EIP-55 form for EVM.' }),
    chain: z.string(),
    network: z.string(),
    target_type: z.enum(TARGET_TYPES),
    risk_score: z.int().min(0).max(100),
    risk_level: z.enum(RISK_LEVELS),
    complete: z
      .boolean()
      .meta({ description: 'False when a check did not finish (see `check_incomplete`).' }),
    findings: z.array(findingSchema),
    facts: z.record(z.string(), z.unknown()).meta({
      description:
        'Observed values; `null` means unknown (never false). `kind` is what the target really is.',
    }),
    data_as_of: dataAsOf,
    assessed_at: z.string(),
    cached: z.boolean().meta({ description: 'The chain analysis came from the cache (TTL by level).' }),
    engine_version: z.string(),
  })
  .meta({ id: 'Assessment' });

// ---- POST /api/v1/scan/token ------------------------------------------------------------------------------

export const scanBody = z
  .object({
    mint: address('The SPL Token or Token-2022 mint').meta({
      description: 'The mint address (Solana base58).',
    }),
    network: networkField.optional(),
  })
  .strict();

export const metadataSchema = z
  .object({
    name: z.string(),
    symbol: z.string(),
    uri: z.string(),
    update_authority: z.string().nullable(),
    mutable: z.boolean(),
    source: z.enum(['metaplex', 'token-2022']),
  })
  .meta({ id: 'TokenMetadata' });

/** One of the largest token accounts. */
export const holderSchema = z.object({
  owner: z.string().nullable(),
  token_account: z.string(),
  amount_raw: z.string(),
  share: z.number().meta({ description: 'Of the total supply.' }),
  label: z.string().nullable().meta({ description: 'A known pool, locker, burn address or exchange.' }),
  label_kind: z.enum(['pool', 'locker', 'burn', 'exchange']).nullable(),
  excluded: z.boolean().meta({ description: 'Left out of the concentration shares (pools, lockers, burn).' }),
  owner_program: z.string().nullable().meta({
    description: "The program owning the owner's own account (System for a wallet); null when unknown.",
  }),
});

export const tokenSchema = z.object({
  decimals: z.int(),
  supply: z.string().meta({ description: 'Whole tokens, exact decimal string.' }),
  supply_raw: z.string(),
  mint_authority: z.string().nullable(),
  freeze_authority: z.string().nullable(),
  metadata: metadataSchema.nullable(),
  extensions: z.array(z.object({ type: z.string() }).catchall(z.unknown())).meta({
    description: 'Token-2022 extensions, snake_case; u64 values as decimal strings.',
  }),
});

/** Shares are fractions of the total supply, from the 20 largest token accounts. */
export const holdersSchema = z.object({
  top10_share: z.number().nullable().meta({
    description:
      'The 10 largest owners (accounts grouped by owner, excluded owners left out); null when supply is 0.',
  }),
  top_owner: z.object({ owner: z.string().nullable(), share: z.number(), accounts: z.int() }).nullable(),
  excluded_share: z.number().nullable(),
  largest: z.array(holderSchema),
});

export const knownTokenSchema = z.object({
  symbol: z.string(),
  name: z.string(),
  issuer: z.string(),
  category: z.string(),
  authorities: z.enum(['expected', 'changed', 'unverified', 'mismatch']),
  registry_version: z.string(),
});

export const scanSchema = z
  .object({
    scan_id: z.string(),
    mint: z.string(),
    network: z.string(),
    token_program: z.enum(['spl-token', 'token-2022']),
    risk_score: z.int().min(0).max(100),
    risk_level: z.enum(RISK_LEVELS),
    complete: z.boolean(),
    token: tokenSchema,
    holders: holdersSchema
      .nullable()
      .meta({ description: 'From the 20 largest token accounts; null when that check did not finish.' }),
    known: knownTokenSchema
      .nullable()
      .meta({ description: 'What the built-in registry of well-known mints says about this one.' }),
    findings: z.array(findingSchema),
    data_as_of: dataAsOf,
    scanned_at: z.string(),
    cached: z.boolean(),
  })
  .meta({ id: 'TokenScan' });

export type FindingBody = z.infer<typeof findingSchema>;
export type Assessment = z.infer<typeof assessmentSchema>;
export type TokenScan = z.infer<typeof scanSchema>;
export type TokenMetadataView = z.infer<typeof metadataSchema>;
export type TokenExtensionView = z.infer<typeof tokenSchema>['extensions'][number];
export type TokenView = z.infer<typeof tokenSchema>;
export type HolderView = z.infer<typeof holderSchema>;
export type HoldersView = z.infer<typeof holdersSchema>;
export type KnownTokenContext = z.infer<typeof knownTokenSchema>;
