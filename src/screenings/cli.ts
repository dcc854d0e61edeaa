import { createReadStream } from 'node:fs';
import { access, constants, stat } from 'node:fs/promises';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { CsvError, parse as parseCsv } from 'csv-parse';
import { actorOption, commandActor } from '../audit/operator.js';
import { networksFromConfig } from '../chains/providers.js';
import { clip, resolveNetwork } from '../chains/registry.js';
import type { ChainsConfig } from '../chains/settings.js';
import type { Connect, Orm } from '../db/orm.js';
import { JobQueues } from '../jobs/queues.js';
import { count, csvErrorMessage, importCsvOptions, LineCap, Progress } from '../platform/csv-import.js';
import { AppError } from '../platform/errors.js';
import { createBullConnection } from '../platform/redis.js';
import type { DatabaseSettings, RedisSettings } from '../platform/settings.js';
import { resolveScreenTarget } from '../risk/screen.js';
import { SCREENING_DEPTHS, type ScreeningDepth } from './entities.js';
import type { NewResult } from './repository.js';
import { ScreeningsService, type GivenTarget } from './service.js';

/** What the screenings commands read of the configuration. */
export interface ScreeningsCommandsConfig {
  database: DatabaseSettings;
  redis: RedisSettings;
  chains: ChainsConfig;
}

const CSV_COLUMNS = ['target', 'chain', 'network', 'label'] as const;
/** Rows checked and inserted per batch (all in the import's one transaction). */
const BATCH = 10_000;
/** Errors the summary lists (the counts cover every row). */
const MAX_REPORTED_ERRORS = 100;
/**
 * The longest line read: a legal row is under 1 KiB (a target and a label of up to 200 characters, two
 * short columns); 64 times that lets an over-long label through to be refused as a row of its own. A line
 * past it (a 1 MiB line) stops the import, and nothing is stored.
 */
const MAX_RECORD_BYTES = 64 * 1024;

/** An import's outcome, printed as JSON on stdout. */
interface ImportSummary {
  screening_id: string;
  depth: ScreeningDepth;
  rows: number;
  valid: number;
  invalid: number;
  errors: { line: number; target: string; code: string; message: string }[];
  seconds: number;
}

/** Operator commands for screenings: `screenings import` (otherwise they are made over HTTP). */
export function registerScreeningCommands(
  program: Command,
  config: () => Readonly<ScreeningsCommandsConfig>,
  print: (line: string) => void,
  connect: Connect,
  /** The account an operator names (id or org id), or `not_found`: the accounts feature answers. */
  accountOf: (orm: Orm, ref: string) => Promise<{ id: string }>,
): void {
  program
    .command('screenings')
    .description('bulk screenings (made over HTTP; files of any size imported here)')
    .command('import <account> <file>')
    .description(
      'screen every address of a CSV file for an account (id or org id): header row `target` and ' +
        'optionally `chain`, `network`, `label`; read as a stream, checked as the API checks targets, ' +
        'stored in ONE transaction (a CSV error, a line over 64 KiB or a bad header stores nothing), then ' +
        'screened by the workers; progress on stderr, a JSON summary on stdout (follow it with ' +
        '`GET /api/v1/screenings/{id}`). Audited as the operator named by --actor',
    )
    .addOption(
      new Option('--depth <depth>', 'lists, state or full').default('state').argParser((v: string) => {
        if (!(SCREENING_DEPTHS as readonly string[]).includes(v))
          throw new InvalidArgumentError(`expected one of ${SCREENING_DEPTHS.join(', ')}`);
        return v;
      }),
    )
    .addOption(actorOption())
    .action(async (accountRef: string, file: string, opts: { depth: ScreeningDepth; actor?: string }) => {
      let size: number;
      try {
        await access(file, constants.R_OK);
        size = (await stat(file)).size;
      } catch {
        throw new AppError('invalid_request', `Cannot read ${file}.`);
      }
      const cfg = config();
      const orm = await connect(cfg.database.url, 2);
      const bull = createBullConnection(cfg.redis);
      const queues = new JobQueues(bull, cfg.redis.key_prefix);
      try {
        const account = await accountOf(orm, accountRef);
        const service = new ScreeningsService(orm, cliTargets(cfg.chains), queues);
        const started = performance.now();
        const reader = new CsvTargets(file, size, service);
        const id = await service.store(account.id, commandActor(opts), opts.depth, reader.batches(), {
          start: true,
        });
        const summary: ImportSummary = {
          screening_id: id,
          depth: opts.depth,
          rows: reader.rows,
          valid: reader.rows - reader.invalid,
          invalid: reader.invalid,
          errors: reader.errors,
          seconds: Math.round(performance.now() - started) / 1000,
        };
        print(JSON.stringify(summary, null, 2));
      } finally {
        await queues.close();
        await bull.quit().catch(() => undefined);
        await orm.close();
      }
    });
}

/** Targets checked as the API checks them, against the configured networks (no provider is called). */
function cliTargets(chains: ChainsConfig) {
  const all = networksFromConfig(chains);
  const view = {
    networks: all.map((n) => n.def),
    configured: all.filter((n) => n.urls.length > 0).map((n) => n.def),
  };
  const providers = { resolve: (c?: string, n?: string) => resolveNetwork(c, n, view) };
  return { resolve: (t: string, c?: string, n?: string) => resolveScreenTarget(providers, t, c, n) };
}

/**
 * A CSV file as batches of checked targets, streamed: a file of any size costs the memory of one batch.
 * A header without `target` or with another column, a CSV syntax error or a line over MAX_RECORD_BYTES
 * throws (`invalid_request`, naming the line), which rolls the import back.
 */
class CsvTargets {
  rows = 0;
  invalid = 0;
  readonly errors: ImportSummary['errors'] = [];

  constructor(
    private readonly file: string,
    private readonly size: number,
    private readonly service: ScreeningsService,
  ) {}

  async *batches(): AsyncGenerator<NewResult[]> {
    const input = createReadStream(this.file);
    const lines = new LineCap(MAX_RECORD_BYTES);
    const progress = new Progress(
      this.size,
      () => input.bytesRead,
      (rows, pct, perSecond) =>
        `import: ${count(rows)} rows read (${pct}%), invalid ${count(this.invalid)}, ${count(perSecond)} rows/s`,
      100_000,
    );
    let header = false;
    let last = { lines: 0, empty_lines: 0 };
    const options = importCsvOptions(this.file, {
      maxBytes: MAX_RECORD_BYTES,
      optional: CSV_COLUMNS.slice(1),
      nothing: 'Nothing was stored.',
      onHeader: () => {
        header = true;
        last = { lines: parser.info.lines, empty_lines: parser.info.empty_lines };
      },
    });
    const parser = parseCsv(options);
    input.on('error', (err) => parser.destroy(err));
    lines.on('error', (err) => parser.destroy(err));
    let batch: { line: number; given: GivenTarget }[] = [];
    const flush = () => {
      const { rows, errors } = this.service.checkTargets(
        batch.map((b) => b.given),
        this.rows - batch.length,
      );
      const lineOf = new Map(batch.map((b, i) => [this.rows - batch.length + i, b.line]));
      for (const row of rows) if (row.status === 'invalid') this.invalid++;
      for (const e of errors)
        if (this.errors.length < MAX_REPORTED_ERRORS)
          this.errors.push({
            line: lineOf.get(e.index)!,
            target: clip(e.target),
            code: e.code,
            message: e.message,
          });
      batch = [];
      progress.update(this.rows);
      return rows;
    };
    try {
      for await (const { record, info } of input.pipe(lines).pipe(parser) as AsyncIterable<{
        record: Record<string, string | undefined>;
        info: { lines: number; empty_lines: number };
      }>) {
        last = info;
        this.rows++;
        const given = {
          target: (record.target ?? '').replaceAll('\u0000', ''),
          chain: record.chain || undefined,
          network: record.network || undefined,
          label: record.label ? record.label.replaceAll('\u0000', '') : undefined,
        };
        batch.push({ line: info.lines, given });
        if (batch.length >= BATCH) yield flush();
      }
      if (batch.length) yield flush();
    } catch (err) {
      if (err instanceof CsvError && lines.tooLong === undefined)
        throw new AppError(
          'invalid_request',
          `${this.file} is not valid CSV: ${csvErrorMessage(err, last, MAX_RECORD_BYTES)}. Nothing was stored.`,
        );
      if (!(err instanceof CsvError)) throw err;
    } finally {
      input.destroy();
      progress.done(this.rows);
    }
    if (lines.tooLong !== undefined)
      throw new AppError(
        'invalid_request',
        `${this.file}: line ${lines.tooLong} is over the ${MAX_RECORD_BYTES / 1024} KiB limit on a row. ` +
          'Nothing was stored.',
      );
    if (!header)
      throw new AppError('invalid_request', `${this.file} is empty: expected a header row naming target.`);
    if (this.rows === 0) throw new AppError('invalid_request', `${this.file} has a header and no target.`);
  }
}
