/**
 * The part of autocannon's programmatic API the bench uses (the package ships no types, and
 * @types/autocannon would be one more dependency for a dev-only script).
 */
declare module 'autocannon' {
  /** A histogram summary: latency in ms, requests and throughput per second sample. */
  export interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    total?: number;
    p50: number;
    p90: number;
    p97_5: number;
    p99: number;
  }

  export interface Options {
    url: string;
    method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';
    headers?: Record<string, string>;
    body?: string | Buffer;
    connections?: number;
    pipelining?: number;
    /** Seconds. */
    duration?: number;
    /** Seconds per request before it counts as a timeout. */
    timeout?: number;
    title?: string;
  }

  export interface Result {
    title?: string;
    url: string;
    /** Seconds. */
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    resets: number;
    mismatches: number;
    '2xx': number;
    statusCodeStats: Record<string, { count: number }>;
    /** Milliseconds; only 2xx responses are recorded. */
    latency: Histogram;
    requests: Histogram & { sent: number };
    throughput: Histogram;
  }

  export interface Instance extends PromiseLike<Result> {
    stop: () => void;
  }

  export default function autocannon(options: Options): Instance;
}
