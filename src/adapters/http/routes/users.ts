import type express from 'express';
import type { Request, Response } from 'express';
import { CreateOrRerollUser } from '../../../application/create-or-reroll-user.js';
import { ListUsers } from '../../../application/list-users.js';
import { DeleteUser, type FilesMode } from '../../../application/delete-user.js';
import type { Authentication } from '../auth.js';
import type { HttpDeps } from '../http-deps.js';
import { InvalidFilesMode, InvalidRequestBody } from '../http-errors.js';
import { fallback, methodNotAllowed, specJsonBody } from '../middleware.js';
import { jsonObject } from '../request-body.js';

function usernameOf(body: unknown): string {
  const { username } = jsonObject(body);
  if (typeof username !== 'string') throw new InvalidRequestBody();
  return username;
}

function filesModeOf(body: unknown): FilesMode {
  const { files } = body as { files?: unknown };
  if (files === undefined) return 'persist';
  if (files === 'persist' || files === 'delete') return files;
  throw new InvalidFilesMode();
}

/** The administrator's routes: users and their tokens. */
export function userRoutes(app: express.Express, deps: Pick<HttpDeps, 'useCases' | 'logger'>, auth: Authentication): void {
  app
    .route('/api/v1/auth')
    .post(fallback('failed to create user'), auth.admin, specJsonBody, async (req: Request, res: Response) => {
      const issued = await deps.useCases(CreateOrRerollUser).execute({ username: usernameOf(req.body) });
      deps.logger.info('user token issued', { user: issued.user, outcome: issued.outcome });
      res.json({ status: 'ok', token: issued.token });
    })
    .delete(fallback('failed to delete user'), auth.admin, specJsonBody, async (req: Request, res: Response) => {
      const username = usernameOf(req.body);
      const files = filesModeOf(req.body);
      await deps.useCases(DeleteUser).execute({ username, files });
      deps.logger.info('user deleted', { user: username, files });
      res.json({ status: 'ok' });
    })
    .all(methodNotAllowed('POST, DELETE'));

  app
    .route('/api/v1/users')
    .get(fallback('failed to list users'), auth.admin, async (_req, res) => {
      res.json({ status: 'ok', users: await deps.useCases(ListUsers).execute() });
    })
    .all(methodNotAllowed('GET, HEAD'));
}
