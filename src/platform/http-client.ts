import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

export interface CappedResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The decoded body; undefined when it was dropped (the connection was then closed), see `dropped`. */
  text: string | undefined;
  /** Why the body was dropped: it grew past `maxBytes`, or past what the process budget had left. */
  dropped?: 'too_large' | 'over_budget';
  /** With `onTooLarge: 'truncate'`: the body grew past `maxBytes` and `text` is its first `maxBytes` bytes. */
  truncated?: boolean;
}

/**
 * Bytes of answers being read at once, by every client that shares it (one per process): a cap per
 * answer alone still lets N concurrent answers hold N times the cap.
 */
export class ByteBudget {
  private used = 0;

  constructor(readonly limitBytes: number) {}

  get inUse(): number {
    return this.used;
  }

  take(bytes: number): boolean {
    if (this.used + bytes > this.limitBytes) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used -= bytes;
  }
}

export interface CappedRequest {
  method: 'GET' | 'POST';
  body?: string;
  headers?: Record<string, string>;
  /** The whole exchange, body included. Past it the promise rejects with an error named `TimeoutError`. */
  timeoutMs: number;
  /** Largest body read, in decoded bytes. */
  maxBytes: number;
  /**
   * A body past `maxBytes`: `drop` it (the default; `text` undefined, `dropped: 'too_large'`) or
   * `truncate` it (`text` is its first `maxBytes` bytes, `truncated: true`). Either way the connection is
   * closed once the cap is reached, nothing more is read.
   */
  onTooLarge?: 'drop' | 'truncate';
  /** Aborts the exchange: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface GuardedHttpClientOptions {
  /**
   * The `lookup` of every connection this client opens (node:net's option; default `dns.lookup`), e.g. one
   * that refuses some addresses. Node does not call it for IP-literal hosts: check those before `request`.
   */
  lookup?: LookupFunction;
}

const DECODERS: ReadonlyMap<string, () => Readable & NodeJS.WritableStream> = new Map([
  ['gzip', createGunzip],
  ['x-gzip', createGunzip],
  ['deflate', createInflate],
  ['br', createBrotliDecompress],
]);

/**
 * HTTP for calls to servers riskwatch does not control (node providers, identity providers), with the
 * guards such a server needs: the body is read as a stream and dropped once more than `maxBytes` decoded
 * bytes arrived — decoded, because a small gzip body can inflate to gigabytes — redirects are returned
 * as they are, never followed, and every exchange has a deadline. Keep-alive connections per instance.
 *
 * Built on node:http rather than fetch: fetch's web streams copy every chunk, so a capped read costs about
 * twice its size in memory, where node:http hands over the socket's own buffers.
 */
export class GuardedHttpClient {
  private readonly agents: { 'http:': HttpAgent; 'https:': HttpsAgent };

  /** With a budget, the bytes a body holds while it is read are taken from it, and given back after. */
  constructor(
    private readonly budget?: ByteBudget,
    options: GuardedHttpClientOptions = {},
  ) {
    const lookup = options.lookup ? { lookup: options.lookup } : {};
    this.agents = {
      'http:': new HttpAgent({ keepAlive: true, ...lookup }),
      'https:': new HttpsAgent({ keepAlive: true, ...lookup }),
    };
  }

  request(url: string, options: CappedRequest): Promise<CappedResponse> {
    const target = new URL(url);
    const isHttps = target.protocol === 'https:';
    const send = isHttps ? httpsRequest : httpRequest;
    const truncate = options.onTooLarge === 'truncate';
    const { signal } = options;
    return new Promise<CappedResponse>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      let settled = false;
      let held = 0;
      const finish = (err: Error | undefined, value?: CappedResponse) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.budget?.give(held);
        if (err) reject(err);
        else resolve(value!);
      };
      const onAbort = () => {
        const err = signal!.reason as Error;
        finish(err);
        req.destroy(err);
      };
      const req = send(
        target,
        {
          method: options.method,
          agent: this.agents[isHttps ? 'https:' : 'http:'],
          headers: {
            'accept-encoding': 'gzip, deflate, br',
            ...options.headers,
            ...(options.body === undefined ? {} : { 'content-length': Buffer.byteLength(options.body) }),
          },
        },
        (res) => {
          const encoding = String(res.headers['content-encoding'] ?? 'identity').toLowerCase();
          const decoder = DECODERS.get(encoding);
          if (!decoder && encoding !== 'identity') {
            req.destroy();
            return finish(
              Object.assign(new Error(`unsupported content-encoding ${encoding}`), { code: 'EENCODING' }),
            );
          }
          const declared = Number(res.headers['content-length'] ?? 0);
          const body: Readable = decoder ? res.pipe(decoder()) : res;
          const answer = (text: string | undefined, dropped?: CappedResponse['dropped'], truncated?: true) =>
            finish(undefined, {
              status: res.statusCode ?? 0,
              headers: res.headers,
              text,
              dropped,
              ...(truncated ? { truncated } : {}),
            });
          if (!decoder && !truncate && declared > options.maxBytes) {
            req.destroy();
            return answer(undefined, 'too_large');
          }
          const chunks: Buffer[] = [];
          let size = 0;
          body.on('data', (chunk: Buffer) => {
            if (truncate && size + chunk.length > options.maxBytes) {
              const rest = chunk.subarray(0, options.maxBytes - size);
              if (this.budget && !this.budget.take(rest.length)) {
                chunks.length = 0;
                req.destroy();
                body.destroy();
                return answer(undefined, 'over_budget');
              }
              held += rest.length;
              chunks.push(rest);
              size += rest.length;
              req.destroy();
              body.destroy();
              return answer(Buffer.concat(chunks, size).toString('utf8'), undefined, true);
            }
            size += chunk.length;
            const dropped =
              size > options.maxBytes
                ? 'too_large'
                : this.budget && !this.budget.take(chunk.length)
                  ? 'over_budget'
                  : undefined;
            if (dropped) {
              chunks.length = 0;
              req.destroy();
              body.destroy();
              return answer(undefined, dropped);
            }
            held += chunk.length;
            chunks.push(chunk);
          });
          body.on('end', () => answer(Buffer.concat(chunks, size).toString('utf8')));
          res.on('close', () => {
            if (!res.complete)
              finish(Object.assign(new Error('connection closed mid-answer'), { code: 'ECONNRESET' }));
          });
          body.on('error', (err) => finish(err));
          res.on('error', (err) => finish(err));
        },
      );
      const timer = setTimeout(() => {
        const err = Object.assign(new Error(`no answer within ${options.timeoutMs} ms`), {
          name: 'TimeoutError',
        });
        finish(err);
        req.destroy(err);
      }, options.timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (err) => finish(err));
      req.end(options.body);
    });
  }

  /** Closes idle keep-alive connections (at shutdown). */
  close(): void {
    this.agents['http:'].destroy();
    this.agents['https:'].destroy();
  }
}
