import type { RedisClient } from '../platform/redis.js';
import { AppError } from '../platform/errors.js';
import type { GuardedHttpClient } from '../platform/http-client.js';
import type { Logger } from '../platform/logger.js';
import { Endpoint, rateGate, type ProviderTuning } from './jsonrpc-endpoint.js';
import { RpcError, sendJsonRpc, type Exchange, type Failure } from './jsonrpc-wire.js';
import { sleep, type CircuitState } from './limits.js';
import type { CallOutcome, RpcMetrics } from './rpc-metrics.js';

/**
 * How a batch of calls reaches the provider URLs of one network (JsonRpcClient does the batching and
 * single-flight above it): failover across URLs, retries with jittered backoff, Retry-After, the circuit
 * breakers, rate and concurrency admission, and the metrics of each HTTP exchange.
 */

/** One call waiting for its answer: settled once, by its answer, its failure or its deadline. */
export interface PendingCall {
  id: number;
  method: string;
  params: unknown;
  group?: string;
  deadlineAt: number;
  settled: boolean;
  lastFailure?: Failure;
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/** What the failover reads of the client's options (JsonRpcClientOptions is one). */
export interface FailoverOptions extends ProviderTuning {
  network: string;
  urls: readonly string[];
  redis?: RedisClient;
  redisKeyPrefix?: string;
}

/** The parts of the client the failover shares. */
export interface FailoverDeps {
  http: GuardedHttpClient;
  /** Methods that get their own metrics label; any other is counted as `other`. */
  known: ReadonlySet<string>;
  metrics?: RpcMetrics;
  logger?: Logger;
}

/** The provider URLs of one network, in failover order, and the attempts of a batch over them. */
export class Failover {
  readonly endpoints: Endpoint[];
  private readonly network: string;
  private readonly tuning: ProviderTuning;
  private readonly http: GuardedHttpClient;
  private readonly known: ReadonlySet<string>;
  private readonly metrics?: RpcMetrics;
  private readonly logger?: Logger;

  constructor(options: FailoverOptions, deps: FailoverDeps) {
    this.network = options.network;
    this.tuning = options;
    this.http = deps.http;
    this.known = deps.known;
    this.metrics = deps.metrics;
    this.logger = deps.logger;
    // Rate waits are counted per network (its URLs together), shown at 0 until the first one.
    const onWait = this.metrics?.rateWaitObserver(options.network, 'provider');
    this.endpoints = options.urls.map((url, index) => {
      const name = `${options.network}#${index}`;
      this.metrics?.circuitOpen.set({ provider: name }, 0);
      return new Endpoint(
        name,
        url,
        rateGate(options, url, onWait),
        options.concurrency,
        {
          failures: options.circuitFailures,
          // Set on their own, a first cool-down above the longest one means a fixed cool-down.
          cooldownMinMs: Math.min(options.circuitCooldownMinMs, options.circuitCooldownMs),
          cooldownMaxMs: options.circuitCooldownMs,
        },
        (state) => this.onCircuit(name, state),
      );
    });
  }

  /** Attempts of one batch until every call is answered, failed, or past its deadline. */
  async run(calls: PendingCall[]): Promise<void> {
    const tried = new Set<Endpoint>();
    let attempts = 0;
    let last: Failure | undefined;
    for (;;) {
      let pending = calls.filter((c) => !c.settled);
      if (pending.length === 0) return;
      const deadlineAt = Math.max(...pending.map((c) => c.deadlineAt));

      if (attempts > 0 && !last?.retryAfterMs && !this.hasUntried(tried)) {
        const cap = Math.min(this.tuning.backoffMaxMs, this.tuning.backoffBaseMs * 2 ** (attempts - 1));
        const delay = Math.random() * cap;
        if (Date.now() + delay >= deadlineAt) return this.fail(pending, last);
        await sleep(delay);
      }

      const pick = this.pick(tried);
      if (!pick.endpoint) {
        if (pick.retryAt === undefined || pick.retryAt >= deadlineAt)
          return this.fail(pending, last, pick.why);
        await sleep(pick.retryAt - Date.now());
        continue;
      }
      const endpoint = pick.endpoint;
      if (!(await this.admit(endpoint, pending.length, deadlineAt))) {
        endpoint.circuit.release();
        return this.fail(
          calls.filter((c) => !c.settled),
          last ?? {
            outcome: 'timeout',
            reason: 'no rate-limit or concurrency slot before the deadline',
            countsForCircuit: false,
          },
        );
      }
      let exchange: Exchange;
      try {
        pending = calls.filter((c) => !c.settled);
        if (pending.length === 0) {
          endpoint.circuit.release();
          return;
        }
        exchange = await this.exchange(endpoint, pending, deadlineAt);
      } finally {
        endpoint.slots.release();
      }
      attempts++;

      if (exchange.ok) {
        const missing: PendingCall[] = [];
        for (const call of pending) {
          const response = exchange.responses.get(call.id);
          if (!response) missing.push(call);
          else if (response.error) {
            const { code, message, data } = response.error;
            call.reject(new RpcError(call.method, code, message, data, endpoint.name));
          } else call.resolve(response.result);
        }
        if (missing.length === 0) {
          endpoint.circuit.success();
          return;
        }
        last = {
          outcome: 'bad_response',
          reason: 'the batch answer lacked some calls',
          countsForCircuit: true,
        };
      } else {
        last = exchange.failure;
      }

      tried.add(endpoint);
      if (last.countsForCircuit) endpoint.circuit.failure(Date.now());
      else endpoint.circuit.release();
      if (last.retryAfterMs) endpoint.blockedUntil = Date.now() + last.retryAfterMs;
      for (const call of pending) call.lastFailure = last;
      this.logger?.[last.final ? 'warn' : 'debug'](
        {
          provider: endpoint.name,
          outcome: last.outcome,
          reason: last.reason,
          calls: pending.length,
          attempts,
        },
        'rpc attempt failed',
      );
      if (attempts > this.tuning.retries || (last.final && !this.hasUntried(tried)))
        return this.fail(pending, last);
    }
  }

  private hasUntried(tried: Set<Endpoint>): boolean {
    const now = Date.now();
    return this.endpoints.some(
      (e) => !tried.has(e) && e.blockedUntil <= now && e.circuit.nextPassAt(now) <= now,
    );
  }

  /** The first usable URL, untried ones first; else when one will be usable. */
  private pick(tried: Set<Endpoint>): { endpoint?: Endpoint; retryAt?: number; why?: string } {
    const now = Date.now();
    const ready = (e: Endpoint) => e.blockedUntil <= now && e.circuit.nextPassAt(now) <= now;
    for (const untriedOnly of [true, false]) {
      for (const e of this.endpoints) {
        if (untriedOnly && tried.has(e)) continue;
        if (ready(e) && e.circuit.tryPass(now)) return { endpoint: e };
      }
    }
    // An open circuit fails fast; only a provider's own Retry-After is worth waiting for.
    const waitable = this.endpoints.filter((e) => e.circuit.nextPassAt(now) <= now);
    const retryAt = Math.min(...waitable.map((e) => e.blockedUntil));
    return {
      retryAt: Number.isFinite(retryAt) ? retryAt : undefined,
      why:
        waitable.length === 0
          ? 'circuit open on every provider URL'
          : 'every provider URL asked to wait (Retry-After)',
    };
  }

  async admit(endpoint: Endpoint, calls: number, deadlineAt: number): Promise<boolean> {
    if (!(await endpoint.slots.acquire(deadlineAt))) return false;
    let admitted: boolean;
    try {
      admitted = await endpoint.rate.take(calls, deadlineAt);
    } catch (err) {
      this.logger?.warn(
        { err: { message: (err as Error).message } },
        'rpc rate limiter failed; call let through',
      );
      admitted = true;
    }
    if (!admitted) endpoint.slots.release();
    return admitted;
  }

  /** One HTTP request carrying `calls`; classifies the outcome and records metrics per call. */
  async exchange(endpoint: Endpoint, calls: PendingCall[], deadlineAt: number): Promise<Exchange> {
    const timeoutMs = Math.max(1, Math.min(this.tuning.timeoutMs, deadlineAt - Date.now()));
    const messages = calls.map((c) => ({ jsonrpc: '2.0', id: c.id, method: c.method, params: c.params }));
    const started = performance.now();
    const result = await sendJsonRpc(this.http, endpoint.url, calls.length === 1 ? messages[0] : messages, {
      timeoutMs,
      maxResponseBytes: this.tuning.maxResponseBytes,
      retryAfterMaxMs: this.tuning.retryAfterMaxMs,
    });
    const seconds = (performance.now() - started) / 1000;
    if (this.metrics) {
      for (const call of calls) {
        const method = this.known.has(call.method) ? call.method : 'other';
        const response = result.ok ? result.responses.get(call.id) : undefined;
        const outcome: CallOutcome = !result.ok
          ? result.failure.outcome
          : !response
            ? 'bad_response'
            : response.error
              ? 'rpc_error'
              : 'ok';
        this.metrics.calls.inc({ provider: endpoint.name, method, outcome });
        this.metrics.duration.observe({ provider: endpoint.name, method }, seconds);
      }
    }
    return result;
  }

  private fail(calls: PendingCall[], last?: Failure, why?: string): void {
    const reason = last?.reason ?? why ?? 'no provider URL available';
    for (const call of calls) {
      call.reject(
        providerUnavailable(
          this.network,
          `${call.method} failed: ${why && last ? `${why}; last failure: ` : ''}${reason}`,
          last,
        ),
      );
    }
  }

  private onCircuit(provider: string, state: CircuitState): void {
    this.metrics?.circuitOpen.set({ provider }, state === 'closed' ? 0 : 1);
    if (state === 'open') this.logger?.warn({ provider }, 'rpc provider circuit opened');
    else if (state === 'closed') this.logger?.info({ provider }, 'rpc provider circuit closed');
  }
}

/** `provider_unavailable` for a call of `network`, with the provider's Retry-After when it gave one. */
export function providerUnavailable(network: string, detail: string, last?: Failure): AppError {
  const retryAfterS = last?.retryAfterMs ? Math.ceil(last.retryAfterMs / 1000) : undefined;
  return new AppError(
    'provider_unavailable',
    `The ${network} node provider is unavailable: ${detail}.`,
    retryAfterS ? { retryAfterS } : {},
  );
}
