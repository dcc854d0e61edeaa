import type { Registry } from 'prom-client';
import { actorOf } from '../audit/actor.js';
import { defineRoute } from '../http/route.js';
import { apiKeyOf } from '../http/state.js';
import { FeedbackMetrics } from './metrics.js';
import { presentFeedback, presentFeedbackPage } from './present.js';
import {
  feedbackPageSchema,
  feedbackParamsSchema,
  feedbackQuerySchema,
  feedbackSchema,
  newFeedbackSchema,
} from './schemas.js';
import type { FeedbackService } from './service.js';

/**
 * Verdict feedback of the key's account (API key + entitlement, as the lists), counted on `registry` (the
 * API process's).
 */
export function feedbackRoutes(feedback: FeedbackService, registry: Registry) {
  const metrics = FeedbackMetrics.for(registry);
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/feedback',
      operationId: 'giveFeedback',
      summary: 'Say a verdict was wrong (or right and malicious), and optionally act on its target',
      description:
        'About a call (`request_id`: the account’s newest call that answered with that X-Request-Id; its ' +
        'usage record gives the target, chain and network) or a target (`target` + `chain`, `network` ' +
        'default `mainnet`). With `apply: true` the target goes on the allow list (`false_positive`) or the ' +
        'deny list (`false_negative`, `confirmed_malicious`) for its chain in the same transaction as the ' +
        'feedback and its audit records; an entry already there is reused, never a 409, and the very next ' +
        'preflight sees the list. Counted in `riskwatch_feedback_total{kind,finding}`.',
      tag: 'Developer API',
      auth: 'api_key',
      body: newFeedbackSchema,
      responses: {
        201: { description: 'Stored (and applied)', schema: feedbackSchema },
        400: {
          description:
            '`invalid_request`: both or neither of `request_id` and `target`, `target` without `chain`, an ' +
            'unknown `kind` or `finding_code`, a note over 2,000 characters; `invalid_address`, `unsupported_chain`',
        },
        404: { description: '`not_found`: no call of the account with this `request_id` (yet)' },
        409: {
          description:
            '`limit_exceeded`: `apply` would add a list entry past the account’s ceiling (nothing is stored)',
        },
        422: { description: '`no_target`: the call named was about no single target' },
      },
      handler: async (ctx, { body }) => {
        const stored = await feedback.create(apiKeyOf(ctx).accountId, actorOf(ctx), body);
        metrics.count(stored.kind, stored.findingCode);
        return { status: 201 as const, body: presentFeedback(stored) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/feedback',
      operationId: 'listFeedback',
      summary: 'The account’s verdict feedback, newest first',
      description: 'Paginated with `limit` and the opaque `next_cursor`; filters `kind` and `target`.',
      tag: 'Developer API',
      auth: 'api_key',
      query: feedbackQuerySchema,
      responses: { 200: { description: 'One page of feedback', schema: feedbackPageSchema } },
      handler: async (ctx, { query }) => ({
        body: presentFeedbackPage(await feedback.page(apiKeyOf(ctx).accountId, query)),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/feedback/{id}',
      operationId: 'getFeedback',
      summary: 'One piece of the account’s verdict feedback',
      tag: 'Developer API',
      auth: 'api_key',
      params: feedbackParamsSchema,
      responses: {
        200: { description: 'The feedback', schema: feedbackSchema },
        404: { description: 'Not found, including another account’s feedback' },
      },
      handler: async (ctx, { params }) => ({
        body: presentFeedback(await feedback.get(apiKeyOf(ctx).accountId, params.id)),
      }),
    }),
  ];
}
