import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/*
 * The event log (README, "Webhooks and the event log"): what features tell consumers, numbered per account.
 * An event is appended in its producer's own transaction (the outbox: a watchlist alert and its event exist
 * together or not at all); subscribers registered at composition (webhooks) fan it out in that transaction.
 * Consumers who take no webhooks read the same events with `GET /api/v1/events`.
 */

/** One event of an account, numbered by `seq` (1, 2, 3… per account, without gaps once committed). */
export const EventSchema = defineEntity({
  name: 'Event',
  tableName: 'events',
  uniques: [{ properties: ['accountId', 'seq'] }],
  indexes: [{ properties: ['createdAt'] }],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    seq: p.bigint('number'),
    type: p.string().length(60),
    watchlistId: p.string().length(40).nullable(),
    data: p.json<Record<string, unknown>>(),
    createdAt: p.datetime(),
  },
});
export type Event = InferEntity<typeof EventSchema>;

/** The last `seq` handed out per account: incremented in the transaction that writes the events. */
export const EventSequenceSchema = defineEntity({
  name: 'EventSequence',
  tableName: 'event_sequences',
  properties: {
    accountId: p.string().length(40).primary(),
    lastSeq: p.bigint('number'),
  },
});
