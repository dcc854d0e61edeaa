import type { LookupAddress } from 'node:dns';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_DELIVERY_TIMEOUT_MS,
  SsrfBlockedError,
  TimeoutError,
  toDeliveryFailure,
  WebhookDeliveryError,
  WebhookHttpClient,
} from '../../src/webhooks/http.js';
import {
  classifyAddress,
  createGuardedLookup,
  parseAllowList,
  WebhookUrlPolicy,
  type Resolver,
} from '../../src/webhooks/ssrf.js';

const PUBLIC_V4 = '93.184.215.14';
const PUBLIC_V6 = '2606:2800:21f:cb07:6820:80da:af6b:8b2c';

/** A receiver on 127.0.0.1 that records what reaches it. */
class Receiver {
  readonly requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] =
    [];
  private readonly server: Server;
  handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('ok');

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.requests.push({
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        this.handler(req, res);
      });
    });
  }

  async start(): Promise<this> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return this;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }
}

/** A test resolver: a fixed answer per name, or a function of the call number (for rebinding). */
function testResolver(table: Record<string, string[] | ((call: number) => string[])>): Resolver & {
  calls: string[];
} {
  const calls: string[] = [];
  const counts = new Map<string, number>();
  const resolver = (hostname: string): Promise<LookupAddress[]> => {
    calls.push(hostname);
    const n = (counts.get(hostname) ?? 0) + 1;
    counts.set(hostname, n);
    const entry = table[hostname];
    if (!entry)
      return Promise.reject(
        Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname }),
      );
    const answer = typeof entry === 'function' ? entry(n) : entry;
    return Promise.resolve(answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  };
  return Object.assign(resolver, { calls });
}

describe('WHATWG URL turns every IPv4 notation into dotted decimal (what checkUrl then classifies)', () => {
  it.each([
    'http://2130706433/',
    'http://0x7f.1/',
    'http://0x7f000001/',
    'http://0177.0.0.1/',
    'http://017700000001/',
    'http://127.1/',
    'http://127.0.1/',
    'http://%31%32%37.0.0.1/',
    'http://127。0。0。1/',
    'http://127.0.0.1./',
  ])('%s → 127.0.0.1', (raw) => {
    expect(new URL(raw).hostname).toBe('127.0.0.1');
  });

  it('and IPv6 literals into compressed lower-case form', () => {
    expect(new URL('http://[::ffff:127.0.0.1]/').hostname).toBe('[::ffff:7f00:1]');
    expect(new URL('http://[0:0:0:0:0:0:0:1]/').hostname).toBe('[::1]');
  });
});

describe('creation-time refusals (WebhookUrlPolicy.checkUrl, http allowed so the address is what refuses)', () => {
  const policy = new WebhookUrlPolicy({ allowHttp: true });

  // [url, what the refusal names: a range, or a word of the reason]
  const HOSTILE: [string, { range?: string; reason?: RegExp }][] = [
    ['http://2130706433/', { range: 'loopback' }],
    ['http://0x7f.1/', { range: 'loopback' }],
    ['http://0177.0.0.1/', { range: 'loopback' }],
    ['http://017700000001/', { range: 'loopback' }],
    ['http://127.1/', { range: 'loopback' }],
    ['http://%31%32%37.0.0.1/', { range: 'loopback' }],
    ['http://127。0。0。1/', { range: 'loopback' }],
    ['https://127.0.0.1:8443/', { range: 'loopback' }],
    ['http://[::1]/', { range: 'loopback' }],
    ['http://[::ffff:127.0.0.1]/', { range: 'ipv4Mapped:loopback' }],
    ['http://[::ffff:7f00:1]/', { range: 'ipv4Mapped:loopback' }],
    ['http://[::ffff:169.254.169.254]/', { range: 'ipv4Mapped:linkLocal' }],
    ['http://[::ffff:8.8.8.8]/', { range: 'ipv4Mapped:unicast' }], // mapped: refused whatever it embeds
    ['http://[::7f00:1]/', { range: 'notGlobalUnicast' }], // IPv4-compatible (deprecated)
    ['http://[64:ff9b::7f00:1]/', { range: 'nat64' }],
    ['http://[64:ff9b:1::a00:1]/', { range: 'nat64' }],
    ['http://[2002:7f00:1::]/', { range: '6to4' }],
    ['http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', { range: 'teredo' }],
    ['http://169.254.169.254/latest/meta-data/', { range: 'linkLocal' }],
    ['http://[fe80::1]/', { range: 'linkLocal' }],
    ['http://[fe80::1%25eth0]/', { reason: /not a valid absolute URL/ }],
    ['http://100.64.0.1/', { range: 'carrierGradeNat' }],
    ['http://10.0.0.1/', { range: 'private' }],
    ['http://172.16.5.4/', { range: 'private' }],
    ['http://192.168.1.1/', { range: 'private' }],
    ['http://0.0.0.0/', { range: 'unspecified' }],
    ['http://0/', { range: 'unspecified' }],
    ['http://[::]/', { range: 'unspecified' }],
    ['http://224.0.0.1/', { range: 'multicast' }],
    ['http://[ff02::1]/', { range: 'multicast' }],
    ['http://255.255.255.255/', { range: 'broadcast' }],
    ['http://[fd00::1]/', { range: 'uniqueLocal' }],
    ['http://[fec0::1]/', { range: 'siteLocal' }],
    ['http://198.18.0.1/', { range: 'benchmarking' }],
    ['http://192.0.0.8/', { range: 'ietfProtocolAssignment' }],
    ['http://192.0.2.10/', { range: 'documentation' }],
    ['http://[2001:db8::1]/', { range: 'documentation' }],
    ['http://240.0.0.1/', { range: 'reserved' }],
    ['http://localhost/', { reason: /local-only name/ }],
    ['http://LOCALHOST./', { reason: /local-only name/ }],
    ['http://foo.localhost/', { reason: /local-only name/ }],
    ['http://printer.local/', { reason: /local-only name/ }],
    ['http://metadata.google.internal/computeMetadata/v1/', { reason: /local-only name/ }],
    ['http://intranet/', { reason: /fully qualified/ }],
    ['http://user:pass@example.com/', { reason: /user name or password/ }],
    ['http://user@example.com/', { reason: /user name or password/ }],
    ['https://example.com:0/', { reason: /port 0/ }],
    ['ftp://example.com/', { reason: /scheme ftp:/ }],
    ['file:///etc/passwd', { reason: /scheme file:/ }],
    ['gopher://example.com:70/', { reason: /scheme gopher:/ }],
    [`https://example.com/${'a'.repeat(2048)}`, { reason: /longer than 2048/ }],
    // 400 characters sent, 2,400 once percent-encoded: the stored form is what must fit
    [`https://example.com/${'é'.repeat(400)}`, { reason: /longer than 2048 characters once normalised/ }],
    ['not a url', { reason: /not a valid absolute URL/ }],
  ];

  it('has at least 30 hostile URLs', () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(30);
  });

  it.each(HOSTILE)('refuses %s', (raw, expected) => {
    const result = policy.checkUrl(raw);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.code).toBe('invalid_webhook_url');
    if (expected.range) expect(result.range).toBe(expected.range);
    if (expected.reason) expect(result.reason).toMatch(expected.reason);
  });

  it.each([
    'https://example.com/hooks/riskwatch',
    'https://hooks.example.com:8443/x?y=1',
    `https://${PUBLIC_V4}/`,
    `https://[${PUBLIC_V6}]/`,
    'http://example.com/',
    'https://xn--bcher-kva.example/',
  ])('accepts the public %s', (raw) => {
    const result = policy.checkUrl(raw);
    expect(result).toMatchObject({ ok: true });
  });

  it('is https-only by default', () => {
    const strict = new WebhookUrlPolicy({});
    expect(strict.allowHttp).toBe(false);
    expect(strict.checkUrl('http://example.com/')).toMatchObject({ ok: false, reason: /plain http/ });
    expect(strict.checkUrl('https://example.com/')).toMatchObject({ ok: true });
  });
});

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.127.255.255', 'carrierGradeNat'],
    ['0.1.2.3', 'unspecified'],
    ['::ffff:10.0.0.1', 'ipv4Mapped:private'],
    ['::ffff:0:a00:1', 'rfc6145'],
    ['100::1', 'discard'],
    ['fe80::1%eth0', 'linkLocal'],
    ['[::1]', 'loopback'],
    ['127.1', 'invalid'], // a socket is never handed this; only canonical addresses are classified
    ['example.com', 'invalid'],
  ])('refuses %s (%s)', (ip, range) => {
    expect(classifyAddress(ip)).toEqual({ allowed: false, range });
  });

  it.each(['8.8.8.8', '1.1.1.1', PUBLIC_V4, PUBLIC_V6, '2a00:1450:4001:82a::200e'])('allows %s', (ip) => {
    expect(classifyAddress(ip)).toEqual({ allowed: true, range: 'unicast' });
  });
});

describe('operator allow list', () => {
  it('lets a chosen in-VPC IPv4 CIDR through, and nothing next to it', () => {
    const policy = new WebhookUrlPolicy({ allowCidrs: ['10.20.0.0/16'], allowHttp: true });
    expect(policy.checkUrl('http://10.20.3.4:8080/')).toMatchObject({ ok: true });
    expect(policy.classify('10.20.3.4')).toEqual({ allowed: true, range: 'allowList' });
    expect(policy.checkUrl('http://10.21.0.1/')).toMatchObject({ ok: false, range: 'private' });
    expect(policy.checkUrl('http://10.19.255.255/')).toMatchObject({ ok: false, range: 'private' });
    expect(policy.checkUrl('http://127.0.0.1/')).toMatchObject({ ok: false, range: 'loopback' });
  });

  it('lets a chosen IPv6 CIDR through', () => {
    const policy = new WebhookUrlPolicy({ allowCidrs: ['fd12:3456::/32'], allowHttp: true });
    expect(policy.checkUrl('http://[fd12:3456:1::9]:8080/')).toMatchObject({ ok: true });
    expect(policy.checkUrl('http://[fd12:3457::1]/')).toMatchObject({ ok: false, range: 'uniqueLocal' });
  });

  it('never opens unspecified, multicast or broadcast, and an IPv4 CIDR does not open IPv4-mapped IPv6', () => {
    const policy = new WebhookUrlPolicy({ allowCidrs: ['0.0.0.0/0', '::/0'], allowHttp: true });
    expect(policy.classify('10.0.0.1').allowed).toBe(true);
    expect(policy.classify('0.0.0.0')).toEqual({ allowed: false, range: 'unspecified' });
    expect(policy.classify('::')).toEqual({ allowed: false, range: 'unspecified' });
    expect(policy.classify('224.0.0.1')).toEqual({ allowed: false, range: 'multicast' });
    expect(policy.classify('255.255.255.255')).toEqual({ allowed: false, range: 'broadcast' });
    const v4only = new WebhookUrlPolicy({ allowCidrs: ['127.0.0.0/8'] });
    expect(v4only.classify('::ffff:127.0.0.1')).toEqual({ allowed: false, range: 'ipv4Mapped:loopback' });
  });

  it.each(['10.20/16', '0x0a.0.0.0/8', '10.0.0.0', '10.0.0.0/33', 'banana', 'fe80::%eth0/64', ''])(
    'rejects the malformed entry %j at construction',
    (entry) => {
      expect(() => parseAllowList([entry])).toThrow(/not a CIDR/);
    },
  );
});

describe('connect-time guard (names, through a test resolver)', () => {
  let receiver: Receiver;
  let redirectTarget: Receiver;

  beforeAll(async () => {
    receiver = await new Receiver().start();
    redirectTarget = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver.close();
    await redirectTarget.close();
  });

  const hostile = () =>
    testResolver({
      'loopback.attacker.example': ['127.0.0.1'],
      'v6loop.attacker.example': ['::1'],
      'mapped.attacker.example': ['::ffff:127.0.0.1'],
      'metadata.attacker.example': ['169.254.169.254'],
      'mixed.attacker.example': [PUBLIC_V4, '10.0.0.5'],
      'mixed-last.attacker.example': [PUBLIC_V4, PUBLIC_V6, '127.0.0.1'],
      'rebind.attacker.example': (call) => (call === 1 ? [PUBLIC_V4] : ['127.0.0.1']),
    });

  it.each([
    ['loopback.attacker.example', '127.0.0.1', 'loopback'],
    ['v6loop.attacker.example', '::1', 'loopback'],
    ['mapped.attacker.example', '::ffff:127.0.0.1', 'ipv4Mapped:loopback'],
    ['metadata.attacker.example', '169.254.169.254', 'linkLocal'],
    ['mixed.attacker.example', '10.0.0.5', 'private'],
    ['mixed-last.attacker.example', '127.0.0.1', 'loopback'],
  ])('refuses %s (→ %s) at connection, and nothing reaches the receiver', async (host, address, range) => {
    const resolver = hostile();
    const policy = new WebhookUrlPolicy({ allowHttp: true });
    const url = `http://${host}:${receiver.port}/hook`;
    expect(policy.checkUrl(url)).toMatchObject({ ok: true }); // a name: nothing to refuse syntactically
    await expect(policy.checkUrlResolved(url, resolver)).resolves.toMatchObject({
      ok: false,
      address,
      range,
    });
    const client = new WebhookHttpClient(policy, { resolver });
    const before = receiver.requests.length;
    const err = (await client.deliver(url, { body: '{}' }).catch((e: unknown) => e)) as SsrfBlockedError;
    client.close();
    expect(err).toBeInstanceOf(SsrfBlockedError);
    expect(err).toMatchObject({ code: 'ssrf_blocked', host, address, range });
    expect(receiver.requests.length).toBe(before);
  });

  it('DNS rebinding: public at creation, 127.0.0.1 at delivery → refused at connection', async () => {
    const resolver = hostile();
    const policy = new WebhookUrlPolicy({ allowHttp: true });
    const url = `http://rebind.attacker.example:${receiver.port}/hook`;
    await expect(policy.checkUrlResolved(url, resolver)).resolves.toMatchObject({ ok: true });
    const client = new WebhookHttpClient(policy, { resolver });
    const before = receiver.requests.length;
    await expect(client.deliver(url, { body: '{}' })).rejects.toMatchObject({
      code: 'ssrf_blocked',
      address: '127.0.0.1',
      range: 'loopback',
    });
    client.close();
    expect(resolver.calls).toEqual(['rebind.attacker.example', 'rebind.attacker.example']);
    expect(receiver.requests.length).toBe(before);
  });

  it('re-checks IP-literal hosts before every attempt (Node calls no lookup for them)', async () => {
    const resolver = hostile();
    const client = new WebhookHttpClient(new WebhookUrlPolicy({ allowHttp: true }), { resolver });
    const before = receiver.requests.length;
    for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]', '2130706433'])
      await expect(client.deliver(`http://${host}:${receiver.port}/`)).rejects.toMatchObject({
        code: 'ssrf_blocked',
      });
    await expect(client.deliver(`ftp://127.0.0.1:${receiver.port}/`)).rejects.toMatchObject({
      code: 'invalid_webhook_url',
    });
    client.close();
    expect(resolver.calls).toEqual([]);
    expect(receiver.requests.length).toBe(before);
  });

  it('the lookup answers all:true callers with every address and others with the first', async () => {
    const policy = new WebhookUrlPolicy({});
    const lookup = createGuardedLookup(policy, testResolver({ 'ok.example': [PUBLIC_V4, PUBLIC_V6] }));
    const all = await new Promise((resolve, reject) =>
      lookup('ok.example', { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
    );
    expect(all).toEqual([
      { address: PUBLIC_V4, family: 4 },
      { address: PUBLIC_V6, family: 6 },
    ]);
    const one = await new Promise((resolve, reject) =>
      lookup('ok.example', {}, (err, address, family) => (err ? reject(err) : resolve([address, family]))),
    );
    expect(one).toEqual([PUBLIC_V4, 4]);
    const missing = await new Promise((resolve) =>
      lookup('nx.example', { all: true }, (err) => resolve(err)),
    );
    expect(missing).toMatchObject({ code: 'ENOTFOUND' });
  });

  describe('with the allow list 127.0.0.0/8 (the local receiver is the in-VPC receiver)', () => {
    const resolver = testResolver({ 'receiver.vpc.example': ['127.0.0.1'] });
    const policy = new WebhookUrlPolicy({ allowCidrs: ['127.0.0.0/8'], allowHttp: true });
    let client: WebhookHttpClient;
    beforeAll(() => {
      client = new WebhookHttpClient(policy, { resolver });
    });
    afterAll(() => client.close());

    it('delivers: method, headers and body arrive, status and latency come back', async () => {
      receiver.handler = (_req, res) => res.writeHead(204).end();
      const before = receiver.requests.length;
      const result = await client.deliver(`http://receiver.vpc.example:${receiver.port}/hook`, {
        headers: { 'content-type': 'application/json', 'x-riskwatch-signature': 'v1=abc' },
        body: '{"event":"test"}',
      });
      expect(result).toMatchObject({ status: 204, body: '', truncated: false });
      expect(result.latencyMs).toBeGreaterThanOrEqual(0);
      expect(receiver.requests.slice(before)).toEqual([
        expect.objectContaining({
          method: 'POST',
          url: '/hook',
          body: '{"event":"test"}',
          headers: expect.objectContaining({ 'x-riskwatch-signature': 'v1=abc' }) as unknown,
        }),
      ]);
      // An IP literal in the allow list goes through too.
      await expect(client.deliver(`http://127.0.0.1:${receiver.port}/`)).resolves.toMatchObject({
        status: 204,
      });
    });

    it('returns a 3xx as the answer and never follows it', async () => {
      const target = `http://receiver.vpc.example:${redirectTarget.port}/stolen`;
      receiver.handler = (_req, res) => res.writeHead(302, { location: target }).end();
      const result = await client.deliver(`http://receiver.vpc.example:${receiver.port}/hook`, {
        body: '{}',
      });
      expect(result.status).toBe(302);
      expect(result.headers.location).toBe(target);
      await new Promise((r) => setTimeout(r, 100));
      expect(redirectTarget.requests).toEqual([]);
    });

    it('cuts a response body at the cap and says so', async () => {
      receiver.handler = (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('x'.repeat(1024 * 1024));
      };
      const result = await client.deliver(`http://receiver.vpc.example:${receiver.port}/hook`, {
        maxResponseBytes: 1000,
      });
      expect(result).toMatchObject({ status: 200, truncated: true });
      expect(result.body).toBe('x'.repeat(1000));

      receiver.handler = (_req, res) => res.end('short');
      const small = await client.deliver(`http://receiver.vpc.example:${receiver.port}/hook`, {
        maxResponseBytes: 1000,
      });
      expect(small).toMatchObject({ body: 'short', truncated: false });
    });

    it('times out a receiver that never answers', async () => {
      receiver.handler = () => {}; // holds the request open
      expect(DEFAULT_DELIVERY_TIMEOUT_MS).toBe(15_000);
      const started = Date.now();
      const err = await client
        .deliver(`http://receiver.vpc.example:${receiver.port}/hook`, { timeoutMs: 300 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TimeoutError);
      expect(err).toMatchObject({ code: 'timeout' });
      expect(Date.now() - started).toBeLessThan(3000);
    });

    it('times out a resolver that never answers', async () => {
      const stuck = new WebhookHttpClient(policy, { resolver: () => new Promise(() => {}) });
      await expect(stuck.deliver('http://slow.vpc.example/', { timeoutMs: 200 })).rejects.toMatchObject({
        code: 'timeout',
      });
      stuck.close();
    });

    it('aborts on the signal', async () => {
      receiver.handler = () => {};
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      await expect(
        client.deliver(`http://receiver.vpc.example:${receiver.port}/hook`, { signal: controller.signal }),
      ).rejects.toMatchObject({ code: 'aborted' });
    });

    it('names connection refused and DNS failures', async () => {
      const closed = await new Receiver().start();
      const port = closed.port;
      await closed.close();
      await expect(client.deliver(`http://receiver.vpc.example:${port}/`)).rejects.toMatchObject({
        code: 'connection_refused',
      });
      await expect(client.deliver('http://nowhere.vpc.example/')).rejects.toMatchObject({
        code: 'dns_failed',
      });
    });
  });
});

describe('toDeliveryFailure', () => {
  it.each([
    ['ECONNREFUSED', 'connection_refused'],
    ['ENOTFOUND', 'dns_failed'],
    ['EAI_AGAIN', 'dns_failed'],
    ['CERT_HAS_EXPIRED', 'tls_error'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'tls_error'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls_error'],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'tls_error'],
    ['ECONNRESET', 'network_error'],
    ['EHOSTUNREACH', 'network_error'],
  ])('%s → %s', (code, expected) => {
    const failure = toDeliveryFailure(Object.assign(new Error(code), { code }), 1000);
    expect(failure).toBeInstanceOf(WebhookDeliveryError);
    expect(failure.code).toBe(expected);
  });

  it('looks into happy-eyeballs AggregateErrors', () => {
    const refused = Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
    expect(toDeliveryFailure(new AggregateError([refused, refused]), 1000).code).toBe('connection_refused');
  });
});
