import { fileURLToPath } from 'node:url'
import { Hono } from 'hono'
import { openApiDocument } from '../../../schemas/openapi/document.ts'
import { packageFile, StaticAssets } from '../static-assets.ts'

/**
 * The reference UI's policy: its scripts and styles from this edge only. Swagger UI sets style
 * attributes on its elements (React), hence 'unsafe-inline' for styles alone; no inline script.
 */
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sluice API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/docs-init.js"></script>
</body>
</html>
`

/**
 * The OpenAPI document of every route (schemas/openapi/, built from the routes' zod schemas) at
 * /openapi.json, and a reference UI rendering it at /docs: Swagger UI from npm (swagger-ui-dist),
 * served by the edge itself so it works offline.
 */
export function apiReferenceRoutes() {
  const app = new Hono()
  const document = JSON.stringify(openApiDocument())
  const assets = new StaticAssets({
    'swagger-ui.css': {
      path: packageFile('swagger-ui-dist', 'swagger-ui.css'),
      type: 'text/css; charset=utf-8',
    },
    'swagger-ui-bundle.js': {
      path: packageFile('swagger-ui-dist', 'swagger-ui-bundle.js'),
      type: 'text/javascript; charset=utf-8',
    },
    'docs-init.js': {
      path: fileURLToPath(new URL('../api-reference/docs-init.js', import.meta.url)),
      type: 'text/javascript; charset=utf-8',
    },
  })
  app.get('/openapi.json', (c) => c.body(document, 200, { 'Content-Type': 'application/json' }))
  app.get('/docs', (c) =>
    c.html(DOCS_PAGE, 200, { 'Content-Security-Policy': DOCS_CSP, 'X-Content-Type-Options': 'nosniff' }),
  )
  app.get('/docs/assets/:name', (c) => assets.serve(c, c.req.param('name')))
  return app
}
