import { InvalidArgumentError, Option, type Command } from 'commander';
import { buildReport, renderTable } from './report.js';
import { runDoctor, type DoctorConfig } from './run.js';

/** Each check's time limit unless `--timeout` says otherwise. */
const DEFAULT_TIMEOUT_S = 5;
const MAX_TIMEOUT_S = 120;

/**
 * `riskwatch doctor`: checks an install (configuration, PostgreSQL, Redis and the queues, the node
 * providers, bearer-token verification, the webhook guard) and says what is wrong. docs/operations.md.
 * Exit code: 0 every check ok (or info), 1 a warning at worst, 2 a failure. Read-only.
 */
export function registerDoctorCommands(
  program: Command,
  config: () => Readonly<DoctorConfig>,
  print: (line: string) => void,
): void {
  program
    .command('doctor')
    .description(
      'check this install and say what is wrong: configuration, PostgreSQL (version, migrations, clock), ' +
        'Redis (version, eviction policy, persistence), the job queues and their workers, each node ' +
        'provider (answers, and serves the network it is configured for), JWT/JWKS, the webhook SSRF ' +
        'settings. Read-only. Prints a table (--json: a JSON document); exit code 0 all ok, 1 warnings, 2 ' +
        'failures',
    )
    .option('--json', 'print a JSON document instead of the table')
    .addOption(
      new Option('--timeout <seconds>', `time limit of each check (1–${MAX_TIMEOUT_S})`)
        .default(DEFAULT_TIMEOUT_S)
        .argParser((v: string) => {
          const s = Number(v);
          if (!Number.isFinite(s) || s < 1 || s > MAX_TIMEOUT_S)
            throw new InvalidArgumentError(`expected a number of seconds from 1 to ${MAX_TIMEOUT_S}`);
          return s;
        }),
    )
    .action(async (opts: { json?: boolean; timeout: number }) => {
      const timeoutMs = Math.round(opts.timeout * 1000);
      const findings = await runDoctor({ config, env: process.env, timeoutMs });
      const report = buildReport(findings, timeoutMs, new Date());
      print(opts.json ? JSON.stringify(report, null, 2) : renderTable(report));
      // Exits here, whatever connection a timed-out check left behind: the command always ends.
      await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
      process.exit(report.exit_code);
    });
}
