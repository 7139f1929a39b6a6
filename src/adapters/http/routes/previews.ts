import type express from 'express';
import type { Request, Response } from 'express';
import { DeletePreview } from '../../../application/delete-preview.js';
import { ListPreviews } from '../../../application/list-previews.js';
import { PromotePreview } from '../../../application/promote-preview.js';
import { previewUrl } from '../../../domain/preview.js';
import type { Username } from '../../../domain/username.js';
import type { Authentication } from '../auth.js';
import type { HttpDeps } from '../http-deps.js';
import { fallback, jsonBody, methodNotAllowed } from '../middleware.js';
import { releaseOf } from '../request-body.js';
import { projectParam } from './projects.js';

const previewParam = (req: Request): string => String(req.params.name);

/** A project's previews: list, promote one to live, delete one. With the owner's token only. */
export function previewRoutes(
  app: express.Express,
  deps: Pick<HttpDeps, 'settings' | 'useCases' | 'logger'>,
  auth: Authentication,
): void {
  app
    .route('/api/v1/projects/:project/previews')
    .get(fallback('failed to list previews'), async (req, res) => {
      const user = await auth.user(req, res);
      const { project, previews } = await deps.useCases(ListPreviews).execute(user, projectParam(req));
      res.json({
        status: 'ok',
        previews: previews.map((p) => ({
          name: p.name,
          release: p.release,
          url: previewUrl(deps.settings.previewBase, user, project, p.name),
          createdAt: p.linkedAt.toISOString(),
          expiresAt: p.expiresAt.toISOString(),
        })),
      });
    })
    .all(methodNotAllowed('GET, HEAD'));

  app
    .route('/api/v1/projects/:project/previews/:name/promote')
    // Signed in before the body is read, like every other route.
    .post(fallback('promote failed'), auth.userFirst, jsonBody, async (req: Request, res: Response) => {
      const user = res.locals.user as Username;
      const project = projectParam(req);
      const promoted = await deps.useCases(PromotePreview).execute(user, project, previewParam(req), releaseOf(req.body));
      deps.logger.info('preview promoted', { user, project, preview: previewParam(req), release: promoted.release, previous: promoted.previous });
      res.json({ status: 'ok', project, release: promoted.release, previous: promoted.previous ?? null });
    })
    .all(methodNotAllowed('POST'));

  app
    .route('/api/v1/projects/:project/previews/:name')
    .delete(fallback('failed to delete preview'), async (req, res) => {
      const user = await auth.user(req, res);
      await deps.useCases(DeletePreview).execute(user, projectParam(req), previewParam(req));
      deps.logger.info('preview deleted', { user, project: projectParam(req), preview: previewParam(req) });
      res.json({ status: 'ok' });
    })
    .all(methodNotAllowed('DELETE'));
}
