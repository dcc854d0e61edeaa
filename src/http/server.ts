import {
  createServer,
  STATUS_CODES,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type Koa from 'koa';
import { newId } from '../platform/ids.js';
import { problemBody } from './problem.js';

/**
 * A shutting-down server keeps accepting until no connection has arrived for SHUTDOWN_QUIET_MS (the accept
 * backlog is drained and those requests are read), at most SHUTDOWN_GRACE_MAX_MS: closing the listener
 * earlier resets connections the kernel already accepted, with their requests unanswered.
 */
const SHUTDOWN_QUIET_MS = 200;
const SHUTDOWN_GRACE_MAX_MS = 2000;

export interface HttpServer {
  server: Server;
  /** Lets requests on their way arrive, stops accepting, and resolves when every response has been sent. */
  close(): Promise<void>;
}

/**
 * Serves `app` on `host`:`port` and resolves once listening. Malformed HTTP, which never reaches Koa, is
 * answered as problem+json too; while `shuttingDown()`, every response closes its connection.
 */
export async function serve(
  app: Koa,
  {
    host,
    port,
    shuttingDown,
    sharedPort = false,
  }: {
    host: string;
    port: number;
    shuttingDown: () => boolean;
    /**
     * One of several API processes on this port (src/cluster.ts): each binds it itself with SO_REUSEPORT
     * (`exclusive`: not through the cluster's primary), and the kernel spreads connections over them.
     */
    sharedPort?: boolean;
  },
): Promise<HttpServer> {
  // requireHostHeader off: a missing Host is refused by the app as problem+json (see errorMiddleware).
  const server = createServer({ requireHostHeader: false }, app.callback());
  server.listen(sharedPort ? { port, host, reusePort: true, exclusive: true } : { port, host });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 30_000;
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || err.code === 'ECONNRESET') return socket.destroy();
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const requestId = newId('req');
    const body = JSON.stringify(
      problemBody('invalid_request', 'The HTTP request could not be parsed.', requestId, { status }),
    );
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\nX-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  // An `Expect` other than 100-continue: Node would answer a bare 417; the expectation is ignored instead
  // (RFC 9110 makes the 417 optional) and the request is served like any other.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) =>
    server.emit('request', req, res),
  );
  await new Promise<void>((resolve) => server.once('listening', resolve));

  let lastConnectionAt = 0;
  server.on('connection', () => {
    lastConnectionAt = Date.now();
  });
  // While shutting down, every response closes its connection: keep-alive clients move on.
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    if (shuttingDown() && !res.headersSent) res.setHeader('Connection', 'close');
  });

  const close = async () => {
    // close() also destroys every connection not yet inside a request: let requests on their way arrive.
    const graceUntil = Date.now() + SHUTDOWN_GRACE_MAX_MS;
    while (Date.now() < graceUntil && Date.now() - lastConnectionAt < SHUTDOWN_QUIET_MS)
      await new Promise((r) => setTimeout(r, 50));
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Connections whose in-flight response ends after close() would otherwise idle until keepAliveTimeout.
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      server.once('close', () => clearInterval(sweep));
    });
  };
  return { server, close };
}
