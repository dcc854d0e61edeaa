import type { Actor } from '../audit/actor.js';
import { clip, familyOfCaip2, type NetworkDef } from '../chains/registry.js';
import { time } from '../db/sql.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { notFound } from '../platform/errors.js';
import { auditAlertUpdated } from './audit.js';
import { requireWatchlist } from './lists.js';
import type { WatchlistRepository } from './repository.js';
import type { AlertsQuery, AlertUpdate } from './schemas.js';
import { alertOf, KnownNetworks, type AlertView, type SnapshotView } from './views.js';

/*
 * What the scans left of a watchlist's entries: each entry's snapshots (its state, written when it changed)
 * and the list's alerts, with the status an account gives them. Every query names the caller's account.
 */

/** Snapshot history and alerts of an account's watchlists. */
export class WatchlistHistoryService {
  private readonly networks: KnownNetworks;

  constructor(
    private readonly repo: WatchlistRepository,
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
    const network = await this.repo.history.entryNetwork(accountId, watchlistId, entryId);
    if (!network) throw notFound(`Entry "${clip(entryId)}" of watchlist "${clip(watchlistId)}"`);
    const family = familyOfCaip2(network);
    const rows = await this.repo.history.snapshots(accountId, entryId, q.limit, q.cursor);
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
    await requireWatchlist(this.repo.lists, accountId, watchlistId);
    const rows = await this.repo.history.alerts(accountId, watchlistId, q);
    return keysetPage(
      rows.map((r) => alertOf(r, this.networks)),
      q.limit,
      (a) => ({ at: a.createdAt.toISOString(), id: a.id }),
    );
  }

  /** Sets an alert's status (`acknowledged`, `resolved`), audited when it changed. */
  async updateAlert(
    accountId: string,
    watchlistId: string,
    alertId: string,
    patch: AlertUpdate,
    actor: Actor,
  ): Promise<AlertView> {
    const row = await this.repo.transactional(async (em) => {
      const before = await this.repo.history.lockAlertStatus(em, accountId, watchlistId, alertId);
      if (!before) throw notFound(`Alert "${clip(alertId)}" of watchlist "${clip(watchlistId)}"`);
      const after = await this.repo.history.setAlertStatus(em, alertId, patch.status);
      await auditAlertUpdated(em, actor, accountId, alertId, { before, after: after.status });
      return after;
    });
    return alertOf(row, this.networks);
  }
}
