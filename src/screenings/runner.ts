import type { RedisClient } from '../platform/redis.js';
import type { Registry } from 'prom-client';
import { RedisRateGate, type RateGate } from '../chains/limits.js';
import type { ChainProviders } from '../chains/providers.js';
import { networkLabel, resolveNetwork, type NetworkDef } from '../chains/registry.js';
import { RpcMetrics } from '../chains/rpc-metrics.js';
import type { Orm } from '../db/orm.js';
import type { AfterCommit, EventLog } from '../events/log.js';
import type { JobQueues } from '../jobs/queues.js';
import { AppError } from '../platform/errors.js';
import type { Logger } from '../platform/logger.js';
import { presentFinding } from '../risk/present.js';
import type { Screener, ScreenTarget } from '../risk/screen.js';
import type { ScreeningDepth } from './entities.js';
import { presentCompletedEvent } from './present.js';
import {
  countResults,
  findScreening,
  lockAccount,
  markCompleted,
  markRunning,
  openScreenings,
  pruneScreenings,
  resultRows,
  writeVerdicts,
  type ScreeningRow,
  type Written,
} from './repository.js';
import { run } from '../db/sql.js';
import type { ScreeningsSettings } from './settings.js';

/** Targets per chunk job: one getMultipleAccounts at `state`; many more at `lists` (memory only). */
export const CHUNK_SIZE: Record<ScreeningDepth, number> = { lists: 1000, state: 100, full: 100 };
/** Chunk jobs added to the queue per round trip while a screening starts. */
const ENQUEUE_BATCH = 500;
/**
 * Provider calls a `full` screening is charged per target against its share of the rate: the wallet
 * analysis reads the account, both token programs' accounts and the signature page, then recent
 * transactions (`risk.recent_transactions`); contracts and tokens read fewer.
 */
const FULL_CALLS_PER_TARGET = 8;
/** EVM state: code, balance, nonce and three proxy slots per address (one batch), plus the head once. */
const EVM_CALLS_PER_ADDRESS = 6;

export interface ScreeningRunnerDeps {
  orm: Orm;
  screener: Screener;
  queues: JobQueues;
  events: EventLog;
  providers: ChainProviders;
  redis: RedisClient;
  redisKeyPrefix: string;
  settings: ScreeningsSettings;
  logger: Logger;
  /** prom-client registry for `riskwatch_rpc_rate_wait*{gate="screening"}` (the waits for the share). */
  metrics?: Registry;
}

/**
 * The workers' side of screenings (docs/api.md, "Screenings"):
 *
 *   POST /api/v1/screenings, CLI import  → rows stored, `screening-start` (id `start-<screening>`); a
 *                                          `lists` POST is judged as it is stored (`judge`, `complete`)
 *   screening-start (per account)        → every queued `lists` screening, and the oldest queued `state` /
 *                                          `full` one unless one runs: `running`, its chunks enqueued
 *   screening-chunk                      → the chunk's pending targets screened, written in one transaction
 *                                          with `processed`; the last one completes the screening and appends
 *                                          its `screening.completed` event, then starts the account's next
 *
 * Every job id is deterministic and every write touches only pending rows, so a worker killed at any
 * point loses nothing (BullMQ runs its job again) and doubles nothing.
 */
export class ScreeningRunner {
  private readonly gates = new Map<NetworkDef, RateGate | null>();
  /** Per network with a rate: how its share's waits are counted (resolved at start-up, shown at 0). */
  private readonly waitObservers = new Map<NetworkDef, (seconds: number) => void>();

  constructor(private readonly deps: ScreeningRunnerDeps) {
    const metrics = deps.metrics ? RpcMetrics.for(deps.metrics) : undefined;
    if (metrics)
      for (const network of deps.providers.networks)
        if (deps.providers.ratePerS(network) > 0)
          this.waitObservers.set(network, metrics.rateWaitObserver(networkLabel(network), 'screening'));
  }

  /**
   * Starts what may start of the account's queued screenings; returns their ids. `submitted` names the
   * screening whose submission asked: its job is enqueued inside the submitting transaction, so it can run
   * before that commits; until the screening is there the job fails and BullMQ tries it again (1 s, 2 s, …).
   */
  async start(accountId: string, submitted?: string): Promise<string[]> {
    const { orm } = this.deps;
    if (submitted && !(await findScreening(orm, submitted)))
      throw new AppError('dependency_unavailable', `Screening ${submitted} is not committed yet.`);
    const afterCommit: AfterCommit[] = [];
    const started = await orm.em.fork().transactional(async (em) => {
      await lockAccount(em, accountId);
      const open = await openScreenings(em, accountId);
      const heavy = (s: ScreeningRow) => s.depth !== 'lists';
      const busy = open.some((s) => s.status === 'running' && heavy(s));
      const next = busy ? undefined : open.find((s) => s.status === 'queued' && heavy(s));
      const starting = open.filter((s) => s.status === 'queued' && !heavy(s));
      if (next) starting.push(next);
      for (const s of starting) await markRunning(em, s.id);
      // Running ones too: a chunk job lost with Redis is enqueued again (ids are deterministic).
      for (const s of open.filter((o) => o.status === 'running').concat(starting)) {
        const pending = await this.enqueueChunks(em, s);
        if (pending === 0) afterCommit.push(await this.complete(em, s.id));
      }
      return starting.map((s) => s.id);
    });
    for (const step of afterCommit) await step();
    return started;
  }

  /** Enqueues a chunk job for every chunk of `s` that still has pending targets; how many chunks. */
  private async enqueueChunks(em: Parameters<typeof lockAccount>[0], s: ScreeningRow): Promise<number> {
    const size = CHUNK_SIZE[s.depth];
    const starts = await run<{ start: number }[]>(
      em,
      `select distinct (seq / ?) * ? as start from screening_results
        where screening_id = ? and status = 'pending' order by 1`,
      [size, size, s.id],
    );
    const jobs = starts.map(({ start }) => ({
      payload: { screening_id: s.id, from_seq: start, to_seq: start + size },
      jobId: `${s.id}-${start}`,
    }));
    for (let i = 0; i < jobs.length; i += ENQUEUE_BATCH)
      await this.deps.queues.enqueueMany('screening-chunk', jobs.slice(i, i + ENQUEUE_BATCH));
    return jobs.length;
  }

  /** Screens the pending targets of `[fromSeq, toSeq)` and writes them; how many it wrote. */
  async runChunk(screeningId: string, fromSeq: number, toSeq: number): Promise<number> {
    const { orm, providers } = this.deps;
    const screening = await findScreening(orm, screeningId);
    if (!screening) return 0; // pruned meanwhile
    const rows = await resultRows(orm, screeningId, { status: 'pending', fromSeq, toSeq }, toSeq - fromSeq);
    if (rows.length === 0) {
      if (screening.status === 'completed') await this.startNext(screening);
      return 0;
    }
    // Known networks, configured or not: one unconfigured since submission reads as unknown, not as an error.
    const registry = { networks: providers.networks, configured: providers.networks };
    const targets: ScreenTarget[] = rows.map((r) => ({
      address: r.target,
      network: resolveNetwork(r.chain ?? undefined, r.network ?? undefined, registry),
    }));
    await this.takeShare(screening.depth, targets);
    const verdicts = await this.judge(screening.account_id, screening.depth, targets);
    let afterCommit: AfterCommit | undefined;
    const { written, now } = await orm.em.fork().transactional(async (em) => {
      const result = await writeVerdicts(
        em,
        screeningId,
        verdicts.map((v, i) => ({ ...v, seq: rows[i]!.seq })),
      );
      const s = result.screening;
      if (s.status !== 'completed' && s.processed + s.invalid >= s.total)
        afterCommit = await this.complete(em, screeningId);
      return { written: result.written, now: s };
    });
    if (afterCommit) {
      await afterCommit();
      await this.startNext(now);
    }
    return written;
  }

  /** The verdicts of `targets` at `depth`, as result columns (in order). */
  async judge(accountId: string, depth: ScreeningDepth, targets: readonly ScreenTarget[]) {
    const verdicts = await this.deps.screener.screen(accountId, depth, targets);
    return verdicts.map((v): Omit<Written, 'seq'> => ({
      level: v.riskLevel,
      score: v.riskScore,
      decision: v.decision,
      complete: v.complete,
      findings: v.findings.map(presentFinding),
    }));
  }

  /**
   * Marks a screening completed with its counts and appends its event, in `em`'s transaction; the step it
   * returns publishes the event once that commits.
   */
  async complete(em: Parameters<typeof lockAccount>[0], id: string): Promise<AfterCommit> {
    const counts = await countResults(em, id);
    await markCompleted(em, id, counts);
    const done = (await findScreening(em, id))!;
    const { afterCommit } = await this.deps.events.append(em, [
      {
        accountId: done.account_id,
        type: 'screening.completed',
        watchlistId: null,
        data: presentCompletedEvent(done),
      },
    ]);
    this.deps.logger.info({ screening_id: id, total: done.total }, 'screening completed');
    return afterCommit;
  }

  /** The account's next screening may start: asked once per finished screening (deterministic id). */
  private async startNext(s: ScreeningRow): Promise<void> {
    await this.deps.queues.enqueue('screening-start', { account_id: s.account_id }, `after-${s.id}`);
  }

  /**
   * Waits for the calls this chunk will make to fit in screenings' share of each network's provider rate
   * (`screenings.provider_share_pct` of `rate_per_s`, counted in Redis across every worker), so a large
   * screening leaves the rest to preflights, risk-v2 calls and watchlist ticks.
   */
  private async takeShare(depth: ScreeningDepth, targets: readonly ScreenTarget[]): Promise<void> {
    if (depth === 'lists') return;
    const byNetwork = new Map<NetworkDef, number>();
    for (const t of targets) byNetwork.set(t.network, (byNetwork.get(t.network) ?? 0) + 1);
    for (const [network, n] of byNetwork) {
      const gate = this.gateOf(network);
      if (!gate) continue;
      const calls =
        depth === 'full'
          ? n * FULL_CALLS_PER_TARGET
          : network.family === 'solana'
            ? Math.ceil(n / 100)
            : 1 + n * EVM_CALLS_PER_ADDRESS;
      // A gate hands out at most one second's worth at once: larger needs are taken in parts.
      for (let left = calls; left > 0;) {
        const part = Math.min(left, this.perSecond(network));
        await gate.take(part, Number.POSITIVE_INFINITY);
        left -= part;
      }
    }
  }

  private perSecond(network: NetworkDef): number {
    const rate = this.deps.providers.ratePerS(network);
    return Math.max(1, Math.floor((rate * this.deps.settings.provider_share_pct) / 100));
  }

  private gateOf(network: NetworkDef): RateGate | null {
    if (!this.gates.has(network)) {
      const unlimited = this.deps.providers.ratePerS(network) <= 0;
      this.gates.set(
        network,
        unlimited
          ? null
          : new RedisRateGate(
              this.deps.redis,
              `${this.deps.redisKeyPrefix}screening-rate`,
              networkLabel(network),
              this.perSecond(network),
              this.waitObservers.get(network),
            ),
      );
    }
    return this.gates.get(network)!;
  }

  /**
   * Starts once more every account with a queued or running screening: what a lost job (Redis flushed, a
   * chunk that used up its attempts) left pending is enqueued again. Daily with the prune, as a backstop:
   * every submission and every completion already does it for its account.
   */
  async reconcile(): Promise<number> {
    const accounts = await run<{ account_id: string }[]>(
      this.deps.orm,
      `select distinct account_id from screenings where status in ('queued', 'running')`,
    );
    for (const { account_id } of accounts) await this.start(account_id);
    return accounts.length;
  }

  /** Deletes screenings (and their results) created more than `retentionDays` ago; how many went. */
  async prune(retentionDays: number): Promise<number> {
    const before = new Date(Date.now() - retentionDays * 86_400_000);
    let deleted = 0;
    for (;;) {
      const n = await this.deps.orm.em.fork().transactional((em) => pruneScreenings(em, before));
      deleted += n;
      if (n === 0) return deleted;
    }
  }
}
