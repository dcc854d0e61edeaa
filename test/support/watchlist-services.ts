import { BUILT_IN_NETWORKS, resolveNetwork } from '../../src/chains/registry.js';
import type { Orm } from '../../src/db/orm.js';
import { WatchlistEntriesService } from '../../src/watchlists/entries.js';
import { WatchlistsService } from '../../src/watchlists/lists.js';
import { WatchlistRepository } from '../../src/watchlists/repository.js';

/** The watchlist services as the runtime builds them, over every built-in network, with an entry ceiling. */
export function watchlistServices(orm: Orm, maxEntriesPerAccount: number) {
  const networks = BUILT_IN_NETWORKS;
  const rows = new WatchlistRepository(orm);
  return {
    lists: new WatchlistsService(rows, {
      defaultSchedule: '*/5 * * * *',
      defaultDeepSchedule: '0 3 * * *',
      maxWatchlistsPerAccount: 1000,
    }),
    entries: new WatchlistEntriesService(
      rows,
      { networks, resolve: (c, n) => resolveNetwork(c, n, { networks, configured: networks }) },
      { maxEntriesPerAccount },
    ),
  };
}
