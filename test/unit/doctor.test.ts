import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BUILT_IN_NETWORKS, type NetworkDef } from '../../src/chains/registry.js';
import { checkAuth } from '../../src/doctor/auth.js';
import { judgeChainId, judgeGenesis } from '../../src/doctor/providers.js';
import { compareVersions, parseInfo } from '../../src/doctor/redis.js';
import { buildReport, exitCodeOf, renderTable, worst, type Finding } from '../../src/doctor/report.js';
import { maskUrl, Redactor } from '../../src/doctor/secrets.js';
import { checkWebhooks } from '../../src/doctor/webhooks.js';
import type { JwtSettings } from '../../src/http/settings.js';
import type { WebhooksSettings } from '../../src/webhooks/settings.js';

/* The doctor's judgements (docs/operations.md), without the parts they judge: test/e2e/doctor.test.ts runs them. */

const builtIn = (chain: string, network: string): NetworkDef =>
  BUILT_IN_NETWORKS.find((n) => n.chain === chain && n.network === network)!;
const answer = (result: unknown) => ({ ok: true as const, result, latencyMs: 1 });
const MAINNET_GENESIS = '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d';
const DEVNET_GENESIS = 'EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG';

describe('doctor: node identity', () => {
  it('an EVM node must answer the chain id of the network it is configured for', () => {
    expect(judgeChainId(builtIn('base', 'mainnet'), answer('0x2105'))).toEqual({
      status: 'ok',
      text: 'chain id 8453 matches eip155:8453',
    });
    expect(judgeChainId(builtIn('base', 'mainnet'), answer('0x1'))).toEqual({
      status: 'fail',
      text:
        'chain id 1 (that is ethereum/mainnet), but base/mainnet is chain id 8453 (eip155:8453): this URL ' +
        'serves another network',
    });
    expect(judgeChainId(builtIn('base', 'mainnet'), answer('latest')).status).toBe('fail');
    expect(
      judgeChainId(builtIn('base', 'mainnet'), { ok: false, error: 'RPC error -32601', latencyMs: 1 }).status,
    ).toBe('fail');
  });

  it('a fork answering the chain id of the network it forks is a warning', () => {
    const fork: NetworkDef = {
      chain: 'ethereum',
      network: 'fork',
      caip2: 'eip155:31337',
      family: 'evm',
      chainId: 31337,
      aliases: [],
      forkOf: 'eip155:1',
    };
    expect(judgeChainId(fork, answer('0x1'))).toMatchObject({ status: 'warn' });
    expect(judgeChainId(fork, answer('0x7a69'))).toMatchObject({ status: 'ok' });
    expect(judgeChainId(fork, answer('0x38'))).toMatchObject({ status: 'fail' });
  });

  it('a Solana node must answer the genesis hash its CAIP-2 id begins; a custom id naming none is not compared', () => {
    const mainnet = builtIn('solana', 'mainnet');
    expect(judgeGenesis(mainnet, answer(MAINNET_GENESIS))).toMatchObject({ status: 'ok' });
    expect(judgeGenesis(mainnet, answer(DEVNET_GENESIS))).toEqual({
      status: 'fail',
      text:
        `genesis ${DEVNET_GENESIS} (that is solana/devnet), but solana/mainnet is ` +
        'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp: this URL serves another cluster',
    });
    expect(judgeGenesis(mainnet, { ok: false, error: 'RPC error -32601', latencyMs: 1 })).toMatchObject({
      status: 'warn',
    });
    const demo: NetworkDef = {
      chain: 'solana',
      network: 'demo',
      caip2: 'solana:riskwatch-demo',
      family: 'solana',
      aliases: [],
    };
    expect(judgeGenesis(demo, answer(MAINNET_GENESIS))).toEqual({
      status: 'info',
      text: `not compared: custom network solana:riskwatch-demo names no genesis hash (the node's is ${MAINNET_GENESIS} (that is solana/mainnet))`,
    });
    const reference = 'Abcdefghijk1234567892ABCDEFGHJKL';
    const custom = { ...demo, caip2: `solana:${reference}` };
    expect(judgeGenesis(custom, answer(`${reference}xyz`))).toMatchObject({ status: 'ok' });
    expect(judgeGenesis(custom, answer(MAINNET_GENESIS))).toMatchObject({ status: 'warn' });
  });
});

describe('doctor: report', () => {
  const f = (status: Finding['status']): Finding => ({ check: status, status, detail: '' });

  it('exit code by the worst status: info is no worse than ok', () => {
    expect([worst([]), exitCodeOf([])]).toEqual(['ok', 0]);
    expect([worst([f('ok'), f('info')]), exitCodeOf([f('info')])]).toEqual(['ok', 0]);
    expect([worst([f('info'), f('warn')]), exitCodeOf([f('warn'), f('ok')])]).toEqual(['warn', 1]);
    expect([worst([f('fail'), f('warn')]), exitCodeOf([f('warn'), f('fail')])]).toEqual(['fail', 2]);
  });

  it('the table wraps long details under their column', () => {
    const report = buildReport(
      [{ check: 'x', status: 'warn', detail: `${'word '.repeat(30)}end` }],
      5000,
      new Date(0),
    );
    const lines = renderTable(report).split('\n');
    expect(lines[0]).toBe('CHECK  STATUS  DETAIL');
    expect(lines[1]).toMatch(/^x {6}warn {4}word word/);
    expect(lines[2]).toMatch(/^ {15}word .*end$/);
    expect(lines.at(-1)).toBe('result: warn (0 ok, 0 info, 1 warn, 0 fail); exit code 1');
  });
});

describe('doctor: secrets', () => {
  it('URLs are shown with the password and query values masked', () => {
    expect(maskUrl('postgres://riskwatch:s3cret@db:5432/riskwatch')).toBe(
      'postgres://riskwatch:***@db:5432/riskwatch',
    );
    expect(maskUrl('redis://:pw@redis:6379')).toBe('redis://:***@redis:6379');
    expect(maskUrl('https://idp.example/jwks?key=abc&v=1')).toBe('https://idp.example/jwks?key=***&v=***');
  });

  it('every known secret is masked wherever it appears', () => {
    const r = new Redactor();
    r.addEnvironment({
      DATABASE_URL: 'postgres://u:pa%40ssword1@h/db',
      RISKWATCH_RPC_SOLANA_MAINNET: 'https://rpc.example/v2/KEY123456,https://other.example/abcdef123',
      RISKWATCH_RPC_DEADLINE_MS: '120000',
      JWT_SECRET: 'a-shared-secret-of-some-length',
    });
    expect(
      r.redact(
        'pa@ssword1 pa%40ssword1 https://rpc.example/v2/KEY123456 https://other.example/abcdef123 ' +
          'a-shared-secret-of-some-length 120000',
      ),
    ).toBe('*** *** *** *** *** 120000');
  });
});

describe('doctor: settings', () => {
  const webhooks = (over: Partial<WebhooksSettings>): WebhooksSettings => ({
    retry_schedule_s: [5],
    retry_jitter_pct: 20,
    retry_after_max_s: 3600,
    timeout_ms: 15000,
    max_response_bytes: 4096,
    disable_after_failing_s: 432000,
    secret_overlap_s: 86400,
    allow_cidrs: [],
    allow_http: false,
    delivery_concurrency: 16,
    event_retention_days: 30,
    secrets_key: 'k'.repeat(64),
    secrets_previous_keys: [],
    ...over,
  });
  const statuses = (s: WebhooksSettings) => checkWebhooks(s).map((x) => `${x.check}=${x.status}`);

  it('webhooks: private receivers warn, the metadata address fails, no key warns', () => {
    expect(statuses(webhooks({}))).toEqual([
      'webhooks:allow-cidrs=ok',
      'webhooks:allow-http=ok',
      'webhooks:secrets-key=ok',
    ]);
    expect(statuses(webhooks({ allow_cidrs: ['10.20.0.0/16'], allow_http: true, secrets_key: '' }))).toEqual([
      'webhooks:allow-cidrs=warn',
      'webhooks:allow-http=warn',
      'webhooks:secrets-key=warn',
    ]);
    expect(checkWebhooks(webhooks({ allow_cidrs: ['127.0.0.0/8'] }))[0]!.detail).toContain(
      "this machine's own services included (127.0.0.1)",
    );
    expect(statuses(webhooks({ allow_cidrs: ['0.0.0.0/0'] }))[0]).toBe('webhooks:allow-cidrs=fail');
    expect(statuses(webhooks({ allow_cidrs: ['fd00::/8'] }))[0]).toBe('webhooks:allow-cidrs=fail');
  });

  const jwt = (over: Partial<JwtSettings>): JwtSettings => ({
    algorithms: ['RS256'],
    issuer: '',
    audience: '',
    secret: '',
    public_key: '',
    jwks_url: '',
    jwks_refresh_s: 600,
    jwks_min_refresh_s: 30,
    clock_tolerance_s: 30,
    max_age_s: 0,
    account_claim: 'org_id',
    roles_claim: 'roles',
    key_admin_role: 'riskwatch:key-admin',
    ...over,
  });
  const pem = (type: 'rsa' | 'ec') =>
    (type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' })
    ).publicKey.export({ type: 'spki', format: 'pem' }) as string;

  it('JWT: off, configured, a key without issuer/audience, a key of the wrong kind', async () => {
    const view = async (s: JwtSettings) => (await checkAuth(s, 1000)).map((x) => `${x.check}=${x.status}`);
    expect(await view(jwt({}))).toEqual(['auth:jwt=info']);
    expect(await view(jwt({ issuer: 'https://idp' }))).toEqual(['auth:jwt=warn']);
    const hs = jwt({ algorithms: ['HS256'], secret: 's'.repeat(32), issuer: 'i', audience: 'a' });
    expect(await view(hs)).toEqual(['auth:jwt=ok']);
    expect((await checkAuth(hs, 1000))[0]!.detail).not.toContain('s'.repeat(32));
    expect(await view({ ...hs, audience: '' })).toEqual(['auth:jwt=warn']);
    expect(await view(jwt({ public_key: pem('rsa'), issuer: 'i', audience: 'a' }))).toEqual([
      'auth:jwt=ok',
      'auth:public-key=ok',
    ]);
    expect(await view(jwt({ public_key: pem('ec'), issuer: 'i', audience: 'a' }))).toEqual([
      'auth:jwt=ok',
      'auth:public-key=fail',
    ]);
    expect(await view(jwt({ public_key: 'not a key', issuer: 'i', audience: 'a' }))).toEqual([
      'auth:jwt=ok',
      'auth:public-key=fail',
    ]);
    expect(await view(jwt({ algorithms: ['HS256'], public_key: pem('rsa') }))).toEqual(['auth:jwt=warn']);
  });
});

describe('doctor: Redis facts', () => {
  it('reads INFO and compares versions numerically', () => {
    const info = parseInfo('# Server\r\nredis_version:7.0.15\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n');
    expect(info.get('redis_version')).toBe('7.0.15');
    expect(info.get('maxmemory_policy')).toBe('noeviction');
    expect(compareVersions('6.10.0', '6.2.0')).toBeGreaterThan(0);
    expect(compareVersions('4.0.14', '5.0.0')).toBeLessThan(0);
    expect(compareVersions('7.0', '7.0.0')).toBe(0);
  });
});
