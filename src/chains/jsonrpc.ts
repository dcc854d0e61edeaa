import type { RedisClient } from '../platform/redis.js';
import type { Registry } from 'prom-client';
import type { AppError } from '../platform/errors.js';
import { GuardedHttpClient, type ByteBudget } from '../platform/http-client.js';
import type { Logger } from '../platform/logger.js';
import type { ProviderTuning } from './jsonrpc-endpoint.js';
import { Failover, providerUnavailable, type PendingCall } from './jsonrpc-failover.js';
import { canonicalJson, type Exchange } from './jsonrpc-wire.js';
import type { CircuitState } from './limits.js';
import { RpcMetrics } from './rpc-metrics.js';

export { RpcError } from './jsonrpc-wire.js';
export type { ProviderTuning } from './jsonrpc-endpoint.js';

export interface JsonRpcClientOptions extends ProviderTuning {
  /** `solana/mainnet`: names the providers (`solana/mainnet#0`, …) in messages, logs and metrics. */
  network: string;
  /** In failover order. Never logged, never a label. */
  urls: readonly string[];
  /** Methods that get their own metrics label; any other is counted as `other`. */
  knownMethods?: readonly string[];
  /** prom-client registry that receives the `riskwatch_rpc_*` metrics. */
  metrics?: Registry;
  logger?: Logger;
  /** Bytes of answers all clients of the process may hold at once while reading them. */
  responseBudget?: ByteBudget;
  /** With a Redis client, `ratePerS` is shared by every process using the same Redis and key prefix. */
  redis?: RedisClient;
  redisKeyPrefix?: string;
}

export interface CallOptions {
  /** Budget of this call (all attempts included); default the network's `deadlineMs`. */
  deadlineMs?: number;
  /** Abandons the wait for this caller (the shared upstream call may still finish for others). */
  signal?: AbortSignal;
  /**
   * Calls of different groups never share an HTTP request, even when issued in the same tick (they still
   * go out in parallel). E.g. history reads, which providers serve from slower archive storage and may
   * fail on their own, kept apart from state reads so that one failing does not take the other down.
   */
  batchGroup?: string;
}

export interface ProviderStatus {
  provider: string;
  circuit: CircuitState;
}

/**
 * JSON-RPC 2.0 over HTTP (Node's fetch: undici, keep-alive) to the provider URLs of one network.
 *
 * - Calls issued in the same tick go out together as batch arrays of at most `batchMax` (and at most
 *   `ratePerS`) calls, one batch per `batchGroup`; a lone call goes as a plain request object.
 * - Identical calls in flight (method + canonical params) share one upstream call (single-flight).
 * - Every call has a deadline; each HTTP attempt a timeout within what is left of it.
 * - Transient failures (network, timeout, HTTP error status, garbled body) are retried on the next
 *   healthy URL, then with jittered exponential backoff; a `Retry-After` (capped at `retryAfterMaxMs`)
 *   keeps the URL idle until then.
 * - Answers are read as a stream and abandoned past `maxResponseBytes` decoded bytes (a broken or hostile
 *   provider, or a gzip bomb, cannot exhaust memory); redirects are never followed.
 * - Per URL: a concurrency cap, a rate limit (Redis-shared when a client is given) and a circuit breaker
 *   whose cool-down starts short and doubles while the provider keeps failing.
 * - Failures surface as `AppError('provider_unavailable')`; JSON-RPC error objects as `RpcError`.
 */
export class JsonRpcClient {
  readonly network: string;
  private readonly failover: Failover;
  private readonly tuning: ProviderTuning;
  private readonly logger?: Logger;
  private readonly inflight = new Map<string, Promise<unknown>>();
  private readonly http: GuardedHttpClient;
  private queue: PendingCall[] = [];
  private flushScheduled = false;
  private nextId = 1;

  constructor(options: JsonRpcClientOptions) {
    if (options.urls.length === 0) throw new Error(`${options.network}: no RPC URL`);
    this.network = options.network;
    this.tuning = options;
    this.logger = options.logger?.child({ network: options.network });
    this.http = new GuardedHttpClient(options.responseBudget);
    this.failover = new Failover(options, {
      http: this.http,
      known: new Set(options.knownMethods ?? []),
      metrics: options.metrics ? RpcMetrics.for(options.metrics) : undefined,
      logger: this.logger,
    });
  }

  /** Closes the idle keep-alive connections to the providers (at shutdown). */
  close(): void {
    this.http.close();
  }

  /** Provider names in failover order (`solana/mainnet#0`, …). */
  get providers(): string[] {
    return this.failover.endpoints.map((e) => e.name);
  }

  status(): ProviderStatus[] {
    return this.failover.endpoints.map((e) => ({ provider: e.name, circuit: e.circuit.state }));
  }

  /**
   * One JSON-RPC call; batched with the calls of the same tick and shared with identical ones in flight
   * (a caller that joins a shared call also shares its outcome, which may come at the first caller's
   * earlier deadline). Resolves with the node's `result`; rejects with RpcError (the node's error
   * object) or AppError('provider_unavailable').
   */
  call<T = unknown>(method: string, params: unknown = [], options: CallOptions = {}): Promise<T> {
    const deadlineMs = options.deadlineMs ?? this.tuning.deadlineMs;
    const deadlineAt = Date.now() + deadlineMs;
    const key = `${method}:${canonicalJson(params)}`;
    let flight = this.inflight.get(key);
    const joined = flight !== undefined;
    if (!flight) {
      flight = this.enqueue(method, params, deadlineAt, deadlineMs, options.batchGroup);
      const started = flight;
      const forget = () => {
        if (this.inflight.get(key) === started) this.inflight.delete(key);
      };
      started.then(forget, forget);
      this.inflight.set(key, started);
    }
    if (!joined && !options.signal) return flight as Promise<T>;
    return this.forCaller(flight as Promise<T>, method, deadlineAt, deadlineMs, options.signal);
  }

  /**
   * One call to one provider URL, bypassing failover, retries and the circuit (health checks): how that
   * URL answers right now. Rate and concurrency limits still apply.
   */
  async probe<T = unknown>(
    provider: string,
    method: string,
    params: unknown = [],
    timeoutMs = this.tuning.timeoutMs,
  ): Promise<{ ok: true; result: T; latencyMs: number } | { ok: false; error: string; latencyMs: number }> {
    const endpoint = this.failover.endpoints.find((e) => e.name === provider);
    if (!endpoint) throw new Error(`unknown provider ${provider}`);
    const started = performance.now();
    const latencyMs = () => Math.round(performance.now() - started);
    const deadlineAt = Date.now() + timeoutMs;
    const call: PendingCall = {
      id: this.nextId++,
      method,
      params,
      deadlineAt,
      settled: false,
      resolve: () => undefined,
      reject: () => undefined,
    };
    if (!(await this.failover.admit(endpoint, 1, deadlineAt)))
      return { ok: false, error: 'no rate or concurrency slot in time', latencyMs: latencyMs() };
    let exchange: Exchange;
    try {
      exchange = await this.failover.exchange(endpoint, [call], deadlineAt);
    } finally {
      endpoint.slots.release();
    }
    if (!exchange.ok) return { ok: false, error: exchange.failure.reason, latencyMs: latencyMs() };
    const response = exchange.responses.get(call.id);
    if (response?.error)
      return { ok: false, error: `RPC error ${response.error.code}`, latencyMs: latencyMs() };
    return { ok: true, result: response?.result as T, latencyMs: latencyMs() };
  }

  private enqueue(
    method: string,
    params: unknown,
    deadlineAt: number,
    deadlineMs: number,
    group?: string,
  ): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const call: PendingCall = {
        id: this.nextId++,
        method,
        params,
        group,
        deadlineAt,
        settled: false,
        resolve: (value) => {
          if (call.settled) return;
          call.settled = true;
          clearTimeout(timer);
          resolve(value);
        },
        reject: (err) => {
          if (call.settled) return;
          call.settled = true;
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer = setTimeout(() => call.reject(this.deadlineError(method, deadlineMs, call)), deadlineMs);
      this.queue.push(call);
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** A caller's own view of a (possibly shared) flight: its own deadline and abort signal. */
  private forCaller<T>(
    flight: Promise<T>,
    method: string,
    deadlineAt: number,
    deadlineMs: number,
    signal?: AbortSignal,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        done();
        reject(providerUnavailable(this.network, `the ${method} call was abandoned by its caller`));
      };
      const timer = setTimeout(
        () => {
          done();
          reject(this.deadlineError(method, deadlineMs));
        },
        Math.max(0, deadlineAt - Date.now()),
      );
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      flight.then(
        (value) => {
          done();
          resolve(value);
        },
        (err: unknown) => {
          done();
          reject(err instanceof Error ? err : new Error(String(err)));
        },
      );
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const calls = this.queue;
    this.queue = [];
    const size = Math.max(1, Math.min(this.tuning.batchMax, this.tuning.ratePerS || Infinity));
    const groups = new Map<string | undefined, PendingCall[]>();
    for (const call of calls) {
      const group = groups.get(call.group);
      if (group) group.push(call);
      else groups.set(call.group, [call]);
    }
    const batches: PendingCall[][] = [];
    for (const group of groups.values())
      for (let i = 0; i < group.length; i += size) batches.push(group.slice(i, i + size));
    for (const batch of batches) {
      this.failover.run(batch).catch((err: unknown) => {
        this.logger?.error({ err: { message: (err as Error).message } }, 'rpc batch runner failed');
        for (const call of batch)
          call.reject(providerUnavailable(this.network, 'internal error in the RPC client'));
      });
    }
  }

  private deadlineError(method: string, deadlineMs: number, call?: PendingCall): AppError {
    const last = call?.lastFailure ? ` (last failure: ${call.lastFailure.reason})` : '';
    return providerUnavailable(
      this.network,
      `${method} got no answer within its ${deadlineMs} ms deadline${last}`,
    );
  }
}
