import { InvalidArgumentError, type Command } from 'commander';
import { actorOption, commandActor } from '../audit/operator.js';
import type { Connect } from '../db/orm.js';
import { demoJwt, readExamples, renderExamples, standardExamples } from './bootstrap.js';
import { presentAccount, presentApiKey, presentCreatedKey, presentEntitlement } from './present.js';
import { AccountsService, type ApiKeyInfo } from './service.js';
import type { AccountsCommandsConfig as Config } from './settings.js';

type Print = (line: string) => void;

const asDate = (value: string) => {
  if (value === 'never') return null;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw new InvalidArgumentError('expected an RFC 3339 date or "never"');
  return d;
};
const asPositiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive whole number');
  return n;
};

/**
 * Operator commands (inside the VPC, no HTTP): accounts, entitlements, keys, bootstrap. Those that change
 * something take `--actor NAME`, whom the audit log names (default: RISKWATCH_OPERATOR, else the OS user).
 */
export function registerAccountCommands(
  program: Command,
  config: () => Readonly<Config>,
  print: Print,
  connect: Connect,
): void {
  const withService = async <T>(fn: (svc: AccountsService) => Promise<T>): Promise<T> => {
    const cfg = config();
    const orm = await connect(cfg.database.url, 2);
    try {
      return await fn(
        new AccountsService(orm, {
          keyCacheMs: 0,
          defaultRateLimitPerMin: cfg.rate_limit.default_per_min,
          maxKeysPerAccount: cfg.auth.max_api_keys_per_account,
        }),
      );
    } finally {
      await orm.close();
    }
  };
  const json = (value: unknown) => print(JSON.stringify(value, null, 2));

  const accounts = program.command('accounts').description('manage accounts');
  accounts
    .command('create')
    .description('create an account')
    .requiredOption('--name <name>', 'display name')
    .option('--org-id <orgId>', 'value of the JWT account claim for this account (default: the name)')
    .addOption(actorOption())
    .action(async (opts: { name: string; orgId?: string; actor?: string }) => {
      const account = await withService((s) =>
        s.createAccount(
          { name: opts.name, ...(opts.orgId ? { orgId: opts.orgId } : {}) },
          commandActor(opts),
        ),
      );
      json(presentAccount(account));
    });

  const entitlements = program.command('entitlements').description('manage Enterprise entitlements');
  entitlements
    .command('grant <account>')
    .description('grant (or re-activate) the Enterprise entitlement of an account (id or org id)')
    .option('--expires-at <date>', 'RFC 3339 expiry, or "never"', asDate)
    .option('--rate-limit-per-min <n>', 'API requests per minute per key', asPositiveInt)
    .addOption(actorOption())
    .action(
      async (
        account: string,
        opts: { expiresAt?: Date | null; rateLimitPerMin?: number; actor?: string },
      ) => {
        const entitlement = await withService((s) =>
          s.grantEntitlement(
            account,
            {
              ...(opts.expiresAt !== undefined ? { expiresAt: opts.expiresAt } : {}),
              ...(opts.rateLimitPerMin !== undefined ? { rateLimitPerMin: opts.rateLimitPerMin } : {}),
            },
            commandActor(opts),
          ),
        );
        json(presentEntitlement(entitlement));
      },
    );
  for (const [verb, status] of [
    ['suspend', 'suspended'],
    ['revoke', 'revoked'],
  ] as const) {
    entitlements
      .command(`${verb} <account>`)
      .description(`${verb} the Enterprise entitlement of an account`)
      .addOption(actorOption())
      .action(async (account: string, opts: { actor?: string }) =>
        json(
          presentEntitlement(
            await withService((s) => s.setEntitlementStatus(account, status, commandActor(opts))),
          ),
        ),
      );
  }

  const keys = program.command('keys').description('manage API keys');
  keys
    .command('create <account>')
    .description('create an API key; the raw key is printed once and never stored')
    .requiredOption('--name <name>', 'what the key is for')
    .option('--expires-at <date>', 'RFC 3339 expiry', asDate)
    .addOption(actorOption())
    .action(async (account: string, opts: { name: string; expiresAt?: Date | null; actor?: string }) => {
      const created = await withService(async (s) => {
        const acc = await s.getAccount(account);
        return s.createKey(
          acc.id,
          { name: opts.name, expiresAt: opts.expiresAt ?? null },
          commandActor(opts),
        );
      });
      json(presentCreatedKey(created));
    });
  keys
    .command('list <account>')
    .description("list an account's API keys (prefixes only), newest first")
    .action(async (account: string) => {
      const keys = await withService(async (s) => {
        const { id } = await s.getAccount(account);
        const all: ApiKeyInfo[] = [];
        let cursor: string | undefined;
        do {
          const page = await s.listKeys(id, { limit: 1000, cursor });
          all.push(...page.items);
          cursor = page.nextCursor ?? undefined;
        } while (cursor);
        return all;
      });
      json(keys.map(presentApiKey));
    });
  keys
    .command('revoke <account> <keyId>')
    .description('revoke an API key (refused on every replica within 5 s)')
    .addOption(actorOption())
    .action(async (account: string, keyId: string, opts: { actor?: string }) => {
      const revoked = await withService(async (s) =>
        s.revokeKey((await s.getAccount(account)).id, keyId, commandActor(opts)),
      );
      json(presentApiKey(revoked));
    });

  program
    .command('bootstrap')
    .description('idempotent demo set-up: account "demo", an active entitlement, a new key printed once')
    .option('--org-id <orgId>', 'org id of the demo account', 'demo')
    .option('--no-key', 'do not create a key')
    .option('--base-url <url>', 'base URL for the example calls', 'http://localhost:8080')
    .option('--examples <file>', 'more example calls to print (the demo chain writes them)')
    .option('--demo-jwt', 'local mode only: also print a short-lived bearer token (HS secret required)')
    .addOption(actorOption())
    .action(
      async (opts: {
        orgId: string;
        key: boolean;
        baseUrl: string;
        examples?: string;
        demoJwt?: boolean;
        actor?: string;
      }) => {
        const cfg = config();
        // Read before any write, so a bad file or setting changes nothing.
        const extra = opts.examples ? readExamples(opts.examples) : undefined;
        const token = opts.demoJwt ? demoJwt(cfg.auth.jwt, opts.orgId) : undefined;
        const out = await withService((s) =>
          s.bootstrap({ orgId: opts.orgId, name: opts.orgId, withKey: opts.key }, commandActor(opts)),
        );
        print(`account      ${out.account.id} (org_id ${out.account.orgId})`);
        print(
          `entitlement  ${out.entitlement.plan} ${out.entitlement.status}, ${out.entitlement.rateLimitPerMin}/min`,
        );
        if (out.created) {
          print(`api key      ${out.created.key}`);
          print('             (shown once; only its hash is stored)');
        }
        if (token) {
          print(`demo jwt     ${token.token}`);
          print(
            `             (local mode only: key-admin of "${opts.orgId}", expires in ${token.expiresInS / 60} min)`,
          );
        }
        if (!out.created) return;
        print('');
        for (const line of extra?.notice ?? []) print(line);
        if (extra) print('');
        print('Try it (each comment says the answer the line gets):');
        const calls = [...(extra?.calls ?? []), ...standardExamples(cfg.auth.agent_keys.length > 0)];
        const creds = { apiKey: out.created.key, jwt: token?.token, agentKey: cfg.auth.agent_keys[0] };
        for (const line of renderExamples(calls, opts.baseUrl, creds)) print(`  ${line}`);
      },
    );
}
