import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The SSRF guard of webhook delivery (issue 10). A webhook URL is chosen by a customer, and the request
 * to it leaves from inside the operator's VPC, so riskwatch refuses to send it anywhere but to the public
 * Internet — or to the in-VPC networks the operator names in an allow list.
 *
 * Two checks, because a URL that is fine when it is saved can point elsewhere when it is used:
 *
 * - {@link WebhookUrlPolicy.checkUrl} at creation (and again before every attempt): the scheme, no
 *   credentials, no local-only names, and — for IP literals in any notation, which the WHATWG URL parser
 *   turns into canonical addresses — the address itself.
 * - {@link createGuardedLookup} at connection time: the `lookup` Node's sockets call for a host name. It
 *   resolves the name and fails the connection when ANY address it got is refused, on every attempt, so a
 *   name that resolved to a public address yesterday (or a second ago) and to 127.0.0.1 now — DNS
 *   rebinding — is refused when it matters. Node does not call `lookup` for IP-literal hosts; those are
 *   covered by `checkUrl`, which the delivery runs before each attempt.
 */

export interface AddressVerdict {
  allowed: boolean;
  /**
   * Why: `unicast` (a global unicast address), `allowList` (in an operator CIDR), or the refused range:
   * ipaddr.js's names (`loopback`, `private`, `linkLocal`, `carrierGradeNat`, `uniqueLocal`, `multicast`,
   * `broadcast`, `unspecified`, `reserved`, `rfc6052` (NAT64), `6to4`, `teredo`, `rfc6145`, …) and ours
   * (`documentation`, `benchmarking`, `ietfProtocolAssignment`, `siteLocal`, `notGlobalUnicast`,
   * `ipv4Mapped:<range of the embedded IPv4>`, `invalid`).
   */
  range: string;
}

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

const cidr = (text: string): Cidr => ipaddr.parseCIDR(text);

/** Ranges named more precisely than ipaddr.js does (it files these under `reserved` or omits them). */
const OUR_RANGES: ReadonlyArray<readonly [string, Cidr]> = [
  ['ietfProtocolAssignment', cidr('192.0.0.0/24')],
  ['documentation', cidr('192.0.2.0/24')],
  ['documentation', cidr('198.51.100.0/24')],
  ['documentation', cidr('203.0.113.0/24')],
  ['benchmarking', cidr('198.18.0.0/15')],
  ['documentation', cidr('2001:db8::/32')],
  ['documentation', cidr('3fff::/20')],
  ['siteLocal', cidr('fec0::/10')],
  ['nat64', cidr('64:ff9b::/96')],
  ['nat64', cidr('64:ff9b:1::/48')],
];

/** IPv6 global unicast (RFC 4291): every other IPv6 address is refused, whatever ipaddr.js calls it. */
const GLOBAL_UNICAST_V6 = cidr('2000::/3');

/** Refused even when an allow-list CIDR covers them: no receiver lives at such an address. */
const NEVER_ALLOWED = new Set(['unspecified', 'multicast', 'broadcast', 'invalid']);

const inCidr = (address: ipaddr.IPv4 | ipaddr.IPv6, [net, bits]: Cidr) =>
  address.kind() === net.kind() && address.match(net, bits);

/**
 * Parses an address strictly: Node's own `isIP` decides what an address is (ipaddr.js alone also takes
 * `127.1` or `0x7f.1`, which is right for inet_aton but not what a socket is handed), zone ids dropped.
 */
function parseStrict(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (isIP(bare) === 0) return undefined;
  const address = ipaddr.parse(bare);
  if (address.kind() === 'ipv6') delete (address as ipaddr.IPv6).zoneId;
  return address;
}

/** The range an address falls in, `unicast` for a global unicast address. Allow lists aside. */
function rangeOf(address: ipaddr.IPv4 | ipaddr.IPv6): string {
  for (const [name, range] of OUR_RANGES) if (inCidr(address, range)) return name;
  if (address.kind() === 'ipv6') {
    const v6 = address as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return `ipv4Mapped:${rangeOf(v6.toIPv4Address())}`;
    const named: string = v6.range(); // fec0::/10 (its `deprecatedSiteLocal`) is matched above
    if (named !== 'unicast') return named;
    return inCidr(v6, GLOBAL_UNICAST_V6) ? 'unicast' : 'notGlobalUnicast';
  }
  return (address as ipaddr.IPv4).range();
}

/**
 * Parses an operator allow list (`10.20.0.0/16`, `fd12:3456::/48`) once. Throws on an entry that is not a
 * CIDR in canonical notation (ipaddr.js would read `10.20/16` as 10.0.0.20/16).
 */
export function parseAllowList(cidrs: readonly string[]): Cidr[] {
  return cidrs.map((text) => {
    const trimmed = text.trim();
    const slash = trimmed.lastIndexOf('/');
    const addressPart = slash < 0 ? '' : trimmed.slice(0, slash);
    if (slash < 0 || isIP(addressPart) === 0 || addressPart.includes('%') || !ipaddr.isValidCIDR(trimmed))
      throw new Error(`webhook allow list: "${text}" is not a CIDR such as 10.20.0.0/16 or fd00:1::/64`);
    return ipaddr.parseCIDR(trimmed);
  });
}

/**
 * Whether riskwatch may connect to `ip` (a canonical IPv4 or IPv6 address, brackets and zone id allowed).
 * Refused: everything but global unicast — loopback, private, link-local (cloud metadata 169.254.169.254),
 * CGNAT, unique-local, site-local, multicast, broadcast, unspecified, reserved, documentation,
 * benchmarking, 192.0.0.0/24 — and every IPv6 form that embeds or tunnels to an IPv4 address (IPv4-mapped,
 * NAT64, 6to4, Teredo), whatever that address is. An address in an allow-list CIDR is allowed, except
 * unspecified/multicast/broadcast. An allow-list CIDR matches addresses of its own family only: an IPv4
 * CIDR does not open IPv4-mapped IPv6 addresses.
 */
export function classifyAddress(ip: string, allowList: readonly Cidr[] = []): AddressVerdict {
  const address = parseStrict(ip);
  if (!address) return { allowed: false, range: 'invalid' };
  const range = rangeOf(address);
  if (range === 'unicast') return { allowed: true, range };
  if (!NEVER_ALLOWED.has(range) && allowList.some((entry) => inCidr(address, entry)))
    return { allowed: true, range: 'allowList' };
  return { allowed: false, range };
}

/** A connection refused by the SSRF guard: the host asked for, the address refused and its range. */
export class SsrfBlockedError extends Error {
  readonly code = 'ssrf_blocked' as const;
  readonly host: string;
  readonly address: string | undefined;
  readonly range: string;

  constructor(details: { host: string; address?: string; range: string; reason?: string }) {
    super(
      details.reason ??
        `webhook delivery to ${details.host} refused: ${details.address ?? details.host} is in a refused range (${details.range})`,
    );
    this.name = 'SsrfBlockedError';
    this.host = details.host;
    this.address = details.address;
    this.range = details.range;
  }
}

export type UrlCheck =
  | { ok: true; url: URL }
  | { ok: false; code: 'invalid_webhook_url'; reason: string; address?: string; range?: string };

export interface WebhookUrlPolicyOptions {
  /** CIDRs of in-VPC receivers riskwatch may deliver to although they are not public. Default none. */
  allowCidrs?: readonly string[];
  /** Accept `http:` URLs as well as `https:`. Default false: a webhook carries signed data, use TLS. */
  allowHttp?: boolean;
}

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** Names that only ever mean this host or the local network (RFC 6761, 6762; `.internal` per ICANN 2024). */
const LOCAL_SUFFIXES = ['localhost', 'local', 'internal', 'localdomain', 'home.arpa'];

/**
 * What a webhook URL may be. Built once from the settings; `checkUrl` runs when a webhook is created and
 * before every delivery attempt, `isAllowedAddress` on every address DNS returns at connection time.
 *
 * Decisions: `https:` only unless `allowHttp`; any port (1–65535: in-VPC receivers listen on 8080 and the
 * like, and the address, not the port, is what keeps a request inside the public Internet); no user or
 * password in the URL (a secret in a URL leaks into logs — receivers authenticate the signature); at most
 * 2048 characters; without an allow list, host names must have a dot and not end in a local-only suffix (`localhost`, `.local`,
 * `.internal`, `.localdomain`, `.home.arpa`) — a single-label name only resolves through the resolver's
 * search domains, i.e. to something internal. Those name rules are an early, clear refusal; the
 * connection-time check on the resolved addresses is the guard.
 */
export class WebhookUrlPolicy {
  readonly allowList: readonly Cidr[];
  readonly allowHttp: boolean;

  constructor(options: WebhookUrlPolicyOptions = {}) {
    this.allowList = parseAllowList(options.allowCidrs ?? []);
    this.allowHttp = options.allowHttp ?? false;
  }

  classify(ip: string): AddressVerdict {
    return classifyAddress(ip, this.allowList);
  }

  isAllowedAddress(ip: string): boolean {
    return this.classify(ip).allowed;
  }

  checkUrl(raw: string): UrlCheck {
    const refuse = (reason: string, extra: { address?: string; range?: string } = {}): UrlCheck => ({
      ok: false,
      code: 'invalid_webhook_url',
      reason,
      ...extra,
    });
    if (typeof raw !== 'string' || raw.length === 0) return refuse('the URL is empty');
    if (raw.length > MAX_WEBHOOK_URL_LENGTH)
      return refuse(`the URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return refuse('the URL is not a valid absolute URL');
    }
    // Normalised (percent-encoding, punycode) a URL can be several times longer than it was sent: the
    // stored form, `href`, is what must fit.
    if (url.href.length > MAX_WEBHOOK_URL_LENGTH)
      return refuse(
        `the URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters once normalised (${url.href.length}: ` +
          'non-ASCII characters are percent-encoded or written as punycode)',
      );
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      return refuse(`the scheme ${url.protocol} is not allowed: use https`);
    if (url.protocol === 'http:' && !this.allowHttp)
      return refuse('plain http is not allowed: use https (the operator setting allow_http enables http)');
    if (url.username !== '' || url.password !== '')
      return refuse('the URL must not carry a user name or password');
    if (url.port === '0') return refuse('port 0 is not a port a receiver listens on');
    const host = url.hostname;
    const literal = host.startsWith('[') ? host.slice(1, -1) : isIP(host) === 4 ? host : undefined;
    if (literal !== undefined) {
      const verdict = this.classify(literal);
      if (!verdict.allowed)
        return refuse(`the address ${literal} is not a public address (${verdict.range})`, {
          address: literal,
          range: verdict.range,
        });
      return { ok: true, url };
    }
    const name = host.endsWith('.') ? host.slice(0, -1) : host;
    if (name === '') return refuse(`the host ${host} is not a host name`);
    // With an allow list, in-VPC names (`hooks.team.svc.cluster.local`) are the point: their addresses are
    // judged when the connection is made, against the allow list, like every other name's.
    if (this.allowList.length > 0) return { ok: true, url };
    const local = LOCAL_SUFFIXES.find((suffix) => name === suffix || name.endsWith(`.${suffix}`));
    if (local) return refuse(`the host ${host} is a local-only name (.${local})`);
    if (!name.includes('.')) return refuse(`the host ${host} is not a fully qualified public name`);
    return { ok: true, url };
  }

  /**
   * `checkUrl`, then — for a host name — its addresses now: refused when any is refused or the name does
   * not resolve. For creation time, to say early what delivery would refuse; it proves nothing about
   * later (DNS can change), the guarded lookup checks again at every connection.
   */
  async checkUrlResolved(raw: string, resolver: Resolver = systemResolver): Promise<UrlCheck> {
    const checked = this.checkUrl(raw);
    if (!checked.ok) return checked;
    const host = checked.url.hostname;
    if (host.startsWith('[') || isIP(host) !== 0) return checked;
    let addresses: LookupAddress[];
    try {
      addresses = await resolver(host, {});
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      return {
        ok: false,
        code: 'invalid_webhook_url',
        reason: `the host ${host} does not resolve (${code})`,
      };
    }
    if (addresses.length === 0)
      return { ok: false, code: 'invalid_webhook_url', reason: `the host ${host} has no address` };
    for (const { address } of addresses) {
      const verdict = this.classify(address);
      if (!verdict.allowed)
        return {
          ok: false,
          code: 'invalid_webhook_url',
          reason: `the host ${host} resolves to ${address}, not a public address (${verdict.range})`,
          address,
          range: verdict.range,
        };
    }
    return checked;
  }
}

/** A resolver as the guard uses it: every address of a name. Tests inject their own. */
export type Resolver = (hostname: string, options: { family?: number }) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname, { family }) =>
  dnsLookup(hostname, { all: true, family: family ?? 0, order: 'verbatim' });

/**
 * A `lookup` for node:net / node:http / node:https (the `lookup` option of a socket, request or Agent):
 * resolves `hostname` with `resolver` and fails the connection with {@link SsrfBlockedError} when ANY
 * address it got is refused by `policy` — not only the one that would be tried first, since Node's
 * happy-eyeballs (`autoSelectFamily`, `all: true`) may try them all. Answers `all: true` callers with
 * every address, others with the first. Every connection calls it anew: nothing is cached here.
 */
export function createGuardedLookup(
  policy: Pick<WebhookUrlPolicy, 'classify'>,
  resolver: Resolver = systemResolver,
): LookupFunction {
  return (hostname, options, callback) => {
    const family = typeof options.family === 'number' ? options.family : 0;
    const answer = (err: NodeJS.ErrnoException | null, addresses: LookupAddress[] = []) => {
      if (options.all) return callback(err, addresses);
      const first = addresses[0];
      return callback(err, first?.address ?? '', first?.family ?? 0);
    };
    const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
    const resolving =
      isIP(bare) !== 0
        ? Promise.resolve([{ address: bare, family: isIP(bare) }])
        : resolver(hostname, { family });
    resolving.then(
      (addresses) => {
        if (addresses.length === 0)
          return answer(
            Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
              code: 'ENOTFOUND',
              hostname,
            }),
          );
        for (const { address } of addresses) {
          const verdict = policy.classify(address);
          if (!verdict.allowed)
            return answer(new SsrfBlockedError({ host: hostname, address, range: verdict.range }));
        }
        answer(null, addresses);
      },
      (err: NodeJS.ErrnoException) => answer(err),
    );
  };
}
