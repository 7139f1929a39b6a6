import type express from 'express';
import type { HttpDeps } from '../http-deps.js';
import { CliNotBuilt } from '../http-errors.js';
import { methodNotAllowed } from '../middleware.js';

/** The ETags an If-None-Match header lists (or `*`), weak or strong alike (RFC 9110 13.1.2). */
function listed(header: string | undefined): string[] {
  return (header ?? '').split(',').map((tag) => tag.trim().replace(/^W\//, '')).filter(Boolean);
}

/**
 * GET /api/v1/cli, no token: the CLI as one file, so a pipeline needs only Node 20:
 * `curl -fsSL "$SITEDROP_URL/api/v1/cli" -o sitedrop.mjs && node sitedrop.mjs deploy ...`.
 */
export function cliRoutes(app: express.Express, deps: Pick<HttpDeps, 'cli'>): void {
  app
    .route('/api/v1/cli')
    .get((req, res) => {
      const { cli } = deps;
      if (!cli) throw new CliNotBuilt();
      // Revalidated each time: the file changes with the server, and a 304 costs nothing.
      res.set({ ETag: cli.etag, 'Cache-Control': 'no-cache' });
      const wanted = listed(req.headers['if-none-match']);
      if (wanted.includes(cli.etag) || wanted.includes('*')) {
        res.status(304).end();
        return;
      }
      res.type('text/javascript').send(cli.body);
    })
    .all(methodNotAllowed('GET, HEAD'));
}
