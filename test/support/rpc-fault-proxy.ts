import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/*
 * A fault-injecting HTTP proxy for JSON-RPC, in front of any upstream (anvil, the Solana facade, …). The
 * service under test is pointed at the proxy's URL instead of the node's, so the code that runs in tests
 * is the code users run — only the provider misbehaves. It also counts what the service sends, for the
 * "fewest round trips" checks (docs/risk.md#principles, item 4).
 */

/** How to answer one HTTP request (a batch is one request, faulted as a whole). */
export type FaultMode =
  /** This status with a JSON-RPC error body; `retryAfterS` adds a `Retry-After` header (seconds). */
  | { status: number; retryAfterS?: number; body?: string }
  /** Never answer, until the client gives up or the proxy is closed (then the socket is destroyed). */
  | 'hang'
  /** Wait this long, then forward normally. */
  | { delayMs: number }
  /** 200 with a JSON content type and a body that is not JSON (an HTML error page, as CDNs send). */
  | 'garbage'
  /** Forward, then send back only the first half of the upstream's JSON (a complete HTTP response). */
  | 'truncated';

/**
 * How a provider refuses one `eth_getLogs` call (see `faults.limitLogs`): a JSON-RPC error object for that
 * call alone, or an HTTP status (with a JSON-RPC error body) for the whole request carrying it.
 */
export type LogsRefusal = { code: number; message: string } | { status: number; body?: string };

/** Decides, from a call's numeric block range (inclusive), whether the provider refuses it; null forwards. */
export type LogsRule = (range: { fromBlock: bigint; toBlock: bigint }) => LogsRefusal | null;

/**
 * The rule of a provider capping `eth_getLogs` at `maxBlocks` blocks per call, the way public endpoints
 * do (in the words some of them use).
 */
export const maxLogsRange =
  (maxBlocks: bigint, code = -32602): LogsRule =>
  ({ fromBlock, toBlock }) =>
    toBlock - fromBlock + 1n > maxBlocks
      ? { code, message: `exceed maximum block range: ${maxBlocks}` }
      : null;

export interface FaultProxyStats {
  /** HTTP requests received (a JSON-RPC batch array is one). */
  roundTrips: number;
  /** JSON-RPC calls received, batch members counted one by one. */
  totalCalls: number;
  /** Calls by method name. */
  calls: Record<string, number>;
  /** Requests being answered right now / the most at once since the last reset. */
  inFlight: number;
  maxInFlight: number;
  /** Requests that reached the upstream / that got an injected fault instead of (or on top of) it. */
  forwarded: number;
  faulted: number;
  /** Each request's arrival and the end of its answer (performance.now()), for the critical path. */
  trips: { startedAt: number; endedAt?: number; methods: string[] }[];
}

/**
 * The longest chain of round trips each of which started after the previous one ended: the sequential
 * round trips on the client's critical path (requests in flight together count once).
 */
export function sequentialRoundTrips(stats: FaultProxyStats): number {
  const done = stats.trips
    .filter((r): r is { startedAt: number; endedAt: number; methods: string[] } => r.endedAt !== undefined)
    .sort((a, b) => a.startedAt - b.startedAt);
  const depth: number[] = [];
  let longest = 0;
  done.forEach((r, i) => {
    let before = 0;
    for (let j = 0; j < i; j++) if (done[j]!.endedAt <= r.startedAt) before = Math.max(before, depth[j]!);
    depth[i] = before + 1;
    longest = Math.max(longest, before + 1);
  });
  return longest;
}

export interface FaultProxy {
  readonly url: string;
  /** Live counters (read them after the calls you care about); `resetStats()` zeroes them. */
  readonly stats: FaultProxyStats;
  resetStats(): void;
  /** Added before every request is handled (on top of any fault), e.g. to make parallelism observable. */
  setLatency(ms: number): void;
  readonly faults: {
    /** The next `n` HTTP requests get `mode`; takes precedence over forMethod and always. */
    next(n: number, mode: FaultMode): void;
    /** Every request containing a call to `method` gets `mode` (until clear). */
    forMethod(method: string, mode: FaultMode): void;
    /** Every request gets `mode` (until clear). */
    always(mode: FaultMode): void;
    /**
     * Play a node that does not implement `methods`: their calls are answered `-32601 Method not found`,
     * the other calls of the same batch are forwarded (until clear).
     */
    unsupported(...methods: string[]): void;
    /**
     * Play a provider that limits `eth_getLogs`: each call with a numeric block range that `rule` refuses
     * gets the refusal (a JSON-RPC error for that call, the other calls of the batch forwarded; or an HTTP
     * status for the whole request). Calls with a block tag or a block hash are forwarded (until clear).
     */
    limitLogs(rule: LogsRule): void;
    /** Back to a healthy provider (latency is kept). */
    clear(): void;
  };
  /** Stop listening, destroy hanging and idle connections. */
  close(): Promise<void>;
}

const GARBAGE = '<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>';

function emptyStats(): FaultProxyStats {
  return {
    roundTrips: 0,
    totalCalls: 0,
    calls: Object.create(null) as Record<string, number>,
    inFlight: 0,
    maxInFlight: 0,
    forwarded: 0,
    faulted: 0,
    trips: [],
  };
}

/** Method names of a JSON-RPC request body (single or batch); an unparseable body has none. */
function methodsOf(body: string): string[] {
  try {
    const parsed: unknown = JSON.parse(body);
    const calls = Array.isArray(parsed) ? (parsed as unknown[]) : [parsed];
    return calls.map((c) =>
      c && typeof c === 'object' && typeof (c as { method?: unknown }).method === 'string'
        ? (c as { method: string }).method
        : '(invalid)',
    );
  } catch {
    return [];
  }
}

interface WireCall {
  id: unknown;
  method: string;
  params?: unknown;
}

/** The calls of a JSON-RPC body and whether it was a batch; null when it is not JSON-RPC. */
function callsOf(body: string): { batch: boolean; calls: WireCall[] } | null {
  try {
    const parsed = JSON.parse(body) as unknown;
    const batch = Array.isArray(parsed);
    const calls = (batch ? parsed : [parsed]) as unknown[];
    // Anything but call objects goes to the upstream as it came, to answer as it does.
    if (!calls.every((c) => typeof c === 'object' && c !== null)) return null;
    return { batch, calls: calls as WireCall[] };
  } catch {
    return null;
  }
}

/** What `rule` says of an `eth_getLogs` call with a numeric range; null for any other call. */
function logsRefusal(call: WireCall, rule: LogsRule): LogsRefusal | null {
  if (call.method !== 'eth_getLogs' || !Array.isArray(call.params)) return null;
  const filter = call.params[0] as { fromBlock?: unknown; toBlock?: unknown } | undefined;
  const block = (v: unknown) => (typeof v === 'string' && /^0x[0-9a-f]+$/i.test(v) ? BigInt(v) : null);
  const fromBlock = block(filter?.fromBlock);
  const toBlock = block(filter?.toBlock);
  if (fromBlock === null || toBlock === null) return null;
  return rule({ fromBlock, toBlock });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Start a proxy on 127.0.0.1 (an ephemeral port) that forwards every request body to `upstreamUrl` as a
 * POST to that exact URL (the request's own path is ignored: JSON-RPC endpoints have one URL).
 */
export async function startFaultProxy(upstreamUrl: string): Promise<FaultProxy> {
  let stats = emptyStats();
  /** Requests open right now, across resets. */
  let open = 0;
  let latencyMs = 0;
  const queue: { remaining: number; mode: FaultMode }[] = [];
  const byMethod = new Map<string, FaultMode>();
  const missing = new Set<string>();
  let logsRule: LogsRule | undefined;
  let always: FaultMode | undefined;
  const hanging = new Set<ServerResponse>();
  // Aborted on close(), so waits (latency, delays, upstream fetches) end with it.
  const closing = new AbortController();

  const pickFault = (methods: readonly string[]): FaultMode | undefined => {
    const head = queue[0];
    if (head) {
      head.remaining -= 1;
      if (head.remaining <= 0) queue.shift();
      return head.mode;
    }
    for (const m of methods) {
      const mode = byMethod.get(m);
      if (mode) return mode;
    }
    return always;
  };

  /**
   * The answer of a node that answers some calls itself (`local` gives their error object): those get
   * it, the rest of the request is forwarded and the answers put back in order.
   */
  const partlyLocal = async (
    parsed: { batch: boolean; calls: WireCall[] },
    local: (call: WireCall) => { code: number; message: string } | null,
    signal: AbortSignal,
  ): Promise<unknown> => {
    const { batch, calls } = parsed;
    const errors = calls.map(local);
    const forward = calls.filter((_, i) => errors[i] === null);
    let answers: { id: unknown }[] = [];
    if (forward.length > 0) {
      const upstream = await fetch(upstreamUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(forward),
        signal,
      });
      answers = (await upstream.json()) as { id: unknown }[];
    }
    const out = calls.map((c, i) => {
      const error = errors[i];
      return error ? { jsonrpc: '2.0', id: c.id, error } : answers.find((a) => a.id === c.id);
    });
    return batch ? out : out[0];
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // Counters of the stats object current on arrival; a resetStats() meanwhile starts a clean one.
    const s = stats;
    s.roundTrips += 1;
    open += 1;
    stats.inFlight = open;
    stats.maxInFlight = Math.max(stats.maxInFlight, open);
    // The request is over when the response is sent or the client goes away, whichever comes first.
    const gone = new AbortController();
    res.once('close', () => {
      open -= 1;
      stats.inFlight = open;
      hanging.delete(res);
      gone.abort();
    });
    const signal = AbortSignal.any([gone.signal, closing.signal]);

    const trip: FaultProxyStats['trips'][number] = { startedAt: performance.now(), methods: [] };
    s.trips.push(trip);
    res.once('finish', () => (trip.endedAt = performance.now()));
    const body = await readBody(req);
    const methods = methodsOf(body);
    trip.methods = methods;
    for (const m of methods) {
      s.totalCalls += 1;
      s.calls[m] = (s.calls[m] ?? 0) + 1;
    }
    // Decided on arrival, so a fault set while a request waits does not change that request.
    const fault = pickFault(methods);
    if (fault) s.faulted += 1;

    if (latencyMs > 0) await sleep(latencyMs, undefined, { signal });
    if (fault === 'hang') {
      hanging.add(res);
      return;
    }
    if (typeof fault === 'object' && 'delayMs' in fault) await sleep(fault.delayMs, undefined, { signal });
    if (typeof fault === 'object' && 'status' in fault) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (fault.retryAfterS !== undefined) headers['retry-after'] = String(fault.retryAfterS);
      res.writeHead(fault.status, headers);
      res.end(
        fault.body ??
          JSON.stringify({
            jsonrpc: '2.0',
            id: null,
            error: { code: -32005, message: `injected HTTP ${fault.status}` },
          }),
      );
      return;
    }
    if (fault === 'garbage') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(GARBAGE);
      return;
    }

    // The node's own answers: methods it lacks, eth_getLogs ranges it refuses.
    const parsed = missing.size > 0 || logsRule ? callsOf(body) : null;
    const rule = logsRule;
    const refusals = new Map<WireCall, LogsRefusal>();
    if (parsed && rule)
      for (const call of parsed.calls) {
        const refusal = logsRefusal(call, rule);
        if (refusal) refusals.set(call, refusal);
      }
    if (refusals.size > 0 && !fault) s.faulted += 1;
    const refusedRequest = [...refusals.values()].find((r) => 'status' in r);
    if (refusedRequest && 'status' in refusedRequest) {
      res.writeHead(refusedRequest.status, { 'content-type': 'application/json' });
      res.end(
        refusedRequest.body ??
          JSON.stringify({
            jsonrpc: '2.0',
            id: null,
            error: { code: -32005, message: `HTTP ${refusedRequest.status}: response size too large` },
          }),
      );
      return;
    }
    s.forwarded += 1;
    if (parsed && (refusals.size > 0 || parsed.calls.some((c) => missing.has(c.method)))) {
      const local = (call: WireCall) => {
        if (missing.has(call.method)) return { code: -32601, message: 'Method not found' };
        const refusal = refusals.get(call);
        return refusal && 'code' in refusal ? refusal : null;
      };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(await partlyLocal(parsed, local, signal)));
      return;
    }
    const upstream = await fetch(upstreamUrl, {
      method: 'POST',
      headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
      body,
      signal,
    });
    let answer = Buffer.from(await upstream.arrayBuffer());
    if (fault === 'truncated') answer = answer.subarray(0, Math.max(1, Math.floor(answer.length / 2)));
    res.writeHead(upstream.status, {
      'content-type': upstream.headers.get('content-type') ?? 'application/json',
    });
    res.end(answer);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // A client that went away (or close()) aborts the waits: nothing left to answer.
      if (res.destroyed || res.writableEnded || closing.signal.aborted) return;
      if (res.headersSent) {
        res.destroy();
        return;
      }
      // The upstream itself failed: say so the way a gateway would.
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`fault proxy: upstream ${upstreamUrl} failed: ${String(err)}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    get stats() {
      return stats;
    },
    resetStats() {
      stats = emptyStats();
      stats.inFlight = open;
    },
    setLatency(ms: number) {
      latencyMs = ms;
    },
    faults: {
      next(n: number, mode: FaultMode) {
        if (n > 0) queue.push({ remaining: n, mode });
      },
      forMethod(method: string, mode: FaultMode) {
        byMethod.set(method, mode);
      },
      always(mode: FaultMode) {
        always = mode;
      },
      unsupported(...methods: string[]) {
        for (const m of methods) missing.add(m);
      },
      limitLogs(rule: LogsRule) {
        logsRule = rule;
      },
      clear() {
        queue.length = 0;
        byMethod.clear();
        missing.clear();
        logsRule = undefined;
        always = undefined;
      },
    },
    async close() {
      closing.abort();
      for (const res of hanging) res.destroy();
      hanging.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
