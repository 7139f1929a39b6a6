import type express from 'express';
import type { Request, Response } from 'express';
import { DeleteProject } from '../../../application/delete-project.js';
import { ListProjects } from '../../../application/list-projects.js';
import { ListReleases } from '../../../application/list-releases.js';
import { RollbackRelease } from '../../../application/rollback-release.js';
import { siteUrl } from '../../../domain/site-url.js';
import type { Username } from '../../../domain/username.js';
import type { Authentication } from '../auth.js';
import type { HttpDeps } from '../http-deps.js';
import { fallback, jsonBody, methodNotAllowed } from '../middleware.js';
import { releaseOf } from '../request-body.js';

export const projectParam = (req: Request): string => String(req.params.project);

/** A user's projects and their releases: list, roll back, delete. */
export function projectRoutes(
  app: express.Express,
  deps: Pick<HttpDeps, 'settings' | 'useCases' | 'logger'>,
  auth: Authentication,
): void {
  app
    .route('/api/v1/projects')
    .get(fallback('failed to list projects'), async (req, res) => {
      const user = await auth.user(req, res);
      const projects = await deps.useCases(ListProjects).execute(user);
      res.json({
        status: 'ok',
        projects: projects.map((p) => ({
          name: p.project,
          url: siteUrl(deps.settings.publicBase, user, p.project),
          live: p.live ?? null,
          releases: p.releases,
          lastDeployAt: p.lastDeployAt?.toISOString() ?? null,
        })),
      });
    })
    .all(methodNotAllowed('GET, HEAD'));

  app
    .route('/api/v1/projects/:project/releases')
    .get(fallback('failed to list releases'), async (req, res) => {
      const user = await auth.user(req, res);
      const releases = await deps.useCases(ListReleases).execute(user, projectParam(req));
      res.json({
        status: 'ok',
        project: projectParam(req),
        releases: releases.map((r) => ({
          id: r.release,
          live: r.live,
          createdAt: r.createdAt.toISOString(),
          bytes: r.bytes ?? null,
          files: r.files ?? null,
          ...(r.preview === undefined ? {} : { preview: r.preview }),
        })),
      });
    })
    .all(methodNotAllowed('GET, HEAD'));

  app
    .route('/api/v1/projects/:project/rollback')
    // Signed in before the body is read, like every other route.
    .post(fallback('rollback failed'), auth.userFirst, jsonBody, async (req: Request, res: Response) => {
      const user = res.locals.user as Username;
      const project = projectParam(req);
      const rolled = await deps.useCases(RollbackRelease).execute(user, project, releaseOf(req.body));
      deps.logger.info('rolled back', { user, project, release: rolled.release, previous: rolled.previous });
      res.json({ status: 'ok', project, release: rolled.release, previous: rolled.previous ?? null });
    })
    .all(methodNotAllowed('POST'));

  app
    .route('/api/v1/projects/:project')
    .delete(fallback('failed to delete project'), async (req, res) => {
      const user = await auth.user(req, res);
      await deps.useCases(DeleteProject).execute(user, projectParam(req));
      deps.logger.info('project deleted', { user, project: projectParam(req) });
      res.json({ status: 'ok' });
    })
    .all(methodNotAllowed('DELETE'));
}
