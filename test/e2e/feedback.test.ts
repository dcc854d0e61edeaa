import { randomBytes } from 'node:crypto';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import type { FeedbackBody, FeedbackPageBody } from '../../src/feedback/schemas.js';
import type { ListEntryBody, ListEntryPageBody } from '../../src/lists/schemas.js';
import type { Preflight } from '../../src/risk/preflight-schemas.js';
import type { UsageBody, UsageCallBody } from '../../src/usage/schemas.js';
import {
  expectJson,
  expectProblem,
  openAccounts,
  startServiceRetrying,
  type Customer,
} from '../support/auth-helpers.js';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import { parseSamples, promtoolCheck, UPSTREAM_LINT } from '../support/prometheus.js';
import { eventually, prepareEnv, type RunningService, type TestEnv } from '../support/service.js';

/** A never-used EVM address in EIP-55 form (a transfer preflight to it is `warn`: fresh_address). */
const freshAddress = () => getAddress(`0x${randomBytes(20).toString('hex')}`);

const PREFLIGHT = '/api/v1/shield/preflight';
/** The service's ceiling of list entries per account in this file. */
const CEILING = 3;

interface AuditRow {
  account_id: string | null;
  at: Date;
  actor_type: string;
  actor_id: string;
  action: string;
  resource_type: string;
  resource_id: string | null;
  request_id: string | null;
  after: Record<string, unknown> | null;
}

/**
 * Verdict feedback over HTTP (docs/api.md#verdict-feedback): `POST|GET /api/v1/feedback`,
 * `GET /api/v1/feedback/{id}`, on the built service with an anvil node as ethereum mainnet. Feedback names
 * a preflight by its request id (through the usage record the drain stored) or a target; `apply` puts the
 * target on the allow or deny list in the feedback's transaction, and the next preflight sees it.
 */
describe('verdict feedback (built service over HTTP, anvil as ethereum mainnet)', () => {
  let anvil: RunningAnvil;
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let orm: Orm;
  let svc: RunningService;
  let acme: Customer;
  let globex: Customer;
  let umbrella: Customer;

  const call = (customer: Customer, path: string, init: RequestInit = {}, requestId?: string) =>
    fetch(`${svc.baseUrl}${path}`, {
      ...init,
      headers: {
        'x-api-key': customer.key.key,
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(requestId ? { 'x-request-id': requestId } : {}),
        ...(init.headers as Record<string, string>),
      },
    });
  const post = (customer: Customer, path: string, body: unknown, requestId?: string) =>
    call(customer, path, { method: 'POST', body: JSON.stringify(body) }, requestId);
  const give = (customer: Customer, body: unknown, requestId?: string) =>
    post(customer, '/api/v1/feedback', body, requestId);
  const giveOk = async (customer: Customer, body: unknown, requestId?: string) =>
    expectJson<FeedbackBody>(await give(customer, body, requestId), 201);
  const preflight = async (customer: Customer, target: string, requestId?: string) =>
    expectJson<Preflight>(
      await post(customer, PREFLIGHT, { target, intent: 'transfer', chain: 'ethereum' }, requestId),
      200,
    );
  const listed = async (customer: Customer, list: 'deny' | 'allow', target: string) =>
    (
      await expectJson<ListEntryPageBody>(
        await call(customer, `/api/v1/lists/${list}/entries?target=${target}`),
        200,
      )
    ).data;
  /** The usage record of the call that answered with `requestId`, once the drain stored it. */
  const usageOf = async (customer: Customer, requestId: string): Promise<UsageCallBody | undefined> =>
    eventually(async () => {
      const body = await expectJson<UsageBody>(await call(customer, '/api/v1/usage?limit=1000'), 200);
      return (body.data as UsageCallBody[]).find((c) => c.request_id === requestId);
    }, 10_000);
  const sql = <T>(query: string, params: unknown[] = []) =>
    orm.em.fork().getConnection().execute<T[]>(query, params);
  const audit = (requestId: string) =>
    sql<AuditRow>(
      `select account_id, at, actor_type, actor_id, action, resource_type, resource_id, request_id, after
         from audit_log where request_id = ? order by action`,
      [requestId],
    );
  const feedbackValue = async (kind: string, finding: string) => {
    const text = await (await fetch(svc.metricsUrl)).text();
    return parseSamples(text).find(
      (s) => s.name === 'riskwatch_feedback_total' && s.labels.kind === kind && s.labels.finding === finding,
    )?.value;
  };

  beforeAll(async () => {
    anvil = await startAnvil();
    testEnv = await prepareEnv({
      RISKWATCH_RPC_ETHEREUM_MAINNET: anvil.url,
      RISKWATCH_RPC_RATE_PER_S: '0',
      RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT: String(CEILING),
    });
    db = await openAccounts(testEnv.env);
    [acme, globex, umbrella] = await Promise.all([
      db.customer('acme'),
      db.customer('globex'),
      db.customer('umbrella'),
    ]);
    orm = await connectOrm(testEnv.env.DATABASE_URL!, 2);
    svc = await startServiceRetrying(testEnv.env);
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await orm?.close();
    await db?.close();
    await testEnv?.dropDatabase();
    await anvil?.stop();
  });

  it('shows every kind at 0 before any feedback (riskwatch_feedback_total, promtool clean)', async () => {
    for (const kind of ['false_positive', 'false_negative', 'confirmed_malicious'])
      expect(await feedbackValue(kind, 'none'), kind).toBe(0);
    const text = await (await fetch(svc.metricsUrl)).text();
    expect(text).toContain('# TYPE riskwatch_feedback_total counter');
    const { lines } = await promtoolCheck(text);
    expect(lines.filter((line) => !UPSTREAM_LINT.has(line))).toEqual([]);
  });

  describe('by request id', () => {
    const target = freshAddress();

    it('a preflight’s usage record names its target; feedback by its request id acts on it (201)', async () => {
      const verdict = await preflight(acme, target, 'fb-preflight-1');
      expect(verdict).toMatchObject({ decision: 'warn', target, chain: 'ethereum', network: 'mainnet' });
      const usage = await usageOf(acme, 'fb-preflight-1');
      expect(usage, 'the preflight is in the usage history').toMatchObject({
        endpoint: PREFLIGHT,
        target,
        chain: 'ethereum',
        network: 'mainnet',
        targets: null,
      });

      const res = await give(
        acme,
        {
          request_id: 'fb-preflight-1',
          kind: 'false_positive',
          finding_code: 'fresh_address',
          note: 'our vault',
        },
        'fb-give-1',
      );
      expect(res.headers.get('x-request-id')).toBe('fb-give-1');
      const feedback = await expectJson<FeedbackBody>(res, 201);
      expect(feedback).toEqual({
        id: expect.stringMatching(/^fbk_[0-9a-f]{28}$/) as unknown,
        kind: 'false_positive',
        target,
        chain: 'ethereum',
        network: 'mainnet',
        request_id: 'fb-preflight-1',
        usage_id: usage!.id,
        endpoint: PREFLIGHT,
        finding_code: 'fresh_address',
        note: 'our vault',
        applied: null,
        created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/) as unknown,
        created_by: `api_key:${acme.key.id}`,
      });
      // Without apply the lists are untouched, and the verdict stands.
      expect(await listed(acme, 'allow', target)).toEqual([]);
      expect((await preflight(acme, target)).decision).toBe('warn');
      expect(await audit('fb-give-1')).toEqual([
        expect.objectContaining({
          account_id: acme.account.id,
          actor_type: 'api_key',
          actor_id: acme.key.id,
          action: 'feedback.created',
          resource_type: 'feedback',
          resource_id: feedback.id,
        }),
      ]);
    });

    it('false_positive with apply: the target goes on the allow list and the very next preflight allows it', async () => {
      const feedback = await giveOk(
        acme,
        { request_id: 'fb-preflight-1', kind: 'false_positive', apply: true },
        'fb-apply-allow',
      );
      expect(feedback.applied).toEqual({
        list: 'allow',
        entry_id: expect.stringMatching(/^lst_/) as unknown,
        created: true,
      });
      const [entry] = await listed(acme, 'allow', target);
      expect(entry).toMatchObject({
        id: feedback.applied!.entry_id,
        list: 'allow',
        target,
        chain: 'ethereum',
        created_by: `api_key:${acme.key.id}`,
        reason: `feedback ${feedback.id}: false_positive`,
      });
      const next = await preflight(acme, target);
      expect(next).toMatchObject({ decision: 'allow', policy: { allowlisted: true } });
    });

    it('writes the feedback, the list entry and both audit records in one transaction', async () => {
      const records = await audit('fb-apply-allow');
      expect(records.map((r) => r.action)).toEqual(['feedback.created', 'list_entry.added']);
      const [created, added] = records;
      // One transaction: the same transaction time on both records and on the feedback row.
      expect(created!.at).toEqual(added!.at);
      const feedback = await sql<{ id: string; created_at: Date; list_entry_id: string }>(
        'select id, created_at, list_entry_id from feedback where id = ?',
        [created!.resource_id],
      );
      expect(feedback[0]!.created_at).toEqual(created!.at);
      expect(added).toMatchObject({
        account_id: acme.account.id,
        actor_type: 'api_key',
        actor_id: acme.key.id,
        resource_type: 'list_entry',
        resource_id: feedback[0]!.list_entry_id,
        after: expect.objectContaining({ list: 'allow', chain: 'ethereum', target }) as unknown,
      });
      expect(created!.after).toMatchObject({
        kind: 'false_positive',
        request_id: 'fb-preflight-1',
        applied: { list: 'allow', entry_id: feedback[0]!.list_entry_id },
      });
    });

    it('answers 404 for a request id the account never used, or another account’s call', async () => {
      await expectProblem(
        await give(acme, { request_id: 'never-sent', kind: 'false_negative' }),
        404,
        'not_found',
      );
      await expectProblem(
        await give(globex, { request_id: 'fb-preflight-1', kind: 'false_negative' }),
        404,
        'not_found',
      );
    });

    it('answers 422 no_target for a call that was about no target', async () => {
      await expectJson(await call(acme, '/api/v1/usage?limit=1', {}, 'fb-usage-call'), 200);
      expect(await usageOf(acme, 'fb-usage-call')).toMatchObject({ target: null, chain: null });
      const problem = await expectProblem(
        await give(acme, { request_id: 'fb-usage-call', kind: 'false_positive', apply: true }),
        422,
        'no_target',
      );
      expect(problem.detail).toContain('fb-usage-call');
    });
  });

  describe('by target, with apply', () => {
    const target = freshAddress();

    it('confirmed_malicious: the deny list, and the next preflight blocks', async () => {
      expect((await preflight(acme, target)).decision).toBe('warn');
      const feedback = await giveOk(
        acme,
        { target: target.toLowerCase(), chain: 'ethereum', kind: 'confirmed_malicious', apply: true },
        'fb-apply-deny',
      );
      expect(feedback).toMatchObject({
        target,
        chain: 'ethereum',
        network: 'mainnet',
        request_id: null,
        usage_id: null,
        endpoint: null,
        applied: { list: 'deny', created: true },
      });
      const next = await preflight(acme, target);
      expect(next.decision).toBe('block');
      expect(next.reasons.map((r) => r.code)).toContain('org_denylisted');
    });

    it('applying again reuses the entry: 201 with created false, no 409, nothing added to the audit but the feedback', async () => {
      const [entry] = await listed(acme, 'deny', target);
      const again = await giveOk(
        acme,
        { target, chain: 'eip155:1', kind: 'false_negative', finding_code: 'fresh_address', apply: true },
        'fb-apply-again',
      );
      expect(again.applied).toEqual({ list: 'deny', entry_id: entry!.id, created: false });
      expect(await listed(acme, 'deny', target)).toHaveLength(1);
      expect((await audit('fb-apply-again')).map((r) => r.action)).toEqual(['feedback.created']);
    });

    it('a failing apply (the account’s list ceiling) stores neither feedback nor entry nor audit record', async () => {
      const kept: ListEntryBody[] = [];
      for (let i = 0; i < CEILING; i++)
        kept.push(
          await expectJson<ListEntryBody>(
            await post(umbrella, '/api/v1/lists/deny/entries', { target: freshAddress() }),
            201,
          ),
        );
      const target2 = freshAddress();
      await expectProblem(
        await give(
          umbrella,
          { target: target2, chain: 'ethereum', kind: 'false_negative', apply: true },
          'fb-full',
        ),
        409,
        'limit_exceeded',
      );
      expect(await listed(umbrella, 'deny', target2)).toEqual([]);
      expect(await audit('fb-full')).toEqual([]);
      expect(await sql('select id from feedback where account_id = ?', [umbrella.account.id])).toEqual([]);
      // An entry already there is reused, so a full account can still apply to it.
      const reused = await giveOk(umbrella, {
        target: kept[0]!.target,
        chain: 'ethereum',
        kind: 'confirmed_malicious',
        apply: true,
      });
      expect(reused.applied).toEqual({ list: 'deny', entry_id: kept[0]!.id, created: false });
    });
  });

  describe('refused requests', () => {
    it.each([
      ['an unknown kind', { target: freshAddress(), chain: 'ethereum', kind: 'wrong' }, 'kind'],
      [
        'an unknown finding code',
        { target: freshAddress(), chain: 'ethereum', kind: 'false_positive', finding_code: 'made_up' },
        'finding_code',
      ],
      [
        'both request_id and target',
        { request_id: 'fb-preflight-1', target: freshAddress(), chain: 'ethereum', kind: 'false_positive' },
        'target',
      ],
      ['neither request_id nor target', { kind: 'false_positive' }, '(body)'],
      ['a target without chain', { target: freshAddress(), kind: 'false_positive' }, 'chain'],
      [
        'request_id with a chain',
        { request_id: 'fb-preflight-1', chain: 'base', kind: 'false_positive' },
        'chain',
      ],
      [
        'a note over 2000 characters',
        { target: freshAddress(), chain: 'ethereum', kind: 'false_positive', note: 'x'.repeat(2001) },
        'note',
      ],
      [
        'apply that is not a boolean',
        { target: freshAddress(), chain: 'ethereum', kind: 'false_positive', apply: 'yes' },
        'apply',
      ],
      [
        'an unknown field',
        { target: freshAddress(), chain: 'ethereum', kind: 'false_positive', severity: 1 },
        '',
      ],
    ])('refuses %s (400 invalid_request)', async (_what, body, field) => {
      const problem = await expectProblem(await give(acme, body), 400, 'invalid_request');
      if (field) expect(problem.errors?.map((e) => e.path)).toContain(field);
      else expect(problem.errors?.length).toBeGreaterThan(0);
    });

    it('refuses a bad address or an unknown chain with the lists’ codes, storing nothing', async () => {
      const before = await sql('select id from feedback where account_id = ?', [acme.account.id]);
      await expectProblem(
        await give(acme, { target: 'vitalik.eth', chain: 'ethereum', kind: 'false_positive' }),
        400,
        'invalid_address',
      );
      await expectProblem(
        await give(acme, { target: freshAddress(), chain: 'solana', kind: 'false_positive' }),
        400,
        'invalid_address',
      );
      await expectProblem(
        await give(acme, { target: freshAddress(), chain: 'dogechain', kind: 'false_positive' }),
        400,
        'unsupported_chain',
      );
      expect(await sql('select id from feedback where account_id = ?', [acme.account.id])).toEqual(before);
    });
  });

  describe('GET /api/v1/feedback', () => {
    it('pages the account’s feedback newest first, every one once; filters kind and target', async () => {
      const all = await expectJson<FeedbackPageBody>(await call(acme, '/api/v1/feedback?limit=1000'), 200);
      expect(all.data.length).toBeGreaterThanOrEqual(4);
      expect(all.next_cursor).toBeNull();
      const seen: FeedbackBody[] = [];
      let cursor: string | null = null;
      do {
        const query = new URLSearchParams({ limit: '2', ...(cursor ? { cursor } : {}) }).toString();
        const page: FeedbackPageBody = await expectJson<FeedbackPageBody>(
          await call(acme, `/api/v1/feedback?${query}`),
          200,
        );
        seen.push(...page.data);
        cursor = page.next_cursor;
      } while (cursor);
      expect(seen.map((f) => f.id)).toEqual(all.data.map((f) => f.id));
      expect([...seen].sort((a, b) => (a.id < b.id ? 1 : -1)).map((f) => f.id)).toEqual(
        seen.map((f) => f.id),
      );
      // Reads show what was applied; whether the entry was new is told when the feedback is given.
      const applied = seen.find((f) => f.applied?.list === 'deny')!;
      expect(applied.applied!.created).toBeNull();

      const malicious = await expectJson<FeedbackPageBody>(
        await call(acme, '/api/v1/feedback?kind=confirmed_malicious'),
        200,
      );
      expect(malicious.data.map((f) => f.kind)).toEqual(['confirmed_malicious']);
      const byTarget = await expectJson<FeedbackPageBody>(
        await call(acme, `/api/v1/feedback?target=${malicious.data[0]!.target.toLowerCase()}`),
        200,
      );
      expect(byTarget.data.map((f) => f.kind)).toEqual(['false_negative', 'confirmed_malicious']);
      await expectProblem(await call(acme, '/api/v1/feedback?kind=bogus'), 400, 'invalid_request');
      await expectProblem(await call(acme, '/api/v1/feedback?cursor=nope'), 400, 'invalid_request');
    });

    it('answers one by id; another account’s feedback is 404', async () => {
      const [first] = (await expectJson<FeedbackPageBody>(await call(acme, '/api/v1/feedback?limit=1'), 200))
        .data;
      expect(await expectJson<FeedbackBody>(await call(acme, `/api/v1/feedback/${first!.id}`), 200)).toEqual(
        first,
      );
      await expectProblem(await call(globex, `/api/v1/feedback/${first!.id}`), 404, 'not_found');
      expect((await expectJson<FeedbackPageBody>(await call(globex, '/api/v1/feedback'), 200)).data).toEqual(
        [],
      );
      await expectProblem(await fetch(`${svc.baseUrl}/api/v1/feedback`), 401, 'unauthorized');
    });
  });

  it('counts feedback by kind and finding at the metrics endpoint', async () => {
    expect(await feedbackValue('false_positive', 'fresh_address')).toBe(1);
    expect(await feedbackValue('false_positive', 'none')).toBe(1);
    expect(await feedbackValue('confirmed_malicious', 'none')).toBe(2);
    expect(await feedbackValue('false_negative', 'fresh_address')).toBe(1);
    expect(await feedbackValue('false_negative', 'none')).toBe(0);
  });

  it('is in the OpenAPI document with the API key scheme', async () => {
    const doc = (await (await fetch(`${svc.baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { security: unknown; responses: Record<string, unknown> }>>;
    };
    for (const [path, method] of [
      ['/api/v1/feedback', 'post'],
      ['/api/v1/feedback', 'get'],
      ['/api/v1/feedback/{id}', 'get'],
    ] as const)
      expect(doc.paths[path]?.[method]?.security, `${method} ${path}`).toEqual([{ apiKey: [] }]);
    expect(Object.keys(doc.paths['/api/v1/feedback']!.post!.responses)).toEqual(
      expect.arrayContaining(['201', '400', '404', '409', '422']),
    );
  });
});
