import type { Command } from 'commander';
import { actorOption, commandActor } from '../audit/operator.js';
import type { Connect } from '../db/orm.js';
import { AppError } from '../platform/errors.js';
import type { DatabaseSettings } from '../platform/settings.js';
import { WebhookRepository } from './repository.js';
import { WebhookSecretStore } from './secret-store.js';
import { SecretBox } from './secrets.js';
import type { WebhooksSettings } from './settings.js';

type Print = (line: string) => void;

/** What the secrets commands read of the configuration. */
export interface SecretsCommandsConfig {
  database: DatabaseSettings;
  webhooks: WebhooksSettings;
}

/**
 * Operator commands for the key webhook signing secrets are sealed under (README, "Webhooks and the event
 * log"): `secrets status`, `secrets rotate-key`. Each prints JSON; nothing prints a key or a secret.
 */
export function registerSecretsCommands(
  program: Command,
  config: () => Readonly<SecretsCommandsConfig>,
  print: Print,
  connect: Connect,
): void {
  const withStore = async <T>(fn: (store: WebhookSecretStore, box: SecretBox) => Promise<T>): Promise<T> => {
    const cfg = config();
    const box = SecretBox.fromSettings(cfg.webhooks);
    const orm = await connect(cfg.database.url, 2);
    try {
      return await fn(new WebhookSecretStore(new WebhookRepository(orm), box), box);
    } finally {
      await orm.close();
    }
  };
  const json = (value: unknown) => print(JSON.stringify(value, null, 2));

  const secrets = program
    .command('secrets')
    .description('the key webhook signing secrets are encrypted with (RISKWATCH_SECRETS_KEY)');
  secrets
    .command('status')
    .description(
      'count the stored webhook secrets by the id of the key that encrypted them (plaintext ones apart) and ' +
        'name the configured key ids',
    )
    .action(() => withStore(async (store) => json(await store.status())));
  secrets
    .command('rotate-key')
    .description(
      're-encrypt every webhook secret under RISKWATCH_SECRETS_KEY, opening the others with the key they ' +
        'name (RISKWATCH_SECRETS_PREVIOUS_KEYS); prints the counts. Run it after configuring a new key with ' +
        'the old one as a previous key; once every secret is under the new key, the old one can go. ' +
        'Audited (webhook_secrets.resealed) as the operator named by --actor',
    )
    .addOption(actorOption())
    .action((opts: { actor?: string }) =>
      withStore(async (store, box) => {
        if (box.kid === undefined)
          throw new AppError(
            'secrets_key_missing',
            'RISKWATCH_SECRETS_KEY is not set: there is no key to rotate to.',
          );
        const report = await store.reseal('stale', commandActor(opts));
        json(report);
        if (report.unreadable.length > 0) {
          const kids = [...new Set(report.unreadable.map((u) => u.kid))].join(', ');
          throw new AppError(
            'secrets_key_missing',
            `${report.unreadable.length} secrets did not open (sealed under ${kids}): add those keys to ` +
              'RISKWATCH_SECRETS_PREVIOUS_KEYS and run this again (one that still does not open was altered: ' +
              'rotate its endpoint’s secret).',
          );
        }
      }),
    );
}
