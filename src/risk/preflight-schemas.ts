import { z } from 'zod';
import { SEVERITIES } from './findings.js';
import { messageBody, transactionBody, typedDataBody } from './payload/request.js';
import { DECISIONS, FAIL_MODES, INTENTS } from './policy.js';
import { address, approvalSchema, assetSchema, chainField, evidenceSchema, networkField } from './schemas.js';
import { RISK_LEVELS } from './scoring.js';

/*
 * The shield preflight's HTTP shapes (POST /api/v1/shield/preflight), defined once like the other risk
 * shapes in schemas.ts: the body with its payloads, and the answer with its simulation and signature.
 */

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
    approvals: z.array(approvalSchema),
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

export type PreflightReason = z.infer<typeof reasonSchema>;
export type Preflight = z.infer<typeof preflightSchema>;
export type SimulationBody = z.infer<typeof simulationSchema>;
export type SignatureBody = z.infer<typeof signatureSchema>;
