import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { ALERT_STATUSES } from '../events/schemas.js';

/*
 * Watchlists (README, "Watchlists"): an account's lists of addresses, re-read on a schedule. Storage grows
 * with changes, not with ticks: an entry row carries the latest state's hash and verdict, a snapshot row is
 * written only when the hash changes, and an alert only for a real change (unique fingerprint per entry).
 */

/** One list of an account, with the crons of its two depths of scan. */
export const WatchlistSchema = defineEntity({
  name: 'Watchlist',
  tableName: 'watchlists',
  indexes: [
    { properties: ['accountId', 'createdAt', 'id'] },
    // the minute's job: the lists due
    { properties: ['nextTickAt'] },
    { properties: ['nextDeepAt'] },
  ],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    name: p.string().length(200),
    /** 5-field cron of the tick (account state only); at most once a minute by construction. */
    schedule: p.string().length(100),
    /** 5-field cron of the deep scan (the full risk analysis of every entry). */
    deepSchedule: p.string().length(100),
    /** `{ balance_change_pct?: number }` and later thresholds, snake_case as the API shows them. */
    thresholds: p.json<Record<string, number>>(),
    /**
     * When the tick is next due (computed when the list is saved or ticked); null: a schedule stored before
     * schedules had to run within a year, with no run within a year of the upgrade.
     */
    nextTickAt: p.datetime().nullable(),
    /** When the deep scan is next due; null as for `nextTickAt`. */
    nextDeepAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Watchlist = InferEntity<typeof WatchlistSchema>;

/**
 * One watched address. `network` is the CAIP-2 id (a renamed network keeps its entries), `target` the
 * address as the chain knows it (EIP-55 on EVM). The scan columns hold the latest outcome: the state's hash
 * (null before the baseline), the last snapshot's time, and the latest verdict of the deep scan.
 */
export const WatchlistEntrySchema = defineEntity({
  name: 'WatchlistEntry',
  tableName: 'watchlist_entries',
  uniques: [{ properties: ['watchlistId', 'network', 'target'] }],
  indexes: [
    // chunks of a tick, and the entries list, in id order
    { properties: ['watchlistId', 'id'] },
    // a tick's fan-out: the list's networks, and each network's entry ids in id order
    { properties: ['watchlistId', 'network', 'id'] },
    { properties: ['watchlistId', 'riskLevel', 'id'] },
    { properties: ['watchlistId', 'changedAt'] },
    { properties: ['watchlistId', 'lastCheckedAt'] },
  ],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    watchlistId: p.string().length(40),
    chain: p.string().length(40),
    network: p.string().length(80),
    target: p.string().length(100),
    label: p.string().length(200).nullable(),
    /** wallet / contract / program / token, or null: judged as what the chain says it is. */
    targetType: p.string().length(20).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    lastCheckedAt: p.datetime().nullable(),
    /** `ok`, or the error code of the last scan (`provider_unavailable`, …). */
    lastOutcome: p.string().length(40).nullable(),
    stateHash: p.string().length(64).nullable(),
    /** The id of the latest snapshot: an alert's fingerprint names the state it changed from. */
    snapshotId: p.string().length(40).nullable(),
    /** When the state last changed (the latest snapshot's read time). */
    changedAt: p.datetime().nullable(),
    riskLevel: p.string().length(20).nullable(),
    riskScore: p.integer().nullable(),
    /** `{ level, score, findings: [{ code, severity }] }` of the latest deep scan. */
    verdict: p.json<Record<string, unknown>>().nullable(),
    deepCheckedAt: p.datetime().nullable(),
    /**
     * EVM wallets: the last block whose approvals the deep scan has read (`approval_granted` alerts); the
     * next one reads from the block after it. Null: not read yet (the first deep scan sets it to the head,
     * so history is not alerted on).
     */
    approvalsCursorBlock: p.bigint('string').nullable(),
  },
});
export type WatchlistEntry = InferEntity<typeof WatchlistEntrySchema>;

/**
 * Each list's entries (its `entry_count`; an account's summed: what `watchlists.max_entries_per_account`
 * is checked against). Kept by statement triggers on watchlist_entries (Migrations 20261128130000 and
 * 20261128140000), in the transaction of every insert and delete, whichever code writes; never written by
 * the service. A list without entries has no row.
 */
export const WatchlistEntryCountSchema = defineEntity({
  name: 'WatchlistEntryCount',
  tableName: 'watchlist_entry_counts',
  properties: {
    accountId: p.string().length(40).primary(),
    watchlistId: p.string().length(40).primary(),
    entries: p.bigint('number'),
  },
});

/** A state of an entry, written only when it differs from the one before. */
export const WatchlistSnapshotSchema = defineEntity({
  name: 'WatchlistSnapshot',
  tableName: 'watchlist_snapshots',
  // A scan retried after a crash (same tick) writes its snapshot once.
  uniques: [{ properties: ['entryId', 'scanId'] }],
  indexes: [{ properties: ['entryId', 'readAt', 'id'] }],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    entryId: p.string().length(40),
    /** The tick or rescan that read it. */
    scanId: p.string().length(80),
    state: p.json<Record<string, unknown>>(),
    hash: p.string().length(64),
    /** Solana slot or EVM block the state was read at. */
    readAtHeight: p.bigint('number'),
    readAt: p.datetime(),
    verdict: p.json<Record<string, unknown>>().nullable(),
  },
});
export type WatchlistSnapshot = InferEntity<typeof WatchlistSnapshotSchema>;

/** A change worth telling: raised once per real change (fingerprint), then acknowledged or resolved. */
export const WatchlistAlertSchema = defineEntity({
  name: 'WatchlistAlert',
  tableName: 'watchlist_alerts',
  uniques: [{ properties: ['entryId', 'fingerprint'] }],
  indexes: [
    { properties: ['watchlistId', 'createdAt', 'id'] },
    { properties: ['accountId', 'createdAt', 'id'] },
  ],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    watchlistId: p.string().length(40),
    entryId: p.string().length(40),
    target: p.string().length(100),
    network: p.string().length(80),
    type: p.string().length(40),
    severity: p.string().length(20),
    previous: p.json<unknown>().nullable(),
    current: p.json<unknown>().nullable(),
    evidence: p.json<Record<string, unknown>>(),
    fingerprint: p.string().length(64),
    scanId: p.string().length(80),
    status: p.enum(ALERT_STATUSES),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type WatchlistAlert = InferEntity<typeof WatchlistAlertSchema>;

/** A manual rescan: its progress is the entries checked since it was asked for. */
export const WatchlistRescanSchema = defineEntity({
  name: 'WatchlistRescan',
  tableName: 'watchlist_rescans',
  indexes: [{ properties: ['watchlistId', 'createdAt'] }],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    watchlistId: p.string().length(40),
    /** Entries on the list when the rescan was asked for. */
    total: p.integer(),
    createdAt: p.datetime(),
    finishedAt: p.datetime().nullable(),
  },
});
export type WatchlistRescan = InferEntity<typeof WatchlistRescanSchema>;
