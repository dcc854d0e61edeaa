import { actorOf } from '../audit/actor.js';
import { defineRoute } from '../http/route.js';
import { apiKeyOf } from '../http/state.js';
import {
  presentAddEntries,
  presentAlert,
  presentAlertPage,
  presentEntry,
  presentEntryPage,
  presentRemoveEntries,
  presentRescan,
  presentRescanAccepted,
  presentSnapshotPage,
  presentWatchlist,
  presentWatchlistPage,
} from './present.js';
import {
  addEntriesResultSchema,
  addEntriesSchema,
  alertPageSchema,
  alertParamsSchema,
  alertSchema,
  alertsQuerySchema,
  entriesQuerySchema,
  entryParamsSchema,
  listWatchlistsQuerySchema,
  newWatchlistSchema,
  removeEntriesResultSchema,
  removeEntriesSchema,
  rescanAcceptedSchema,
  rescanParamsSchema,
  rescanSchema,
  snapshotPageSchema,
  snapshotsQuerySchema,
  updateAlertSchema,
  updateWatchlistSchema,
  watchlistEntryPageSchema,
  watchlistEntrySchema,
  watchlistPageSchema,
  watchlistParamsSchema,
  watchlistSchema,
} from './schemas.js';
import type { RescansService } from './rescans.js';
import type { WatchlistEntriesService } from './entries.js';
import type { WatchlistHistoryService } from './history.js';
import type { WatchlistsService } from './lists.js';

/** Bulk entry bodies (10,000 entries) may be up to 2 MiB (docs/api.md, "Conventions"). */
const BULK_BODY_LIMIT_KB = 2048;

const TAG = 'Developer API';
const WATCHLIST_404 = 'Not found: no such watchlist of the account (another account’s included)';
const BAD_SCHEDULE =
  '`invalid_request`: a field is invalid; a bad `schedule` / `deep_schedule` is named in `errors[]` ' +
  '(5-field cron expressions only: a 6-field one would run more often than once a minute; and one that ' +
  'runs at least once within the next year)';
const BULK_400 =
  '`too_many_entries`: more than 10,000 items (nothing is stored); `invalid_request`: a malformed body ' +
  '(`errors[]` per field). Per-entry problems are not errors of the call: see `results`.';

/** The key's account's watchlists (API key + entitlement), every call scoped to that account. */
export function watchlistRoutes({
  lists,
  entries,
  history,
  rescans,
}: {
  lists: WatchlistsService;
  entries: WatchlistEntriesService;
  history: WatchlistHistoryService;
  rescans: RescansService;
}) {
  const account = (ctx: Parameters<typeof apiKeyOf>[0]) => apiKeyOf(ctx).accountId;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/watchlists',
      operationId: 'createWatchlist',
      summary: 'Create a watchlist',
      description:
        'A list of addresses re-read on `schedule` (the tick: account state, default every 5 minutes) and ' +
        'fully re-analysed on `deep_schedule` (default daily). Add addresses with ' +
        '`POST /api/v1/watchlists/{id}/entries`. Its due times (`next_tick_at`, `next_deep_at`) are ' +
        'computed from the crons when it is saved and after each scan. An account holds at most ' +
        '`watchlists.max_per_account` lists (1,000 by default).',
      tag: TAG,
      auth: 'api_key',
      body: newWatchlistSchema,
      responses: {
        201: { description: 'Created', schema: watchlistSchema },
        400: { description: BAD_SCHEDULE },
        409: {
          description:
            '`limit_exceeded`: the account holds `watchlists.max_per_account` lists already (the detail names the limit)',
        },
      },
      handler: async (ctx, { body }) => ({
        status: 201 as const,
        body: presentWatchlist(await lists.createWatchlist(account(ctx), body, actorOf(ctx))),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/watchlists',
      operationId: 'listWatchlists',
      summary: 'List the account’s watchlists',
      description: 'Newest first, paginated with `limit` and the opaque `next_cursor`.',
      tag: TAG,
      auth: 'api_key',
      query: listWatchlistsQuerySchema,
      responses: { 200: { description: 'One page of watchlists', schema: watchlistPageSchema } },
      handler: async (ctx, { query }) => ({
        body: presentWatchlistPage(await lists.listWatchlists(account(ctx), query)),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/watchlists/{id}',
      operationId: 'getWatchlist',
      summary: 'Get a watchlist',
      tag: TAG,
      auth: 'api_key',
      params: watchlistParamsSchema,
      responses: {
        200: { description: 'The watchlist', schema: watchlistSchema },
        404: { description: WATCHLIST_404 },
      },
      handler: async (ctx, { params }) => ({
        body: presentWatchlist(await lists.getWatchlist(account(ctx), params.id)),
      }),
    }),
    defineRoute({
      method: 'patch',
      path: '/api/v1/watchlists/{id}',
      operationId: 'updateWatchlist',
      summary: 'Change a watchlist’s name, schedules or thresholds',
      tag: TAG,
      auth: 'api_key',
      params: watchlistParamsSchema,
      body: updateWatchlistSchema,
      responses: {
        200: { description: 'The watchlist as it is now', schema: watchlistSchema },
        400: { description: BAD_SCHEDULE },
        404: { description: WATCHLIST_404 },
      },
      handler: async (ctx, { params, body }) => ({
        body: presentWatchlist(await lists.updateWatchlist(account(ctx), params.id, body, actorOf(ctx))),
      }),
    }),
    defineRoute({
      method: 'delete',
      path: '/api/v1/watchlists/{id}',
      operationId: 'deleteWatchlist',
      summary: 'Delete a watchlist with its entries, snapshots, alerts and rescans',
      tag: TAG,
      auth: 'api_key',
      params: watchlistParamsSchema,
      responses: {
        200: {
          description: 'The deleted watchlist (`entry_count`: the entries deleted)',
          schema: watchlistSchema,
        },
        404: { description: WATCHLIST_404 },
      },
      handler: async (ctx, { params }) => ({
        body: presentWatchlist(await lists.deleteWatchlist(account(ctx), params.id, actorOf(ctx))),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/watchlists/{id}/entries',
      operationId: 'addWatchlistEntries',
      summary: 'Add up to 10,000 addresses to a watchlist',
      description:
        'Each entry is answered on its own, in request order: `created`, `exists` (already on the list: not ' +
        'an error), or `error` with a `code`: `invalid_address`, `unsupported_chain` (unknown, or no node ' +
        'provider configured), `unsupported_target_type`, `duplicate_in_request` (the same target and ' +
        'network earlier in this call), `limit_exceeded` (the account’s entries on all its watchlists ' +
        'would pass `watchlists.max_entries_per_account`; the entries before it are kept). The valid entries ' +
        'are stored together. Without `chain` and `network` the address format decides, as in preflight: ' +
        'base58 → solana/mainnet, 0x… → ethereum/mainnet. Bodies up to 2 MiB.',
      tag: TAG,
      auth: 'api_key',
      params: watchlistParamsSchema,
      body: addEntriesSchema,
      bodyLimitKb: BULK_BODY_LIMIT_KB,
      responses: {
        200: { description: 'One result per entry', schema: addEntriesResultSchema },
        400: { description: BULK_400 },
        404: { description: WATCHLIST_404 },
      },
      handler: async (ctx, { params, body }) => ({
        body: presentAddEntries(
          await entries.addEntries(account(ctx), params.id, body.entries, actorOf(ctx)),
        ),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/watchlists/{id}/entries',
      operationId: 'listWatchlistEntries',
      summary: 'List a watchlist’s entries',
      description:
        'In the order they were added (id order), paginated with `limit` and the opaque `next_cursor`. ' +
        '`level` keeps the entries whose latest deep scan has that risk level; `changed_since` those whose ' +
        'watched state changed at or after that time.',
      tag: TAG,
      auth: 'api_key',
      params: watchlistParamsSchema,
      query: entriesQuerySchema,
      responses: {
        200: { description: 'One page of entries', schema: watchlistEntryPageSchema },
        404: { description: WATCHLIST_404 },
      },
      handler: async (ctx, { params, query }) => ({
        body: presentEntryPage(await entries.listEntries(account(ctx), params.id, query)),
      }),
    }),
    defineRoute({
      method: 'delete',
      path: '/api/v1/watchlists/{id}/entries/{entry_id}',
      operationId: 'removeWatchlistEntry',
      summary: 'Remove one entry (with its snapshots and alerts)',
      tag: TAG,
      auth: 'api_key',
      params: entryParamsSchema,
      responses: {
        200: { description: 'The removed entry', schema: watchlistEntrySchema },
        404: { description: 'Not found: no such entry on this watchlist of the account' },
      },
      handler: async (ctx, { params }) => ({
        body: presentEntry(await entries.removeEntry(account(ctx), params.id, params.entry_id, actorOf(ctx))),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/watchlists/{id}/entries/remove',
      operationId: 'removeWatchlistEntriesByTarget',
      summary: 'Remove up to 10,000 entries by target',
      description:
        'Each target is answered on its own: `removed` (with the ids removed), `not_found`, or `error` ' +
        '(`invalid_address`, `unsupported_chain`, `duplicate_in_request`). With `chain` or `network` the ' +
        'target is removed on that network; with neither, on every network of the list. Snapshots and ' +
        'alerts of removed entries go with them.',
      tag: TAG,
      auth: 'api_key',
      params: watchlistParamsSchema,
      body: removeEntriesSchema,
      bodyLimitKb: BULK_BODY_LIMIT_KB,
      responses: {
        200: { description: 'One result per target', schema: removeEntriesResultSchema },
        400: { description: BULK_400 },
        404: { description: WATCHLIST_404 },
      },
      handler: async (ctx, { params, body }) => ({
        body: presentRemoveEntries(
          await entries.removeEntries(account(ctx), params.id, body.targets, actorOf(ctx)),
        ),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/watchlists/{id}/entries/{entry_id}/snapshots',
      operationId: 'listWatchlistEntrySnapshots',
      summary: 'An entry’s state history',
      description:
        'The states the scanner read, written only when they changed (the first is the baseline), newest ' +
        'first, each with the slot (Solana) or block (EVM) it was read at.',
      tag: TAG,
      auth: 'api_key',
      params: entryParamsSchema,
      query: snapshotsQuerySchema,
      responses: {
        200: { description: 'One page of snapshots', schema: snapshotPageSchema },
        404: { description: 'Not found: no such entry on this watchlist of the account' },
      },
      handler: async (ctx, { params, query }) => ({
        body: presentSnapshotPage(
          await history.listSnapshots(account(ctx), params.id, params.entry_id, query),
        ),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/watchlists/{id}/rescan',
      operationId: 'rescanWatchlist',
      summary: 'Re-analyse every entry now',
      description:
        'Queues a full analysis of every entry (what the deep schedule does) and answers at once; follow it ' +
        'at `status_url`. One at a time per list: asked for while the list’s last rescan still runs, the ' +
        'answer is that rescan (its id, `running` or `queued`). A list may be rescanned once every ' +
        '`watchlists.rescan_min_interval_s` (300 s by default), counted from the last rescan asked for; sooner ' +
        'is `429 rate_limited` with `Retry-After`. A rescan that made no progress for an hour after its job ' +
        'ended (its chunks failed for good) no longer counts as running.',
      tag: TAG,
      auth: 'api_key',
      params: watchlistParamsSchema,
      responses: {
        202: {
          description: 'Queued',
          schema: rescanAcceptedSchema,
          headers: { Location: 'The rescan’s progress (`status_url`)' },
        },
        404: { description: WATCHLIST_404 },
        429: {
          description:
            '`rate_limited`: the list was rescanned less than `watchlists.rescan_min_interval_s` ago; ' +
            '`Retry-After` says when it may be again',
        },
      },
      handler: async (ctx, { params }) => {
        const body = presentRescanAccepted(
          await rescans.requestRescan(account(ctx), params.id, actorOf(ctx)),
        );
        return { status: 202 as const, body, headers: { Location: body.status_url } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/watchlists/{id}/rescans/{rescan_id}',
      operationId: 'getWatchlistRescan',
      summary: 'A rescan’s progress',
      description:
        '`checked` of `total` entries (those on the list when it was asked for) re-analysed since; ' +
        '`completed` once none is left.',
      tag: TAG,
      auth: 'api_key',
      params: rescanParamsSchema,
      responses: {
        200: { description: 'Its progress', schema: rescanSchema },
        404: { description: 'Not found: no such rescan of this watchlist of the account' },
      },
      handler: async (ctx, { params }) => ({
        body: presentRescan(await rescans.getRescan(account(ctx), params.id, params.rescan_id)),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/watchlists/{id}/alerts',
      operationId: 'listWatchlistAlerts',
      summary: 'List a watchlist’s alerts',
      description:
        'Newest first, paginated with `limit` and the opaque `next_cursor`; filters `status`, `type`, ' +
        '`severity` and `since` (raised at or after).',
      tag: TAG,
      auth: 'api_key',
      params: watchlistParamsSchema,
      query: alertsQuerySchema,
      responses: {
        200: { description: 'One page of alerts', schema: alertPageSchema },
        404: { description: WATCHLIST_404 },
      },
      handler: async (ctx, { params, query }) => ({
        body: presentAlertPage(await history.listAlerts(account(ctx), params.id, query)),
      }),
    }),
    defineRoute({
      method: 'patch',
      path: '/api/v1/watchlists/{id}/alerts/{alert_id}',
      operationId: 'updateWatchlistAlert',
      summary: 'Acknowledge or resolve an alert',
      tag: TAG,
      auth: 'api_key',
      params: alertParamsSchema,
      body: updateAlertSchema,
      responses: {
        200: { description: 'The alert as it is now', schema: alertSchema },
        404: { description: 'Not found: no such alert on this watchlist of the account' },
      },
      handler: async (ctx, { params, body }) => ({
        body: presentAlert(
          await history.updateAlert(account(ctx), params.id, params.alert_id, body, actorOf(ctx)),
        ),
      }),
    }),
  ];
}
