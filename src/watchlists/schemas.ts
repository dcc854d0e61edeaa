import { z } from 'zod';
import { pageQuery } from '../http/route.js';
import { AppError } from '../platform/errors.js';
import { SEVERITIES } from '../risk/findings.js';
import { RISK_LEVELS } from '../risk/scoring.js';
import { TARGET_TYPES } from '../risk/types.js';
import { ALERT_STATUSES, ALERT_TYPES, alertSchema, type AlertBody } from '../events/schemas.js';
import { scheduleSchema } from './schedule.js';

/*
 * What watchlists look like outside the service: the requests and bodies of the watchlist routes and the
 * JSON `riskwatch watchlists import` prints. Routes validate and document with these objects; the types
 * below are derived from them.
 */

/** Entries (or targets to remove) one call may carry. */
export const MAX_ENTRIES_PER_CALL = 10_000;

/** What the balance threshold is when a list does not set it: a move of more than 10 %. */
export const DEFAULT_BALANCE_CHANGE_PCT = 10;

/** Why one entry of a bulk call was not stored (docs/api.md, "Watchlists"). */
export const ENTRY_ERROR_CODES = [
  'invalid_address',
  'unsupported_chain',
  'unsupported_target_type',
  'duplicate_in_request',
  'limit_exceeded',
] as const;
export type EntryErrorCode = (typeof ENTRY_ERROR_CODES)[number];

const rfc3339 = z.iso
  .datetime({ offset: true })
  .transform((s) => new Date(s))
  // Years PostgreSQL's timestamptz round-trips.
  .refine((d) => d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999, 'year must be 0001–9999 (UTC)');

/**
 * An array of at most MAX_ENTRIES_PER_CALL items. Counted before any item is validated, so 10,001 entries
 * are `400 too_many_entries` whatever they hold (zod's own `max` would be an `invalid_request`).
 */
function capped<T extends z.ZodType>(field: string, items: T) {
  return z.preprocess((value) => {
    if (Array.isArray(value) && value.length > MAX_ENTRIES_PER_CALL)
      throw new AppError(
        'too_many_entries',
        `${value.length.toLocaleString('en-US')} items in \`${field}\`: one call takes at most ${MAX_ENTRIES_PER_CALL.toLocaleString('en-US')}; ` +
          'split them over several calls. Nothing was stored.',
        { errors: [{ path: field, message: `at most ${MAX_ENTRIES_PER_CALL} items` }] },
      );
    return value;
  }, z.array(items).min(1).max(MAX_ENTRIES_PER_CALL));
}

// ---- watchlists -------------------------------------------------------------------------------------

const thresholdsInputSchema = z
  .object({
    balance_change_pct: z
      .number()
      .positive()
      .max(1_000_000)
      .optional()
      .meta({
        description:
          'Raise `balance_changed` when a balance (lamports, wei, a token account’s amount) moves by more ' +
          `than this percentage of the previous one. Default ${DEFAULT_BALANCE_CHANGE_PCT}.`,
      }),
  })
  .strict();

const thresholdsSchema = z.object({ balance_change_pct: z.number() }).meta({ id: 'WatchlistThresholds' });

const schedule = (description: string) =>
  scheduleSchema.optional().meta({ description, examples: ['*/5 * * * *'] });

export const newWatchlistSchema = z
  .object({
    name: z.string().trim().min(1).max(200),
    schedule: schedule(
      'A 5-field cron expression (UTC) of the tick, which re-reads every entry’s account state. ' +
        'Default `*/5 * * * *`; a 6-field (seconds) expression is refused: at most once a minute.',
    ),
    deep_schedule: schedule(
      'A 5-field cron expression (UTC) of the deep scan, the full risk analysis of every entry. Default daily.',
    ),
    thresholds: thresholdsInputSchema.optional(),
  })
  .strict()
  .meta({ id: 'NewWatchlist' });
export type NewWatchlist = z.output<typeof newWatchlistSchema>;

export const updateWatchlistSchema = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    schedule: schedule('A 5-field cron expression (UTC) of the tick.'),
    deep_schedule: schedule('A 5-field cron expression (UTC) of the deep scan.'),
    thresholds: thresholdsInputSchema
      .optional()
      .meta({ description: 'Replaces the thresholds; a field left out takes its default.' }),
  })
  .strict()
  .meta({ id: 'WatchlistUpdate' });
export type WatchlistUpdate = z.output<typeof updateWatchlistSchema>;

export const watchlistSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    schedule: z.string(),
    deep_schedule: z.string(),
    thresholds: thresholdsSchema,
    entry_count: z.int(),
    next_tick_at: z
      .string()
      .nullable()
      .meta({
        description:
          'When the next tick is due (UTC). Null only for a list stored before schedules had to run within ' +
          'a year whose `schedule` had no run within a year of the upgrade: its ticks do not run until ' +
          'the schedule is changed (agent health names it).',
      }),
    next_deep_at: z
      .string()
      .nullable()
      .meta({ description: 'When the next deep scan is due (UTC); null as for `next_tick_at`.' }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Watchlist' });
export type WatchlistBody = z.infer<typeof watchlistSchema>;

const nextCursor = z
  .string()
  .nullable()
  .meta({ description: 'Pass as `cursor` for the next page; null on the last page.' });

export const watchlistPageSchema = z
  .object({ data: z.array(watchlistSchema), next_cursor: nextCursor })
  .meta({ id: 'WatchlistPage' });
export type WatchlistPageBody = z.infer<typeof watchlistPageSchema>;

const id = z.string().min(1).max(40);
export const watchlistParamsSchema = z.object({ id });
export const entryParamsSchema = z.object({ id, entry_id: id });
export const alertParamsSchema = z.object({ id, alert_id: id });
export const rescanParamsSchema = z.object({ id, rescan_id: id });

export const listWatchlistsQuerySchema = z.object({ ...pageQuery }).strict();

// ---- entries ----------------------------------------------------------------------------------------

const optionalName = (description: string) =>
  z.string().trim().max(100).nullable().optional().meta({ description });

/** chain / network of an entry in a request: resolved as preflight does. */
const chainFields = {
  chain: optionalName(
    'Chain name or CAIP-2 id (`solana`, `base`, `eip155:8453`). With neither chain nor network, the ' +
      'address format decides: base58 → solana/mainnet, 0x… → ethereum/mainnet.',
  ),
  network: optionalName('Network name, alias or CAIP-2 id; default `mainnet`.'),
};

export const newEntrySchema = z
  .object({
    target: z.string().max(200).meta({ description: 'A Solana or EVM address.' }),
    ...chainFields,
    label: z.string().trim().max(200).nullable().optional(),
    target_type: z
      .string()
      .trim()
      .max(40)
      .nullable()
      .optional()
      .meta({
        description:
          'What the target is expected to be: `wallet` or `contract` on EVM chains, `wallet`, `program` or ' +
          '`token` on Solana. Omitted: judged as what the chain says it is.',
        override: { enum: [...TARGET_TYPES] },
      }),
  })
  .strict()
  .meta({ id: 'NewWatchlistEntry' });
export type NewEntry = z.output<typeof newEntrySchema>;

export const addEntriesSchema = z
  .object({ entries: capped('entries', newEntrySchema) })
  .strict()
  .meta({ id: 'NewWatchlistEntries' });

export const entryResultSchema = z
  .object({
    index: z.int().meta({ description: 'Position of the entry in the request (0-based).' }),
    target: z
      .string()
      .meta({ description: 'The address as stored (EIP-55 on EVM), or as sent when it is invalid.' }),
    status: z.enum(['created', 'exists', 'error']),
    id: z.string().optional().meta({ description: 'The entry’s id (`created`, `exists`).' }),
    code: z.enum(ENTRY_ERROR_CODES).optional(),
    message: z.string().optional(),
  })
  .meta({ id: 'WatchlistEntryResult' });
export type EntryResultBody = z.infer<typeof entryResultSchema>;

export const addEntriesResultSchema = z
  .object({
    created: z.int(),
    exists: z.int(),
    failed: z.int(),
    results: z.array(entryResultSchema).meta({ description: 'One per entry sent, in request order.' }),
  })
  .meta({ id: 'WatchlistEntriesAdded' });
export type AddEntriesResultBody = z.infer<typeof addEntriesResultSchema>;

const findingSchema = z.object({ code: z.string(), severity: z.string() });

export const watchlistEntrySchema = z
  .object({
    id: z.string(),
    watchlist_id: z.string(),
    target: z.string().meta({ description: 'The address; EVM addresses in EIP-55 form.' }),
    chain: z.string(),
    network: z.string(),
    label: z.string().nullable(),
    target_type: z.string().nullable(),
    created_at: z.string(),
    last_checked_at: z.string().nullable().meta({ description: 'The latest scan; null before the first.' }),
    last_outcome: z
      .string()
      .nullable()
      .meta({ description: '`ok`, or the error code of the latest scan (`provider_unavailable`, …).' }),
    risk_level: z
      .string()
      .nullable()
      .meta({ description: 'Of the latest deep scan: low, medium, high, critical; null before one.' }),
    risk_score: z.int().nullable(),
    changed_at: z.string().nullable().meta({ description: 'When the watched state last changed.' }),
    findings: z.array(findingSchema).meta({ description: 'Of the latest deep scan.' }),
  })
  .meta({ id: 'WatchlistEntry' });
export type WatchlistEntryBody = z.infer<typeof watchlistEntrySchema>;

export const watchlistEntryPageSchema = z
  .object({ data: z.array(watchlistEntrySchema), next_cursor: nextCursor })
  .meta({ id: 'WatchlistEntryPage' });
export type WatchlistEntryPageBody = z.infer<typeof watchlistEntryPageSchema>;

export const entriesQuerySchema = z
  .object({
    ...pageQuery,
    level: z
      .enum(RISK_LEVELS)
      .optional()
      .meta({ description: 'Only entries whose latest deep scan has this risk level.' }),
    changed_since: rfc3339
      .optional()
      .meta({ description: 'Only entries whose state changed at or after this time (RFC 3339).' }),
  })
  .strict();
export type EntriesQuery = z.output<typeof entriesQuerySchema>;

export const removeTargetSchema = z
  .object({
    target: z.string().max(200),
    chain: optionalName(
      'Chain name or CAIP-2 id. With neither chain nor network: every network of the list.',
    ),
    network: chainFields.network,
  })
  .strict();
export type RemoveTarget = z.output<typeof removeTargetSchema>;

export const removeEntriesSchema = z
  .object({ targets: capped('targets', removeTargetSchema) })
  .strict()
  .meta({ id: 'WatchlistTargetsToRemove' });

export const removeResultSchema = z
  .object({
    index: z.int(),
    target: z.string(),
    status: z.enum(['removed', 'not_found', 'error']),
    ids: z.array(z.string()).optional().meta({ description: 'The entries removed (`removed`).' }),
    code: z.enum(ENTRY_ERROR_CODES).optional(),
    message: z.string().optional(),
  })
  .meta({ id: 'WatchlistRemoveResult' });
export type RemoveResultBody = z.infer<typeof removeResultSchema>;

export const removeEntriesResultSchema = z
  .object({
    removed: z.int(),
    not_found: z.int(),
    failed: z.int(),
    results: z.array(removeResultSchema),
  })
  .meta({ id: 'WatchlistEntriesRemoved' });
export type RemoveEntriesResultBody = z.infer<typeof removeEntriesResultSchema>;

// ---- snapshots --------------------------------------------------------------------------------------

export const snapshotSchema = z
  .object({
    id: z.string(),
    state: z.record(z.string(), z.unknown()).meta({ description: 'The watched account state.' }),
    hash: z.string(),
    read_at: z.string(),
    slot: z.int().optional().meta({ description: 'Solana: the slot the state was read at.' }),
    block: z.int().optional().meta({ description: 'EVM: the block the state was read at.' }),
    verdict: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'WatchlistSnapshot' });
export type SnapshotBody = z.infer<typeof snapshotSchema>;

export const snapshotPageSchema = z
  .object({ data: z.array(snapshotSchema), next_cursor: nextCursor })
  .meta({ id: 'WatchlistSnapshotPage' });
export type SnapshotPageBody = z.infer<typeof snapshotPageSchema>;

export const snapshotsQuerySchema = z.object({ ...pageQuery }).strict();

// ---- alerts -----------------------------------------------------------------------------------------

export { alertSchema, type AlertBody };

export const alertPageSchema = z
  .object({ data: z.array(alertSchema), next_cursor: nextCursor })
  .meta({ id: 'WatchlistAlertPage' });
export type AlertPageBody = z.infer<typeof alertPageSchema>;

export const alertsQuerySchema = z
  .object({
    ...pageQuery,
    status: z.enum(ALERT_STATUSES).optional(),
    type: z.enum(ALERT_TYPES).optional(),
    severity: z.enum(SEVERITIES).optional(),
    since: rfc3339.optional().meta({ description: 'Only alerts raised at or after this time (RFC 3339).' }),
  })
  .strict();
export type AlertsQuery = z.output<typeof alertsQuerySchema>;

export const ALERT_UPDATE_STATUSES = ['acknowledged', 'resolved'] as const;
export const updateAlertSchema = z
  .object({ status: z.enum(ALERT_UPDATE_STATUSES) })
  .strict()
  .meta({ id: 'WatchlistAlertUpdate' });
export type AlertUpdate = z.output<typeof updateAlertSchema>;

// ---- rescans ----------------------------------------------------------------------------------------

export const rescanAcceptedSchema = z
  .object({
    rescan_id: z.string(),
    status: z.enum(['queued', 'running']).meta({
      description:
        'A rescan asked for while another of the list runs is that one: its id and status are answered.',
    }),
    status_url: z.string().meta({ description: 'Where its progress is: GET this path.' }),
  })
  .meta({ id: 'WatchlistRescanAccepted' });
export type RescanAcceptedBody = z.infer<typeof rescanAcceptedSchema>;

export const RESCAN_STATUSES = ['queued', 'running', 'completed'] as const;
export const rescanSchema = z
  .object({
    rescan_id: z.string(),
    watchlist_id: z.string(),
    total: z.int().meta({ description: 'Entries on the list when the rescan was asked for.' }),
    checked: z.int().meta({ description: 'Entries deep-scanned since then (at most `total`).' }),
    status: z.enum(RESCAN_STATUSES),
    created_at: z.string(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'WatchlistRescan' });
export type RescanBody = z.infer<typeof rescanSchema>;

// ---- CSV import (CLI) -------------------------------------------------------------------------------

/** `riskwatch watchlists import`: what a CSV import did. */
export const importSummarySchema = z.object({
  rows: z.int(),
  created: z.int(),
  exists: z.int(),
  failed: z.int(),
  errors: z.array(z.object({ line: z.int(), target: z.string(), code: z.string(), message: z.string() })),
  seconds: z.number(),
  /** Set when a CSV syntax error stopped the import (the rows before it stay imported). */
  aborted: z.string().optional(),
});
export type ImportSummaryBody = z.infer<typeof importSummarySchema>;
