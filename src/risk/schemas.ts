import { z } from 'zod';
import { CATALOG, SEVERITIES, type FindingCode } from './findings.js';
import { RISK_LEVELS } from './scoring.js';
import { TARGET_TYPES } from './target-types.js';

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

/** A token or coin, as simulations and approvals name it. */
export const assetSchema = z
  .object({
    type: z.enum(['native', 'erc20', 'erc721', 'erc1155', 'spl']),
    address: z.string().optional().meta({ description: 'The token contract or mint.' }),
    token_id: z.string().optional(),
    symbol: z.string().optional(),
    decimals: z.int().optional(),
  })
  .meta({ id: 'Asset' });

/** One approval, as a payload preflight's simulation or decoding answers it (and a wallet's approvals list). */
export const approvalSchema = z.object({
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
});

// ---- wallet approvals (risk-v2 `wallet` on EVM, GET /api/v1/approvals) ---------------------------------------

export const walletApprovalsSchema = z
  .object({
    approvals: z.array(
      approvalSchema.extend({
        kind: z.enum(['erc20', 'erc721', 'erc721_operator', 'erc1155_operator', 'permit2']),
        granted_at_block: z.int().meta({ description: 'The block of the latest approval event for it.' }),
        granted_tx: z.string().nullable(),
        confirmed: z.boolean().meta({
          description:
            'Read at the head block (`allowance`, `isApprovedForAll`, Permit2 `allowance`); false: only the log vouches for it.',
        }),
        spender_kind: z
          .enum(['known', 'contract', 'eoa', 'unused', 'delegated_wallet', 'known_delegated_wallet'])
          .nullable()
          .meta({
            description: 'What the spender is; read for unlimited and operator approvals only (else null).',
          }),
        spender_name: z
          .string()
          .nullable()
          .meta({ description: 'A well-known spender (Permit2, routers, marketplaces).' }),
        risky: z.boolean().meta({
          description:
            'Unlimited or operator, to an EOA, an unused address or an unknown EIP-7702 account (`risky_approval`).',
        }),
      }),
    ),
    from_block: z
      .int()
      .meta({ description: 'The window read: `risk.evm.approvals_lookback_days` back from `to_block`.' }),
    to_block: z.int(),
    complete: z.boolean(),
    gaps: z.array(z.object({ from_block: z.int(), to_block: z.int(), reason: z.string() })).meta({
      description:
        'Parts of the window not read (the provider refused them even halved, or ran out of time).',
    }),
  })
  .meta({ id: 'WalletApprovals' });

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
          '`wallet` (every chain), `contract` (EVM), `program` (Solana), `token` (Solana and EVM: as scan/token). ' +
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
    approvals: walletApprovalsSchema
      .nullable()
      .optional()
      .meta({
        description:
          "An EVM wallet's outstanding approvals, from logs confirmed by reads (docs/risk.md#evm-wallet-approvals); " +
          'null when they could not be read; absent for other targets.',
      }),
  })
  .meta({ id: 'Assessment' });

// ---- GET /api/v1/approvals ------------------------------------------------------------------------------

export const approvalsQuery = z
  .object({
    target: address('The wallet'),
    chain: chainField.optional().meta({ description: 'An EVM chain (default `ethereum`).' }),
    network: networkField.optional(),
  })
  .strict();

export const approvalsAnswerSchema = walletApprovalsSchema
  .extend({
    target: z.string(),
    chain: z.string(),
    network: z.string(),
    findings: z.array(findingSchema).meta({
      description: '`risky_approval` (and any `check_incomplete` of the read), with your lists applied.',
    }),
    data_as_of: dataAsOf,
    checked_at: z.string(),
    cached: z.boolean(),
  })
  .meta({ id: 'ApprovalsAnswer' });

// ---- POST /api/v1/scan/token ------------------------------------------------------------------------------

export const scanBody = z
  .object({
    mint: address('The SPL Token or Token-2022 mint, or the ERC-20 contract').meta({
      description: 'The mint (Solana base58) or the ERC-20 contract (`0x` + 40 hex).',
    }),
    chain: chainField.optional().meta({
      description:
        "Chain name or CAIP-2 id. Without it the mint's format decides, as a preflight infers it: base58 → " +
        '`solana`, `0x…` → `ethereum`.',
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

/** An ERC-20 as the bytecode, its reads and the trade simulation show it (docs/risk.md#erc-20-tokens). */
export const evmTokenSchema = z
  .object({
    standard: z.literal('erc20'),
    name: z.string().nullable(),
    symbol: z.string().nullable(),
    decimals: z.int().nullable(),
    supply: z
      .string()
      .nullable()
      .meta({ description: 'Whole tokens, exact decimal string (null without decimals).' }),
    supply_raw: z.string(),
    owner: z
      .string()
      .nullable()
      .meta({ description: '`owner()` or `getOwner()`; null when the contract has neither.' }),
    owner_kind: z.enum(['eoa', 'contract', 'delegated_wallet', 'unused', 'renounced']).nullable().meta({
      description: 'What the owner is; `renounced`: the zero or dead address. null: no owner, or unread.',
    }),
    implementation: z.string().nullable().meta({
      description: 'The code behind an EIP-1967, beacon or EIP-1167 proxy, whose functions were read too.',
    }),
    capabilities: z.array(
      z.object({
        capability: z.string(),
        functions: z.array(z.object({ signature: z.string(), selector: z.string() })),
        live: z
          .boolean()
          .meta({ description: 'False when only a renounced owner could call it (and no roles).' }),
      }),
    ),
    buy_tax: z.number().nullable().meta({ description: 'Fraction (0.05 = 5%); null when not measured.' }),
    sell_tax: z.number().nullable(),
    transfer_tax: z.number().nullable(),
    trade: z
      .object({
        status: z.enum([
          'measured',
          'no_router',
          'no_pool',
          'buy_reverted',
          'transfer_reverted',
          'sell_reverted',
          'failed',
        ]),
        method: z.enum(['eth_simulateV1', 'eth_call']).nullable(),
        router: z.object({ address: z.string(), name: z.string(), source: z.string() }).nullable(),
        pair: z.string().nullable(),
        delayed_s: z
          .int()
          .meta({ description: 'How much later than the buy the transfer and the sell ran.' }),
        buy: z.object({ paid_wei: z.string(), quoted_raw: z.string(), received_raw: z.string() }).nullable(),
        transfer: z.object({ sent_raw: z.string(), arrived_raw: z.string() }).nullable(),
        sell: z
          .object({ amount_raw: z.string(), quoted_wei: z.string(), received_wei: z.string() })
          .nullable(),
        reason: z.string().nullable(),
      })
      .nullable()
      .meta({
        description: 'The simulated buy, transfer and sell; null when it was not run (preflight, contract).',
      }),
  })
  .meta({ id: 'Erc20Token' });

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
    mint: z.string().meta({ description: 'The mint, or the ERC-20 contract (EIP-55).' }),
    chain: z.string(),
    network: z.string(),
    token_program: z.enum(['spl-token', 'token-2022', 'erc20']),
    risk_score: z.int().min(0).max(100),
    risk_level: z.enum(RISK_LEVELS),
    complete: z.boolean(),
    token: z.union([tokenSchema.meta({ id: 'SplToken' }), evmTokenSchema]).meta({
      description: 'A Solana mint (`spl-token`, `token-2022`) or an ERC-20 (`erc20`), by `token_program`.',
    }),
    holders: holdersSchema.nullable().meta({
      description:
        'From the 20 largest token accounts; null when that check did not finish, and on EVM chains (a node ' +
        'has no index of balances).',
    }),
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
export type ApprovalsAnswer = z.infer<typeof approvalsAnswerSchema>;
export type WalletApprovalsView = z.infer<typeof walletApprovalsSchema>;
export type ApprovalView = WalletApprovalsView['approvals'][number];
export type SpenderKind = NonNullable<ApprovalView['spender_kind']>;
export type TokenScan = z.infer<typeof scanSchema>;
export type TokenMetadataView = z.infer<typeof metadataSchema>;
export type TokenExtensionView = z.infer<typeof tokenSchema>['extensions'][number];
export type TokenView = z.infer<typeof tokenSchema>;
export type EvmTokenView = z.infer<typeof evmTokenSchema>;
export type HolderView = z.infer<typeof holderSchema>;
export type HoldersView = z.infer<typeof holdersSchema>;
export type KnownTokenContext = z.infer<typeof knownTokenSchema>;
