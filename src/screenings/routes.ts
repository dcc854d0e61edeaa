import { actorOf } from '../audit/actor.js';
import { defineRoute } from '../http/route.js';
import { apiKeyOf } from '../http/state.js';
import { presentResult, presentScreening } from './present.js';
import { countResults } from './repository.js';
import {
  csvQuery,
  MAX_TARGETS_PER_CALL,
  MAX_WAIT_TARGETS,
  newScreeningSchema,
  resultPageSchema,
  resultsQuery,
  SCREENING_BODY_LIMIT_KB,
  screeningPageSchema,
  screeningParams,
  screeningSchema,
  screeningsQuery,
  submittedSchema,
  waitedSchema,
} from './schemas.js';
import type { ScreeningsService } from './service.js';
import type { Orm } from '../db/orm.js';

const NOT_FOUND = { description: 'No such screening of this account (another account’s id included)' };
/** Targets per rate-limit point of a screening (the call's first point covers the first 1,000). */
export const TARGETS_PER_POINT = 1000;

/** Bulk screenings (API key + entitlement), every call scoped to the key's account. */
export function screeningRoutes(screenings: ScreeningsService, orm: Orm) {
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/screenings',
      operationId: 'createScreening',
      summary: 'Screen up to 100,000 targets at once',
      description:
        'Each target is checked as a preflight checks it (chain rules, configured networks); a refused ' +
        'one is reported in `errors[]` (and kept as an `invalid` result) while the others are screened. ' +
        'The workers screen them in chunks: follow `GET /api/v1/screenings/{id}`, read the results paged ' +
        'or as CSV, or subscribe a webhook to `screening.completed`. One `state`/`full` screening runs at ' +
        'a time per account (later ones are `queued`); a `lists` screening is judged while it is stored and ' +
        'answers already `completed`. `full` depth is ' +
        'bound by the provider rate limit (several calls per target), and every screening uses at most ' +
        '`screenings.provider_share_pct` of it, so preflights and watchlist ticks keep the rest. ' +
        `Costs one rate-limit point per ${TARGETS_PER_POINT.toLocaleString('en-US')} targets (rounded ` +
        'up) and counts as one call in usage with its `targets`. Body limit 8 MiB. Results are kept ' +
        '`screenings.retention_days` (30).',
      tag: 'Developer API',
      auth: 'api_key',
      body: newScreeningSchema,
      bodyLimitKb: SCREENING_BODY_LIMIT_KB,
      rateCost: (body: { targets?: unknown[] }) =>
        Math.max(1, Math.ceil((body.targets?.length ?? 0) / TARGETS_PER_POINT)),
      responses: {
        200: {
          description: `\`wait: true\` (at most ${MAX_WAIT_TARGETS} targets): the results`,
          schema: waitedSchema,
        },
        202: { description: 'Stored and queued', schema: submittedSchema },
        400: {
          description:
            `\`too_many_entries\`: more than ${MAX_TARGETS_PER_CALL.toLocaleString('en-US')} targets ` +
            `(nothing stored); \`invalid_request\`: a malformed body, an unknown depth, or \`wait\` with ` +
            `more than ${MAX_WAIT_TARGETS} targets`,
        },
        413: { description: '`payload_too_large`: a body over 8 MiB' },
      },
      handler: async (ctx, { body }) => {
        const key = apiKeyOf(ctx);
        ctx.state.usageDetail = { targets: body.targets.length };
        const { screening, errors, results } = await screenings.submit(key.accountId, actorOf(ctx), body);
        const answer = { screening_id: screening.id, screening: presentScreening(screening), errors };
        if (results)
          return { status: 200 as const, body: { ...answer, results: results.map(presentResult) } };
        return { status: 202 as const, body: answer };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/screenings',
      operationId: 'listScreenings',
      summary: 'List the account’s screenings',
      description:
        'Newest first, paginated with `limit` and `next_cursor`. `counts` are final once completed.',
      tag: 'Developer API',
      auth: 'api_key',
      query: screeningsQuery,
      responses: { 200: { description: 'One page', schema: screeningPageSchema } },
      handler: async (ctx, { query }) => {
        const page = await screenings.list(apiKeyOf(ctx).accountId, query);
        return {
          body: { data: page.items.map((s) => presentScreening(s)), next_cursor: page.nextCursor },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/screenings/{id}',
      operationId: 'getScreening',
      summary: 'A screening’s progress',
      description: 'Status, progress and counts by level and decision (live while it runs).',
      tag: 'Developer API',
      auth: 'api_key',
      params: screeningParams,
      responses: { 200: { description: 'The screening', schema: screeningSchema }, 404: NOT_FOUND },
      handler: async (ctx, { params }) => {
        const s = await screenings.get(apiKeyOf(ctx).accountId, params.id);
        const live = s.status === 'completed' ? undefined : await countResults(orm, s.id);
        return { body: presentScreening(s, live) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/screenings/{id}/results',
      operationId: 'listScreeningResults',
      summary: 'A screening’s results, in input order',
      description:
        'Each row carries the verdict at the screening’s depth (level, score, findings, `complete`) and ' +
        'the `decision` a shield preflight with intent `transfer` would give. Filter by `level`, ' +
        '`decision` or `status`; page with `limit` and `next_cursor`.',
      tag: 'Developer API',
      auth: 'api_key',
      params: screeningParams,
      query: resultsQuery,
      responses: { 200: { description: 'One page', schema: resultPageSchema }, 404: NOT_FOUND },
      handler: async (ctx, { params, query }) => {
        const page = await screenings.results(apiKeyOf(ctx).accountId, params.id, query);
        return { body: { data: page.items.map(presentResult), next_cursor: page.nextCursor } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/screenings/{id}/results.csv',
      operationId: 'downloadScreeningResults',
      summary: 'A screening’s results as CSV',
      description:
        'Every result (filtered like the JSON page), streamed: `index,target,chain,network,label,status,' +
        'risk_level,risk_score,decision,complete,findings,error_code,error_message`, `findings` being the ' +
        "codes of the unsuppressed findings. Cells a spreadsheet would run as formulas are prefixed with `'`.",
      tag: 'Developer API',
      auth: 'api_key',
      params: screeningParams,
      query: csvQuery,
      responses: {
        200: { description: 'CSV (RFC 4180, CRLF)', contentType: 'text/csv; charset=utf-8' },
        404: NOT_FOUND,
      },
      handler: async (ctx, { params, query }) => ({
        body: await screenings.csv(apiKeyOf(ctx).accountId, params.id, query),
        contentType: 'text/csv; charset=utf-8',
        headers: { 'Content-Disposition': `attachment; filename="${params.id}.csv"` },
      }),
    }),
  ];
}
