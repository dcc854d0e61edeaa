import { z } from 'zod';
import { pageQuery } from '../http/route.js';
import { CATALOG, type FindingCode } from '../risk/findings.js';
import { FEEDBACK_KINDS } from './entities.js';

/*
 * What verdict feedback looks like outside the service: the request and answers of `POST|GET
 * /api/v1/feedback` and `GET /api/v1/feedback/{id}`. Routes validate and document with these objects; the
 * types below are derived from them.
 */

export const FINDING_CODES = Object.keys(CATALOG) as [FindingCode, ...FindingCode[]];

/** Feedback kind → the list `apply: true` puts the target on. */
export const LIST_OF = {
  false_positive: 'allow',
  false_negative: 'deny',
  confirmed_malicious: 'deny',
} as const;

const name = (description: string) => z.string().trim().min(1).max(100).optional().meta({ description });

export const newFeedbackSchema = z
  .object({
    request_id: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .meta({
        description:
          'The `X-Request-Id` of the call the feedback is about: the account’s newest call with it ' +
          '(`GET /api/v1/usage` shows it). Its target, chain and network are the feedback’s. Give this or ' +
          '`target`, not both.',
      }),
    target: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .meta({ description: 'The address, when no call is named: checked by the chain’s address rules.' }),
    chain: name('The chain of `target` (name or CAIP-2 id); required with `target`.'),
    network: name('The network of `target`; default `mainnet`.'),
    kind: z.enum(FEEDBACK_KINDS).meta({
      description:
        '`false_positive`: the verdict was too harsh; `false_negative`: too lenient; `confirmed_malicious`: ' +
        'right, and the target is malicious.',
    }),
    finding_code: z.enum(FINDING_CODES).optional().meta({
      description: 'The finding the feedback disputes or confirms (a code of the findings catalog).',
    }),
    note: z.string().trim().max(2000).nullable().optional(),
    apply: z
      .boolean()
      .default(false)
      .meta({
        description:
          'Act on the whole target in the same transaction: a false positive goes on the account’s allow ' +
          'list, a false negative or a confirmed malicious one on its deny list, for the feedback’s chain. ' +
          'An entry already there is reused (`applied.created: false`), never a 409.',
      }),
  })
  .strict()
  .meta({
    examples: [
      { request_id: 'checkout-7f3a', kind: 'false_positive', finding_code: 'new_account', apply: true },
      {
        target: '0x4Cd241E8d1510e30b2076397afc7508Ae59C66c9',
        chain: 'ethereum',
        kind: 'confirmed_malicious',
        note: 'drained a customer wallet',
        apply: true,
      },
    ],
  });
export type NewFeedback = z.output<typeof newFeedbackSchema>;

export const feedbackSchema = z
  .object({
    id: z.string(),
    kind: z.enum(FEEDBACK_KINDS),
    target: z.string().meta({ description: 'The address; EVM addresses in EIP-55 form.' }),
    chain: z.string(),
    network: z.string(),
    request_id: z.string().nullable().meta({ description: 'The call named, if one was.' }),
    usage_id: z.string().nullable().meta({ description: 'The usage record of that call (`use_…`).' }),
    endpoint: z.string().nullable().meta({ description: 'The route template of that call.' }),
    finding_code: z.enum(FINDING_CODES).nullable(),
    note: z.string().nullable(),
    applied: z
      .object({
        list: z.enum(['deny', 'allow']),
        entry_id: z.string().meta({ description: 'The list entry (`lst_…`).' }),
        created: z
          .boolean()
          .nullable()
          .meta({
            description:
              'Whether this feedback added the entry (false: it was there and is reused). Answered when the ' +
              'feedback is given; null on reads (the audit log’s `list_entry.added` tells it).',
          }),
      })
      .nullable()
      .meta({ description: 'What `apply: true` put on a list; null without it.' }),
    created_at: z.string(),
    created_by: z.string().meta({ description: 'Who gave it, e.g. `api_key:key_…`.' }),
  })
  .meta({ id: 'Feedback' });
export type FeedbackBody = z.infer<typeof feedbackSchema>;

export const feedbackPageSchema = z
  .object({ data: z.array(feedbackSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'FeedbackPage' });
export type FeedbackPageBody = z.infer<typeof feedbackPageSchema>;

export const feedbackQuerySchema = z
  .object({
    kind: z.enum(FEEDBACK_KINDS).optional(),
    target: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .meta({ description: 'Only the feedback on this address (any case for EVM).' }),
    ...pageQuery,
  })
  .strict();
export type FeedbackQuery = z.output<typeof feedbackQuerySchema>;

export const feedbackParamsSchema = z.object({ id: z.string().min(1).max(40) });
