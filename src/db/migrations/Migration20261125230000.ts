import { Migration } from '@mikro-orm/migrations';

/**
 * Webhook signing secrets are stored sealed (src/webhooks/secrets.ts): `rwenc:v1:<kid>:<iv>:<sealed>` is
 * 107 characters for a `whsec_` secret, so both columns widen. The secrets themselves are sealed by the
 * application (the key is not the database's to know): by the first worker that starts with a key.
 */
export class Migration20261125230000 extends Migration {

  override name = 'Migration20261125230000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "webhook_endpoints" alter column "secret" type varchar(255) using ("secret"::varchar(255));`);
    this.addSql(`alter table "webhook_endpoints" alter column "previous_secret" type varchar(255) using ("previous_secret"::varchar(255));`);
  }

  override down(): void | Promise<void> {
    // Without `using`, so a value too long fails instead of being cut (an explicit cast would cut it): this
    // fails while sealed secrets are stored, which only the application can open.
    this.addSql(`alter table "webhook_endpoints" alter column "secret" type varchar(100);`);
    this.addSql(`alter table "webhook_endpoints" alter column "previous_secret" type varchar(100);`);
  }

}
