import type { NetworkDef } from '../chains/registry.js';
import { time, timeOrNull, type Time } from '../db/sql.js';
import type { AlertStatus } from '../events/schemas.js';
import { DEFAULT_BALANCE_CHANGE_PCT } from './schemas.js';

/*
 * Watchlists as the services hand them to presenters (views), the rows of the watchlist tables as raw
 * queries return them, and the mapping from one to the other. A network is named as the registry knows
 * it (`mainnet`); an entry of a network no longer known keeps its CAIP-2 id.
 */

/** The networks riskwatch knows, by CAIP-2 id (the tables store that id). */
export class KnownNetworks {
  private readonly byId = new Map<string, NetworkDef>();

  constructor(readonly all: readonly NetworkDef[]) {
    for (const def of all) if (!this.byId.has(def.caip2)) this.byId.set(def.caip2, def);
  }

  byCaip2(caip2: string): NetworkDef | undefined {
    return this.byId.get(caip2);
  }
}

export const thresholdsOf = (input: { balance_change_pct?: number | undefined } | undefined): Thresholds => ({
  balance_change_pct: input?.balance_change_pct ?? DEFAULT_BALANCE_CHANGE_PCT,
});

export interface Thresholds {
  balance_change_pct: number;
}

export interface WatchlistView {
  id: string;
  name: string;
  schedule: string;
  deepSchedule: string;
  thresholds: Thresholds;
  entryCount: number;
  /** When each schedule is next due; null: a schedule from before the one-year rule with no run in a year. */
  nextTickAt: Date | null;
  nextDeepAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface EntryView {
  id: string;
  watchlistId: string;
  target: string;
  chain: string;
  /** The network's name as the registry knows it (`mainnet`); the CAIP-2 id when no network has it. */
  network: string;
  label: string | null;
  targetType: string | null;
  createdAt: Date;
  lastCheckedAt: Date | null;
  lastOutcome: string | null;
  riskLevel: string | null;
  riskScore: number | null;
  changedAt: Date | null;
  findings: { code: string; severity: string }[];
}

export interface SnapshotView {
  id: string;
  state: Record<string, unknown>;
  hash: string;
  readAt: Date;
  /** Where it was read: a Solana slot or an EVM block. */
  position: { slot: number } | { block: number };
  verdict: Record<string, unknown> | null;
}

export interface AlertView {
  id: string;
  watchlistId: string;
  entryId: string;
  target: string;
  chain: string;
  network: string;
  type: string;
  severity: string;
  previous: unknown;
  current: unknown;
  evidence: Record<string, unknown>;
  status: AlertStatus;
  createdAt: Date;
  updatedAt: Date;
}

export interface WatchlistRow {
  id: string;
  name: string;
  schedule: string;
  deep_schedule: string;
  thresholds: Record<string, number> | null;
  entry_count: number;
  next_tick_at: Time | null;
  next_deep_at: Time | null;
  created_at: Time;
  updated_at: Time;
}

export interface EntryRow {
  id: string;
  watchlist_id: string;
  chain: string;
  network: string;
  target: string;
  label: string | null;
  target_type: string | null;
  created_at: Time;
  last_checked_at: Time | null;
  last_outcome: string | null;
  changed_at: Time | null;
  risk_level: string | null;
  risk_score: number | null;
  verdict: Record<string, unknown> | null;
}

export interface SnapshotRow {
  id: string;
  state: Record<string, unknown>;
  hash: string;
  read_at_height: string | number;
  read_at: Time;
  verdict: Record<string, unknown> | null;
}

export interface AlertRow {
  id: string;
  watchlist_id: string;
  entry_id: string;
  target: string;
  network: string;
  type: string;
  severity: string;
  previous: unknown;
  current: unknown;
  evidence: Record<string, unknown>;
  status: AlertStatus;
  created_at: Time;
  updated_at: Time;
}

export function watchlistOf(r: WatchlistRow): WatchlistView {
  return {
    id: r.id,
    name: r.name,
    schedule: r.schedule,
    deepSchedule: r.deep_schedule,
    thresholds: thresholdsOf(r.thresholds ?? undefined),
    entryCount: Number(r.entry_count),
    nextTickAt: timeOrNull(r.next_tick_at),
    nextDeepAt: timeOrNull(r.next_deep_at),
    createdAt: time(r.created_at),
    updatedAt: time(r.updated_at),
  };
}

export function entryOf(r: EntryRow, networks: KnownNetworks): EntryView {
  const findings = Array.isArray(r.verdict?.findings) ? (r.verdict.findings as unknown[]) : [];
  return {
    id: r.id,
    watchlistId: r.watchlist_id,
    target: r.target,
    chain: r.chain,
    network: networks.byCaip2(r.network)?.network ?? r.network,
    label: r.label,
    targetType: r.target_type,
    createdAt: time(r.created_at),
    lastCheckedAt: timeOrNull(r.last_checked_at),
    lastOutcome: r.last_outcome,
    riskLevel: r.risk_level,
    riskScore: r.risk_score,
    changedAt: timeOrNull(r.changed_at),
    findings: findings.flatMap((f) => {
      const { code, severity } = (f ?? {}) as { code?: unknown; severity?: unknown };
      return typeof code === 'string' && typeof severity === 'string' ? [{ code, severity }] : [];
    }),
  };
}

export function alertOf(r: AlertRow, networks: KnownNetworks): AlertView {
  const def = networks.byCaip2(r.network);
  return {
    id: r.id,
    watchlistId: r.watchlist_id,
    entryId: r.entry_id,
    target: r.target,
    chain: def?.chain ?? r.network.split(':')[0]!,
    network: def?.network ?? r.network,
    type: r.type,
    severity: r.severity,
    previous: r.previous ?? null,
    current: r.current ?? null,
    evidence: r.evidence,
    status: r.status,
    createdAt: time(r.created_at),
    updatedAt: time(r.updated_at),
  };
}
