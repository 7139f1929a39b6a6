import type express from 'express';
import type { Request, Response } from 'express';
import { CancelDeploySession } from '../../../application/cancel-deploy-session.js';
import { ListDeploySessions } from '../../../application/list-deploy-sessions.js';
import { OpenDeploySession } from '../../../application/open-deploy-session.js';
import { PublishDeploySession } from '../../../application/publish-deploy-session.js';
import { ReviseDeploySession } from '../../../application/revise-deploy-session.js';
import { ShowDeploySession } from '../../../application/show-deploy-session.js';
import { UploadObjects } from '../../../application/upload-objects.js';
import type { SessionState } from '../../../application/deploy-session-access.js';
import type { DeploySessionSummary } from '../../../application/ports/deploy-sessions.js';
import type { Authentication } from '../auth.js';
import { bearerToken } from '../bearer.js';
import type { HttpDeps } from '../http-deps.js';
import { UploadTooLarge } from '../http-errors.js';
import { continueIfExpected, declaredLength, fallback, methodNotAllowed } from '../middleware.js';
import { bodyCoding } from '../body-coding.js';
import { readManifestBody, type ManifestFields } from '../manifest-body.js';
import type { ManifestReader } from '../../../domain/manifest.js';
import type { Username } from '../../../domain/username.js';
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
    uploadBytes: session.uploadBytes,
    createdAt: session.createdAt.toISOString(),
    expiresAt: session.expiresAt.toISOString(),
  };
}

type SessionDeps = Pick<HttpDeps, 'settings' | 'useCases' | 'deploys' | 'slots' | 'opens' | 'metrics' | 'logger'>;

/**
 * A manifest's body (an open's, or a session's again), its coding and length checked
 * before a byte of it is read, and read in its turn among the manifests being read:
 * each costs the same, the whole site checked. A gzip-compressed manifest is inflated
 * as it is read, and the limit holds for what it inflates to too.
 */
async function inManifestTurn<T>(deps: SessionDeps, user: Username, req: Request, res: Response, reader: ManifestReader, use: (fields: ManifestFields) => Promise<T>): Promise<T> {
  const { settings } = deps;
  bodyCoding(req);
  const limits = { maxBytes: settings.maxFiles * MANIFEST_BYTES_PER_FILE + 64 * 1024, idleSeconds: settings.uploadIdleSeconds, stallSeconds: settings.uploadStallSeconds };
  if ((declaredLength(req) ?? 0) > limits.maxBytes) throw new UploadTooLarge();
  const turn = await deps.opens.turn(user, res);
  const read = { inflated: 0 };
  try {
    continueIfExpected(req, res);
    return await use(await readManifestBody(req, reader, limits, read, turn.slot));
  } finally {
    turn.end(read.inflated);
  }
}

/** The sessions: one opened by a manifest, and its owner's listing of them. */
function sessionsRoute(app: express.Express, deps: SessionDeps, auth: Authentication): void {
  app
    .route('/api/v1/deploys')
    .post(fallback('deployment failed'), async (req, res) => {
      // Signed in before a byte of the manifest is read.
      const { user, key } = await auth.deployer(req, res);
      const open = deps.useCases(OpenDeploySession);
      const manifest = open.reader();
      const state = await inManifestTurn(deps, user, req, res, manifest, ({ project, preview, base }) =>
        open.execute({ user, token: bearerToken(req) ?? '', keyId: key?.id, project: project ?? '', preview, base, manifest }),
      );
      res.status(201).json(sessionAnswer(state));
    })
    // The owner's own token only, as every management route: a key gets 401.
    .get(fallback('failed to list deploy sessions'), async (req, res) => {
      const sessions = await deps.useCases(ListDeploySessions).execute(await auth.user(req, res));
      res.json({ status: 'ok', sessions: sessions.map(listedSession) });
    })
    .all(methodNotAllowed('GET, HEAD, POST'));
  // A session's manifest again, whole or relative to a base: what it found since it opened on its base.
  app
    .route('/api/v1/deploys/:id/manifest')
    .put(fallback('deployment failed'), async (req, res) => {
      const { user } = await auth.deployer(req, res);
      const revise = deps.useCases(ReviseDeploySession);
      const manifest = revise.reader();
      const state = await inManifestTurn(deps, user, req, res, manifest, ({ project, preview, base }) =>
        revise.execute({ user, token: bearerToken(req) ?? '', id: sessionParam(req), project, preview, base, manifest }),
      );
      res.json(sessionAnswer(state));
    })
    .all(methodNotAllowed('PUT'));
}

/**
 * The incremental deploy (docs/content-store.md): a manifest opens a session and is
 * answered with the objects the user lacks; batches of them are uploaded; the publish
 * builds the release from the store and swaps it live. Signed as POST /api/v1/deploy
 * is: a user token or a deploy key that grants the session's project.
 */
export function deploySessionRoutes(app: express.Express, deps: SessionDeps, auth: Authentication): void {
  const { settings } = deps;
  sessionsRoute(app, deps, auth);

  app
    .route('/api/v1/deploys/:id')
    .get(fallback('deployment failed'), async (req, res) => {
      const { user } = await auth.deployer(req, res);
      res.json(sessionAnswer(await deps.useCases(ShowDeploySession).execute({ user, token: bearerToken(req) ?? '', id: sessionParam(req) })));
    })
    .delete(fallback('deployment failed'), async (req, res) => {
      const { user } = await auth.deployer(req, res);
      await deps.useCases(CancelDeploySession).execute({ user, token: bearerToken(req) ?? '', id: sessionParam(req) });
      res.status(204).end();
    })
    .all(methodNotAllowed('GET, HEAD, DELETE'));

  app
    .route('/api/v1/deploys/:id/objects')
    .put(fallback('deployment failed'), async (req, res) => {
      const { user } = await auth.deployer(req, res);
      const token = bearerToken(req) ?? '';
      const started = performance.now();
      // The batch is gzip whatever the header says: `Content-Encoding: gzip` tells no more,
      // and it is read as it is; any other coding is refused.
      bodyCoding(req);
      if ((declaredLength(req) ?? 0) > settings.maxUploadBytes) throw new UploadTooLarge();
      const { session, stored } = await inDeploySlot(deps, user, res, started, async (signal, slot) => {
        continueIfExpected(req, res);
        const upload = readUploadBody(req, uploadLimits(settings), slot);
        try {
          return await deps.useCases(UploadObjects).execute({ user, token, id: sessionParam(req), batch: upload.body, signal });
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
      // A publish reads no body: its slot is never taken back, and comes free as it ends.
      const deployed = await inDeploySlot(deps, user, res, started, (_signal, slot) => {
        slot.keep();
        return deps.useCases(PublishDeploySession).execute({ user, token: bearerToken(req) ?? '', id: sessionParam(req) });
      });
      res.json(deployedAnswer(deps, user, deployed, started));
    })
    .all(methodNotAllowed('POST'));
}
