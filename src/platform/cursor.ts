import { invalidRequest } from './errors.js';

/**
 * The opaque `cursor` of the API's keyset-paginated lists (newest first): the position after the last
 * row of a page. It is base64url JSON of that row's time and, for rows ordered by `(time, id) desc`, its
 * id; the decoders accept exactly what the encoder writes, so a forged or foreign cursor is a 400, never a
 * query with odd parameters.
 */
export interface KeysetCursor {
  /** `toISOString()` of the row's timestamp. */
  at: string;
  /** The row's id (`lst_…`, `key_…`, `use_…`). */
  id: string;
}

/** The position in a list ordered by time alone (usage buckets): the start of the last bucket shown. */
export interface TimeCursor {
  at: string;
}

/** One page of a keyset-paginated list. */
export interface Page<T> {
  items: T[];
  /** The cursor of the next page; null on the last page. */
  nextCursor: string | null;
}

/** `toISOString()` of a year PostgreSQL stores. */
const CURSOR_AT = /^(?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export const encodeCursor = (c: KeysetCursor | TimeCursor): string =>
  Buffer.from(JSON.stringify('id' in c ? { at: c.at, id: c.id } : { at: c.at })).toString('base64url');

const refused = () =>
  invalidRequest('The cursor is not valid for this query.', [
    { path: 'query.cursor', message: 'not a cursor returned by this endpoint' },
  ]);

/** The cursor's fields when its time is one the encoder writes, else undefined. */
function parse(raw: string): { at: string; id?: unknown } | undefined {
  try {
    const c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as { at?: unknown; id?: unknown };
    if (
      typeof c.at === 'string' &&
      CURSOR_AT.test(c.at) &&
      !Number.isNaN(Date.parse(c.at)) &&
      new Date(c.at).toISOString() === c.at
    )
      return { at: c.at, id: c.id };
  } catch {
    // refused by the caller
  }
  return undefined;
}

/** Decodes a cursor whose id has the prefix `idPrefix` (see `newId`), or throws `invalid_request`. */
export function decodeCursor(raw: string, idPrefix: string): KeysetCursor {
  const idPattern = new RegExp(`^${idPrefix}_[0-9a-f]{28}$`);
  const c = parse(raw);
  if (c && typeof c.id === 'string' && idPattern.test(c.id)) return { at: c.at, id: c.id };
  throw refused();
}

/**
 * Decodes the cursor of a list ordered by time alone, or throws `invalid_request`. A row cursor's time
 * positions it too (its id is not needed), as it always has.
 */
export function decodeTimeCursor(raw: string): TimeCursor {
  const c = parse(raw);
  if (c) return { at: c.at };
  throw refused();
}

/**
 * One page from `rows`, fetched with `limit + 1` rows so the extra one tells whether a next page exists;
 * `position` gives the cursor of a row.
 */
export function keysetPage<T>(
  rows: readonly T[],
  limit: number,
  position: (row: T) => KeysetCursor | TimeCursor,
): Page<T> {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > limit && last ? encodeCursor(position(last)) : null };
}
