import { createServer, type Server } from 'node:http';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** One registry per process: default process/Node metrics, HTTP metrics, build info. */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  /** Label children per (method, route, status): bounded by route templates, resolved once, not per request. */
  private readonly httpChildren = new Map<
    string,
    { count: { inc(): void }; duration: { observe(v: number): void } }
  >();

  constructor(build: { version: string; releaseId: string; role: string }) {
    collectDefaultMetrics({ register: this.registry });
    this.httpRequests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests served, by route template, method and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.httpDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration in seconds, by route template, method and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [this.registry],
    });
    new Gauge({
      name: 'riskwatch_build_info',
      help: 'Build information; the value is always 1.',
      labelNames: ['version', 'release_id', 'role', 'node_version'],
      registers: [this.registry],
    }).set(
      {
        version: build.version,
        release_id: build.releaseId,
        role: build.role,
        node_version: process.version,
      },
      1,
    );
  }

  observeHttp(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let child = this.httpChildren.get(key);
    if (!child) {
      const labels = { method, route, status: String(status) };
      child = { count: this.httpRequests.labels(labels), duration: this.httpDuration.labels(labels) };
      this.httpChildren.set(key, child);
    }
    child.count.inc();
    child.duration.observe(seconds);
  }

  /**
   * In a child of the cluster supervisor (src/cluster.ts): the supervisor serves this registry beside the
   * other children's, every series labelled `process` with the child's name (`api-0`, `worker`). Per
   * process, not summed: a replaced child restarts its own counters at 0, which Prometheus reads as the
   * reset it is, where a sum would go backwards.
   */
  reportToSupervisor(name: string): void {
    this.registry.setDefaultLabels({ process: name });
    AggregatorRegistry.setRegistries([this.registry]);
    // Constructing one is what installs prom-client's listener for the supervisor's requests.
    new AggregatorRegistry();
  }

  /** Serves /metrics on its own port, so scraping never competes with (or is exposed as) the public API. */
  listen(host: string, port: number): Promise<Server> {
    return serveMetrics(() => this.registry.metrics(), this.registry.contentType, host, port);
  }
}

/**
 * A listener of its own for `GET /metrics`, answered with `exposition()` (a 503 when it fails): the
 * process's registry, or the cluster supervisor's sum of its children (src/cluster.ts).
 */
export function serveMetrics(
  exposition: () => Promise<string>,
  contentType: string,
  host: string,
  port: number,
): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url?.split('?')[0] === '/metrics') {
      exposition()
        .then((text) => {
          res.writeHead(200, { 'Content-Type': contentType });
          res.end(text);
        })
        .catch(() => {
          res.writeHead(503, { 'Content-Type': 'text/plain' }).end('metrics unavailable\n');
        });
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('see /metrics\n');
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}
