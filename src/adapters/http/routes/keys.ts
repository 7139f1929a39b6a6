import type express from 'express';
import type { Request, Response } from 'express';
import { ListDeployKeys } from '../../../application/list-deploy-keys.js';
import { RevokeDeployKey } from '../../../application/revoke-deploy-key.js';
import { CreateDeployKey, type NewKeyRequest } from '../../../application/create-deploy-key.js';
import type { Username } from '../../../domain/username.js';
import type { Authentication } from '../auth.js';
import type { HttpDeps } from '../http-deps.js';
import { InvalidRequestBody } from '../http-errors.js';
import { fallback, jsonBody, methodNotAllowed } from '../middleware.js';
import { jsonObject, optionalString } from '../request-body.js';
import { projectParam } from './projects.js';

/** `{"name", "scope", "expiresInDays"?}`, each of its type; the values are the use case's to judge. */
function newKeyOf(body: unknown): NewKeyRequest {
  const object = jsonObject(body);
  const name = optionalString(object, 'name');
  const scope = optionalString(object, 'scope');
  const { expiresInDays } = object;
  if (name === undefined || scope === undefined) throw new InvalidRequestBody();
  if (expiresInDays === undefined) return { name, scope };
  if (typeof expiresInDays !== 'number') throw new InvalidRequestBody();
  return { name, scope, expiresInDays };
}

const iso = (date: Date | undefined): string | null => date?.toISOString() ?? null;

/** A project's deploy keys, managed with the owner's own token (never with a key). */
export function keyRoutes(app: express.Express, deps: Pick<HttpDeps, 'useCases' | 'logger'>, auth: Authentication): void {
  app
    .route('/api/v1/projects/:project/keys')
    .post(fallback('failed to create key'), auth.userFirst, jsonBody, async (req: Request, res: Response) => {
      const user = res.locals.user as Username;
      const made = await deps.useCases(CreateDeployKey).execute(user, projectParam(req), newKeyOf(req.body));
      deps.logger.info('deploy key created', { user, project: projectParam(req), key: made.id });
      res.json({ status: 'ok', id: made.id, token: made.token });
    })
    .get(fallback('failed to list keys'), async (req, res) => {
      const user = await auth.user(req, res);
      const keys = await deps.useCases(ListDeployKeys).execute(user, projectParam(req));
      res.json({
        status: 'ok',
        keys: keys.map((k) => ({ id: k.id, name: k.name, scope: k.scope, createdAt: k.createdAt.toISOString(), expiresAt: iso(k.expiresAt), lastUsedAt: iso(k.lastUsedAt) })),
      });
    })
    .all(methodNotAllowed('GET, HEAD, POST'));

  app
    .route('/api/v1/projects/:project/keys/:id')
    .delete(fallback('failed to revoke key'), async (req, res) => {
      const user = await auth.user(req, res);
      await deps.useCases(RevokeDeployKey).execute(user, projectParam(req), String(req.params.id));
      deps.logger.info('deploy key revoked', { user, project: projectParam(req), key: String(req.params.id) });
      res.json({ status: 'ok' });
    })
    .all(methodNotAllowed('DELETE'));
}
