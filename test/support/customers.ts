import type { AccountBody, CreatedApiKeyBody } from '../../src/accounts/schemas.js';
import { cliJson } from './service.js';

/** What the tests use of a key `keys create` printed. */
export type TestKey = Pick<CreatedApiKeyBody, 'id' | 'key' | 'prefix'>;

export interface TestCustomer {
  accountId: string;
  keys: Record<string, TestKey>;
}

/**
 * An account with an active Enterprise entitlement and one API key per name, made with the operator CLI
 * (`accounts create`, `entitlements grant`, `keys create`).
 */
export async function createCustomer(
  env: Record<string, string>,
  name: string,
  keyNames: string[],
  opts: { rateLimitPerMin?: number } = {},
): Promise<TestCustomer> {
  const account = await cliJson<AccountBody>(env, ['accounts', 'create', '--name', name]);
  const grant = ['entitlements', 'grant', account.id];
  if (opts.rateLimitPerMin !== undefined) grant.push('--rate-limit-per-min', String(opts.rateLimitPerMin));
  await cliJson(env, grant);
  const created = await Promise.all(
    keyNames.map((keyName) =>
      cliJson<CreatedApiKeyBody>(env, ['keys', 'create', account.id, '--name', keyName]),
    ),
  );
  const keys: Record<string, TestKey> = {};
  created.forEach((k, i) => (keys[keyNames[i]!] = { id: k.id, key: k.key, prefix: k.prefix }));
  return { accountId: account.id, keys };
}
