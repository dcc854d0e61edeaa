import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const FEEDBACK_KINDS = ['false_positive', 'false_negative', 'confirmed_malicious'] as const;
export type FeedbackKind = (typeof FEEDBACK_KINDS)[number];

/**
 * A user's word on a verdict: wrong (a false positive or negative) or right and malicious. Names the call
 * (`request_id`, linked to its usage record) or the target itself; `applied_list` / `list_entry_id` say
 * what `apply: true` put on the account's deny or allow list.
 */
export const FeedbackSchema = defineEntity({
  name: 'Feedback',
  tableName: 'feedback',
  indexes: [{ properties: ['accountId', 'createdAt', 'id'] }, { properties: ['accountId', 'target'] }],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    createdAt: p.datetime(),
    /** Who gave it: `api_key:<id>` or `user:<sub>`. */
    createdBy: p.string().length(300),
    kind: p.enum(FEEDBACK_KINDS),
    requestId: p.string().length(200).nullable(),
    /** The usage record of the call `request_id` named. */
    usageId: p.string().length(40).nullable(),
    endpoint: p.string().length(200).nullable(),
    target: p.string().length(200),
    chain: p.string().length(40).nullable(),
    network: p.string().length(40).nullable(),
    findingCode: p.string().length(100).nullable(),
    note: p.string().length(2000).nullable(),
    appliedList: p.string().length(10).nullable(),
    listEntryId: p.string().length(40).nullable(),
  },
});
export type Feedback = InferEntity<typeof FeedbackSchema>;
