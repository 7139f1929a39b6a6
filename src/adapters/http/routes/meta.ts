import type express from 'express';
import type { Authentication } from '../auth.js';
import type { HttpDeps } from '../http-deps.js';
import { fallback, methodNotAllowed } from '../middleware.js';

export const HELLO = {
  message: 'Hello from sitedrop: publish a static site with one upload.',
  author: 'The sitedrop team',
  authorHomepage: 'https://github.com/sitedrop/sitedrop',
} as const;

/** What the service says about itself: health, who made it, its API document, its metrics. */
export function metaRoutes(app: express.Express, deps: Pick<HttpDeps, 'openApi' | 'metrics'>, auth: Authentication): void {
  app
    .route('/api/v1/status')
    .get((_req, res) => {
      res.json({ status: 'ok' });
    })
    .all(methodNotAllowed('GET, HEAD'));

  app
    .route('/api/hello')
    .get((_req, res) => {
      res.json(HELLO);
    })
    .all(methodNotAllowed('GET, HEAD'));

  const openApiJson = JSON.stringify(deps.openApi);
  app
    .route('/api/v1/openapi.json')
    .get((_req, res) => {
      res.type('application/json').send(openApiJson);
    })
    .all(methodNotAllowed('GET, HEAD'));

  app
    .route('/api/v1/metrics')
    .get(fallback('failed to collect metrics'), auth.admin, async (_req, res) => {
      // Prometheus' text format: the one answer that is not JSON (errors still are).
      res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
    })
    .all(methodNotAllowed('GET, HEAD'));
}
