import { describe, expect, it } from 'vitest';
import { decodeCursor, decodeTimeCursor, encodeCursor, keysetPage } from '../../src/platform/cursor.js';
import { AppError } from '../../src/platform/errors.js';
import { newId } from '../../src/platform/ids.js';

function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected an invalid_request, but nothing was thrown');
}

/** The keyset cursor shared by the paginated lists (list entries, API keys, usage). */
describe('keyset cursor', () => {
  const position = { at: '2026-11-22T10:11:12.345Z', id: newId('key') };

  it('round-trips the position of a row, as opaque base64url', () => {
    const cursor = encodeCursor(position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor, 'key')).toEqual(position);
  });

  it('keeps the format list-entry cursors already had (clients may hold one)', () => {
    const id = newId('lst');
    const legacy = Buffer.from(JSON.stringify({ at: position.at, id })).toString('base64url');
    expect(encodeCursor({ at: position.at, id })).toBe(legacy);
    expect(decodeCursor(legacy, 'lst')).toEqual({ at: position.at, id });
  });

  it.each([
    ['garbage', 'not-a-cursor'],
    [
      'another list’s cursor (other id prefix)',
      encodeCursor({ at: '2026-11-22T10:11:12.345Z', id: newId('lst') }),
    ],
    ['a time that is not toISOString()', encodeCursor({ at: '2026-11-22T10:11:12Z', id: newId('key') })],
    ['an impossible date', encodeCursor({ at: '2026-02-30T10:11:12.345Z', id: newId('key') })],
    ['year 0000', encodeCursor({ at: '0000-01-01T00:00:00.000Z', id: newId('key') })],
    ['an id with SQL in it', encodeCursor({ at: '2026-11-22T10:11:12.345Z', id: "key_' or 1=1 --" })],
    ['JSON that is not an object', Buffer.from('[1,2]').toString('base64url')],
  ])('refuses %s with 400 invalid_request naming query.cursor', (_what, raw) => {
    const err = refusal(() => decodeCursor(raw, 'key'));
    expect(err.code).toBe('invalid_request');
    expect(err.extra.errors).toEqual([
      { path: 'query.cursor', message: 'not a cursor returned by this endpoint' },
    ]);
  });

  it('keeps the format usage cursors already had (calls and hour/day buckets)', () => {
    const id = newId('use');
    const call = Buffer.from(JSON.stringify({ at: position.at, id })).toString('base64url');
    const bucket = Buffer.from(JSON.stringify({ at: position.at })).toString('base64url');
    expect(encodeCursor({ at: position.at, id })).toBe(call);
    expect(encodeCursor({ at: position.at })).toBe(bucket);
    expect(decodeCursor(call, 'use')).toEqual({ at: position.at, id });
    expect(decodeTimeCursor(bucket)).toEqual({ at: position.at });
    // A call's position places a bucket listing too (its time is all that counts), as before.
    expect(decodeTimeCursor(call)).toEqual({ at: position.at });
  });

  it.each([
    ['garbage', 'not-a-cursor'],
    ['a time that is not toISOString()', encodeCursor({ at: '2026-11-22T10:11:12Z' })],
    ['year 0000', encodeCursor({ at: '0000-01-01T00:00:00.000Z' })],
    ['JSON null', Buffer.from('null').toString('base64url')],
  ])('refuses a time cursor that is %s, naming query.cursor', (_what, raw) => {
    const err = refusal(() => decodeTimeCursor(raw));
    expect(err.code).toBe('invalid_request');
    expect(err.extra.errors).toEqual([
      { path: 'query.cursor', message: 'not a cursor returned by this endpoint' },
    ]);
  });

  it('refuses a bucket cursor (no id) where rows are listed', () => {
    expect(refusal(() => decodeCursor(encodeCursor({ at: position.at }), 'use')).code).toBe(
      'invalid_request',
    );
  });

  it('pages limit + 1 rows: a next cursor at the last row shown only when a row was left over', () => {
    const rows = [3, 2, 1].map((n) => ({ at: `2026-11-22T10:00:0${n}.000Z`, id: newId('key'), n }));
    const pos = (r: (typeof rows)[number]) => ({ at: r.at, id: r.id });
    const first = keysetPage(rows, 2, pos);
    expect(first.items.map((r) => r.n)).toEqual([3, 2]);
    expect(decodeCursor(first.nextCursor!, 'key')).toEqual(pos(rows[1]!));
    expect(keysetPage(rows, 3, pos)).toEqual({ items: rows, nextCursor: null });
    expect(keysetPage([], 3, pos)).toEqual({ items: [], nextCursor: null });
  });
});
