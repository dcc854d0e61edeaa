import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { gzipSync } from 'node:zlib';

/**
 * A tiny JSON-RPC 2.0 HTTP server on 127.0.0.1 for the provider-layer tests: real sockets, real HTTP,
 * with hooks to misbehave (status codes, Retry-After, garbage, hanging) and a log of what arrived.
 */

export interface StubCall {
  id: unknown;
  method: string;
  params: unknown;
}

export interface StubRequest {
  /** 0-based, in arrival order. */
  index: number;
  /** Date.now() when the request body had arrived. */
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body was a batch array. */
  batch: boolean;
  calls: StubCall[];
}

/** How to answer one HTTP request; `undefined` answers each call through `methods`. */
export type StubReply =
  | undefined
  | { hang: true }
  | {
      status?: number;
      headers?: Record<string, string>;
      /** Raw body text; default: the JSON-RPC answers of the calls. */
      body?: string;
      /** A body streamed chunk by chunk with backpressure, until done or the client hangs up. */
      chunks?: Iterable<Uint8Array>;
      delayMs?: number;
    };

/** Thrown by a method handler: answered as a JSON-RPC error object. */
export class StubRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** `params` is typed by each handler as it expects them (the stub passes whatever arrived). */
export type MethodHandler = (params: never, call: StubCall) => unknown;

/** JSON where bigint values become bare JSON integers (as Solana encodes u64). */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `__bigint__${v}` : v)).replace(
    /"__bigint__(-?\d+)"/g,
    '$1',
  );
}

export class JsonRpcStub {
  readonly requests: StubRequest[] = [];
  /** Method handlers; a method without one is answered with error -32601. */
  methods: Record<string, MethodHandler>;
  /** Chooses the reply per request (fault injection); undefined → normal answers. */
  reply?: (request: StubRequest) => StubReply | Promise<StubReply>;
  /** Delay before every normal answer. */
  delayMs = 0;
  inFlight = 0;
  maxInFlight = 0;

  private constructor(
    private readonly server: Server,
    methods: Record<string, MethodHandler>,
  ) {
    this.methods = methods;
  }

  static async start(methods: Record<string, MethodHandler> = {}): Promise<JsonRpcStub> {
    const server = createServer();
    const stub = new JsonRpcStub(server, methods);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        stub.inFlight++;
        stub.maxInFlight = Math.max(stub.maxInFlight, stub.inFlight);
        let finished = false;
        const finish = () => {
          if (!finished) {
            finished = true;
            stub.inFlight--;
          }
        };
        res.on('close', finish);
        void stub.handle(Buffer.concat(chunks).toString('utf8'), req.url ?? '/', req.headers, res, finish);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return stub;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** `http://127.0.0.1:PORT/` + path (a path such as `/v2/SECRET` stands in for a provider API key). */
  url(path = '/'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Every call received, across requests. */
  get calls(): StubCall[] {
    return this.requests.flatMap((r) => r.calls);
  }

  /** The JSON-RPC answer `methods` gives to one call. */
  answer(call: StubCall): unknown {
    const handler = this.methods[call.method];
    if (!handler)
      return { jsonrpc: '2.0', id: call.id, error: { code: -32601, message: 'Method not found' } };
    try {
      return { jsonrpc: '2.0', id: call.id, result: handler(call.params as never, call) };
    } catch (err) {
      if (err instanceof StubRpcError)
        return {
          jsonrpc: '2.0',
          id: call.id,
          error: {
            code: err.code,
            message: err.message,
            ...(err.data === undefined ? {} : { data: err.data }),
          },
        };
      throw err;
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(
    text: string,
    path: string,
    headers: IncomingHttpHeaders,
    res: ServerResponse,
    finish: () => void,
  ): Promise<void> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const batch = Array.isArray(parsed);
    const calls = (batch ? parsed : parsed === undefined ? [] : [parsed]) as StubCall[];
    const request: StubRequest = { index: this.requests.length, at: Date.now(), path, headers, batch, calls };
    this.requests.push(request);

    const reply = this.reply ? await this.reply(request) : undefined;
    if (reply && 'hang' in reply) return; // the socket stays open until the client gives up or close()
    const delay = reply?.delayMs ?? this.delayMs;
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    if (reply?.chunks) {
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
      // The client closing the connection mid-body is the expected end of an oversized answer.
      await pipeline(Readable.from(reply.chunks), res).catch(() => undefined);
      finish();
      return;
    }
    const body =
      reply?.body ??
      toJson(batch ? calls.map((c) => this.answer(c)) : calls[0] ? this.answer(calls[0]) : null);
    res.writeHead(reply?.status ?? 200, { 'content-type': 'application/json', ...reply?.headers });
    res.end(body, finish);
  }
}

/**
 * An endless-looking JSON-RPC answer of `totalBytes` (a string result of `x`s), in 1 MiB chunks made on
 * demand: a broken or hostile provider's oversized body, costing the stub no memory.
 */
export function* oversizedAnswer(totalBytes: number): Generator<Uint8Array> {
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  yield Buffer.from('{"jsonrpc":"2.0","id":1,"result":"');
  for (let sent = 0; sent < totalBytes; sent += chunk.length) yield chunk;
  yield Buffer.from('"}');
}

/**
 * A gzip bomb: `inflatedMiB` MiB of `x` once inflated, sent as concatenated gzip members of 1 MiB each
 * (about 1 KiB apiece on the wire). Send with `content-encoding: gzip`.
 */
export function gzipBomb(inflatedMiB: number): Uint8Array[] {
  const member = gzipSync(Buffer.alloc(1024 * 1024, 'x'), { level: 9 });
  return [gzipSync('{"jsonrpc":"2.0","id":1,"result":"'), ...Array<Buffer>(inflatedMiB).fill(member)];
}
