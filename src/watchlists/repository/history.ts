import type { Orm } from '../../db/orm.js';
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

  /** Sets an alert's status; its row, or undefined when the account's list has no such alert. */
  async setAlertStatus(
    accountId: string,
    watchlistId: string,
    alertId: string,
    status: string,
  ): Promise<AlertRow | undefined> {
    const [row] = await run<AlertRow[]>(
      this.orm,
      `update watchlist_alerts set status = ?, updated_at = now()
        where id = ? and watchlist_id = ? and account_id = ? returning ${ALERT_COLUMNS}`,
      [status, alertId, watchlistId, accountId],
    );
    return row;
  }
}
