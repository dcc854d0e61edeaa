/**
 * The bench baseline: a bare Koa 3 hello-world (JSON body), run as its own process so it gets a core
 * of its own like the service does. Listens on 127.0.0.1:$PORT only; SIGTERM/SIGINT close it.
 *
 * `POST /json` is the floor of the preflight's request shape: the same JSON body read by koa-body (the
 * service's parser, same options) and a JSON answer of the same size, with nothing else — no auth, limits,
 * validation, metrics or work. It tells what Koa and the body parser alone cost for that request.
 */
import Koa from 'koa';
import { koaBody } from 'koa-body';

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('bare-koa: PORT must be set to a port number\n');
  process.exit(2);
}

const app = new Koa();
const parseJson = koaBody({
  json: true,
  jsonStrict: true,
  jsonLimit: '64kb',
  multipart: false,
  urlencoded: false,
  text: false,
});
app.use(async (ctx, next) => {
  if (ctx.method !== 'POST' || ctx.path !== '/json') {
    ctx.body = { hello: 'world' };
    return;
  }
  await parseJson(ctx, next);
  const { target, intent } = ctx.request.body as { target?: unknown; intent?: unknown };
  // A preflight answer's shape and size (about 340 bytes).
  ctx.body = {
    decision: 'allow',
    target,
    intent,
    chain: 'solana',
    network: 'mainnet',
    risk_level: 'low',
    risk_score: 0,
    complete: true,
    reasons: [],
    policy: { name: 'default', fail_mode: 'warn', deadline_ms: 1500, allowlisted: false },
    checked_at: new Date().toISOString(),
    cached: true,
  };
});

const server = app.listen(port, '127.0.0.1', () => process.stdout.write(`bare-koa listening on ${port}\n`));

const stop = () => {
  setTimeout(() => process.exit(1), 5000).unref();
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
