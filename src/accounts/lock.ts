import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../platform/errors.js';

/**
 * Locks the account's row until the transaction ends (`for no key update`: inserts that merely reference
 * the account are not held up), so concurrent writers of one account count its rows against a ceiling one
 * after the other (watchlist entries, webhook endpoints). Returns the account's name.
 */
export async function lockAccount(em: EntityManager, accountId: string): Promise<string> {
  const [account] = await em.execute<{ name: string }[]>(
    'select name from accounts where id = ? for no key update',
    [accountId],
  );
  if (!account) throw notFound(`Account "${accountId.slice(0, 60)}"`);
  return account.name;
}
