import { createReadStream } from 'node:fs';
import { access, constants, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Command } from 'commander';
import { actorOption, commandActor } from '../audit/operator.js';
import { CsvError, parse as parseCsv } from 'csv-parse';
import { networksFromConfig } from '../chains/providers.js';
import { clip, resolveNetwork } from '../chains/registry.js';
import type { ChainsConfig } from '../chains/settings.js';
import type { Connect, Orm } from '../db/orm.js';
import { count, csvErrorMessage, importCsvOptions, LineCap, Progress } from '../platform/csv-import.js';
import { AppError } from '../platform/errors.js';
import type { DatabaseSettings } from '../platform/settings.js';
import { newEntrySchema, type ImportSummaryBody, type NewEntry } from './schemas.js';
import { WatchlistEntriesService } from './entries.js';
import type { NetworkResolver } from './targets.js';
import { WatchlistsService } from './lists.js';
import { WatchlistRepository } from './repository.js';
import type { WatchlistsSettings } from './settings.js';

type Print = (line: string) => void;

/** What the watchlists commands read of the configuration. */
export interface WatchlistsCommandsConfig {
  database: DatabaseSettings;
  chains: ChainsConfig;
  watchlists: WatchlistsSettings;
}

/** Rows per call of the service: the same bulk add the API runs. */
const IMPORT_BATCH = 1000;
/** Errors the summary lists (the counts cover every row). */
const MAX_REPORTED_ERRORS = 100;
const CSV_COLUMNS = ['target', 'chain', 'network', 'label', 'target_type'] as const;
/**
 * The longest row read, in two bounds: csv-parse's `max_record_size` (the characters of a record's fields,
 * so an unclosed quote cannot read the rest of the file into one field: without it, a 100 MiB file with one
 * peaked at ~470 MiB of RSS before failing at its end) and LineCap's bound on a physical line (what
 * `max_record_size` does not count: delimiters, so a line of 50 MB of commas, millions of empty fields,
 * took 2.7 GB). The longest legal row is about 1 KiB (a target of up to 200 characters, a label of 200
 * characters of up to 4 bytes each, three short columns); 64 times that lets an over-long label through to
 * be refused as a failed row of its own (as the API refuses it), at the cost of a 64 KiB buffer. A row
 * past either bound stops the import, naming its line.
 */
const MAX_RECORD_BYTES = 64 * 1024;

/** A row of the file: an entry to add, or what makes it one the API would refuse as a whole. */
type Row = { line: number } & (
  { entry: NewEntry } | { refused: { target: string; code: string; message: string } }
);

/** Operator commands for watchlists: `watchlists import` (lists are otherwise managed over HTTP). */
export function registerWatchlistCommands(
  program: Command,
  config: () => Readonly<WatchlistsCommandsConfig>,
  print: Print,
  connect: Connect,
  /** The account an operator names (id or org id), or `not_found`: the accounts feature answers. */
  accountOf: (orm: Orm, ref: string) => Promise<{ id: string }>,
): void {
  const watchlists = program
    .command('watchlists')
    .description('watchlists (managed over HTTP; bulk CSV import here)');
  watchlists
    .command('import <account> <watchlist> <file>')
    .description(
      'add the addresses of a CSV file to a watchlist of an account (id or org id), as the API adds ' +
        'entries: header row with `target` and optionally `chain`, `network`, `label`, `target_type`; read ' +
        'as a stream, 1,000 rows per batch, a row of up to 64 KiB; progress on stderr, a JSON summary on stdout. ' +
        'Each batch is audited (watchlist_entries.added) as the operator named by --actor',
    )
    .addOption(actorOption())
    .action(async (accountRef: string, watchlistId: string, file: string, opts: { actor?: string }) => {
      let size: number;
      try {
        await access(file, constants.R_OK);
        size = (await stat(file)).size;
      } catch {
        throw new AppError('invalid_request', `Cannot read ${file}.`);
      }
      const cfg = config();
      const orm = await connect(cfg.database.url, 2);
      try {
        const account = await accountOf(orm, accountRef);
        const rows = new WatchlistRepository(orm);
        const lists = new WatchlistsService(rows, {
          defaultSchedule: cfg.watchlists.default_schedule,
          defaultDeepSchedule: cfg.watchlists.default_deep_schedule,
          maxWatchlistsPerAccount: cfg.watchlists.max_per_account,
        });
        const service = new WatchlistEntriesService(rows, networkResolver(cfg.chains), {
          maxEntriesPerAccount: cfg.watchlists.max_entries_per_account,
        });
        await lists.getWatchlist(account.id, watchlistId); // not_found before reading a line
        const actor = commandActor(opts);
        // Each batch commits on its own, so each is audited in its transaction, naming the file and lines.
        const summary = await importCsv(file, size, (entries, lines) =>
          service.addEntries(account.id, watchlistId, entries, actor, {
            import: { file: basename(file), ...lines },
          }),
        );
        print(JSON.stringify(summary, null, 2));
        if (summary.aborted) throw new AppError('invalid_request', summary.aborted);
      } finally {
        await orm.close();
      }
    });
}

/** The configured networks as the API's resolver sees them (ChainProviders without the clients). */
function networkResolver(chains: ChainsConfig): NetworkResolver {
  const all = networksFromConfig(chains);
  const view = {
    networks: all.map((n) => n.def),
    configured: all.filter((n) => n.urls.length > 0).map((n) => n.def),
  };
  return { networks: view.networks, resolve: (chain, network) => resolveNetwork(chain, network, view) };
}

type AddBatch = (
  entries: NewEntry[],
  lines: { first_line: number; last_line: number },
) => ReturnType<WatchlistEntriesService['addEntries']>;

/**
 * Streams `file` through csv-parse and adds its rows IMPORT_BATCH at a time, so a file of any size costs
 * the memory of one batch (a record is capped at MAX_RECORD_BYTES). A row the API would refuse as a whole
 * (a label over 200 characters, a NUL) is a failed row here; the others get the API's per-entry results.
 * A CSV syntax error or a record over the cap stops the import: the rows before it stay imported, and
 * the summary says so, naming the line.
 */
async function importCsv(file: string, size: number, add: AddBatch): Promise<ImportSummaryBody> {
  const started = performance.now();
  const summary: ImportSummaryBody = {
    rows: 0,
    created: 0,
    exists: 0,
    failed: 0,
    errors: [],
    seconds: 0,
  };
  const fail = (line: number, target: string, code: string, message: string) => {
    summary.failed++;
    if (summary.errors.length < MAX_REPORTED_ERRORS) summary.errors.push({ line, target, code, message });
  };
  const input = createReadStream(file);
  const progress = new Progress(
    size,
    () => input.bytesRead,
    (rows, pct, perSecond) =>
      `import: ${count(rows)} rows read (${pct}%), created ${count(summary.created)}, exists ` +
      `${count(summary.exists)}, failed ${count(summary.failed)}, ${count(perSecond)} rows/s`,
  );
  let header = false;
  /** Where the last record read ended (`lines`, `empty_lines` of csv-parse's info): the next starts after. */
  let last = { lines: 0, empty_lines: 0 };
  const options = importCsvOptions(file, {
    maxBytes: MAX_RECORD_BYTES,
    optional: CSV_COLUMNS.slice(1),
    nothing: 'Nothing was imported.',
    onHeader: () => {
      header = true;
      last = { lines: parser.info.lines, empty_lines: parser.info.empty_lines };
    },
  });
  const parser = parseCsv(options);
  const lines = new LineCap(MAX_RECORD_BYTES);
  input.on('error', (err) => parser.destroy(err));
  lines.on('error', (err) => parser.destroy(err));

  let batch: Row[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const rows = batch;
    batch = [];
    const entries = rows.flatMap((r) => ('entry' in r ? [r.entry] : []));
    const { created, exists, results } =
      entries.length > 0
        ? await add(entries, { first_line: rows[0]!.line, last_line: rows.at(-1)!.line })
        : { created: 0, exists: 0, results: [] };
    summary.created += created;
    summary.exists += exists;
    // In file order, so the errors listed are the first ones of the file.
    let next = 0;
    for (const row of rows) {
      if ('refused' in row) {
        fail(row.line, row.refused.target, row.refused.code, row.refused.message);
        continue;
      }
      const r = results[next++]!;
      if (r.status === 'error') fail(row.line, r.target, r.code ?? 'error', r.message ?? '');
    }
    progress.update(summary.rows);
  };

  try {
    for await (const { record, info } of input.pipe(lines).pipe(parser) as AsyncIterable<{
      record: Record<string, string | undefined>;
      info: { lines: number; empty_lines: number };
    }>) {
      summary.rows++;
      const line = info.lines;
      last = info;
      const raw = {
        target: record.target ?? '',
        chain: record.chain || null,
        network: record.network || null,
        label: record.label || null,
        target_type: record.target_type || null,
      };
      const parsed = newEntrySchema.safeParse(raw);
      const refuse = (message: string) =>
        batch.push({ line, refused: { target: clip(raw.target), code: 'invalid_request', message } });
      if (Object.values(raw).some((v) => v?.includes('\u0000')))
        refuse('a field holds a NUL (U+0000) character');
      else if (!parsed.success)
        refuse(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      else batch.push({ line, entry: parsed.data });
      if (batch.length >= IMPORT_BATCH) await flush();
    }
    await flush();
  } catch (err) {
    if (!(err instanceof CsvError)) throw err;
    await flush();
    // Where LineCap ended the file, a record may be left open: the long line is the error, said below.
    if (lines.tooLong === undefined)
      summary.aborted =
        `${file} is not valid CSV: ${csvErrorMessage(err, last, MAX_RECORD_BYTES)}. The import stopped there: ` +
        `the ${summary.rows} rows before it were imported as the summary says.`;
  } finally {
    input.destroy();
    progress.done(summary.rows);
  }
  if (lines.tooLong !== undefined)
    summary.aborted =
      `${file} is not valid CSV: line ${lines.tooLong}: the row is over the ${MAX_RECORD_BYTES / 1024} KiB ` +
      `limit on a row. The import stopped there: the ${summary.rows} rows before it were imported as the ` +
      'summary says.';
  if (!header && !summary.aborted)
    throw new AppError(
      'invalid_request',
      `${file} is empty: expected a header row naming the column target.`,
    );
  summary.seconds = Math.round(performance.now() - started) / 1000;
  return summary;
}
