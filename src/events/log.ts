import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../db/orm.js';
import { run, time, type Time, Where } from '../db/sql.js';
import { decodeCursor, encodeCursor } from '../platform/cursor.js';
import { invalidRequest } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { EventData, EventsQuery, EventType } from './schemas.js';

/*
 * The event log, and its transactional outbox: a producer appends events inside its own transaction (the
 * watchlist scan's, with the alerts they tell of), numbered per account; every subscriber registered at
 * composition (webhooks: a delivery per matching endpoint) runs in that same transaction, so an event and
 * what it fans out to exist together or not at all. Nothing is sent here: what a subscriber wants done once
 * the transaction has committed (asking the workers to drain an endpoint) is handed back to the producer,
 * and a subscriber's own periodic sweep finds whatever a crash between the commit and that step left behind.
 */

/** An event as its producer writes it. */
export type NewEvent<T extends EventType = EventType> = {
  [K in T]: {
    accountId: string;
    type: K;
    /** The watchlist an event is about (subscribers filter on it), or null. */
    watchlistId: string | null;
    data: EventData<K>;
  };
}[T];

/** An event as appended: its id and number given. */
export interface StoredEvent {
  id: string;
  accountId: string;
  seq: number;
  type: EventType;
  watchlistId: string | null;
  data: EventData;
  createdAt: Date;
}

/** What a subscriber (or the producer's own follow-up) does once the appending transaction committed. */
export type AfterCommit = () => Promise<void>;

/** Whoever fans events out (webhooks), registered at composition. */
export interface EventSubscriber {
  /** Runs inside the transaction that appends `events`; returns what to do after the commit. */
  fanOut(em: EntityManager, events: readonly StoredEvent[], now: Date): Promise<AfterCommit | undefined>;
  /**
   * Runs inside the prune's transaction before events created before `before` are dropped: the
   * subscriber drops or closes its own rows of them.
   */
  prune?(em: EntityManager, before: Date, now: Date): Promise<{ expired: number }>;
  /** A SQL condition on the events row `e`: true while the subscriber still needs that event past retention. */
  retains?: string;
  /** Runs after the prune's transaction: drops the subscriber's day partitions past retention (their names). */
  dropPartitions?(before: Date, now: Date): Promise<string[]>;
}

export interface EventView {
  id: string;
  seq: number;
  type: EventType;
  createdAt: Date;
  data: EventData;
}

export interface EventPage {
  items: EventView[];
  /** Always set: after the last event read, or the cursor given when none was. */
  nextCursor: string;
  hasMore: boolean;
}

/*
 * The events cursor is the `seq` of the last event read, carried in the project's cursor codec as the id
 * `evs_` + 28 hex digits (the codec's id shape), with that event's time: opaque to callers, decoded
 * without a query, and still valid once retention has pruned the event it names.
 */
const SEQ_PREFIX = 'evs';
const EPOCH = new Date(0).toISOString();
const encodeSeq = (seq: number, at: string) =>
  encodeCursor({ at, id: `${SEQ_PREFIX}_${seq.toString(16).padStart(28, '0')}` });

function decodeSeq(raw: string): number {
  try {
    const seq = Number.parseInt(decodeCursor(raw, SEQ_PREFIX).id.slice(SEQ_PREFIX.length + 1), 16);
    if (Number.isSafeInteger(seq)) return seq;
  } catch {
    // refused below, naming the parameter this endpoint calls it by
  }
  throw invalidRequest('The cursor is not valid for this query.', [
    { path: 'query.after', message: 'not a next_cursor returned by GET /api/v1/events' },
  ]);
}

interface EventRow {
  id: string;
  seq: string | number;
  type: EventType;
  created_at: Time;
  data: EventData;
}

export class EventLog {
  private readonly subscribers: EventSubscriber[] = [];

  constructor(
    private readonly orm: Orm,
    /** `webhooks.event_retention_days`: older events are not served, and are pruned. */
    private readonly retentionDays: number,
  ) {}

  /** Registers a subscriber (at composition, before any event is appended). */
  subscribe(subscriber: EventSubscriber): void {
    this.subscribers.push(subscriber);
  }

  /**
   * Appends `events` in `em`'s transaction and runs the subscribers' fan-out in it; returns the events as
   * stored and what to do once the transaction has committed (call it after the commit, never inside).
   */
  async append(
    em: EntityManager,
    events: readonly NewEvent[],
    now = new Date(),
  ): Promise<{ events: StoredEvent[]; afterCommit: AfterCommit }> {
    if (events.length === 0) return { events: [], afterCommit: () => Promise.resolve() };
    const byAccount = new Map<string, NewEvent[]>();
    for (const e of events) byAccount.set(e.accountId, [...(byAccount.get(e.accountId) ?? []), e]);

    const stored: StoredEvent[] = [];
    for (const [accountId, list] of byAccount) {
      // The row lock on the account's counter orders concurrent writers: seq has no gaps once committed.
      const [counter] = await em.execute<{ last_seq: string }[]>(
        `insert into event_sequences (account_id, last_seq) values (?, ?)
         on conflict (account_id) do update set last_seq = event_sequences.last_seq + excluded.last_seq
         returning last_seq`,
        [accountId, list.length],
      );
      const first = Number(counter!.last_seq) - list.length + 1;
      list.forEach((e, i) =>
        stored.push({ ...e, id: newId('evt', now.getTime()), seq: first + i, createdAt: now }),
      );
    }
    await em.execute(
      `insert into events (id, account_id, seq, type, watchlist_id, data, created_at)
       select id, account_id, seq, type, watchlist_id, data, created_at
         from jsonb_to_recordset(?::jsonb) as r(id text, account_id text, seq bigint, type text, watchlist_id text,
              data jsonb, created_at timestamptz)`,
      [
        JSON.stringify(
          stored.map((e) => ({
            id: e.id,
            account_id: e.accountId,
            seq: e.seq,
            type: e.type,
            watchlist_id: e.watchlistId,
            data: e.data,
            created_at: now.toISOString(),
          })),
        ),
      ],
      'run',
    );
    const after: AfterCommit[] = [];
    for (const s of this.subscribers) {
      const next = await s.fanOut(em, stored, now);
      if (next) after.push(next);
    }
    return {
      events: stored,
      afterCommit: async () => {
        for (const step of after) await step();
      },
    };
  }

  /**
   * The account's events after the cursor, oldest first (by `seq`, through the (account_id, seq) index),
   * optionally of some types only; events past the retention are not served. The next cursor is always
   * given, so a poller keeps it whether or not anything arrived.
   */
  async list(accountId: string, q: EventsQuery): Promise<EventPage> {
    const after = q.after === undefined ? 0 : decodeSeq(q.after);
    const retainedSince = new Date(Date.now() - this.retentionDays * 86_400_000);
    const where = new Where('account_id = ?', accountId)
      .and('seq > ?', after)
      .and('created_at >= ?::timestamptz', retainedSince.toISOString());
    if (q.types) where.and('type in (select jsonb_array_elements_text(?::jsonb))', JSON.stringify(q.types));
    const rows = await run<EventRow[]>(
      this.orm,
      `select id, seq, type, created_at, data from events where ${where.sql} order by seq limit ?`,
      [...where.params, q.limit + 1],
    );
    const items = rows.slice(0, q.limit).map((r): EventView => ({
      id: r.id,
      seq: Number(r.seq),
      type: r.type,
      createdAt: time(r.created_at),
      data: r.data,
    }));
    const last = items.at(-1);
    return {
      items,
      nextCursor: last ? encodeSeq(last.seq, last.createdAt.toISOString()) : (q.after ?? encodeSeq(0, EPOCH)),
      hasMore: rows.length > q.limit,
    };
  }

  /**
   * Drops the events older than the retention, in one transaction with the subscribers' own rows of them;
   * an event a subscriber still needs (a webhook delivery pending inside its retry window) is kept until
   * it no longer does. Then the subscribers drop their day partitions past retention (webhook attempts),
   * each in a short transaction of its own: `dropped` names them.
   */
  async prune(now = new Date()): Promise<{ events: number; expired: number; dropped: string[] }> {
    const before = new Date(now.getTime() - this.retentionDays * 86_400_000);
    const pruned = await this.orm.em.fork().transactional(async (em) => {
      let expired = 0;
      for (const s of this.subscribers) if (s.prune) expired += (await s.prune(em, before, now)).expired;
      const held = this.subscribers.flatMap((s) => (s.retains ? [`and not (${s.retains})`] : []));
      const res = await em.execute<{ affectedRows?: number }>(
        `delete from events e where e.created_at < ? ${held.join(' ')}`,
        [before],
        'run',
      );
      return { events: res.affectedRows ?? 0, expired };
    });
    const dropped: string[] = [];
    for (const s of this.subscribers)
      if (s.dropPartitions) dropped.push(...(await s.dropPartitions(before, now)));
    return { ...pruned, dropped };
  }
}
