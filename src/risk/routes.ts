import { z } from 'zod';
import { defineRoute } from '../http/route.js';
import { apiKeyOf, userOf } from '../http/state.js';
import { CATALOG, SEVERITIES } from './findings.js';
import { FAIL_MODES, INTENTS } from './policy.js';
import type { RiskService } from './service.js';
import { TARGET_TYPES } from './types.js';

const LEVELS = ['low', 'medium', 'high', 'critical'] as const;

const address = (what: string) =>
  z
    .string()
    .trim()
    .min(1)
    .max(200)
    .meta({
      description: `${what}: Solana base58 (32 bytes) or EVM \`0x\` + 40 hex (mixed case must pass EIP-55).`,
    });
const chainField = z.string().trim().min(1).max(100).meta({
  description: 'Chain name (`solana`, `ethereum`, `base`, …) or CAIP-2 id (`eip155:1`).',
  example: 'solana',
});
const networkField = z.string().trim().min(1).max(100).meta({
  description:
    'Network name or alias (`mainnet`, `mainnet-beta`, `devnet`, `sepolia`) or CAIP-2 id. Default `mainnet`.',
});

const SCORING =
  'Each unsuppressed finding weighs by severity (critical 0.90, high 0.50, medium 0.25, low 0.10, info 0); ' +
  '`risk_score = round(100 × (1 − Π(1 − wᵢ)))`. `risk_level` is the highest unsuppressed severity (`low` when ' +
  'none is above low), raised to `high` at a score ≥ 70 and to `medium` at ≥ 40.';

const evidenceSchema = z
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

const findingSchema = z
  .object({
    code: z.enum(Object.keys(CATALOG) as [string, ...string[]]).meta({
      description: 'Stable finding code (RISK.md catalog; extended, never renamed).',
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

const riskV2Body = z
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

const assessmentSchema = z
  .object({
    assessment_id: z.string(),
    target: z.string().meta({ description: 'EIP-55 form for EVM.' }),
    chain: z.string(),
    network: z.string(),
    target_type: z.enum(TARGET_TYPES),
    risk_score: z.int().min(0).max(100),
    risk_level: z.enum(LEVELS),
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

const scanBody = z
  .object({
    mint: address('The SPL Token or Token-2022 mint').meta({
      description: 'The mint address (Solana base58).',
    }),
    network: networkField.optional(),
  })
  .strict();

const metadataSchema = z
  .object({
    name: z.string(),
    symbol: z.string(),
    uri: z.string(),
    update_authority: z.string().nullable(),
    mutable: z.boolean(),
    source: z.enum(['metaplex', 'token-2022']),
  })
  .meta({ id: 'TokenMetadata' });

const holderSchema = z.object({
  owner: z.string().nullable(),
  token_account: z.string(),
  amount_raw: z.string(),
  share: z.number(),
  label: z.string().nullable().meta({ description: 'A known pool, locker, burn address or exchange.' }),
  label_kind: z.enum(['pool', 'locker', 'burn', 'exchange']).nullable(),
  excluded: z.boolean().meta({ description: 'Left out of the concentration shares (pools, lockers, burn).' }),
  owner_program: z.string().nullable(),
});

const scanSchema = z
  .object({
    scan_id: z.string(),
    mint: z.string(),
    network: z.string(),
    token_program: z.enum(['spl-token', 'token-2022']),
    risk_score: z.int().min(0).max(100),
    risk_level: z.enum(LEVELS),
    complete: z.boolean(),
    token: z.object({
      decimals: z.int(),
      supply: z.string(),
      supply_raw: z.string(),
      mint_authority: z.string().nullable(),
      freeze_authority: z.string().nullable(),
      metadata: metadataSchema.nullable(),
      extensions: z.array(z.object({ type: z.string() }).catchall(z.unknown())).meta({
        description: 'Token-2022 extensions, snake_case; u64 values as decimal strings.',
      }),
    }),
    holders: z
      .object({
        top10_share: z.number().nullable(),
        top_owner: z
          .object({ owner: z.string().nullable(), share: z.number(), accounts: z.int() })
          .nullable(),
        excluded_share: z.number().nullable(),
        largest: z.array(holderSchema),
      })
      .nullable()
      .meta({ description: 'From the 20 largest token accounts; null when that check did not finish.' }),
    known: z
      .object({
        symbol: z.string(),
        name: z.string(),
        issuer: z.string(),
        category: z.string(),
        authorities: z.enum(['expected', 'changed', 'unverified', 'mismatch']),
        registry_version: z.string(),
      })
      .nullable()
      .meta({ description: 'What the built-in registry of well-known mints says about this one.' }),
    findings: z.array(findingSchema),
    data_as_of: dataAsOf,
    scanned_at: z.string(),
    cached: z.boolean(),
  })
  .meta({ id: 'TokenScan' });

const preflightBody = z
  .object({
    target: address('The address to sign for, approve, send to or interact with'),
    intent: z
      .string()
      .trim()
      .min(1)
      .max(40)
      .meta({
        description: 'What the user is about to do. Another value → `400 unsupported_intent`.',
        override: { enum: [...INTENTS] },
      }),
    chain: chainField.optional(),
    network: networkField.optional(),
  })
  .strict();

const preflightSchema = z
  .object({
    decision: z.enum(['allow', 'warn', 'block']),
    target: z.string(),
    intent: z.enum(INTENTS),
    chain: z.string().meta({ description: 'The chain used (inferred from the address when not given).' }),
    network: z.string(),
    risk_level: z.enum(LEVELS),
    risk_score: z.int().min(0).max(100),
    complete: z.boolean(),
    reasons: z
      .array(
        z.object({
          code: z.string(),
          severity: z.enum(SEVERITIES),
          title: z.string(),
          detail: z.string(),
          evidence: evidenceSchema,
        }),
      )
      .meta({ description: 'The unsuppressed findings behind the decision (and any unfinished check).' }),
    policy: z.object({
      name: z.string(),
      fail_mode: z.enum(FAIL_MODES),
      deadline_ms: z.int(),
      allowlisted: z.boolean().meta({ description: 'The target is on your allow list (and not denied).' }),
    }),
    checked_at: z.string(),
    cached: z.boolean(),
  })
  .meta({ id: 'Preflight' });

/** Endpoints 3–5 of the seed: the risk engine over HTTP. */
export function riskRoutes(risk: RiskService) {
  return [
    defineRoute({
      method: 'post',
      path: '/api/web3/risk-v2',
      operationId: 'assessRisk',
      summary: 'Assess a wallet, contract, program or token',
      description:
        'Findings with evidence (RPC method, slot/block, raw value), observed facts and a score. ' +
        SCORING +
        ' A target whose real kind differs from `target_type` gets `target_type_mismatch`. The chain analysis ' +
        'is cached per (chain, network, target, target_type) for a TTL by level; your lists apply on top. ' +
        'A provider that fails or times out → `503 provider_unavailable` (retryable).',
      tag: 'Risk',
      auth: 'jwt',
      body: riskV2Body,
      responses: { 200: { description: 'The assessment', schema: assessmentSchema } },
      handler: async (ctx, { body }) => ({ body: await risk.assess(userOf(ctx).accountId, body) }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/scan/token',
      operationId: 'scanToken',
      summary: 'Scan a Solana token (SPL Token or Token-2022)',
      description:
        'Authorities, every Token-2022 extension, Metaplex / Token-2022 metadata, holder concentration (known ' +
        'pools, lockers and burn addresses excluded and labelled), copycat symbols, and well-known mints with ' +
        'their expected authorities (findings shown as suppressed). ' +
        SCORING,
      tag: 'Developer API',
      auth: 'api_key',
      body: scanBody,
      responses: {
        200: { description: 'The scan', schema: scanSchema },
        404: { description: '`not_found`: no account at this address' },
        422: { description: '`not_a_mint`: the account exists but is not an SPL Token / Token-2022 mint' },
      },
      handler: async (ctx, { body }) => ({ body: await risk.scanToken(apiKeyOf(ctx).accountId, body) }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/shield/preflight',
      operationId: 'preflight',
      summary: 'Should this user sign, approve, send to or interact with this target?',
      description:
        '`block` for a critical level, `warn` for high or medium, `allow` for low, after the intent ' +
        'adjustments (`transfer`: a never-used address is medium; `approve`: an EOA spender is ' +
        '`approval_to_eoa`) and your lists (allow-listed → `allow` unless sanctioned). Without `chain` and ' +
        '`network` the address format decides (base58 → solana/mainnet, `0x…` → ethereum/mainnet). Answers ' +
        'within the preflight deadline (default 1500 ms): checks that did not finish make `complete: false` ' +
        'and the decision is at least the configured fail mode (`warn` by default), never a silent allow.',
      tag: 'Developer API',
      auth: 'api_key',
      body: preflightBody,
      responses: { 200: { description: 'The decision', schema: preflightSchema } },
      handler: async (ctx, { body }) => ({ body: await risk.preflight(apiKeyOf(ctx).accountId, body) }),
    }),
  ];
}
