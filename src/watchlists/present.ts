import type { Page } from '../platform/cursor.js';
import type {
  AddEntriesResultBody,
  AlertBody,
  AlertPageBody,
  RemoveEntriesResultBody,
  RescanAcceptedBody,
  RescanBody,
  SnapshotPageBody,
  WatchlistBody,
  WatchlistEntryBody,
  WatchlistEntryPageBody,
  WatchlistPageBody,
} from './schemas.js';
import type { EventData } from '../events/schemas.js';
import type { RiskLevel } from '../risk/scoring.js';
import type { AddEntriesResult, RemoveEntriesResult } from './entries.js';
import type { AlertView, EntryView, SnapshotView, WatchlistView } from './views.js';
import type { RescanView } from './rescans.js';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export const presentWatchlist = (w: WatchlistView): WatchlistBody => ({
  id: w.id,
  name: w.name,
  schedule: w.schedule,
  deep_schedule: w.deepSchedule,
  thresholds: { ...w.thresholds },
  entry_count: w.entryCount,
  next_tick_at: iso(w.nextTickAt),
  next_deep_at: iso(w.nextDeepAt),
  created_at: w.createdAt.toISOString(),
  updated_at: w.updatedAt.toISOString(),
});

export const presentWatchlistPage = (page: Page<WatchlistView>): WatchlistPageBody => ({
  data: page.items.map(presentWatchlist),
  next_cursor: page.nextCursor,
});

export const presentEntry = (e: EntryView): WatchlistEntryBody => ({
  id: e.id,
  watchlist_id: e.watchlistId,
  target: e.target,
  chain: e.chain,
  network: e.network,
  label: e.label,
  target_type: e.targetType,
  created_at: e.createdAt.toISOString(),
  last_checked_at: iso(e.lastCheckedAt),
  last_outcome: e.lastOutcome,
  risk_level: e.riskLevel,
  risk_score: e.riskScore,
  changed_at: iso(e.changedAt),
  findings: e.findings,
});

export const presentEntryPage = (page: Page<EntryView>): WatchlistEntryPageBody => ({
  data: page.items.map(presentEntry),
  next_cursor: page.nextCursor,
});

export const presentAddEntries = (r: AddEntriesResult): AddEntriesResultBody => ({
  created: r.created,
  exists: r.exists,
  failed: r.failed,
  results: r.results,
});

export const presentRemoveEntries = (r: RemoveEntriesResult): RemoveEntriesResultBody => ({
  removed: r.removed,
  not_found: r.notFound,
  failed: r.failed,
  results: r.results,
});

export const presentSnapshotPage = (page: Page<SnapshotView>): SnapshotPageBody => ({
  data: page.items.map((s) => ({
    id: s.id,
    state: s.state,
    hash: s.hash,
    read_at: s.readAt.toISOString(),
    ...s.position,
    verdict: s.verdict,
  })),
  next_cursor: page.nextCursor,
});

export const presentAlert = (a: AlertView): AlertBody => ({
  id: a.id,
  watchlist_id: a.watchlistId,
  entry_id: a.entryId,
  target: a.target,
  chain: a.chain,
  network: a.network,
  type: a.type,
  severity: a.severity,
  previous: a.previous,
  current: a.current,
  evidence: a.evidence,
  status: a.status,
  created_at: a.createdAt.toISOString(),
  updated_at: a.updatedAt.toISOString(),
});

/**
 * The `data` of the `watchlist.alert` event of alert `a`: its alert as `GET …/alerts` shows it, and the
 * entry's risk level before the scan that raised it (`before`) and after (`now`: undefined when that scan
 * did not judge the entry, which keeps its level).
 */
export const presentAlertEvent = (
  a: AlertView,
  /** The entry's chain as stored with it. */
  chain: string,
  before: { level: RiskLevel; score: number } | null | undefined,
  now: { level: RiskLevel; score: number } | undefined,
): EventData<'watchlist.alert'> => ({
  watchlist_id: a.watchlistId,
  entry: { id: a.entryId, target: a.target, chain, network: a.network },
  alert: presentAlert(a),
  risk: {
    previous_level: before?.level ?? null,
    level: now?.level ?? before?.level ?? null,
    score: now?.score ?? before?.score ?? null,
  },
});

export const presentAlertPage = (page: Page<AlertView>): AlertPageBody => ({
  data: page.items.map(presentAlert),
  next_cursor: page.nextCursor,
});

/** Where a rescan's progress is served. */
export const rescanPath = (watchlistId: string, rescanId: string) =>
  `/api/v1/watchlists/${watchlistId}/rescans/${rescanId}`;

export const presentRescanAccepted = (r: RescanView): RescanAcceptedBody => ({
  rescan_id: r.id,
  status: r.status === 'running' ? 'running' : 'queued',
  status_url: rescanPath(r.watchlistId, r.id),
});

export const presentRescan = (r: RescanView): RescanBody => ({
  rescan_id: r.id,
  watchlist_id: r.watchlistId,
  total: r.total,
  checked: r.checked,
  status: r.status,
  created_at: r.createdAt.toISOString(),
  finished_at: iso(r.finishedAt),
});
