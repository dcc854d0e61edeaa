import { z } from 'zod';
import { CATALOG, SEVERITIES, type FindingCode } from './findings.js';
import { messageBody, transactionBody, typedDataBody } from './payload/request.js';
import { DECISIONS, FAIL_MODES, INTENTS } from './policy.js';
import { RISK_LEVELS } from './scoring.js';
import { TARGET_TYPES } from './types.js';

/*
 * The risk feature's HTTP shapes, defined once: the routes validate requests and write the OpenAPI
 * document with these schemas, the presenters build the bodies typed by them, and tests read the same
 * types. Nothing else spells a risk request or response.
 */

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

// ---- POST /api/v1/shield/preflight ------------------------------------------------------------------------

export const preflightBody = z
  .object({
    target: address('The address to sign for, approve, send to or interact with')
      .optional()
      .meta({
        description:
          'The address to sign for, approve, send to or interact with. May be left out with a payload: the ' +
          "transaction's `to` or the typed data's `verifyingContract` is used (a message or a Solana " +
          'transaction then has none). Given with an EVM payload it must equal that address; with a Solana ' +
          'transaction, one of its account keys (the counterparty the user means).',
      }),
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
    from: address('The user (signer)')
      .optional()
      .meta({
        description:
          "The user's address: the EVM sender or signer (a different `transaction.from` or typed-data " +
          '`owner`/`holder`/`from`/`offerer` → 400); on Solana a required signer of the transaction. ' +
          'Required with a payload.',
      }),
    transaction: transactionBody.optional(),
    typed_data: typedDataBody.optional(),
    message: messageBody.optional(),
  })
  .strict()
  .meta({
    examples: [
      { target: '0x4Cd241E8d1510e30b2076397afc7508Ae59C66c9', intent: 'transfer' },
      {
        intent: 'approve',
        from: '0x592e198350daf710e98045d2817F86278a1d87A7',
        transaction: {
          from: '0x592e198350daf710e98045d2817F86278a1d87A7',
          to: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
          data:
            '0x095ea7b30000000000000000000000003c44cdddb6a900fa2b585dd299e03d12fa4293bc' +
            'ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
        },
      },
      {
        intent: 'sign',
        from: '0x592e198350daf710e98045d2817F86278a1d87A7',
        message: { method: 'personal_sign', data: '0x5369676e20696e20746f206578616d706c652e6f7267' },
      },
    ],
  });

const reasonSchema = z.object({
  code: z.string(),
  severity: z.enum(SEVERITIES),
  title: z.string(),
  detail: z.string(),
  evidence: evidenceSchema,
  subject: z
    .object({
      role: z.enum(['target', 'spender', 'operator', 'recipient', 'authority', 'signature', 'transaction']),
      address: z.string().nullable(),
    })
    .optional()
    .meta({
      description:
        'With a payload: who the finding is about — the target, a counterparty the payload names (spender, ' +
        'operator, recipient, new authority), or the signature / transaction itself.',
    }),
});

const assetSchema = z
  .object({
    type: z.enum(['native', 'erc20', 'erc721', 'erc1155', 'spl']),
    address: z.string().optional().meta({ description: 'The token contract or mint.' }),
    token_id: z.string().optional(),
    symbol: z.string().optional(),
    decimals: z.int().optional(),
  })
  .meta({ id: 'Asset' });

const simulationSchema = z
  .object({
    status: z.enum(['success', 'reverted', 'unavailable', 'not_applicable']).meta({
      description:
        '`not_applicable` for signatures and messages (nothing is simulated; what they grant is in ' +
        '`approvals`). `unavailable`: the node could not simulate — calldata decoded alone, `complete: false`.',
    }),
    method: z.string().meta({
      description:
        '`eth_simulateV1`, `debug_traceCall` (a node without it), `decode` (calldata alone), ' +
        '`simulateTransaction` (Solana), `signature`.',
    }),
    block: z.int().optional(),
    slot: z.int().optional(),
    error: z.string().optional().meta({ description: 'Why it reverted, or why it could not run.' }),
    asset_changes: z
      .array(
        z.object({
          owner: z.string(),
          asset: assetSchema,
          amount: z.string().meta({ description: 'Signed decimal string, raw units. Gas is excluded.' }),
        }),
      )
      .meta({ description: "Net balance changes, `from`'s first. What the node simulated, not a promise." }),
    approvals: z.array(
      z.object({
        owner: z.string(),
        asset: assetSchema,
        spender: z.string(),
        amount: z.string().meta({
          description:
            'Decimal string, or `unlimited`: at least 2^(w−1) for the field width w (uint256 → 2^255, ' +
            "Permit2's uint160 → 2^159, Solana u64 → 2^63), DAI's `allowed: true`, or an operator approval.",
        }),
        covers_balance: z
          .boolean()
          .nullable()
          .meta({ description: "At least `from`'s current balance of the asset; null when unknown." }),
        all: z.boolean().meta({ description: 'An operator approval over the whole collection (NFTs).' }),
        expires_at: z
          .string()
          .nullable()
          .meta({ description: 'When the allowance ends (Permit2 `expiration`); null when it does not.' }),
        source: z.enum(['transaction', 'signature']),
      }),
    ),
    authority_changes: z.array(
      z.object({
        account: z.string(),
        authority_type: z.enum([
          'account_owner',
          'close_account',
          'mint_tokens',
          'freeze_account',
          'upgrade_authority',
          'program_owner',
          'code_delegation',
        ]),
        from: z.string().nullable(),
        to: z.string().nullable(),
      }),
    ),
  })
  .meta({
    id: 'Simulation',
    examples: [
      {
        status: 'success',
        method: 'eth_simulateV1',
        block: 21800000,
        asset_changes: [
          {
            owner: '0x592e198350daf710e98045d2817F86278a1d87A7',
            asset: { type: 'native' },
            amount: '-500000000000000000',
          },
          {
            owner: '0x592e198350daf710e98045d2817F86278a1d87A7',
            asset: {
              type: 'erc20',
              address: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
              symbol: 'USDC',
              decimals: 6,
            },
            amount: '1450000000',
          },
        ],
        approvals: [
          {
            owner: '0x592e198350daf710e98045d2817F86278a1d87A7',
            asset: {
              type: 'erc20',
              address: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
              symbol: 'USDC',
              decimals: 6,
            },
            spender: '0x000000000022D473030F116dDEE9F6B43aC78BA3',
            amount: 'unlimited',
            covers_balance: true,
            all: false,
            expires_at: null,
            source: 'transaction',
          },
        ],
        authority_changes: [],
      },
    ],
  });

const signatureSchema = z
  .object({
    standard: z.enum(['eip712', 'eth_sign', 'personal_sign']),
    kind: z.enum([
      'erc2612_permit',
      'dai_permit',
      'permit2_allowance',
      'permit2_transfer',
      'transfer_authorization',
      'seaport_order',
      'unknown',
    ]),
    chain_id: z.int().nullable(),
    verifying_contract: z.string().nullable(),
    deadline: z
      .string()
      .nullable()
      .meta({ description: "The signature's own deadline (after it, it cannot be used), or null." }),
  })
  .meta({
    id: 'Signature',
    examples: [
      {
        standard: 'eip712',
        kind: 'permit2_allowance',
        chain_id: 1,
        verifying_contract: '0x000000000022D473030F116dDEE9F6B43aC78BA3',
        deadline: '2030-01-01T00:00:00.000Z',
      },
    ],
  });

export const preflightSchema = z
  .object({
    decision: z.enum(DECISIONS),
    target: z
      .string()
      .nullable()
      .meta({ description: 'The target given or derived from the payload; null when there is none.' }),
    intent: z.enum(INTENTS),
    chain: z.string().meta({ description: 'The chain used (inferred from the address when not given).' }),
    network: z.string(),
    risk_level: z.enum(RISK_LEVELS),
    risk_score: z.int().min(0).max(100),
    complete: z.boolean(),
    reasons: z.array(reasonSchema).meta({
      description:
        'The unsuppressed findings behind the decision (and any unfinished check). With a payload, also the ' +
        "called contract's own findings below high, shown as `info`: they do not weigh on the decision.",
    }),
    simulation: simulationSchema.optional().meta({ description: 'Present when a payload was sent.' }),
    signature: signatureSchema
      .nullable()
      .optional()
      .meta({ description: 'Typed data and messages: what is signed. null for a transaction.' }),
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

export type FindingBody = z.infer<typeof findingSchema>;
export type Assessment = z.infer<typeof assessmentSchema>;
export type TokenScan = z.infer<typeof scanSchema>;
export type PreflightReason = z.infer<typeof reasonSchema>;
export type Preflight = z.infer<typeof preflightSchema>;
export type SimulationBody = z.infer<typeof simulationSchema>;
export type SignatureBody = z.infer<typeof signatureSchema>;
export type TokenMetadataView = z.infer<typeof metadataSchema>;
export type TokenExtensionView = z.infer<typeof tokenSchema>['extensions'][number];
export type TokenView = z.infer<typeof tokenSchema>;
export type HolderView = z.infer<typeof holderSchema>;
export type HoldersView = z.infer<typeof holdersSchema>;
export type KnownTokenContext = z.infer<typeof knownTokenSchema>;
