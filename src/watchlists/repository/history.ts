import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../../db/orm.js';
import type { AlertStatus } from '../../events/schemas.js';
import { run, Where } from '../../db/sql.js';
import type { AlertsQuery } from '../schemas.js';
import type { AlertRow, SnapshotRow } from '../views.js';

const ALERT_COLUMNS =
  'id, watchlist_id, entry_id, target, network, type, severity, previous, current, evidence, status, ' +
  'created_at, updated_at';

/** The watchlist_snapshots and watchlist_alerts tables as the API reads them (the scans write them). */
export class HistoryRows {
  constructor(private readonly orm: Orm) {}

  /** The network (CAIP-2) of the account's entry on the list, or undefined when there is none. */
  async entryNetwork(accountId: string, watchlistId: string, entryId: string): Promise<string | undefined> {
    const [row] = await run<{ network: string }[]>(
      this.orm,
      'select network from watchlist_entries where id = ? and watchlist_id = ? and account_id = ?',
      [entryId, watchlistId, accountId],
    );
    return row?.network;
  }

  /** One page of an entry's snapshots, newest first (`limit + 1` rows). */
  snapshots(
    accountId: string,
    entryId: string,
    limit: number,
    cursor: string | undefined,
  ): Promise<SnapshotRow[]> {
    const where = new Where('entry_id = ?', entryId)
      .and('account_id = ?', accountId)
      .before(cursor, 'snp', 'read_at', 'id');
    return run<SnapshotRow[]>(
      this.orm,
      `select id, state, hash, read_at_height, read_at, verdict from watchlist_snapshots
        where ${where.sql} order by read_at desc, id desc limit ?`,
      [...where.params, limit + 1],
    );
  }

  /** One page of the list's alerts, newest first, filtered (`limit + 1` rows). */
  alerts(accountId: string, watchlistId: string, q: AlertsQuery): Promise<AlertRow[]> {
    const where = new Where('watchlist_id = ?', watchlistId)
      .and('account_id = ?', accountId)
      .andIf(q.status, 'status = ?')
      .andIf(q.type, 'type = ?')
      .andIf(q.severity, 'severity = ?')
      .andIf(q.since, 'created_at >= ?')
      .before(q.cursor, 'alr', 'created_at', 'id');
    return run<AlertRow[]>(
      this.orm,
      `select ${ALERT_COLUMNS} from watchlist_alerts where ${where.sql}
        order by created_at desc, id desc limit ?`,
      [...where.params, q.limit + 1],
    );
  }

  /**
   * The status of the account's list's alert, locked FOR UPDATE in `em`'s transaction; undefined when the
   * list has no such alert.
   */
  async lockAlertStatus(
    em: EntityManager,
    accountId: string,
    watchlistId: string,
    alertId: string,
  ): Promise<AlertStatus | undefined> {
    const [row] = await em.execute<{ status: AlertStatus }[]>(
      'select status from watchlist_alerts where id = ? and watchlist_id = ? and account_id = ? for update',
      [alertId, watchlistId, accountId],
    );
    return row?.status;
  }

  /** Sets the status of an alert locked by lockAlertStatus; its row. */
  async setAlertStatus(em: EntityManager, alertId: string, status: AlertStatus): Promise<AlertRow> {
    const [row] = await em.execute<AlertRow[]>(
      `update watchlist_alerts set status = ?, updated_at = now() where id = ? returning ${ALERT_COLUMNS}`,
      [status, alertId],
    );
    return row!;
  }
}
