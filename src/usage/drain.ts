import { hostname } from 'node:os';
import type { RedisClient } from '../platform/redis.js';
import type { Logger } from '../platform/logger.js';
import type { Orm } from '../db/orm.js';
import { BATCH_FIELD, type UsageEntry } from './recorder.js';
import { insertCalls } from './repository.js';

const GROUP = 'usage-drain';
/** Stream entries per read; each holds up to 200 calls (the recorder's batches). */
const BATCH = 50;
/** Entries another consumer read but never acknowledged (it died) are taken over after this long. */
const CLAIM_IDLE_MS = 10_000;

type StreamEntries = [id: string, fields: string[]][];

/**
 * The worker side of usage recording: reads the Redis stream with a consumer group, inserts each batch
 * into PostgreSQL (idempotent on the usage id), then acknowledges and deletes it. A crash between insert
 * and ack replays the batch harmlessly; a dead consumer's unacknowledged entries are claimed by the next.
 * The insert also adds the calls to the hour/day usage rollups: a statement trigger on usage_records
 * (migration 20261124034559) counts only the rows the statement actually inserted, so a replayed batch
 * counts nothing twice, and a call and its counts commit together.
 */
export class UsageDrain {
  private stopping = false;
  private loop: Promise<void> | undefined;
  private readonly consumer = `${hostname()}-${process.pid}`;

  constructor(
    private readonly redis: RedisClient,
    private readonly orm: Orm,
    private readonly streamKey: string,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop;
  }

  /** Stream entries (batches of calls) waiting and the age of the oldest, for the health check. */
  static async backlog(
    redis: RedisClient,
    streamKey: string,
  ): Promise<{ waiting: number; oldestWaitS: number }> {
    const waiting = await redis.xlen(streamKey);
    if (waiting === 0) return { waiting, oldestWaitS: 0 };
    const first = (await redis.xrange(streamKey, '-', '+', 'COUNT', 1)) as StreamEntries;
    const ms = Number(first[0]?.[0].split('-')[0] ?? Date.now());
    return { waiting, oldestWaitS: Math.max(0, Math.round((Date.now() - ms) / 1000)) };
  }

  private async run(): Promise<void> {
    let groupReady = false;
    while (!this.stopping) {
      try {
        if (!groupReady) {
          await this.redis.xgroup('CREATE', this.streamKey, GROUP, '0', 'MKSTREAM').catch((err: Error) => {
            if (!err.message.includes('BUSYGROUP')) throw err;
          });
          groupReady = true;
        }
        await this.drainOnce();
      } catch (err) {
        if (this.stopping) break;
        // The group went with the stream (Redis flushed, or replaced by an empty one): made again next pass.
        if ((err as Error).message.includes('NOGROUP')) groupReady = false;
        this.logger.warn({ err: { message: (err as Error).message } }, 'usage drain failed; retrying');
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  /** One pass: stale entries first, then new ones (blocking up to 1 s). Returns how many were stored. */
  async drainOnce(): Promise<number> {
    const claimed = (await this.redis.xautoclaim(
      this.streamKey,
      GROUP,
      this.consumer,
      CLAIM_IDLE_MS,
      '0-0',
      'COUNT',
      BATCH,
    )) as [string, StreamEntries, string[]];
    let entries = claimed[1];
    if (entries.length === 0) {
      const read = (await this.redis.xreadgroup(
        'GROUP',
        GROUP,
        this.consumer,
        'COUNT',
        BATCH,
        'BLOCK',
        1000,
        'STREAMS',
        this.streamKey,
        '>',
      )) as [string, StreamEntries][] | null;
      entries = read?.[0]?.[1] ?? [];
    }
    if (entries.length === 0) return 0;
    const rows: UsageEntry[] = [];
    for (const [, fields] of entries)
      for (let i = 0; i + 1 < fields.length; i += 2)
        if (fields[i] === BATCH_FIELD) rows.push(...(JSON.parse(fields[i + 1]!) as UsageEntry[]));
    await insertCalls(this.orm, rows);
    const ids = entries.map(([id]) => id);
    await this.redis
      .multi()
      .xack(this.streamKey, GROUP, ...ids)
      .xdel(this.streamKey, ...ids)
      .exec();
    return rows.length;
  }
}
