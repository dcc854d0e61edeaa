import { createReadStream } from 'node:fs';
import { access, constants } from 'node:fs/promises';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { actorOption, commandActor } from '../audit/operator.js';
import { networksFromConfig } from '../chains/providers.js';
import { AppError } from '../platform/errors.js';
import type { Connect } from '../db/orm.js';
import {
  parseIsoDay,
  parseSanctionsFile,
  SANCTIONS_FORMATS,
  type SanctionsFormat,
} from './sanctions-files.js';
import { createLogger } from '../platform/logger.js';
import { createRedis } from '../platform/redis.js';
import { listsChannel, publishListChange } from './cache.js';
import { presentSanctionsImport, presentSanctionsSource } from './present.js';
import { ListsService } from './service.js';
import type { ListsCommandsConfig as Config } from './settings.js';

type Print = (line: string) => void;

interface ImportOptions {
  format: SanctionsFormat;
  source?: string;
  asOf?: string;
  actor?: string;
}

/** What an OFAC SDN import is called unless --source says otherwise. */
export const OFAC_SDN_SOURCE = 'OFAC SDN';

const asDay = (value: string) => {
  const day = parseIsoDay(value);
  if (!day) throw new InvalidArgumentError('expected a date as YYYY-MM-DD');
  return day;
};
const asSource = (value: string) => {
  const source = value.trim();
  if (!source || source.length > 100) throw new InvalidArgumentError('expected 1 to 100 characters');
  return source;
};

/** Operator commands for sanctions data: `lists import`, `lists sources`. */
export function registerListCommands(
  program: Command,
  config: () => Readonly<Config>,
  print: Print,
  connect: Connect,
): void {
  const withService = async <T>(fn: (svc: ListsService) => Promise<T>): Promise<T> => {
    const cfg = config();
    const orm = await connect(cfg.database.url, 2);
    // Offline queue on: the import publishes its change right after a connection that may still be opening.
    const redis = createRedis(cfg.redis, { enableOfflineQueue: true });
    redis.on('error', () => undefined); // a failed publish is logged by publishListChange
    const logger = createLogger(cfg.log.level, { role: 'cli' }, 'stderr'); // stdout carries the JSON result
    try {
      return await fn(
        new ListsService(
          orm,
          networksFromConfig(cfg.chains).map((n) => n.def),
          (scope) => publishListChange(redis, listsChannel(cfg.redis.key_prefix), scope, logger),
          { maxEntriesPerAccount: cfg.lists.max_entries_per_account },
        ),
      );
    } finally {
      await orm.close();
      redis.disconnect();
    }
  };
  const json = (value: unknown) => print(JSON.stringify(value, null, 2));

  const lists = program
    .command('lists')
    .description('sanctions data (organisation lists are managed over HTTP)');
  lists
    .command('import <file>')
    .description(
      'replace one sanctions source with the digital currency addresses of FILE (an OFAC SDN advanced ' +
        'XML, sdn_advanced.xml, or a CSV with the header address,currency,name[,uid]); prints counts',
    )
    .addOption(
      new Option('--format <format>', 'the file format').choices(SANCTIONS_FORMATS).makeOptionMandatory(),
    )
    .option(
      '--source <name>',
      `the list the rows belong to; its previous rows are replaced (default for ofac-sdn-xml: "${OFAC_SDN_SOURCE}"; required for csv)`,
      asSource,
    )
    .option(
      '--as-of <date>',
      "the list's publication date, YYYY-MM-DD (default: the XML's DateOfIssue; for csv, today)",
      asDay,
    )
    .addOption(actorOption())
    .action(async (file: string, opts: ImportOptions) => {
      const source = opts.source ?? (opts.format === 'ofac-sdn-xml' ? OFAC_SDN_SOURCE : undefined);
      if (!source)
        throw new AppError(
          'invalid_request',
          '--source is required with --format csv (the import replaces every row of that source).',
        );
      try {
        await access(file, constants.R_OK);
      } catch {
        throw new AppError('invalid_request', `Cannot read ${file}.`);
      }
      // Parsed (streamed) before connecting: a bad file never touches the database.
      const parsed = await parseSanctionsFile(opts.format, createReadStream(file, { encoding: 'utf8' }));
      const listAsOf = opts.asOf ?? parsed.asOf ?? (opts.format === 'csv' ? today() : undefined);
      if (!listAsOf)
        throw new AppError(
          'invalid_request',
          `${file} has no DateOfIssue: give the list's date with --as-of.`,
        );
      const result = await withService((s) =>
        s.importSanctions({ source, listAsOf, records: parsed.records }, commandActor(opts)),
      );
      json(presentSanctionsImport(result));
    });
  lists
    .command('sources')
    .description('the imported sanctions sources: as-of date, import time, counts per currency')
    .action(async () => json((await withService((s) => s.sanctionSources())).map(presentSanctionsSource)));
}

const today = () => new Date().toISOString().slice(0, 10);
