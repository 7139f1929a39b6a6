import express from 'express';
import type { Request } from 'express';
import type { SessionState } from '../../../application/deploy-session-access.js';
import type { DeploySessionSummary } from '../../../application/ports/deploy-sessions.js';
import type { Authentication } from '../auth.js';
import { bearerToken } from '../bearer.js';
import type { HttpDeps } from '../http-deps.js';
import { UploadTooLarge } from '../http-errors.js';
import { continueIfExpected, declaredLength, fallback, methodNotAllowed } from '../middleware.js';
import { jsonObject, optionalString } from '../request-body.js';
import { readUploadBody } from '../upload-body.js';
import { deployedAnswer, inDeploySlot, uploadLimits } from './deploy.js';

const sessionParam = (req: Request): string => String(req.params.id);

/**
 * Bytes of manifest JSON (inflated) a file may take: a path of up to 1,024 bytes, its
 * digest, size and quoting. One limit for a whole manifest and one relative to a base:
 * a difference is worth sending only while it is shorter than the whole, which fits.
 */
const MANIFEST_BYTES_PER_FILE = 1200;

function sessionAnswer(state: SessionState): Record<string, unknown> {
  const { session } = state;
  return {
    status: 'ok',
    id: session.id,
    project: session.project,
    ...(session.preview === undefined ? {} : { preview: session.preview }),
    expiresAt: session.expiresAt.toISOString(),
    files: state.files,
    bytes: state.bytes,
    missing: state.missing,
    missingBytes: state.missingBytes,
  };
}

/** A session as its owner's listing shows it: the key that opened it by id, never its token. */
function listedSession(session: DeploySessionSummary): Record<string, unknown> {
  return {
    id: session.id,
    project: session.project,
    preview: session.preview ?? null,
    keyId: session.keyId ?? null,
    createdAt: session.createdAt.toISOString(),
    expiresAt: session.expiresAt.toISOString(),
  };
}

/**
 * The incremental deploy (docs/content-store.md): a manifest opens a session and is
 * answered with the objects the user lacks; batches of them are uploaded; the publish
 * builds the release from the store and swaps it live. Signed as POST /api/v1/deploy
 * is: a user token or a deploy key that grants the session's project.
 */
export function deploySessionRoutes(
  app: express.Express,
  deps: Pick<HttpDeps, 'settings' | 'sessions' | 'deploys' | 'slots' | 'metrics' | 'logger'>,
  auth: Authentication,
): void {
  const { settings } = deps;
  // gzip-compressed manifests are inflated here, and the limit holds for what they inflate to.
  let parser: express.RequestHandler | undefined;
  const manifestBody: express.RequestHandler = (req, res, next) => {
    parser ??= express.json({ limit: settings.maxFiles * MANIFEST_BYTES_PER_FILE + 64 * 1024, strict: true, inflate: true, type: () => true });
    return parser(req, res, next);
  };

  app
    .route('/api/v1/deploys')
    .post(fallback('deployment failed'), async (req, res) => {
      // Signed in before a byte of the manifest is read.
      const { user, key } = await auth.deployer(req, res);
      continueIfExpected(req, res);
      await new Promise<void>((resolve, reject) =>
        manifestBody(req, res, (error?: unknown) => {
          if (error === undefined) resolve();
          // A manifest too large for MAX_FILES is an upload too large, not a malformed one.
          else reject((error as { type?: unknown }).type === 'entity.too.large' ? new UploadTooLarge() : (error as Error));
        }),
      );
      const body = jsonObject(req.body);
      const project = optionalString(body, 'project') ?? '';
      const preview = optionalString(body, 'preview');
      const state = await deps.sessions.open.execute({ user, token: bearerToken(req) ?? '', keyId: key?.id, project, preview, files: body.files, base: body.base, removed: body.removed });
      res.status(201).json(sessionAnswer(state));
    })
    // The owner's own token only, as every management route: a key gets 401.
    .get(fallback('failed to list deploy sessions'), async (req, res) => {
      const sessions = await deps.sessions.list.execute(await auth.user(req, res));
      res.json({ status: 'ok', sessions: sessions.map(listedSession) });
    })
    .all(methodNotAllowed('GET, HEAD, POST'));

  app
    .route('/api/v1/deploys/:id')
    .get(fallback('deployment failed'), async (req, res) => {
      const { user } = await auth.deployer(req, res);
      res.json(sessionAnswer(await deps.sessions.show.execute({ user, token: bearerToken(req) ?? '', id: sessionParam(req) })));
    })
    .delete(fallback('deployment failed'), async (req, res) => {
      const { user } = await auth.deployer(req, res);
      await deps.sessions.cancel.execute({ user, token: bearerToken(req) ?? '', id: sessionParam(req) });
      res.status(204).end();
    })
    .all(methodNotAllowed('GET, HEAD, DELETE'));

  app
    .route('/api/v1/deploys/:id/objects')
    .put(fallback('deployment failed'), async (req, res) => {
      const { user } = await auth.deployer(req, res);
      const token = bearerToken(req) ?? '';
      const started = performance.now();
      if ((declaredLength(req) ?? 0) > settings.maxUploadBytes) throw new UploadTooLarge();
      const { session, stored } = await inDeploySlot(deps, user, res, started, async (signal, slot) => {
        continueIfExpected(req, res);
        const upload = readUploadBody(req, uploadLimits(settings), slot);
        try {
          return await deps.sessions.upload.execute({ user, token, id: sessionParam(req), batch: upload.body, signal });
        } catch (error) {
          throw upload.failure() ?? error;
        }
      });
      res.json({ status: 'ok', id: session.id, expiresAt: session.expiresAt.toISOString(), stored });
    })
    .all(methodNotAllowed('PUT'));

  app
    .route('/api/v1/deploys/:id/publish')
    .post(fallback('deployment failed'), async (req, res) => {
      const { user } = await auth.deployer(req, res);
      const started = performance.now();
      const deployed = await inDeploySlot(deps, user, res, started, () => deps.sessions.publish.execute({ user, token: bearerToken(req) ?? '', id: sessionParam(req) }));
      res.json(deployedAnswer(deps, user, deployed, started));
    })
    .all(methodNotAllowed('POST'));
}
