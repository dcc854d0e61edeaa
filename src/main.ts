#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { startWorkers } from '../workers/main.js';
import { startScheduler } from '../workers/scheduler.js';
import { registerAccountCommands } from './accounts/cli.js';
import { startApi } from './api.js';
import { loadConfig, type Config } from './config.js';
import { applyMigrations, createMigration } from './db/migrate.js';
import { registerListCommands } from './lists/cli.js';
import { ConfigError } from './platform/config.js';
import { AppError } from './platform/errors.js';
import { createLogger } from './platform/logger.js';
import { connectOrm } from './db/orm.js';
import { createRuntime, registerConnectionShutdown, VERSION } from './runtime.js';
import { registerWatchlistCommands } from './watchlists/cli.js';

type Role = 'api' | 'worker' | 'scheduler' | 'all';

let cachedConfig: Readonly<Config> | undefined;
const config = () => (cachedConfig ??= loadConfig());
const print = (line: string) => process.stdout.write(`${line}\n`);

async function runRoles(role: Role): Promise<void> {
  const rt = await createRuntime(role, config());
  const metricsServer = await rt.metrics.listen(rt.config.server.host, rt.config.server.metrics_port);
  if (role === 'api' || role === 'all') await startApi(rt);
  if (role === 'worker' || role === 'all') startWorkers(rt);
  if (role === 'scheduler' || role === 'all') startScheduler(rt);
  registerConnectionShutdown(rt);
  rt.shutdown.add('metrics', () => new Promise((resolve) => metricsServer.close(resolve)));
  rt.shutdown.listen();
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
  ['all', 'api + worker + scheduler in one process'],
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
    const orm = await connectOrm(config().database.url, 2);
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

registerAccountCommands(program, config, print);
registerListCommands(program, config, print);
registerWatchlistCommands(program, config, print);

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
