import { Transform, type TransformCallback } from 'node:stream';
import type { CsvError, Options as CsvOptions } from 'csv-parse';
import { AppError } from './errors.js';

/*
 * What the CSV imports of the command line share (`watchlists import`, `screenings import`): a cap on the
 * length of a line, the words of a CSV error, and progress on stderr.
 */

/**
 * Passes whole lines of the file on, and ends it before the first line longer than `maxBytes` (whose
 * number it keeps in `tooLong`): it holds at most one such line's bytes, whatever the file. csv-parse's
 * `max_record_size` caps the characters of a record's fields (an unclosed quote cannot read the rest of the
 * file into one field), not its delimiters: a line of 50 MB of commas would otherwise be read whole.
 */
export class LineCap extends Transform {
  /** The number of the line that stopped the file, if one did. */
  tooLong: number | undefined;
  private pending = Buffer.alloc(0);
  /** The number of the line `pending` starts. */
  private line = 1;

  constructor(readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.tooLong !== undefined) return done();
    const data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    let start = 0;
    for (let nl = data.indexOf(0x0a); nl !== -1; nl = data.indexOf(0x0a, start)) {
      if (nl - start > this.maxBytes) return this.stop(data.subarray(0, start), done);
      start = nl + 1;
      this.line++;
    }
    if (data.length - start > this.maxBytes) return this.stop(data.subarray(0, start), done);
    this.pending = Buffer.from(data.subarray(start));
    done(null, data.subarray(0, start));
  }

  override _flush(done: TransformCallback): void {
    done(null, this.tooLong === undefined ? this.pending : undefined);
  }

  /** Passes the whole lines before the long one, and ends the file there. */
  private stop(whole: Buffer, done: TransformCallback): void {
    this.tooLong = this.line;
    this.pending = Buffer.alloc(0);
    this.push(whole);
    this.push(null);
    done();
  }
}

/**
 * csv-parse's options for an import: a header row naming `target` and optionally the `optional` columns
 * (any other, or none of `target`, is `invalid_request` ending with `nothing`), trimmed fields, empty lines
 * skipped, records capped at `maxBytes`, each with its line info. `onHeader` runs once the header is read.
 */
export function importCsvOptions(
  file: string,
  opts: { maxBytes: number; optional: readonly string[]; nothing: string; onHeader: () => void },
): CsvOptions & { autoDestroy: boolean } {
  const allowed = ['target', ...opts.optional];
  return {
    bom: true,
    trim: true,
    skip_empty_lines: true,
    relax_column_count: true,
    info: true,
    max_record_size: opts.maxBytes,
    // Handed to the stream (csv-parse's Parser passes its options to Transform): on an error the records
    // parsed before it are still read, then the error thrown. Destroyed at once, the stream would drop
    // those it holds, and the rows just before the error would be neither imported nor reported.
    autoDestroy: false,
    columns: (names: string[]) => {
      opts.onHeader();
      const columns = names.map((h) => h.trim().toLowerCase());
      const unknown = columns.filter((c) => !allowed.includes(c));
      if (!columns.includes('target') || unknown.length)
        throw new AppError(
          'invalid_request',
          `${file}: the header row must name the column target, and may name ${opts.optional.join(', ')}` +
            (unknown.length ? `; unknown: ${unknown.map((c) => c.slice(0, 40)).join(', ')}` : '') +
            `. ${opts.nothing}`,
        );
      return columns;
    },
  };
}

/** What a CsvError says, a record over the cap named by the line it starts on (an unclosed quote's). */
export function csvErrorMessage(
  err: CsvError,
  last: { lines: number; empty_lines: number },
  maxBytes: number,
): string {
  if (err.code !== 'CSV_MAX_RECORD_SIZE') return err.message;
  // The error carries csv-parse's info where it stopped. The record starts on the line after the last
  // one read, past the empty lines skipped since.
  const start = last.lines + (Number(err.empty_lines) - last.empty_lines) + 1;
  return (
    `line ${start}: the row is over the ${maxBytes / 1024} KiB limit on a row (still unfinished ` +
    `at line ${Number(err.lines)}: an unclosed quote?)`
  );
}

/**
 * An import's progress on stderr: on a terminal one line rewritten in place, otherwise a line every 10 %
 * of the file or `everyRows` rows. `describe` words a line from the rows read, the share of the file and
 * the rows per second.
 */
export class Progress {
  private readonly tty = process.stderr.isTTY === true;
  private readonly started = performance.now();
  private lastDraw = 0;
  private nextRows: number;
  private nextPct = 10;
  /** Rows when the last line was printed (not on a terminal). */
  private printedRows = -1;

  constructor(
    private readonly size: number,
    private readonly bytesRead: () => number,
    private readonly describe: (rows: number, pct: number, perSecond: number) => string,
    private readonly everyRows = 10_000,
  ) {
    this.nextRows = everyRows;
  }

  update(rows: number): void {
    const pct = this.size > 0 ? Math.min(100, Math.floor((this.bytesRead() * 100) / this.size)) : 100;
    if (this.tty) {
      const now = performance.now();
      if (now - this.lastDraw < 100) return;
      this.lastDraw = now;
      process.stderr.write(`\r${this.line(rows, pct)}\u001b[K`);
      return;
    }
    if (rows < this.nextRows && pct < this.nextPct) return;
    while (this.nextRows <= rows) this.nextRows += this.everyRows;
    while (this.nextPct <= pct) this.nextPct += 10;
    this.printedRows = rows;
    process.stderr.write(`${this.line(rows, pct)}\n`);
  }

  done(rows: number): void {
    const line = this.line(rows, 100);
    if (this.tty) process.stderr.write(`\r${line}\u001b[K\n`);
    else if (this.printedRows !== rows) process.stderr.write(`${line}\n`);
  }

  private line(rows: number, pct: number): string {
    const seconds = (performance.now() - this.started) / 1000;
    return this.describe(rows, pct, seconds > 0 ? Math.round(rows / seconds) : 0);
  }
}

/** Numbers as the imports print them: 1,000,000. */
export const count = (v: number): string => v.toLocaleString('en-US');
