#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { startWorkers } from '../workers/main.js';
import { startScheduler } from '../workers/scheduler.js';
import { registerAccountCommands } from './accounts/cli.js';
import { AccountsService } from './accounts/service.js';
import { registerAuditCommands } from './audit/cli.js';
import { startApi } from './api.js';
import { apiProcessCount, childOfSupervisor, reportReady, superviseCluster, type Role } from './cluster.js';
import { loadConfig, type Config } from './config.js';
import { connectDatabase } from './database.js';
import { applyMigrations, createMigration } from './db/migrate.js';
import { registerDoctorCommands } from './doctor/cli.js';
import { registerListCommands } from './lists/cli.js';
import { ConfigError } from './platform/config.js';
import { AppError } from './platform/errors.js';
import { createLogger } from './platform/logger.js';
import { createRuntime, registerConnectionShutdown, VERSION } from './runtime.js';
import { registerScreeningCommands } from './screenings/cli.js';
import { registerWatchlistCommands } from './watchlists/cli.js';
import { registerSecretsCommands } from './webhooks/cli.js';

let cachedConfig: Readonly<Config> | undefined;
const config = () => (cachedConfig ??= loadConfig());
const print = (line: string) => process.stdout.write(`${line}\n`);

async function runRoles(role: Role): Promise<void> {
  const cfg = config();
  // A child of the supervisor runs the roles it was given; the supervisor serves /metrics for it.
  const given = childOfSupervisor();
  const processes = apiProcessCount(cfg.server.api_processes);
  if (!given && (role === 'api' || role === 'all') && processes > 1)
    return superviseCluster(
      role,
      processes,
      cfg,
      createLogger(cfg.log.level, { role: `${role}-supervisor` }),
    );
  const roles = given?.roles ?? (role === 'all' ? ['api', 'worker', 'scheduler'] : [role]);
  const rt = await createRuntime(given ? roles.join('+') : role, cfg);
  if (given) rt.metrics.reportToSupervisor(given.name);
  else {
    const metricsServer = await rt.metrics.listen(rt.config.server.host, rt.config.server.metrics_port);
    rt.shutdown.add('metrics', () => new Promise((resolve) => metricsServer.close(resolve)));
  }
  if (roles.includes('api')) await startApi(rt, { sharedPort: !!given });
  if (roles.includes('worker')) startWorkers(rt);
  if (roles.includes('scheduler')) startScheduler(rt);
  registerConnectionShutdown(rt);
  rt.shutdown.listen();
  reportReady();
}

const program = new Command()
  .name('riskwatch')
  .description('Self-hosted, read-only blockchain risk service')
  .version(VERSION)
  .exitOverride();

for (const [role, text] of [
  ['api', 'serve the HTTP API'],
  ['worker', 'run the queue consumers and the usage drain'],
  ['scheduler', 'enqueue periodic jobs'],
  ['all', 'api + worker + scheduler (one process, or the API over server.api_processes)'],
] as const)
  program
    .command(role)
    .description(text)
    .action(() => runRoles(role));

program
  .command('migrate')
  .description('apply pending database migrations, then exit')
  .option('--create', 'developers: write a migration for entity changes into src/db/migrations')
  .action(async (opts: { create?: boolean }) => {
    const orm = await connectDatabase(config().database.url, 2);
    try {
      if (opts.create) print((await createMigration(orm)) ?? 'no changes');
      else {
        const applied = await applyMigrations(orm, createLogger(config().log.level, { role: 'migrate' }));
        print(applied.length ? `applied ${applied.join(', ')}` : 'database is up to date');
      }
    } finally {
      await orm.close();
    }
  });

registerAccountCommands(program, config, print, connectDatabase);
registerListCommands(program, config, print, connectDatabase);
registerWatchlistCommands(program, config, print, connectDatabase, (orm, ref) =>
  new AccountsService(orm, {
    keyCacheMs: 0,
    defaultRateLimitPerMin: config().rate_limit.default_per_min,
  }).getAccount(ref),
);
registerSecretsCommands(program, config, print, connectDatabase);
registerDoctorCommands(program, config, print);
registerScreeningCommands(program, config, print, connectDatabase, (orm, ref) =>
  new AccountsService(orm, {
    keyCacheMs: 0,
    defaultRateLimitPerMin: config().rate_limit.default_per_min,
  }).getAccount(ref),
);
registerAuditCommands(program, config, connectDatabase, (orm, ref) =>
  new AccountsService(orm, {
    keyCacheMs: 0,
    defaultRateLimitPerMin: config().rate_limit.default_per_min,
  }).getAccount(ref),
);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  if (err instanceof ConfigError) {
    for (const line of err.lines) process.stderr.write(`${line}\n`);
    process.exit(78);
  }
  if (err instanceof AppError) {
    process.stderr.write(`riskwatch: ${err.code}: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`riskwatch: ${(err as Error).message}\n`);
  process.exit(1);
}
