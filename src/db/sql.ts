import type { EntityManager } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';
import { decodeCursor } from '../platform/cursor.js';
import type { Orm } from './orm.js';

/*
 * The SQL idioms every feature's repository shares: raw statements on the ORM's connection or a
 * transaction, a WHERE clause built filter by filter (with the keyset cursor of the API's lists), the SET
 * clause of a partial update, and timestamps as raw queries return them.
 */

/** A timestamp as a raw query returns it (through `row_to_json` or jsonb it is a string). */
export type Time = Date | string;
export const time = (t: Time): Date => new Date(t);
export const timeOrNull = (t: Time | null): Date | null => (t === null ? null : new Date(t));

/** Where a statement runs: the ORM (its own connection, no transaction) or a transaction's manager. */
export type Db = Orm | EntityManager;

/** Runs `sql` with `params` and returns its rows (`'run'`: the driver's result, for writes). */
export function run<T>(db: Db, sql: string, params: readonly unknown[] = [], method: 'all' | 'run' = 'all') {
  // A transaction's manager runs the statement in its transaction; the ORM on a pooled connection.
  if ('em' in db) return db.em.getConnection().execute(sql, [...params], method) as Promise<T>;
  return db.execute(sql, [...params], method) as Promise<T>;
}

/**
 * Runs `sql` (placeholders `$1`, `$2`, …) with its parameters bound by PostgreSQL, in `db`'s transaction
 * when it has one; returns how many rows it wrote. `run` has the ORM inline every parameter into the
 * statement, escaping it character by character: for a parameter of megabytes (a 10,000-row JSON batch)
 * that escaping cost more than the statement.
 */
export async function runBound(db: Db, sql: string, params: readonly unknown[]): Promise<number> {
  const em = 'em' in db ? db.em : db;
  const result = await em.getKysely().executeQuery(CompiledQuery.raw(sql, [...params]));
  return Number(result.numAffectedRows ?? 0);
}

/**
 * A text[] parameter (`= any(?::text[])`) from items that need no quoting: ids (`prefix_hex`) and
 * addresses (base58 or hex).
 */
export const textArray = (items: readonly string[]): string => `{${items.join(',')}}`;

/** A WHERE clause built filter by filter; its parameters in the order of its `?`. */
export class Where {
  readonly params: unknown[] = [];
  private readonly parts: string[] = [];

  constructor(sql?: string, ...values: unknown[]) {
    if (sql) this.and(sql, ...values);
  }

  /** Adds `sql` (with as many `?` as `values`). */
  and(sql: string, ...values: unknown[]): this {
    this.parts.push(sql);
    this.params.push(...values);
    return this;
  }

  /** Adds `sql` with `value` when the value is given (a query's optional filter). */
  andIf(value: unknown, sql: string): this {
    return value === undefined || value === null || value === '' ? this : this.and(sql, value);
  }

  /**
   * Rows after the API cursor `cursor` (ids prefixed `idPrefix`) of a list ordered by
   * `(timeColumn, idColumn) desc`; a forged cursor is `invalid_request`.
   */
  before(cursor: string | undefined, idPrefix: string, timeColumn: string, idColumn: string): this {
    if (!cursor) return this;
    const c = decodeCursor(cursor, idPrefix);
    return this.and(`(${timeColumn}, ${idColumn}) < (?, ?)`, c.at, c.id);
  }

  /** The conditions joined with `and` (`true` when there is none). */
  get sql(): string {
    return this.parts.length ? this.parts.join(' and ') : 'true';
  }
}

/** The SET clause of a partial update: a column per field given; its parameters in order. */
export class Patch {
  readonly params: unknown[] = [];
  private readonly sets: string[] = [];

  /** `column = ?` (with a cast such as `::jsonb`). */
  set(column: string, value: unknown, cast = ''): this {
    this.sets.push(`${column} = ?${cast}`);
    this.params.push(value);
    return this;
  }

  /** A SET item without a parameter (`disabled_at = null`). */
  raw(sql: string): this {
    this.sets.push(sql);
    return this;
  }

  get empty(): boolean {
    return this.sets.length === 0;
  }

  /** The items joined with commas. */
  get sql(): string {
    return this.sets.join(', ');
  }
}
