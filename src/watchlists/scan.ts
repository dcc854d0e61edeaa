import type { Redis } from 'ioredis';
import type { ChainProviders } from '../chains/providers.js';
import type { NetworkDef } from '../chains/registry.js';
import type { Orm } from '../db/orm.js';
import type { AfterCommit, EventLog, NewEvent } from '../events/log.js';
import type { ImpactService } from '../impact/service.js';
import type { JobPayload, JobQueues, ScanMode } from '../jobs/queues.js';
import { AppError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { Logger } from '../platform/logger.js';
import type { RiskService, TargetVerdict, TokenVerdict } from '../risk/service.js';
import { diffAlerts, type AlertDraft, type AlertThresholds, type Verdict } from './diff.js';
import type { WatchMetrics, WatchOverview } from './metrics.js';
import { presentAlertEvent } from './present.js';
import { DueTimes } from './schedule.js';
import type { WatchlistsSettings } from './settings.js';
import {
  readEvmStates,
  readSolanaStates,
  stateHash,
  type EvmStateRead,
  type SolanaStateRead,
  type WatchedState,
} from './state.js';
import { alertOf, KnownNetworks } from './views.js';

/*
 * The watchlist scan pipeline (docs/api.md, "Watchlists"), run by the workers:
 *
 *   watchlists-due (every minute)  → one `watchlist-tick` per due list, id `<mode>-<list>-<minute>`
 *   watchlist-tick                 → its entries in `watchlist-chunk` jobs of ≤ 100 of one network
 *   watchlist-chunk                → one batched state read, hashes compared with the entries' last ones;
 *                                    a full risk analysis for changed entries (every entry on a deep scan);
 *                                    snapshots of the changes, alerts of the diff and the entries' scan
 *                                    columns written in one transaction
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
  orm: Orm;
  redis: Redis;
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

interface EntryRow {
  id: string;
  account_id: string;
  watchlist_id: string;
  chain: string;
  network: string;
  target: string;
  target_type: string | null;
  state_hash: string | null;
  snapshot_id: string | null;
  verdict: StoredVerdict | null;
}

interface DueListRow {
  id: string;
  schedule: string;
  deep_schedule: string;
  tick_due: boolean | null;
  deep_due: boolean | null;
}

interface SnapshotRow {
  id: string;
  state: WatchedState;
  hash: string;
  read_at_height: string | number;
}

/** The verdict an entry keeps: the last complete one (an incomplete one never looks like a removal). */
type StoredVerdict = Verdict & { at: string };

/** An alert row as the scan inserts it. */
interface AlertRowDraft {
  id: string;
  watchlist_id: string;
  entry_id: string;
  target: string;
  network: string;
  type: string;
  severity: string;
  previous: unknown;
  current: unknown;
  evidence: unknown;
  created_at: string;
}

/** What one entry's scan produced, before it is written. */
interface EntryOutcome {
  entry: EntryRow;
  read: SolanaStateRead | EvmStateRead;
  hash: string;
  changed: boolean;
  verdict?: StoredVerdict;
  /** `ok`, `incomplete`, or the error code of the full analysis. */
  outcome: string;
  alerts: AlertDraft[];
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

  private get sql() {
    return this.deps.orm.em.getConnection();
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
    let enqueued = 0;
    for (let after = ''; ;) {
      const batch = await this.deps.orm.em.fork().transactional(async (em) => {
        const lists = await em.execute<DueListRow[]>(
          `select id, schedule, deep_schedule, next_tick_at <= ?::timestamptz as tick_due,
                  next_deep_at <= ?::timestamptz as deep_due
             from watchlists
            where (next_tick_at <= ?::timestamptz or next_deep_at <= ?::timestamptz) and id > ?
            order by id limit ${DUE_BATCH} for update`,
          [minute, minute, minute, minute, after],
          'all',
        );
        const due = lists.map((wl) => {
          const mode: ScanMode = wl.deep_due ? 'deep' : 'tick';
          const scanId = `${mode}-${wl.id}-${minuteMs / 1000}`;
          return { payload: { watchlist_id: wl.id, scan_id: scanId, mode }, jobId: scanId };
        });
        await this.deps.queues.enqueueMany('watchlist-tick', due);
        // A deep scan reads the state too: it stands for a tick due at the same minute.
        const moved = lists.map((wl) => ({
          id: wl.id,
          next_tick_at: wl.tick_due || wl.deep_due ? dueTimes.next(wl.schedule) : undefined,
          next_deep_at: wl.deep_due ? dueTimes.next(wl.deep_schedule) : undefined,
        }));
        if (moved.length)
          await em.execute(
            `update watchlists w
                set next_tick_at = case when u.tick then u.next_tick_at else w.next_tick_at end,
                    next_deep_at = case when u.deep then u.next_deep_at else w.next_deep_at end
               from jsonb_to_recordset(?::jsonb) as u(id text, tick boolean, next_tick_at timestamptz,
                    deep boolean, next_deep_at timestamptz)
              where w.id = u.id`,
            [
              JSON.stringify(
                moved.map((m) => ({
                  id: m.id,
                  tick: m.next_tick_at !== undefined,
                  next_tick_at: m.next_tick_at ?? null,
                  deep: m.next_deep_at !== undefined,
                  next_deep_at: m.next_deep_at ?? null,
                })),
              ),
            ],
            'run',
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
    const networks = await this.sql.execute<{ network: string }[]>(
      'select distinct network from watchlist_entries where watchlist_id = ? order by network',
      [job.watchlist_id],
      'all',
    );
    const pending: { payload: JobPayload<'watchlist-chunk'>; jobId: string }[] = [];
    let chunks = 0;
    let entries = 0;
    const flush = async () => {
      await this.deps.queues.enqueueMany('watchlist-chunk', pending.splice(0));
    };
    for (const { network } of networks) {
      let after = '';
      for (;;) {
        const rows = await this.sql.execute<{ id: string }[]>(
          `select id from watchlist_entries where watchlist_id = ? and network = ? and id > ?
            order by id limit ${CHUNK_SIZE * 10}`,
          [job.watchlist_id, network, after],
          'all',
        );
        for (let i = 0; i < rows.length; i += CHUNK_SIZE) {
          const ids = rows.slice(i, i + CHUNK_SIZE).map((r) => r.id);
          pending.push({ payload: { ...job, entry_ids: ids }, jobId: `${job.scan_id}-${chunks++}` });
        }
        entries += rows.length;
        if (pending.length >= ENQUEUE_BATCH) await flush();
        if (rows.length < CHUNK_SIZE * 10) break;
        after = rows[rows.length - 1]!.id;
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
    const [watchlist] = await this.sql.execute<{ thresholds: Record<string, number> }[]>(
      'select thresholds from watchlists where id = ?',
      [job.watchlist_id],
      'all',
    );
    const entries = watchlist
      ? await this.sql
          .execute<EntryRow[]>(
            // By primary key alone: with stale statistics the planner would scan the list for the watchlist id.
            `select id, account_id, watchlist_id, chain, network, target, target_type, state_hash, snapshot_id, verdict
             from watchlist_entries where id = any(?::text[]) order by id`,
            [`{${job.entry_ids.join(',')}}`],
            'all',
          )
          .then((rows) => rows.filter((r) => r.watchlist_id === job.watchlist_id))
      : [];
    if (entries.length === 0) return { scanned: 0, changed: 0, alerts: 0 };

    const network = this.deps.providers.resolve(undefined, entries[0]!.network);
    const reads = await this.readStates(network, entries).catch(async (err: unknown) => {
      await this.markOutcome(entries, errorCode(err));
      throw err;
    });
    const outcomes = await this.judge(job.mode, entries, reads, thresholdsOf(watchlist!.thresholds));
    const inserted = await this.write(job, outcomes);

    const seconds = (performance.now() - started) / 1000;
    this.metrics?.chunkDuration.observe({ mode: job.mode }, seconds);
    for (const o of outcomes) this.metrics?.scans.inc({ mode: job.mode, outcome: o.outcome });
    for (const a of inserted.alerts) this.metrics?.alerts.inc({ type: a.type, severity: a.severity });
    this.metrics?.snapshots.inc(inserted.snapshots);
    this.deps.impact.count('alerts_delivered', inserted.alerts.length);
    await inserted.afterCommit();
    await this.chunkDone(job);
    return {
      scanned: outcomes.length,
      changed: outcomes.filter((o) => o.changed).length,
      alerts: inserted.alerts.length,
    };
  }

  /** Entries on every list, and the age of the oldest check, for the gauges. */
  async overview(): Promise<WatchOverview> {
    const [row] = await this.sql.execute<{ entries: string; oldest: Date | null }[]>(
      `select count(*) as entries, min(coalesce(last_checked_at, created_at)) as oldest from watchlist_entries`,
      [],
      'all',
    );
    const oldest = row?.oldest ? new Date(row.oldest).getTime() : Date.now();
    return { entries: Number(row?.entries ?? 0), oldestCheckAgeS: Math.max(0, (Date.now() - oldest) / 1000) };
  }

  private readStates(network: NetworkDef, entries: readonly EntryRow[]) {
    const addresses = entries.map((e) => e.target);
    return network.family === 'solana'
      ? readSolanaStates(this.deps.providers.solana(network), addresses)
      : readEvmStates(this.deps.providers.evm(network), addresses);
  }

  /**
   * Hashes compared; the full analysis (at most `deep_concurrency` at once) for the entries that need it:
   * all of them on a deep scan or a rescan, else those whose state changed since the last scan.
   */
  private async judge(
    mode: ScanMode,
    entries: readonly EntryRow[],
    reads: readonly (SolanaStateRead | EvmStateRead)[],
    thresholds: AlertThresholds,
  ): Promise<EntryOutcome[]> {
    const snapshots = await this.previousSnapshots(entries);
    const outcomes: EntryOutcome[] = entries.map((entry, i) => {
      const read = reads[i]!;
      const hash = stateHash(read.state);
      return { entry, read, hash, changed: hash !== entry.state_hash, outcome: 'ok', alerts: [] };
    });
    // A tick analyses only real changes: a new entry's first read is its baseline, judged by the next deep
    // scan or a rescan (a 100,000-entry list must not cost 100,000 analyses on its first tick).
    const analysed = outcomes.filter((o) => mode !== 'tick' || (o.changed && o.entry.state_hash !== null));
    await eachLimited(analysed, this.deps.settings.deep_concurrency, async (o) => {
      const result = await this.analyse(o, o.changed && o.entry.state_hash !== null);
      if ('verdict' in result) o.verdict = result.verdict;
      o.outcome = result.outcome;
    });
    for (const o of outcomes) {
      const snapshot = o.entry.snapshot_id ? snapshots.get(o.entry.snapshot_id) : undefined;
      if (!snapshot || o.entry.state_hash === null) continue; // the baseline raises nothing
      const height = Number(snapshot.read_at_height);
      const at = o.read.state.family === 'solana' ? { slot: height } : { block: height };
      o.alerts = diffAlerts({
        entryId: o.entry.id,
        previous: {
          ...at,
          state: snapshot.state,
          hash: snapshot.hash,
          verdict: o.entry.verdict ?? undefined,
        },
        current: { ...o.read, verdict: o.verdict },
        thresholds,
      });
    }
    return outcomes;
  }

  private async analyse(
    o: EntryOutcome,
    fresh: boolean,
  ): Promise<{ verdict: StoredVerdict; outcome: string } | { outcome: string }> {
    const { entry } = o;
    try {
      const verdict = await this.deps.risk.evaluate(
        entry.account_id,
        { chain: entry.chain, network: entry.network, address: entry.target },
        { targetType: entry.target_type ?? targetTypeOf(o.read.state), fresh },
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

  private async previousSnapshots(entries: readonly EntryRow[]): Promise<Map<string, SnapshotRow>> {
    const ids = entries.map((e) => e.snapshot_id).filter((id): id is string => id !== null);
    if (ids.length === 0) return new Map();
    const rows = await this.sql.execute<SnapshotRow[]>(
      'select id, state, hash, read_at_height from watchlist_snapshots where id = any(?::text[])',
      [`{${ids.join(',')}}`],
      'all',
    );
    return new Map(rows.map((r) => [r.id, r]));
  }

  /** Snapshots of the changes, the alerts, and every entry's scan columns: one transaction. */
  private async write(
    job: JobPayload<'watchlist-chunk'>,
    outcomes: readonly EntryOutcome[],
  ): Promise<{ snapshots: number; alerts: { type: string; severity: string }[]; afterCommit: AfterCommit }> {
    const now = new Date();
    const byId = new Map(outcomes.map((o) => [o.entry.id, o]));
    const changed = outcomes.filter((o) => o.changed);
    const snapshotIds = new Map(changed.map((o) => [o.entry.id, newId('snp', now.getTime())]));
    const snapshots = changed.map((o) => ({
      id: snapshotIds.get(o.entry.id)!,
      account_id: o.entry.account_id,
      entry_id: o.entry.id,
      scan_id: job.scan_id,
      state: o.read.state,
      hash: o.hash,
      read_at_height: 'slot' in o.read ? o.read.slot : o.read.block,
      read_at: now.toISOString(),
      verdict: o.verdict ?? null,
    }));
    const alerts: (AlertRowDraft & Record<string, unknown>)[] = outcomes.flatMap((o) =>
      o.alerts.map((a) => ({
        id: newId('alr', now.getTime()),
        account_id: o.entry.account_id,
        watchlist_id: job.watchlist_id,
        entry_id: o.entry.id,
        target: o.entry.target,
        network: o.entry.network,
        type: a.type,
        severity: a.severity,
        previous: a.previous,
        current: a.current,
        evidence: a.evidence,
        fingerprint: a.fingerprint,
        scan_id: job.scan_id,
        created_at: now.toISOString(),
      })),
    );
    const updates = outcomes.map((o) => ({
      id: o.entry.id,
      outcome: o.outcome,
      state_hash: o.hash,
      snapshot_id: o.changed ? snapshotIds.get(o.entry.id)! : null,
      // the baseline is no change
      changed_at: o.changed && o.entry.state_hash !== null ? now.toISOString() : null,
      risk_level: o.verdict?.level ?? null,
      risk_score: o.verdict?.score ?? null,
      verdict: o.verdict ?? null,
      deep: job.mode !== 'tick' || o.verdict !== undefined,
    }));

    return this.deps.orm.em.fork().transactional(async (em) => {
      const written = changed.length
        ? await em.execute<{ id: string; entry_id: string }[]>(
            `insert into watchlist_snapshots (id, account_id, entry_id, scan_id, state, hash, read_at_height, read_at, verdict)
             select id, account_id, entry_id, scan_id, state, hash, read_at_height, read_at, verdict
               from jsonb_to_recordset(?::jsonb) as r(id text, account_id text, entry_id text, scan_id text,
                    state jsonb, hash text, read_at_height bigint, read_at timestamptz, verdict jsonb)
              -- an entry removed while its chunk ran leaves nothing behind
              where exists (select 1 from watchlist_entries e where e.id = r.entry_id)
             on conflict (entry_id, scan_id) do update
               set state = excluded.state, hash = excluded.hash, read_at_height = excluded.read_at_height,
                   read_at = excluded.read_at, verdict = excluded.verdict
             returning id, entry_id`,
            [JSON.stringify(snapshots)],
            'all',
          )
        : [];
      // A retried scan's snapshot keeps the id of the first attempt's row.
      const byEntry = new Map(written.map((r) => [r.entry_id, r.id]));
      for (const u of updates) if (u.snapshot_id) u.snapshot_id = byEntry.get(u.id) ?? u.snapshot_id;
      const raised = alerts.length
        ? await em.execute<{ id: string; entry_id: string; type: string; severity: string }[]>(
            `insert into watchlist_alerts (id, account_id, watchlist_id, entry_id, target, network, type, severity,
                    previous, current, evidence, fingerprint, scan_id, status, created_at, updated_at)
             select id, account_id, watchlist_id, entry_id, target, network, type, severity, previous, current,
                    evidence, fingerprint, scan_id, 'open', created_at, created_at
               from jsonb_to_recordset(?::jsonb) as r(id text, account_id text, watchlist_id text, entry_id text,
                    target text, network text, type text, severity text, previous jsonb, current jsonb,
                    evidence jsonb, fingerprint text, scan_id text, created_at timestamptz)
              where exists (select 1 from watchlist_entries e where e.id = r.entry_id)
             on conflict (entry_id, fingerprint) do nothing
             returning id, entry_id, type, severity`,
            [JSON.stringify(alerts)],
            'all',
          )
        : [];
      await em.execute(
        `update watchlist_entries e
            set last_checked_at = ?::timestamptz,
                last_outcome = u.outcome,
                state_hash = u.state_hash,
                snapshot_id = coalesce(u.snapshot_id, e.snapshot_id),
                changed_at = coalesce(u.changed_at, e.changed_at),
                risk_level = coalesce(u.risk_level, e.risk_level),
                risk_score = coalesce(u.risk_score, e.risk_score),
                verdict = coalesce(u.verdict, e.verdict),
                deep_checked_at = case when u.deep then ?::timestamptz else e.deep_checked_at end
           from jsonb_to_recordset(?::jsonb) as u(id text, outcome text, state_hash text, snapshot_id text,
                changed_at timestamptz, risk_level text, risk_score int, verdict jsonb, deep boolean)
          where e.id = u.id`,
        [now.toISOString(), now.toISOString(), JSON.stringify(updates)],
        'run',
      );
      // Each new alert is an event (the outbox): in this transaction, so neither exists without the other.
      const { afterCommit } = await this.deps.events.append(
        em,
        raised.map((r) => alertEvent(r.id, job.watchlist_id, byId, alerts, this.networks)),
        now,
      );
      return { snapshots: written.length, alerts: raised, afterCommit };
    });
  }

  /** Records why a chunk could not read its states; the job is retried, and a success overwrites it. */
  private async markOutcome(entries: readonly EntryRow[], outcome: string): Promise<void> {
    await this.sql
      .execute('update watchlist_entries set last_outcome = ? where id = any(?::text[])', [
        outcome,
        `{${entries.map((e) => e.id).join(',')}}`,
      ])
      .catch(() => undefined);
  }

  private progressKey(scanId: string): string {
    return `${this.deps.redisKeyPrefix}watch:scan:${scanId}`;
  }

  /** Counts the chunk done; the one that completes the scan observes its duration. */
  private async chunkDone(job: JobPayload<'watchlist-chunk'>): Promise<void> {
    try {
      const key = this.progressKey(job.scan_id);
      const done = await this.deps.redis.hincrby(key, 'done', 1);
      const [chunks, startedAt] = await this.deps.redis.hmget(key, 'chunks', 'started_at');
      if (chunks && startedAt && done === Number(chunks))
        this.metrics?.tickDuration.observe({ mode: job.mode }, (Date.now() - Number(startedAt)) / 1000);
    } catch {
      // progress is for the metric only: a Redis hiccup here must not fail a written chunk
    }
  }
}

/** Entries on every watchlist (the public impact's `targets_monitored`). */
export async function countWatchedTargets(orm: Orm): Promise<number> {
  const [row] = await orm.em
    .getConnection()
    .execute<{ n: string }[]>('select count(*) as n from watchlist_entries', [], 'all');
  return Number(row?.n ?? 0);
}

/** The `watchlist.alert` event of alert `alertId` (docs/api.md, "Events"), its alert as the API shows it. */
function alertEvent(
  alertId: string,
  watchlistId: string,
  outcomes: ReadonlyMap<string, EntryOutcome>,
  drafts: readonly AlertRowDraft[],
  networks: KnownNetworks,
): NewEvent<'watchlist.alert'> {
  const alert = drafts.find((a) => a.id === alertId)!;
  const o = outcomes.get(alert.entry_id)!;
  const view = alertOf(
    {
      ...alert,
      evidence: alert.evidence as Record<string, unknown>,
      status: 'open',
      updated_at: alert.created_at,
    },
    networks,
  );
  return {
    accountId: o.entry.account_id,
    type: 'watchlist.alert',
    watchlistId,
    data: presentAlertEvent(view, o.entry.verdict, o.verdict),
  };
}

/** The target type a state shows, for entries added without one. */
export function targetTypeOf(state: WatchedState): string {
  if (state.family === 'evm') return state.kind === 'contract' ? 'contract' : 'wallet';
  return state.kind === 'mint' ? 'token' : state.kind === 'program' ? 'program' : 'wallet';
}

function storedVerdict(v: TargetVerdict | TokenVerdict): StoredVerdict {
  return {
    level: v.riskLevel,
    score: v.riskScore,
    findings: v.findings
      .filter((f) => !f.suppressed)
      .map((f) => ({ code: f.code, severity: f.severity, evidence: f.evidence })),
    complete: v.complete,
    at: v.evaluatedAt.toISOString(),
  };
}

/** `{ balance_change_pct }` as the API stores it → the diff's thresholds. */
function thresholdsOf(t: Record<string, number>): AlertThresholds {
  const percent = t.balance_change_pct;
  return typeof percent === 'number' ? { balance_change: { percent } } : {};
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
