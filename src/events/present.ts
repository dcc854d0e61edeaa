import type { EventPage } from './log.js';
import type { EventPageBody } from './schemas.js';

export const presentEventPage = (page: EventPage): EventPageBody => ({
  data: page.items.map((e) => ({
    id: e.id,
    seq: e.seq,
    type: e.type,
    created_at: e.createdAt.toISOString(),
    data: e.data,
  })),
  next_cursor: page.nextCursor,
  has_more: page.hasMore,
});
