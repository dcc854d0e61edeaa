import { cliJson } from './service.js';

export interface TestKey {
  id: string;
  key: string;
  prefix: string;
}

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
  const account = await cliJson<{ id: string }>(env, ['accounts', 'create', '--name', name]);
  const grant = ['entitlements', 'grant', account.id];
  if (opts.rateLimitPerMin !== undefined) grant.push('--rate-limit-per-min', String(opts.rateLimitPerMin));
  await cliJson(env, grant);
  const created = await Promise.all(
    keyNames.map((keyName) => cliJson<TestKey>(env, ['keys', 'create', account.id, '--name', keyName])),
  );
  const keys: Record<string, TestKey> = {};
  created.forEach((k, i) => (keys[keyNames[i]!] = { id: k.id, key: k.key, prefix: k.prefix }));
  return { accountId: account.id, keys };
}
