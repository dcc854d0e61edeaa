import { clip, type NetworkDef } from '../chains/registry.js';
import type { Orm } from '../db/orm.js';
import { run, time, Where } from '../db/sql.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { notFound } from '../platform/errors.js';
import { requireWatchlist } from './lists.js';
import type { AlertsQuery, AlertUpdate } from './schemas.js';
import {
  ALERT_COLUMNS,
  alertOf,
  KnownNetworks,
  type AlertRow,
  type AlertView,
  type SnapshotRow,
  type SnapshotView,
} from './views.js';

/*
 * What the scans left of a watchlist's entries: each entry's snapshots (its state, written when it changed)
 * and the list's alerts, with the status an account gives them. Every query names the caller's account.
 */

/** Snapshot history and alerts of an account's watchlists. */
export class WatchlistHistoryService {
  private readonly networks: KnownNetworks;

  constructor(
    private readonly orm: Orm,
    networks: readonly NetworkDef[],
  ) {
    this.networks = new KnownNetworks(networks);
  }

  /** One page of an entry's snapshots (states written when they changed), newest first. */
  async listSnapshots(
    accountId: string,
    watchlistId: string,
    entryId: string,
    q: { limit: number; cursor?: string | undefined },
  ): Promise<Page<SnapshotView>> {
    const [entry] = await run<{ network: string }[]>(
      this.orm,
      'select network from watchlist_entries where id = ? and watchlist_id = ? and account_id = ?',
      [entryId, watchlistId, accountId],
    );
    if (!entry) throw notFound(`Entry "${clip(entryId)}" of watchlist "${clip(watchlistId)}"`);
    const family =
      this.networks.byCaip2(entry.network)?.family ??
      (entry.network.startsWith('solana:') ? 'solana' : 'evm');
    const where = new Where('entry_id = ?', entryId)
      .and('account_id = ?', accountId)
      .before(q.cursor, 'snp', 'read_at', 'id');
    const rows = await run<SnapshotRow[]>(
      this.orm,
      `select id, state, hash, read_at_height, read_at, verdict from watchlist_snapshots
        where ${where.sql} order by read_at desc, id desc limit ?`,
      [...where.params, q.limit + 1],
    );
    return keysetPage(
      rows.map((r): SnapshotView => {
        const height = Number(r.read_at_height);
        return {
          id: r.id,
          state: r.state,
          hash: r.hash,
          readAt: time(r.read_at),
          position: family === 'solana' ? { slot: height } : { block: height },
          verdict: r.verdict,
        };
      }),
      q.limit,
      (s) => ({ at: s.readAt.toISOString(), id: s.id }),
    );
  }

  // ---- alerts -------------------------------------------------------------------------------------

  /** One page of the list's alerts, newest first, optionally filtered. */
  async listAlerts(accountId: string, watchlistId: string, q: AlertsQuery): Promise<Page<AlertView>> {
    await requireWatchlist(this.orm.em.fork(), accountId, watchlistId);
    const where = new Where('watchlist_id = ?', watchlistId)
      .and('account_id = ?', accountId)
      .andIf(q.status, 'status = ?')
      .andIf(q.type, 'type = ?')
      .andIf(q.severity, 'severity = ?')
      .andIf(q.since, 'created_at >= ?')
      .before(q.cursor, 'alr', 'created_at', 'id');
    const rows = await run<AlertRow[]>(
      this.orm,
      `select ${ALERT_COLUMNS} from watchlist_alerts where ${where.sql}
        order by created_at desc, id desc limit ?`,
      [...where.params, q.limit + 1],
    );
    return keysetPage(
      rows.map((r) => alertOf(r, this.networks)),
      q.limit,
      (a) => ({ at: a.createdAt.toISOString(), id: a.id }),
    );
  }

  /** Sets an alert's status (`acknowledged`, `resolved`). */
  async updateAlert(
    accountId: string,
    watchlistId: string,
    alertId: string,
    patch: AlertUpdate,
  ): Promise<AlertView> {
    const [row] = await run<AlertRow[]>(
      this.orm,
      `update watchlist_alerts set status = ?, updated_at = now()
        where id = ? and watchlist_id = ? and account_id = ? returning ${ALERT_COLUMNS}`,
      [patch.status, alertId, watchlistId, accountId],
    );
    if (!row) throw notFound(`Alert "${clip(alertId)}" of watchlist "${clip(watchlistId)}"`);
    return alertOf(row, this.networks);
  }
}
