import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/*
 * A webhook consumer as it should be written: every request verified with the standardwebhooks package
 * (signature and timestamp tolerance) and de-duplicated on `webhook-id`. A test can make it misbehave
 * (`behave`), take it down (`close`) and bring it back on the same port (`reopen`).
 */

export type Behaviour = (req: IncomingMessage, res: ServerResponse) => void;

export interface Receiver {
  url: string;
  port: number;
  /** Verified deliveries, first receipt of each webhook-id, in arrival order. */
  received: { id: string; type: string; data: Record<string, unknown> }[];
  /** Every request that reached the receiver (retries included). */
  hits: number;
  behave(b: Behaviour | undefined): void;
  close(): Promise<void>;
  reopen(): Promise<void>;
}

export async function startReceiver(secret: string, port = 0): Promise<Receiver> {
  const webhook = new Webhook(secret);
  let behaviour: Behaviour | undefined;
  const r: Receiver = {
    url: '',
    port,
    received: [],
    hits: 0,
    behave: (b) => (behaviour = b),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    reopen: async () => {
      server = make();
      await listen();
    },
  };
  const make = () =>
    createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        r.hits++;
        if (behaviour) return behaviour(req, res);
        try {
          const payload = webhook.verify(body, req.headers as Record<string, string>) as {
            type: string;
            data: Record<string, unknown>;
          };
          const id = req.headers['webhook-id'] as string;
          if (!r.received.some((x) => x.id === id))
            r.received.push({ id, type: payload.type, data: payload.data });
          res.writeHead(204).end();
        } catch (err) {
          res.writeHead(400).end((err as Error).message);
        }
      });
    });
  let server: Server = make();
  const listen = () =>
    new Promise<void>((resolve) =>
      server.listen(r.port, '127.0.0.1', () => {
        r.port = (server.address() as AddressInfo).port;
        r.url = `http://127.0.0.1:${r.port}/hooks`;
        resolve();
      }),
    );
  await listen();
  return r;
}
