import type { WatchlistScanner } from '../src/watchlists/scan.js';
import type { JobHandler } from './job-handler.js';

/*
 * The watchlist jobs (src/watchlists/scan.ts): the minute's job enqueues the due lists' ticks, a tick fans
 * its entries out in chunks, a chunk is read, compared, analysed and written.
 */

export const watchlistsDue =
  (scanner: WatchlistScanner): JobHandler<'watchlists-due'> =>
  async (payload) => ({ ticks: await scanner.enqueueDue(new Date(payload.scheduled_at)) });

export const watchlistTick =
  (scanner: WatchlistScanner): JobHandler<'watchlist-tick'> =>
  (payload) =>
    scanner.fanOut(payload);

export const watchlistChunk =
  (scanner: WatchlistScanner): JobHandler<'watchlist-chunk'> =>
  (payload) =>
    scanner.scanChunk(payload);
