import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Router from '@koa/router';
import swaggerUi from 'swagger-ui-dist';

/** The files under /docs and their types. A Map: a segment such as `constructor` must find nothing. */
const ASSETS = new Map<string, string>([
  ['swagger-ui.css', 'text/css; charset=utf-8'],
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['docs-init.js', 'text/javascript; charset=utf-8'],
]);

const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>riskwatch API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/docs-init.js"></script>
</body></html>
`;

// validatorUrl: null, or Swagger UI sends the document's URL to validator.swagger.io for a badge.
const INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, validatorUrl: null });\n`;

/**
 * `/docs`: the API reference rendered by Swagger UI from bundled assets (installs may have no internet,
 * so nothing comes from a CDN), and `/openapi.json`.
 */
export function registerDocs(router: Router, document: unknown): void {
  const json = JSON.stringify(document);
  const root = swaggerUi.getAbsoluteFSPath();
  const cache = new Map<string, Buffer | string>();
  const strictCsp =
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'";

  router.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = json;
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', strictCsp);
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = PAGE;
  });
  router.get('/docs/:asset', async (ctx, next) => {
    const asset = ctx.params.asset ?? '';
    const type = ASSETS.get(asset);
    if (!type) {
      await next();
      return;
    }
    let body = cache.get(asset);
    if (body === undefined) {
      body = asset === 'docs-init.js' ? INIT : await readFile(join(root, asset));
      cache.set(asset, body);
    }
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = body;
  });
}
