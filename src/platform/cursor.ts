import { invalidRequest } from './errors.js';

/**
 * The opaque `cursor` of the API's keyset-paginated lists (newest first, ordered by `created_at desc, id
 * desc`): the position after the last row of a page. It is base64url JSON of that row's time and id; the
 * decoder accepts exactly what the encoder writes, so a forged or foreign cursor is a 400, never a query
 * with odd parameters.
 */
export interface KeysetCursor {
  /** `toISOString()` of the row's timestamp. */
  at: string;
  /** The row's id (`lst_…`, `key_…`). */
  id: string;
}

/** `toISOString()` of a year PostgreSQL stores. */
const CURSOR_AT = /^(?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export const encodeCursor = (c: KeysetCursor): string =>
  Buffer.from(JSON.stringify({ at: c.at, id: c.id })).toString('base64url');

/** Decodes a cursor whose id has the prefix `idPrefix` (see `newId`), or throws `invalid_request`. */
export function decodeCursor(raw: string, idPrefix: string): KeysetCursor {
  const idPattern = new RegExp(`^${idPrefix}_[0-9a-f]{28}$`);
  try {
    const c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Partial<KeysetCursor>;
    if (
      typeof c.at === 'string' &&
      CURSOR_AT.test(c.at) &&
      !Number.isNaN(Date.parse(c.at)) &&
      new Date(c.at).toISOString() === c.at &&
      typeof c.id === 'string' &&
      idPattern.test(c.id)
    )
      return { at: c.at, id: c.id };
  } catch {
    // fall through to the error below
  }
  throw invalidRequest('The cursor is not valid for this query.', [
    { path: 'query.cursor', message: 'not a cursor returned by this endpoint' },
  ]);
}

/**
 * One page from `rows`, fetched with `limit + 1` rows so the extra one tells whether a next page exists;
 * `position` gives the cursor of a row.
 */
export function keysetPage<T>(
  rows: readonly T[],
  limit: number,
  position: (row: T) => KeysetCursor,
): { data: T[]; next_cursor: string | null } {
  const data = rows.slice(0, limit);
  const last = data.at(-1);
  return { data, next_cursor: rows.length > limit && last ? encodeCursor(position(last)) : null };
}
