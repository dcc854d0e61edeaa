import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import { InvalidArgumentError, type Command } from 'commander';
import type { Connect, Orm } from '../db/orm.js';
import { AppError } from '../platform/errors.js';
import type { DatabaseSettings } from '../platform/settings.js';
import { presentAuditExportLine } from './present.js';
import { AuditLogService } from './service.js';

/** What the audit commands read of the configuration. */
export interface AuditCommandsConfig {
  database: DatabaseSettings;
}

/** A day (`2026-01-31`, UTC midnight) or an RFC 3339 time with its offset (`2026-01-31T12:00:00Z`). */
const TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/i;

const asTime = (value: string) => {
  const d = new Date(value);
  if (!TIME.test(value) || Number.isNaN(d.getTime()) || d.getUTCFullYear() < 1)
    throw new InvalidArgumentError(
      'expected an RFC 3339 time with its offset (2026-01-31T00:00:00Z) or a day',
    );
  return d;
};

/** Writes `chunk`, waiting for `drain` when the stream's buffer is full; rejects on the stream's error. */
function write(out: Writable, chunk: string): Promise<void> {
  if (out.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      out.off('drain', done);
      out.off('error', done);
      if (err) reject(err);
      else resolve();
    };
    out.once('drain', done);
    out.once('error', done);
  });
}

/** Ends a file stream and waits until its last byte is written (or its error). */
const finish = (out: Writable): Promise<void> =>
  new Promise((resolve, reject) => {
    out.once('error', reject);
    out.end(resolve);
  });

/** Operator commands for the audit log: `audit export` (every account's records, for a SIEM). */
export function registerAuditCommands(
  program: Command,
  config: () => Readonly<AuditCommandsConfig>,
  connect: Connect,
  /** The account an operator names (id or org id), or `not_found`: the accounts feature answers. */
  accountOf: (orm: Orm, ref: string) => Promise<{ id: string }>,
  stdout: Writable = process.stdout,
): void {
  const audit = program.command('audit').description('the audit log of every change');
  audit
    .command('export')
    .description(
      'every audit record (all accounts, or one), oldest first, as NDJSON: one JSON record per line, ' +
        'streamed in batches; on stdout unless --output',
    )
    .option('--since <time>', 'from this time (inclusive, RFC 3339)', asTime)
    .option('--until <time>', 'to this time (exclusive, RFC 3339; default: now)', asTime)
    .option('--account <account>', 'only this account (id or org id)')
    .option('--output <file>', 'write to FILE (replaced) instead of stdout')
    .action(async (opts: { since?: Date; until?: Date; account?: string; output?: string }) => {
      if (opts.since && opts.until && opts.since >= opts.until)
        throw new AppError('invalid_request', '--since must be before --until.');
      const orm = await connect(config().database.url, 2);
      try {
        const accountId = opts.account ? (await accountOf(orm, opts.account)).id : undefined;
        const out = opts.output ? createWriteStream(opts.output, { flags: 'w' }) : stdout;
        // An error of the output (EPIPE: the reader went away; a full disk) ends the export with it.
        let failed: Error | undefined;
        const onError = (err: Error) => (failed ??= err);
        out.on('error', onError);
        let n = 0;
        try {
          const batches = new AuditLogService(orm).export({
            ...(opts.since ? { since: opts.since } : {}),
            ...(opts.until ? { until: opts.until } : {}),
            ...(accountId ? { accountId } : {}),
          });
          for await (const batch of batches) {
            let chunk = '';
            for (const record of batch) chunk += `${JSON.stringify(presentAuditExportLine(record))}\n`;
            if (failed) throw failed;
            await write(out, chunk);
            n += batch.length;
          }
          if (out !== stdout) await finish(out);
          if (failed) throw failed;
        } finally {
          if (out !== stdout && !out.writableFinished) out.destroy();
        }
        process.stderr.write(`exported ${n} audit records${opts.output ? ` to ${opts.output}` : ''}\n`);
      } finally {
        await orm.close();
      }
    });
}
