import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getAddressDecoder } from '@solana/kit';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobQueues } from '../../src/jobs/queues.js';
import type { ResultBody, ScreeningBody } from '../../src/screenings/schemas.js';
import { expectJson, expectProblem, openAccounts, type Customer } from '../support/auth-helpers.js';
import { REDIS_URL } from '../support/env.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import { buildEvmWorld, type EvmWorld } from '../support/evm/fixtures.js';
import {
  cli,
  eventually,
  killHard,
  prepareEnv,
  startService,
  type RunningService,
} from '../support/service.js';
import type { SolanaFacade } from '../support/solana/facade.js';
import { buildSolanaWorld, type SolanaWorld } from '../support/solana/fixtures.js';

/*
 * Bulk screenings (docs/api.md, "Screenings") with the real parts: an API process and a worker process of
 * the built service, a LiteSVM facade and anvil as the node providers, PostgreSQL and Redis. The worker is
 * killed mid-screening and replaced; the screening ends with every target screened once.
 */

const randomSolana = (): string => getAddressDecoder().decode(randomBytes(32));

let world: SolanaWorld;
let facade: SolanaFacade;
let anvil: RunningAnvil;
let evm: EvmWorld;
let env: Record<string, string>;
let dropDatabase: () => Promise<void>;
let db: pg.Client;
let api: RunningService;
let worker: RunningService;
let acme: Customer;
let other: Customer;
let closeAccounts: () => Promise<void>;
let tmp: string;

interface Submitted {
  screening_id: string;
  screening: ScreeningBody;
  errors: { index: number; target: string; code: string; message: string }[];
  results?: ResultBody[];
}

function call(customer: Customer, method: string, path: string, body?: unknown, headers = {}) {
  return fetch(`${api.baseUrl}${path}`, {
    method,
    headers: {
      'x-api-key': customer.key.key,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const screening = async (c: Customer, id: string) =>
  expectJson<ScreeningBody>(await call(c, 'GET', `/api/v1/screenings/${id}`), 200);

const completed = (c: Customer, id: string, timeoutMs = 60_000) =>
  eventually(
    async () => {
      const s = await screening(c, id);
      return s.status === 'completed' ? s : undefined;
    },
    timeoutMs,
    200,
  );

async function allResults(c: Customer, id: string, query = ''): Promise<ResultBody[]> {
  const out: ResultBody[] = [];
  let cursor: string | null = null;
  do {
    const page: { data: ResultBody[]; next_cursor: string | null } = await expectJson(
      await call(
        c,
        'GET',
        `/api/v1/screenings/${id}/results?limit=1000${query}${cursor ? `&cursor=${cursor}` : ''}`,
      ),
      200,
    );
    out.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return out;
}

beforeAll(async () => {
  world = await buildSolanaWorld();
  facade = await world.startFacade();
  anvil = await startAnvil();
  evm = await buildEvmWorld(anvil.url);
  ({ env, dropDatabase } = await prepareEnv({
    RISKWATCH_RPC_SOLANA_MAINNET: facade.url,
    RISKWATCH_RPC_ETHEREUM_MAINNET: anvil.url,
    RISKWATCH_RPC_RATE_PER_S: '0',
    RISKWATCH_RPC_RETRIES: '1',
    RISKWATCH_SCREENINGS_CHUNK_CONCURRENCY: '2',
  }));
  const accounts = await openAccounts(env);
  closeAccounts = accounts.close;
  acme = await accounts.customer('screen-acme');
  other = await accounts.customer('screen-other');
  db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  api = await startService(env, 'api');
  worker = await startService(env, 'worker');
  tmp = mkdtempSync(join(tmpdir(), 'riskwatch-screenings-'));
}, 180_000);

afterAll(async () => {
  await api?.stop();
  await worker?.stop();
  await closeAccounts?.();
  await db?.end();
  await dropDatabase?.();
  await facade?.close();
  await anvil?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('a screening answered inline (wait: true)', () => {
  it('judges each target at depth state, in input order, refused targets reported and kept', async () => {
    const f = evm.fixtures;
    const targets = [
      { target: world.fixtures.wallets.plainWallet.address, label: 'payee 1' },
      { target: world.fixtures.mints.liveAuthorities.address },
      { target: world.fixtures.missing.address },
      { target: f.delegatedToMalicious.address, label: 'deposit' },
      { target: f.proxy.address },
      { target: f.freshAddress.address },
      { target: '0xnot-an-address' },
      { target: world.fixtures.wallets.plainWallet.address, chain: 'bitcoin' },
    ];
    const res = await call(acme, 'POST', '/api/v1/screenings', { targets, wait: true });
    const body = await expectJson<Submitted>(res, 200);
    expect(body.screening).toMatchObject({ status: 'completed', depth: 'state', total: 8, invalid: 2 });
    expect(body.screening.processed).toBe(6);
    expect(body.errors.map((e) => [e.index, e.code])).toEqual([
      [6, 'invalid_address'],
      [7, 'unsupported_chain'],
    ]);
    const r = body.results!;
    expect(r.map((x) => x.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(r[0]).toMatchObject({ status: 'done', label: 'payee 1', chain: 'solana', complete: true });
    const codes = (x: ResultBody) => x.findings!.filter((fi) => !fi.suppressed).map((fi) => fi.code);
    expect(codes(r[2]!)).toContain('account_not_found');
    expect(r[3]!).toMatchObject({ chain: 'ethereum', label: 'deposit', complete: true });
    expect(codes(r[3]!)).toContain('eip7702_delegated');
    expect(codes(r[4]!)).toContain('upgradeable_proxy');
    expect(codes(r[5]!)).toContain('fresh_address');
    // A transfer to a token mint is a mistake a preflight warns of; state alone shows the kind.
    expect(r[1]!.decision).not.toBe('allow');
    expect(r[6]).toMatchObject({ status: 'invalid', decision: null, error: { code: 'invalid_address' } });
    // The inline answer is a screening like any other: it reads back, and it was audited.
    expect((await screening(acme, body.screening_id)).status).toBe('completed');
    const audit = await db.query(
      `select actor_type, actor_id, action, after from audit_log where resource_id = $1`,
      [body.screening_id],
    );
    expect(audit.rows).toEqual([
      {
        actor_type: 'api_key',
        actor_id: acme.key.id,
        action: 'screening.created',
        after: { depth: 'state', total: 8, invalid: 2 },
      },
    ]);
  });

  it('at depth lists: the lists only, complete, without a provider call', async () => {
    const denied = randomSolana();
    const allowed = randomSolana();
    for (const [list, target] of [
      ['deny', denied],
      ['allow', allowed],
    ] as const)
      await expectJson(await call(acme, 'POST', `/api/v1/lists/${list}/entries`, { target }), 201);
    await facade.idle();
    const before = facade.stats.roundTrips;
    const body = await expectJson<Submitted>(
      await call(acme, 'POST', '/api/v1/screenings', {
        depth: 'lists',
        wait: true,
        targets: [{ target: denied }, { target: allowed }, { target: randomSolana() }],
      }),
      200,
    );
    expect(facade.stats.roundTrips).toBe(before);
    expect(body.results!.map((x) => [x.risk_level, x.decision, x.complete])).toEqual([
      ['critical', 'block', true],
      ['low', 'allow', true],
      ['low', 'allow', true],
    ]);
    expect(body.results![0]!.findings!.map((x) => x.code)).toContain('org_denylisted');
    // Another account's lists do not show through.
    const theirs = await expectJson<Submitted>(
      await call(other, 'POST', '/api/v1/screenings', {
        depth: 'lists',
        wait: true,
        targets: [{ target: denied }],
      }),
      200,
    );
    expect(theirs.results![0]!.decision).toBe('allow');
    // Without wait: judged at submission, so the 202 already shows it completed with its counts.
    const queued = await expectJson<Submitted>(
      await call(acme, 'POST', '/api/v1/screenings', {
        depth: 'lists',
        targets: [{ target: denied }, { target: allowed }, { target: 'not-an-address' }],
      }),
      202,
    );
    expect(queued.screening).toMatchObject({ status: 'completed', total: 3, invalid: 1, processed: 2 });
    expect(queued.screening.counts).toMatchObject({ by_decision: { block: 1, allow: 1 } });
    const rows = await allResults(acme, queued.screening_id);
    expect(rows.map((x) => [x.status, x.decision])).toEqual([
      ['done', 'block'],
      ['done', 'allow'],
      ['invalid', null],
    ]);
    const events = await db.query<{ n: number }>(
      `select count(*)::int as n from events where type = 'screening.completed' and data->'screening'->>'id' = $1`,
      [queued.screening_id],
    );
    expect(events.rows[0]!.n).toBe(1);
  });

  it('at depth full: the risk-v2 analysis of each target', async () => {
    const body = await expectJson<Submitted>(
      await call(acme, 'POST', '/api/v1/screenings', {
        depth: 'full',
        wait: true,
        targets: [{ target: world.fixtures.mints.permanentDelegate.address }],
      }),
      200,
    );
    const [row] = body.results!;
    expect(row).toMatchObject({ status: 'done', risk_level: 'critical', decision: 'block', complete: true });
    expect(row!.findings!.map((x) => x.code)).toContain('permanent_delegate');
  });
});

describe('a screening worked by the workers', () => {
  it('1,000 targets: progress, results paged and filtered, CSV, the event, usage and rate cost', async () => {
    const targets = Array.from({ length: 1000 }, (_, i) =>
      i === 500 ? { target: world.fixtures.wallets.plainWallet.address } : { target: randomSolana() },
    );
    const res = await call(acme, 'POST', '/api/v1/screenings', { targets }, { 'x-request-id': 'scr-1000' });
    const submitted = await expectJson<Submitted>(res, 202);
    expect(submitted.screening).toMatchObject({ total: 1000, invalid: 0, depth: 'state' });
    const done = (await completed(acme, submitted.screening_id))!;
    expect(done).toMatchObject({ processed: 1000, progress: 1 });
    const byLevel = Object.values(done.counts.by_level).reduce((a, b) => a + b, 0);
    expect(byLevel).toBe(1000);

    const rows = await allResults(acme, submitted.screening_id);
    expect(rows.map((r) => r.index)).toEqual([...Array(1000).keys()]);
    expect(rows.every((r) => r.status === 'done' && r.complete === true)).toBe(true);
    expect(rows[500]!.findings!.some((x) => x.code === 'account_not_found')).toBe(false);
    const warned = await allResults(acme, submitted.screening_id, '&decision=warn');
    expect(warned.length).toBe(done.counts.by_decision.warn);
    expect(warned.every((r) => r.decision === 'warn')).toBe(true);

    const csvRes = await call(acme, 'GET', `/api/v1/screenings/${submitted.screening_id}/results.csv`);
    expect(csvRes.status).toBe(200);
    expect(csvRes.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = (await csvRes.text()).trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'index,target,chain,network,label,status,risk_level,risk_score,decision,complete,findings,error_code,error_message',
    );
    expect(lines).toHaveLength(1001);
    expect(lines[1]!.startsWith(`0,${targets[0]!.target},solana,mainnet,,done,`)).toBe(true);

    const events = await expectJson<{ data: { type: string; data: { screening: ScreeningBody } }[] }>(
      await call(acme, 'GET', '/api/v1/events?types=screening.completed'),
      200,
    );
    expect(events.data.map((e) => e.data.screening.id)).toContain(submitted.screening_id);

    const usage = await eventually(async () => {
      const r = await db.query(
        `select targets, endpoint from usage_records where request_id = 'scr-1000' and account_id = $1`,
        [acme.account.id],
      );
      return r.rows[0] as { targets: number; endpoint: string } | undefined;
    }, 10_000);
    expect(usage).toEqual({ targets: 1000, endpoint: '/api/v1/screenings' });
  }, 120_000);

  it('costs one rate-limit point per 1,000 targets', async () => {
    const { customer, close } = await openAccounts(env);
    try {
      const small = await customer(`screen-quota-${Date.now()}`, { rateLimitPerMin: 5 });
      const targets = Array.from({ length: 2500 }, () => ({ target: randomSolana() }));
      const first = await call(small, 'POST', '/api/v1/screenings', { depth: 'lists', targets });
      expect(first.status).toBe(202); // 3 points
      await first.arrayBuffer();
      const second = await call(small, 'POST', '/api/v1/screenings', { depth: 'lists', targets });
      // 2 left: its first point is taken, the 2 more do not fit: refused, they are given back, nothing stored.
      await expectProblem(second, 429, 'rate_limited');
      expect((await call(small, 'GET', '/api/v1/screenings')).status).toBe(200); // the last point
      await expectProblem(await call(small, 'GET', '/api/v1/screenings'), 429, 'rate_limited');
    } finally {
      await close();
    }
  });

  it('a worker killed mid-screening loses nothing and doubles nothing', async () => {
    facade.setLatency(150);
    try {
      const targets = Array.from({ length: 3000 }, () => ({ target: randomSolana() }));
      const submitted = await expectJson<Submitted>(
        await call(acme, 'POST', '/api/v1/screenings', { targets }),
        202,
      );
      await eventually(
        async () => {
          const s = await screening(acme, submitted.screening_id);
          return s.processed >= 300 && s.processed < 2000 ? s : undefined;
        },
        60_000,
        50,
      );
      await killHard(worker);
      const stopped = (await screening(acme, submitted.screening_id)).processed;
      expect(stopped).toBeLessThan(3000);
      worker = await startService(env, 'worker');
      const done = (await completed(acme, submitted.screening_id, 120_000))!;
      expect(done.processed).toBe(3000);
      const { rows } = await db.query(
        `select count(*)::int as n, count(distinct seq)::int as seqs,
                count(*) filter (where status = 'done')::int as done
           from screening_results where screening_id = $1`,
        [submitted.screening_id],
      );
      expect(rows[0]).toEqual({ n: 3000, seqs: 3000, done: 3000 });
      const events = await db.query<{ n: number }>(
        `select count(*)::int as n from events where type = 'screening.completed' and data->'screening'->>'id' = $1`,
        [submitted.screening_id],
      );
      expect(events.rows[0]!.n).toBe(1);
    } finally {
      facade.setLatency(0);
    }
  }, 240_000);

  it('one state screening runs at a time per account; another account is not held up', async () => {
    facade.setLatency(100);
    try {
      const batch = () => Array.from({ length: 800 }, () => ({ target: randomSolana() }));
      const a1 = await expectJson<Submitted>(
        await call(acme, 'POST', '/api/v1/screenings', { targets: batch() }),
        202,
      );
      const a2 = await expectJson<Submitted>(
        await call(acme, 'POST', '/api/v1/screenings', { targets: batch() }),
        202,
      );
      const b1 = await expectJson<Submitted>(
        await call(other, 'POST', '/api/v1/screenings', { targets: batch() }),
        202,
      );
      await eventually(async () => (await screening(acme, a1.screening_id)).status === 'running', 20_000);
      const second = await screening(acme, a2.screening_id);
      expect(second.status).toBe('queued');
      await eventually(async () => (await screening(other, b1.screening_id)).status !== 'queued', 20_000);
      const first = (await completed(acme, a1.screening_id, 120_000))!;
      const then = (await completed(acme, a2.screening_id, 120_000))!;
      expect(Date.parse(then.started_at!)).toBeGreaterThanOrEqual(Date.parse(first.completed_at!));
      await completed(other, b1.screening_id, 120_000);
    } finally {
      facade.setLatency(0);
    }
  }, 300_000);
});

describe('bad input: a problem with a code, nothing half-stored', () => {
  const count = async () =>
    Number((await db.query<{ n: string }>(`select count(*) as n from screenings`)).rows[0]!.n);

  it('refuses 100,001 targets, an unknown depth, wait with 101 targets, a body over 8 MiB', async () => {
    const before = await count();
    const many = Array.from({ length: 100_001 }, () => ({ target: 'x' }));
    await expectProblem(
      await call(acme, 'POST', '/api/v1/screenings', { targets: many }),
      400,
      'too_many_entries',
    );
    const one = [{ target: randomSolana() }];
    await expectProblem(
      await call(acme, 'POST', '/api/v1/screenings', { targets: one, depth: 'deep' }),
      400,
      'invalid_request',
    );
    const p = await expectProblem(
      await call(acme, 'POST', '/api/v1/screenings', {
        wait: true,
        targets: Array.from({ length: 101 }, () => ({ target: randomSolana() })),
      }),
      400,
      'invalid_request',
    );
    expect(p.errors?.[0]?.path).toBe('wait');
    const huge = JSON.stringify({ targets: [{ target: 'x', label: 'y'.repeat(9 * 1024 * 1024) }] });
    await expectProblem(await call(acme, 'POST', '/api/v1/screenings', huge), 413, 'payload_too_large');
    await expectProblem(
      await call(acme, 'POST', '/api/v1/screenings', '{"targets": ['),
      400,
      'invalid_request',
    );
    expect(await count()).toBe(before);
  });

  it("another account's screening is not found; a forged cursor is a 400", async () => {
    const mine = await expectJson<Submitted>(
      await call(acme, 'POST', '/api/v1/screenings', {
        depth: 'lists',
        wait: true,
        targets: [{ target: randomSolana() }],
      }),
      200,
    );
    for (const path of ['', '/results', '/results.csv'])
      await expectProblem(
        await call(other, 'GET', `/api/v1/screenings/${mine.screening_id}${path}`),
        404,
        'not_found',
      );
    await expectProblem(
      await call(acme, 'GET', `/api/v1/screenings/${mine.screening_id}/results?cursor=bm9wZQ`),
      400,
      'invalid_request',
    );
    const list = await expectJson<{ data: ScreeningBody[] }>(
      await call(other, 'GET', '/api/v1/screenings'),
      200,
    );
    expect(list.data.map((s) => s.id)).not.toContain(mine.screening_id);
  });
});

describe('retention', () => {
  it('the prune job deletes screenings older than screenings.retention_days, with their results', async () => {
    const make = async () =>
      (
        await expectJson<Submitted>(
          await call(acme, 'POST', '/api/v1/screenings', {
            depth: 'lists',
            wait: true,
            targets: [{ target: randomSolana() }, { target: randomSolana() }],
          }),
          200,
        )
      ).screening_id;
    const [old, fresh] = [await make(), await make()];
    await db.query(`update screenings set created_at = now() - interval '31 days' where id = $1`, [old]);
    const bull = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const queues = new JobQueues(bull, env.REDIS_KEY_PREFIX!);
    try {
      await queues.enqueue(
        'screenings-prune',
        { scheduled_at: new Date().toISOString() },
        `test-prune-${Date.now()}`,
      );
      await eventually(
        async () => (await call(acme, 'GET', `/api/v1/screenings/${old}`)).status === 404,
        20_000,
      );
    } finally {
      await queues.close();
      bull.disconnect();
    }
    const left = await db.query<{ n: number }>(
      `select count(*)::int as n from screening_results where screening_id = $1`,
      [old],
    );
    expect(left.rows[0]!.n).toBe(0);
    expect((await screening(acme, fresh)).status).toBe('completed');
  }, 60_000);
});

describe('riskwatch screenings import', () => {
  const file = (name: string, text: string) => {
    const path = join(tmp, name);
    writeFileSync(path, text);
    return path;
  };
  const count = async () =>
    Number((await db.query<{ n: string }>(`select count(*) as n from screenings`)).rows[0]!.n);

  it('streams a file into one screening the workers complete', async () => {
    const rows = Array.from({ length: 5000 }, (_, i) => `${randomSolana()},solana,mainnet,row ${i}`);
    rows[10] = 'not-an-address,solana,mainnet,bad';
    const path = file('ok.csv', `target,chain,network,label\n${rows.join('\n')}\n`);
    const summary = JSON.parse(
      await cli(env, ['screenings', 'import', 'screen-acme', path, '--depth', 'lists', '--actor', 'alice']),
    ) as { screening_id: string; rows: number; valid: number; invalid: number; errors: { line: number }[] };
    expect(summary).toMatchObject({ rows: 5000, valid: 4999, invalid: 1 });
    expect(summary.errors[0]!.line).toBe(12);
    const done = (await completed(acme, summary.screening_id))!;
    expect(done).toMatchObject({ total: 5000, invalid: 1, processed: 4999, depth: 'lists' });
    const audit = await db.query(`select actor_type, actor_id from audit_log where resource_id = $1`, [
      summary.screening_id,
    ]);
    expect(audit.rows).toEqual([{ actor_type: 'operator', actor_id: 'alice' }]);
  }, 120_000);

  it('a bad header or a 1 MiB line stores nothing', async () => {
    const before = await count();
    const badHeader = file('bad-header.csv', `address,chain\n${randomSolana()},solana\n`);
    await expect(cli(env, ['screenings', 'import', 'screen-acme', badHeader])).rejects.toThrow(/header row/);
    const longLine = file(
      'long.csv',
      `target,label\n${randomSolana()},ok\n${randomSolana()},${'x'.repeat(1024 * 1024)}\n${randomSolana()},ok\n`,
    );
    await expect(cli(env, ['screenings', 'import', 'screen-acme', longLine])).rejects.toThrow(/line 3/);
    expect(await count()).toBe(before);
  }, 120_000);
});
