import type { RedisClient } from '../platform/redis.js';
import type { ChainProviders } from '../chains/providers.js';
import type { NetworkDef } from '../chains/registry.js';
import type { AfterCommit, EventLog, NewEvent } from '../events/log.js';
import type { ImpactService } from '../impact/service.js';
import type { JobPayload, JobQueues, ScanMode } from '../jobs/queues.js';
import { AppError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { Logger } from '../platform/logger.js';
import type { RiskService } from '../risk/service.js';
import {
  alertThresholds,
  approvalsCursor,
  chunkWrite,
  compareStates,
  followsApprovals,
  raiseAlerts,
  storedVerdict,
  targetTypeOf,
  toAnalyse,
  type AlertRowDraft,
  type EntryOutcome,
  type ScannedEntry,
  type StoredVerdict,
} from './judge.js';
import type { WatchMetrics, WatchOverview } from './metrics.js';
import { presentAlertEvent } from './present.js';
import type { WatchlistRepository } from './repository.js';
import { DueTimes } from './schedule.js';
import type { WatchlistsSettings } from './settings.js';
import { readEvmStates, readSolanaStates } from './state.js';
import { alertOf, KnownNetworks } from './views.js';

/*
 * The watchlist scan pipeline (docs/api.md, "Watchlists"), run by the workers:
 *
 *   watchlists-due (every minute)  → one `watchlist-tick` per due list, id `<mode>-<list>-<minute>`
 *   watchlist-tick                 → its entries in `watchlist-chunk` jobs of ≤ 100 of one network
 *   watchlist-chunk                → one batched state read, hashes compared with the entries' last ones;
 *                                    a full risk analysis for changed entries (every entry on a deep scan,
 *                                    and an EVM wallet's approvals granted since its block cursor);
 *                                    snapshots of the changes, alerts of the diff and of the approvals, and
 *                                    the entries' scan columns (the cursor too) written in one transaction
 *
 * Every id is deterministic, so replicas and retries enqueue each job once; a chunk writes in one
 * transaction (a crash before the commit writes nothing, a retry after it finds nothing changed), and the
 * unique indexes (entry, scan) on snapshots and (entry, fingerprint) on alerts keep a repeat out.
 */

/** Entries per chunk job: Solana's getMultipleAccounts takes 100 addresses. */
export const CHUNK_SIZE = 100;
/** Chunk jobs added to the queue per round trip while a tick fans out. */
const ENQUEUE_BATCH = 500;
/** Due lists locked, enqueued and moved on per transaction of the minute's job. */
const DUE_BATCH = 500;
/** How long a scan's progress counters stay in Redis. */
const SCAN_PROGRESS_TTL_S = 86_400;

export interface WatchlistScannerDeps {
  /** Watchlists' tables (the scans' SQL: `repo.scans`). */
  repo: WatchlistRepository;
  redis: RedisClient;
  redisKeyPrefix: string;
  providers: ChainProviders;
  risk: RiskService;
  queues: JobQueues;
  impact: ImpactService;
  logger: Logger;
  settings: WatchlistsSettings;
  /** Where each new alert's `watchlist.alert` event is appended, in the alert's own transaction. */
  events: EventLog;
}

export class WatchlistScanner {
  private metrics: WatchMetrics | undefined;
  private readonly networks: KnownNetworks;

  constructor(private readonly deps: WatchlistScannerDeps) {
    this.networks = new KnownNetworks(deps.providers.networks);
  }

  /** Metrics of this process (workers only). */
  useMetrics(metrics: WatchMetrics): void {
    this.metrics = metrics;
  }

  /**
   * The minute's job: every list due at `at` (its stored `next_deep_at` or `next_tick_at` has come) gets
   * one tick job, and its due times move past this minute: one indexed query, whatever the lists' crons.
   * A list missed while no scheduler ran is scanned once at the next minute. The rows are locked while
   * their jobs are enqueued, so a job of the next minute running beside this one waits and sees them
   * moved on; every id is deterministic (`<mode>-<list>-<minute>`), so a retry enqueues nothing twice.
   */
  async enqueueDue(at: Date): Promise<number> {
    const minuteMs = Math.floor(at.getTime() / 60_000) * 60_000;
    const minute = new Date(minuteMs);
    const dueTimes = new DueTimes(minute);
    const store = this.deps.repo.scans;
    let enqueued = 0;
    for (let after = ''; ;) {
      const batch = await this.deps.repo.transactional(async (em) => {
        const lists = await store.lockDue(em, minute, after, DUE_BATCH);
        const due = lists.map((wl) => {
          const mode: ScanMode = wl.deep_due ? 'deep' : 'tick';
          const scanId = `${mode}-${wl.id}-${minuteMs / 1000}`;
          return { payload: { watchlist_id: wl.id, scan_id: scanId, mode }, jobId: scanId };
        });
        await this.deps.queues.enqueueMany('watchlist-tick', due);
        // A deep scan reads the state too: it stands for a tick due at the same minute.
        await store.moveDue(
          em,
          lists.map((wl) => ({
            id: wl.id,
            next_tick_at: wl.tick_due || wl.deep_due ? dueTimes.next(wl.schedule) : undefined,
            next_deep_at: wl.deep_due ? dueTimes.next(wl.deep_schedule) : undefined,
          })),
        );
        return lists;
      });
      enqueued += batch.length;
      if (batch.length < DUE_BATCH) return enqueued;
      after = batch[batch.length - 1]!.id;
    }
  }

  /** A tick: the list's entries, network by network in id order, as chunk jobs `<scan_id>-<n>`. */
  async fanOut(job: JobPayload<'watchlist-tick'>): Promise<{ chunks: number; entries: number }> {
    const pending: { payload: JobPayload<'watchlist-chunk'>; jobId: string }[] = [];
    let chunks = 0;
    let entries = 0;
    const flush = async () => {
      await this.deps.queues.enqueueMany('watchlist-chunk', pending.splice(0));
    };
    for (const network of await this.deps.repo.scans.networksOf(job.watchlist_id)) {
      let after = '';
      for (;;) {
        const ids = await this.deps.repo.scans.entryIds(job.watchlist_id, network, after, CHUNK_SIZE * 10);
        for (let i = 0; i < ids.length; i += CHUNK_SIZE)
          pending.push({
            payload: { ...job, entry_ids: ids.slice(i, i + CHUNK_SIZE) },
            jobId: `${job.scan_id}-${chunks++}`,
          });
        entries += ids.length;
        if (pending.length >= ENQUEUE_BATCH) await flush();
        if (ids.length < CHUNK_SIZE * 10) break;
        after = ids[ids.length - 1]!;
      }
    }
    // Progress first (the chunks may start at once), then the last jobs.
    const key = this.progressKey(job.scan_id);
    await this.deps.redis
      .multi()
      .hset(key, { chunks, started_at: Date.now(), mode: job.mode })
      .expire(key, SCAN_PROGRESS_TTL_S)
      .exec();
    await flush();
    return { chunks, entries };
  }

  /** One chunk: read, compare, analyse what changed, write (see the top of this module). */
  async scanChunk(
    job: JobPayload<'watchlist-chunk'>,
  ): Promise<{ scanned: number; changed: number; alerts: number }> {
    const started = performance.now();
    const store = this.deps.repo.scans;
    const thresholds = await store.thresholds(job.watchlist_id);
    const entries = thresholds ? await store.entries(job.watchlist_id, job.entry_ids) : [];
    if (entries.length === 0) return { scanned: 0, changed: 0, alerts: 0 };

    const network = this.deps.providers.resolve(undefined, entries[0]!.network);
    const reads = await this.readStates(network, entries).catch(async (err: unknown) => {
      await store.markOutcome(
        entries.map((e) => e.id),
        errorCode(err),
      );
      throw err;
    });
    const outcomes = compareStates(entries, reads);
    const snapshots = await store.snapshotsOf(entries);
    await eachLimited(toAnalyse(job.mode, outcomes), this.deps.settings.deep_concurrency, async (o) => {
      const result = await this.analyse(o, o.changed && o.entry.state_hash !== null);
      if ('verdict' in result) o.verdict = result.verdict;
      o.outcome = result.outcome;
      if (followsApprovals(job.mode, o)) await this.followApprovals(o);
    });
    raiseAlerts(outcomes, snapshots, alertThresholds(thresholds));
    const written = await this.write(job, outcomes);

    const seconds = (performance.now() - started) / 1000;
    this.metrics?.chunkDuration.observe({ mode: job.mode }, seconds);
    for (const o of outcomes) this.metrics?.scans.inc({ mode: job.mode, outcome: o.outcome });
    for (const a of written.alerts) this.metrics?.alerts.inc({ type: a.type, severity: a.severity });
    this.metrics?.snapshots.inc(written.snapshots);
    this.deps.impact.count('alerts_delivered', written.alerts.length);
    await written.afterCommit();
    await this.chunkDone(job);
    return {
      scanned: outcomes.length,
      changed: outcomes.filter((o) => o.changed).length,
      alerts: written.alerts.length,
    };
  }

  /** Entries on every list, and the age of the oldest check, for the gauges. */
  async overview(): Promise<WatchOverview> {
    const { entries, oldest } = await this.deps.repo.scans.overview();
    const oldestMs = oldest ? oldest.getTime() : Date.now();
    return { entries, oldestCheckAgeS: Math.max(0, (Date.now() - oldestMs) / 1000) };
  }

  private readStates(network: NetworkDef, entries: readonly ScannedEntry[]) {
    const addresses = entries.map((e) => e.target);
    return network.family === 'solana'
      ? readSolanaStates(this.deps.providers.solana(network), addresses)
      : readEvmStates(this.deps.providers.evm(network), addresses);
  }

  /**
   * The full analysis of one entry (`fresh`: its state changed, so nothing cached is reused). An EVM
   * wallet's approvals are not read from logs here: the deep scan follows them from the entry's cursor.
   */
  private async analyse(
    o: EntryOutcome,
    fresh: boolean,
  ): Promise<{ verdict: StoredVerdict; outcome: string } | { outcome: string }> {
    const { entry } = o;
    try {
      const verdict = await this.deps.risk.evaluate(
        entry.account_id,
        { chain: entry.chain, network: entry.network, address: entry.target },
        { targetType: entry.target_type ?? targetTypeOf(o.read.state), fresh, approvals: false },
      );
      if (!verdict.complete) return { outcome: 'incomplete' };
      return { verdict: storedVerdict(verdict), outcome: 'ok' };
    } catch (err) {
      const code = errorCode(err);
      if (code === 'internal_error')
        this.deps.logger.warn(
          { entry: entry.id, err: { message: (err as Error).message } },
          'watch analysis failed',
        );
      return { outcome: code };
    }
  }

  /**
   * The approvals an EVM wallet granted after its cursor (a deep scan), set on the outcome: its
   * `approval_granted` alerts and its next cursor, written with them. A failed read raises nothing and
   * keeps the cursor (the window is read next time); its error code is the entry's outcome, as a failed
   * analysis' is. A window read in part is `incomplete` (the cursor stops before the part not read).
   */
  private async followApprovals(o: EntryOutcome): Promise<void> {
    const { entry } = o;
    try {
      o.approvals = await this.deps.risk.approvalsSince(
        entry.account_id,
        { chain: entry.chain, network: entry.network, address: entry.target },
        approvalsCursor(entry),
      );
      if (!o.approvals.complete && o.outcome === 'ok') o.outcome = 'incomplete';
    } catch (err) {
      const code = errorCode(err);
      if (code === 'internal_error')
        this.deps.logger.warn(
          { entry: entry.id, err: { message: (err as Error).message } },
          'watch approvals read failed',
        );
      if (o.outcome === 'ok') o.outcome = code;
    }
  }

  /**
   * Snapshots of the changes, the alerts, every entry's scan columns and each new alert's event: one
   * transaction, so neither an alert nor its event exists without the other.
   */
  private async write(
    job: JobPayload<'watchlist-chunk'>,
    outcomes: readonly EntryOutcome[],
  ): Promise<{ snapshots: number; alerts: { type: string; severity: string }[]; afterCommit: AfterCommit }> {
    const now = new Date();
    const rows = chunkWrite(job, outcomes, now, (prefix) => newId(prefix, now.getTime()));
    const byEntry = new Map(outcomes.map((o) => [o.entry.id, o]));
    const drafts = new Map(rows.alerts.map((a) => [a.id, a]));
    return this.deps.repo.transactional(async (em) => {
      const written = await this.deps.repo.scans.writeChunk(em, rows, now);
      const { afterCommit } = await this.deps.events.append(
        em,
        written.alerts.map((r) => this.alertEvent(drafts.get(r.id)!, byEntry.get(r.entry_id)!)),
        now,
      );
      return { ...written, afterCommit };
    });
  }

  /** The `watchlist.alert` event of a new alert (docs/api.md, "Events"): the alert as the API shows it. */
  private alertEvent(alert: AlertRowDraft, o: EntryOutcome): NewEvent<'watchlist.alert'> {
    const view = alertOf({ ...alert, status: 'open', updated_at: alert.created_at }, this.networks);
    return {
      accountId: alert.account_id,
      type: 'watchlist.alert',
      watchlistId: alert.watchlist_id,
      data: presentAlertEvent(view, o.entry.chain, o.entry.verdict, o.verdict),
    };
  }

  private progressKey(scanId: string): string {
    return `${this.deps.redisKeyPrefix}watch:scan:${scanId}`;
  }

  /**
   * Counts the chunk done; the one that completes the scan observes its duration. The count, its TTL and
   * the read are one MULTI: after Redis lost the hash (flushed, restarted empty) the count makes it again,
   * and it must not come back without a TTL (it would stay for good).
   */
  private async chunkDone(job: JobPayload<'watchlist-chunk'>): Promise<void> {
    try {
      const key = this.progressKey(job.scan_id);
      const replies = await this.deps.redis
        .multi()
        .hincrby(key, 'done', 1)
        .expire(key, SCAN_PROGRESS_TTL_S)
        .hmget(key, 'chunks', 'started_at')
        .exec();
      const done = replies?.[0]?.[1] as number | undefined;
      const [chunks, startedAt] = (replies?.[2]?.[1] ?? []) as (string | null)[];
      if (done !== undefined && chunks && startedAt && done === Number(chunks))
        this.metrics?.tickDuration.observe({ mode: job.mode }, (Date.now() - Number(startedAt)) / 1000);
    } catch {
      // progress is for the metric only: a Redis hiccup here must not fail a written chunk
    }
  }
}

function errorCode(err: unknown): string {
  return err instanceof AppError ? err.code : 'internal_error';
}

/** Runs `fn` over `items`, at most `limit` at once. */
async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(lanes);
}
