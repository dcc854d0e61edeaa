import { createHash } from 'node:crypto';
import type { RedisClient } from '../platform/redis.js';
import {
  CircuitBreaker,
  RedisRateGate,
  Semaphore,
  TokenBucket,
  unlimited,
  type CircuitState,
  type RateGate,
  type RateWaitObserver,
} from './limits.js';

/** Tuning of the providers of one network (`chains.defaults`, overridden per network). */
export interface ProviderTuning {
  deadlineMs: number;
  timeoutMs: number;
  retries: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** JSON-RPC calls per second per URL; 0 = no limit. */
  ratePerS: number;
  concurrency: number;
  batchMax: number;
  circuitFailures: number;
  /** First cool-down of an open circuit; it doubles while the provider keeps failing, up to `circuitCooldownMs`. */
  circuitCooldownMinMs: number;
  circuitCooldownMs: number;
  /** Largest answer read, in decoded bytes (after gzip/br): past it the attempt fails. */
  maxResponseBytes: number;
  /** Longest a provider's `Retry-After` keeps a URL idle. */
  retryAfterMaxMs: number;
}

/** One provider URL: its name, idle-until (Retry-After), circuit, concurrency slots and rate gate. */
export class Endpoint {
  blockedUntil = 0;
  readonly circuit: CircuitBreaker;
  readonly slots: Semaphore;

  constructor(
    readonly name: string,
    readonly url: string,
    readonly rate: RateGate,
    concurrency: number,
    circuit: { failures: number; cooldownMinMs: number; cooldownMaxMs: number },
    onCircuit: (state: CircuitState) => void,
  ) {
    this.slots = new Semaphore(concurrency);
    this.circuit = new CircuitBreaker(circuit.failures, circuit, onCircuit);
  }
}

/**
 * A provider URL's rate gate: none, a local token bucket, or a per-second window shared through Redis;
 * `onWait` is told of every admission that had to wait.
 */
export function rateGate(
  options: { ratePerS: number; redis?: RedisClient; redisKeyPrefix?: string },
  url: string,
  onWait?: RateWaitObserver,
): RateGate {
  if (options.ratePerS <= 0) return unlimited;
  if (!options.redis) return new TokenBucket(options.ratePerS, onWait);
  // The budget belongs to the URL (its API key), so the key is derived from it, hashed: never stored.
  const urlHash = createHash('sha256').update(url).digest('hex').slice(0, 16);
  return new RedisRateGate(
    options.redis,
    `${options.redisKeyPrefix ?? ''}rpc-rate`,
    urlHash,
    options.ratePerS,
    onWait,
  );
}
