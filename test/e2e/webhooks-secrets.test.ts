import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/platform/ids.js';
import type { ResealReport, SecretsStatus } from '../../src/webhooks/secret-store.js';
import type { CreatedEndpointBody, RotatedSecretBody, TestAcceptedBody } from '../../src/webhooks/schemas.js';
import { endpointSecretContext, keyIdOf, SecretBox } from '../../src/webhooks/secrets.js';
import {
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import { cli, cliJson, eventually, freePort, prepareEnv, type RunningService } from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

/*
 * Webhook signing secrets encrypted at rest (README, "Webhooks and the event log"; config/README.md, "Webhook
 * secrets key"), against the built service, PostgreSQL and Redis: the tables hold no usable secret while
 * deliveries still verify with the secret shown at creation; plaintext secrets from before are sealed by the
 * worker at start; the key is rotated with `riskwatch secrets rotate-key`; without a key, endpoints cannot
 * be created and sealed secrets do not sign. Receivers verify every delivery with the standardwebhooks
 * package, as consumers do.
 */

const newKey = () => randomBytes(32).toString('hex');
const kidOf = (hexKey: string) => keyIdOf(Buffer.from(hexKey, 'hex'));
const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

describe('webhook signing secrets at rest', () => {
  const firstKey = newKey();
  const secondKey = newKey();
  let env: Record<string, string>;
  let dropDatabase: () => Promise<void>;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let sql: pg.Client;
  let svc: RunningService;
  let acme: Customer;
  /** Every secret handed out (or written in plaintext) by this file: none may be found in the tables. */
  const secrets: string[] = [];
  const receivers: Receiver[] = [];
  /** The endpoints by name, each with the receiver on its URL (verifying with the secret it was shown). */
  const endpoints: Record<string, { id: string; receiver: Receiver }> = {};

  const call = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${svc.baseUrl}/api/v1${path}`, {
      method: init.method ?? 'GET',
      headers: {
        'x-api-key': acme.key.key,
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
  const receiver = async (secret: string, port?: number) => {
    const r = await startReceiver(secret, port);
    receivers.push(r);
    return r;
  };
  const createEndpoint = async (url: string) => {
    const created = await expectJson<CreatedEndpointBody>(
      await call('/webhooks/endpoints', { method: 'POST', body: { url, events: ['watchlist.alert'] } }),
      201,
    );
    secrets.push(created.secret);
    return created;
  };
  /** An endpoint created over the API, and a receiver on its URL verifying with the secret shown. */
  const endpointWithReceiver = async (name: string) => {
    const port = await freePort();
    const created = await createEndpoint(`http://127.0.0.1:${port}/hooks`);
    endpoints[name] = { id: created.id, receiver: await receiver(created.secret, port) };
    return { created, port };
  };
  const rotate = async (id: string) => {
    const rotated = await expectJson<RotatedSecretBody>(
      await call(`/webhooks/endpoints/${id}/rotate-secret`, { method: 'POST' }),
      200,
    );
    secrets.push(rotated.secret);
    return rotated;
  };
  /** A signed `webhook.test` to the endpoint; resolves once its receiver verified it. */
  const delivered = async (name: string) => {
    const { id, receiver: r } = endpoints[name]!;
    const sent = await expectJson<TestAcceptedBody>(
      await call(`/webhooks/endpoints/${id}/test`, { method: 'POST' }),
      202,
    );
    const got = await eventually(
      () => Promise.resolve(r.received.some((x) => x.id === sent.event_id)),
      15_000,
      50,
    );
    expect(got, `${name}: webhook.test ${sent.event_id} verified by its receiver\n${svc.output()}`).toBe(
      true,
    );
    return sent;
  };
  const rows = async () =>
    (
      await sql.query<{ id: string; secret: string; previous_secret: string | null }>(
        'select id, secret, previous_secret from webhook_endpoints order by id',
      )
    ).rows;
  /** Every stored secret value (current and previous). */
  const storedValues = async () =>
    (await rows()).flatMap((r) => [r.secret, ...(r.previous_secret === null ? [] : [r.previous_secret])]);
  /** Every row of every table, as text: what a pg_dump of the data would hold. */
  const dump = async () => {
    const { rows: tables } = await sql.query<{ name: string }>(
      `select table_name as name from information_schema.tables
        where table_schema = 'public' and table_type = 'BASE TABLE'`,
    );
    const parts: string[] = [];
    for (const { name } of tables)
      for (const r of (await sql.query<{ row: string }>(`select t::text as row from "${name}" t`)).rows)
        parts.push(r.row);
    return parts.join('\n');
  };
  /** The service again, with `changes` to its environment (the key settings). */
  const restart = async (changes: Record<string, string>) => {
    await svc.stop();
    svc = await startServiceRetrying({ ...env, ...changes }, 'all');
  };

  beforeAll(async () => {
    ({ env, dropDatabase } = await prepareEnv({
      RISKWATCH_SECRETS_KEY: firstKey,
      RISKWATCH_WEBHOOK_ALLOW_HTTP: 'true',
      RISKWATCH_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
      RISKWATCH_WEBHOOK_RETRY_SCHEDULE_S: '1,1,2,2,2,2,2,2',
      RISKWATCH_WEBHOOK_RETRY_JITTER_PCT: '0',
      RISKWATCH_WEBHOOKS_SWEEP_CRON: '* * * * * *',
    }));
    db = await openAccounts(env);
    acme = await db.customer('acme');
    sql = new pg.Client({ connectionString: env.DATABASE_URL });
    await sql.connect();
    svc = await startServiceRetrying(env, 'all');
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await Promise.all(receivers.map((r) => r.close()));
    await sql?.end();
    await db?.close();
    await dropDatabase?.();
  });

  it('stores no usable secret, and deliveries verify with the secrets shown', async () => {
    await endpointWithReceiver('plain');
    const { created, port } = await endpointWithReceiver('rotated');
    const rotated = await rotate(created.id);
    expect(rotated.secret).not.toBe(created.secret);

    // What a pg_dump holds: sealed values under the key's id, and no secret in any form.
    const kid = kidOf(firstKey);
    const stored = await storedValues();
    expect(stored).toHaveLength(3); // two secrets, one previous secret
    for (const value of stored)
      expect(value).toMatch(new RegExp(`^rwenc:v1:${kid}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$`));
    const everything = await dump();
    for (const secret of secrets) {
      const body = secret.slice('whsec_'.length);
      expect(everything).not.toContain(body);
      expect(everything).not.toContain(Buffer.from(body, 'base64').toString('hex'));
      expect(everything).not.toContain(Buffer.from(body, 'base64').toString('base64url'));
    }
    // A value opens in its own row only.
    const [first, second] = await rows();
    const box = new SecretBox(Buffer.from(firstKey, 'hex'));
    expect(() => box.open(first!.secret, endpointSecretContext(second!.id))).toThrow(
      /copied from another row/,
    );

    await delivered('plain');
    // During the overlap both secrets sign: a receiver still on the one shown at creation verifies, and so
    // does one on the new secret.
    await delivered('rotated');
    await endpoints.rotated!.receiver.close();
    endpoints.rotated!.receiver = await receiver(rotated.secret, port);
    await delivered('rotated');
  }, 60_000);

  it('delivers with a plaintext secret from before encryption, and the worker seals it at start', async () => {
    const secret = newSecret();
    const previous = newSecret();
    secrets.push(secret, previous);
    const r = await receiver(secret);
    const id = newId('we');
    await sql.query(
      `insert into webhook_endpoints (id, account_id, url, events, enabled, secret, previous_secret,
              previous_secret_expires_at, created_at, updated_at)
       values ($1, $2, $3, '["watchlist.alert"]', true, $4, $5, now() + interval '1 hour', now(), now())`,
      [id, acme.account.id, r.url, secret, previous],
    );
    endpoints.upgraded = { id, receiver: r };
    await delivered('upgraded'); // as it is stored: plaintext

    await restart({});
    const sealed = await eventually(
      async () => (await storedValues()).every((v) => SecretBox.isSealed(v)),
      10_000,
    );
    expect(sealed, svc.output()).toBe(true);
    const row = (await rows()).find((x) => x.id === id)!;
    expect(SecretBox.kidOf(row.secret)).toBe(kidOf(firstKey));
    expect(SecretBox.kidOf(row.previous_secret!)).toBe(kidOf(firstKey));
    expect(await dump()).not.toContain(secret.slice('whsec_'.length));
    await delivered('upgraded');
    // The worker seals only plaintext: the values sealed before are left as they were.
    const before = await storedValues();
    await restart({});
    expect(await storedValues()).toEqual(before);
  }, 60_000);

  it('rotates the key: rotate-key moves every secret to the new key, and the old key can go', async () => {
    // The new key, the old one kept for opening: deliveries go on while the secrets are re-encrypted.
    const rotating = { RISKWATCH_SECRETS_KEY: secondKey, RISKWATCH_SECRETS_PREVIOUS_KEYS: firstKey };
    await restart(rotating);
    await delivered('plain');
    const before = await cliJson<SecretsStatus>({ ...env, ...rotating }, ['secrets', 'status']);
    expect(before).toEqual({
      kid: kidOf(secondKey),
      previous_kids: [kidOf(firstKey)],
      endpoints: 3,
      sealed: { [kidOf(firstKey)]: 5 },
      plaintext: 0,
      unopenable: 0,
    });

    const report = await cliJson<ResealReport>({ ...env, ...rotating }, ['secrets', 'rotate-key']);
    expect(report).toEqual({ kid: kidOf(secondKey), endpoints: 3, secrets: 5, plaintext: 0, unreadable: [] });
    for (const value of await storedValues()) expect(SecretBox.kidOf(value)).toBe(kidOf(secondKey));
    expect(await cliJson<ResealReport>({ ...env, ...rotating }, ['secrets', 'rotate-key'])).toMatchObject({
      endpoints: 0,
      secrets: 0,
    });

    // Only the new key now.
    await restart({ RISKWATCH_SECRETS_KEY: secondKey });
    for (const name of ['plain', 'rotated', 'upgraded']) await delivered(name);
    expect(
      await cliJson<SecretsStatus>({ ...env, RISKWATCH_SECRETS_KEY: secondKey }, ['secrets', 'status']),
    ).toMatchObject({
      previous_kids: [],
      sealed: { [kidOf(secondKey)]: 5 },
      unopenable: 0,
    });
    const printed = await cli({ ...env, RISKWATCH_SECRETS_KEY: secondKey }, ['secrets', 'status']);
    expect(printed).not.toContain(secondKey);
  }, 90_000);

  it('holds the deliveries of a secret whose key is not configured, naming the key id once', async () => {
    const strayKey = newKey();
    const secret = newSecret();
    const r = await receiver(secret);
    const id = newId('we');
    await sql.query(
      `insert into webhook_endpoints (id, account_id, url, events, enabled, secret, created_at, updated_at)
       values ($1, $2, $3, '["watchlist.alert"]', true, $4, now(), now())`,
      [
        id,
        acme.account.id,
        r.url,
        new SecretBox(Buffer.from(strayKey, 'hex')).seal(secret, endpointSecretContext(id)),
      ],
    );
    const sent = await expectJson<TestAcceptedBody>(
      await call(`/webhooks/endpoints/${id}/test`, { method: 'POST' }),
      202,
    );
    const warned = await eventually(() => Promise.resolve(svc.output().includes(kidOf(strayKey))), 10_000);
    expect(warned, svc.output()).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 2500)); // a few sweeps, each asking for a drain
    const { rows: held } = await sql.query<{ status: string; attempts: number }>(
      'select status, attempts from webhook_deliveries where id = $1',
      [sent.delivery_id],
    );
    expect(held).toEqual([{ status: 'pending', attempts: 0 }]);
    expect(r.hits).toBe(0);
    const warnings = svc
      .output()
      .split('\n')
      .filter((line) => line.includes(kidOf(strayKey)));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/webhook deliveries held/);
    // rotate-key cannot open it either, says so and fails; the others are left as they were.
    await expect(
      cli({ ...env, RISKWATCH_SECRETS_KEY: secondKey }, ['secrets', 'rotate-key']),
    ).rejects.toThrow(
      new RegExp(`secrets_key_missing: 1 secrets did not open \\(sealed under ${kidOf(strayKey)}\\)`),
    );
    // Once it is an expired previous secret it signs nothing: rotate-key drops it instead of failing.
    await sql.query(
      `update webhook_endpoints set previous_secret = secret, secret = $2,
              previous_secret_expires_at = now() - interval '1 hour' where id = $1`,
      [id, new SecretBox(Buffer.from(secondKey, 'hex')).seal(secret, endpointSecretContext(id))],
    );
    const dropped = await cliJson<ResealReport>({ ...env, RISKWATCH_SECRETS_KEY: secondKey }, [
      'secrets',
      'rotate-key',
    ]);
    expect(dropped).toMatchObject({ endpoints: 1, unreadable: [] });
    const { rows: kept } = await sql.query<{ previous_secret: string | null }>(
      'select previous_secret from webhook_endpoints where id = $1',
      [id],
    );
    expect(kept).toEqual([{ previous_secret: null }]);
    await sql.query('delete from webhook_deliveries where endpoint_id = $1', [id]);
    await sql.query('delete from webhook_endpoints where id = $1', [id]);
  }, 60_000);

  it('without a key: no endpoint is created or rotated (503 secrets_key_missing), and sealed secrets do not sign', async () => {
    await restart({ RISKWATCH_SECRETS_KEY: '' });
    const problem = await expectProblem(
      await call('/webhooks/endpoints', {
        method: 'POST',
        body: { url: endpoints.plain!.receiver.url, events: ['watchlist.alert'] },
      }),
      503,
      'secrets_key_missing',
    );
    expect(problem.detail).toMatch(/RISKWATCH_SECRETS_KEY/);
    await expectProblem(
      await call(`/webhooks/endpoints/${endpoints.plain!.id}/rotate-secret`, { method: 'POST' }),
      503,
      'secrets_key_missing',
    );
    // A delivery waits for the key, unattempted; the worker said why at start.
    const sent = await expectJson<TestAcceptedBody>(
      await call(`/webhooks/endpoints/${endpoints.plain!.id}/test`, { method: 'POST' }),
      202,
    );
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const { rows: held } = await sql.query<{ status: string; attempts: number }>(
      'select status, attempts from webhook_deliveries where id = $1',
      [sent.delivery_id],
    );
    expect(held).toEqual([{ status: 'pending', attempts: 0 }]);
    expect(svc.output()).toMatch(/RISKWATCH_SECRETS_KEY is not set/);
    expect(svc.output()).toMatch(/no secrets key is configured/);
    await expect(cli({ ...env, RISKWATCH_SECRETS_KEY: '' }, ['secrets', 'rotate-key'])).rejects.toThrow(
      /secrets_key_missing/,
    );

    // The key back: the held delivery goes out.
    await restart({ RISKWATCH_SECRETS_KEY: secondKey });
    const got = await eventually(
      () => Promise.resolve(endpoints.plain!.receiver.received.some((x) => x.id === sent.event_id)),
      15_000,
      50,
    );
    expect(got, svc.output()).toBe(true);
  }, 90_000);
});
