import express from 'express';
import { authentication } from './auth.js';
import type { HttpDeps } from './http-deps.js';
import { drainUnreadBody, errorHandler, notFound, requestLog } from './middleware.js';
import { cliRoutes } from './routes/cli.js';
import { deployRoutes } from './routes/deploy.js';
import { deploySessionRoutes } from './routes/deploy-sessions.js';
import { domainRoutes } from './routes/domains.js';
import { keyRoutes } from './routes/keys.js';
import { metaRoutes } from './routes/meta.js';
import { previewRoutes } from './routes/previews.js';
import { projectRoutes } from './routes/projects.js';
import { userRoutes } from './routes/users.js';

export type { HttpDeps, HttpSettings } from './http-deps.js';

/** The HTTP adapter: the request middleware, then the routes by resource, then the one error handler. */
export function createApp(deps: HttpDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestLog(deps.metrics, deps.logger));
  app.use(drainUnreadBody);

  const auth = authentication(deps);
  metaRoutes(app, deps, auth);
  cliRoutes(app, deps);
  userRoutes(app, deps, auth);
  deployRoutes(app, deps, auth);
  deploySessionRoutes(app, deps, auth);
  projectRoutes(app, deps, auth);
  keyRoutes(app, deps, auth);
  previewRoutes(app, deps, auth);
  domainRoutes(app, deps, auth);

  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}
