/**
 * The bench baseline: a bare Koa 3 hello-world (JSON body), run as its own process so it gets a core
 * of its own like the service does. Listens on 127.0.0.1:$PORT only; SIGTERM/SIGINT close it.
 */
import Koa from 'koa';

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('bare-koa: PORT must be set to a port number\n');
  process.exit(2);
}

const app = new Koa();
app.use((ctx) => {
  ctx.body = { hello: 'world' };
});

const server = app.listen(port, '127.0.0.1', () => process.stdout.write(`bare-koa listening on ${port}\n`));

const stop = () => {
  setTimeout(() => process.exit(1), 5000).unref();
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
