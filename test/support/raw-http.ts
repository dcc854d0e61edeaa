import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  /** Lower-cased names; a repeated header keeps its values joined by ", ". */
  headers: Record<string, string>;
  body: string;
}

/**
 * One HTTP/1.1 exchange over a plain TCP socket, for what `fetch` refuses or rewrites: arbitrary methods,
 * un-normalised paths (`/../`), raw bytes in headers, malformed request lines, lying Content-Length.
 * Reads until the server closes (send `Connection: close`), skips 1xx interim responses, decodes chunked
 * bodies. `status` is 0 when the server closed without any response.
 */
export function rawRequest(
  port: number,
  request: string | Buffer,
  opts: { timeoutMs?: number; host?: string } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, opts.host ?? '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        resolve(parseResponse(Buffer.concat(chunks)));
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    };
    const timer = setTimeout(() => {
      socket.destroy();
      if (!settled) {
        settled = true;
        reject(new Error(`no complete response in ${opts.timeoutMs ?? 10_000} ms`));
      }
    }, opts.timeoutMs ?? 10_000);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('end', finish);
    socket.on('close', finish);
    // A server that answers before reading the whole upload may reset the socket: keep what came back.
    socket.on('error', () => finish());
    socket.write(request);
  });
}

function parseResponse(data: Buffer): RawResponse {
  let rest = data;
  for (;;) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) return { status: 0, headers: {}, body: rest.toString('latin1') };
    const lines = rest.subarray(0, headEnd).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      if (i < 0) continue;
      const name = line.slice(0, i).trim().toLowerCase();
      const value = line.slice(i + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    rest = rest.subarray(headEnd + 4);
    if (status >= 100 && status < 200) continue;
    let body: Buffer = rest;
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) body = dechunk(rest);
    else if (headers['content-length'] !== undefined)
      body = rest.subarray(0, Number(headers['content-length']));
    return { status, headers, body: body.toString('utf8') };
  }
}

function dechunk(data: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    out.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(out);
}
