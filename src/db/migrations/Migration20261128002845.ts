import { Migration } from '@mikro-orm/migrations';

/**
 * EVM wallet entries keep the last block whose approvals the deep scan read (`approval_granted` alerts):
 * the next deep scan reads the approvals granted after it, so no scan rereads history. Null until an
 * entry's first deep scan, which sets it to the head without alerting on what was granted before.
 */
export class Migration20261128002845 extends Migration {

  override name = 'Migration20261128002845';

  override up(): void | Promise<void> {
    this.addSql(`alter table "watchlist_entries" add "approvals_cursor_block" bigint null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "watchlist_entries" drop column "approvals_cursor_block";`);
  }

}
