import type express from 'express';
import type { Response } from 'express';
import { DeployRelease } from '../../../application/deploy-release.js';
import type { Deployed } from '../../../application/publish-release.js';
import type { Username } from '../../../domain/username.js';
import { previewUrl } from '../../../domain/preview.js';
import { siteUrl } from '../../../domain/site-url.js';
import type { Authentication } from '../auth.js';
import { bearerToken } from '../bearer.js';
import { readDeployForm } from '../deploy-form.js';
import type { Slot } from '../deploy-slots.js';
import { toErrorResponse } from '../error-response.js';
import type { HttpDeps } from '../http-deps.js';
import { UploadTooLarge } from '../http-errors.js';
import { continueIfExpected, declaredLength, fallback, methodNotAllowed } from '../middleware.js';
import type { UploadLimits } from '../upload-body.js';

/**
 * A deploy waits here before its body is read: its client holds a paused socket, not a
 * job on the unpack threads and a staging area. A client that hangs up leaves the queue
 * at once. Slots are shared out by the user the deploy publishes for (a key's owner).
 */
async function deploySlot(deps: Pick<HttpDeps, 'slots' | 'metrics'>, user: string, res: Response): Promise<Slot> {
  const gone = new AbortController();
  const onClose = (): void => gone.abort();
  res.once('close', onClose);
  // It may have hung up while its token was being checked: 'close' has been and gone.
  if (res.req.socket.destroyed) gone.abort();
  deps.metrics.waiting.inc();
  try {
    return await deps.slots.acquire(user, gone.signal);
  } finally {
    deps.metrics.waiting.dec();
    res.off('close', onClose);
  }
}

/**
 * Work that unpacks or builds a release (a deploy, an incremental deploy's upload or
 * publish): it runs in a deploy slot, counts as in flight, is given up at shutdown
 * through `signal`, and a failure is counted and logged with the reason the client got.
 * An upload tells `slot` when it goes quiet, and gives its work up when the slot is taken back.
 */
export async function inDeploySlot<T>(
  deps: Pick<HttpDeps, 'slots' | 'deploys' | 'metrics' | 'logger'>,
  user: Username,
  res: Response,
  started: number,
  work: (signal: AbortSignal, slot: Slot) => Promise<T>,
): Promise<T> {
  const { metrics, logger } = deps;
  const slot = await deploySlot(deps, user, res);
  metrics.inFlight.inc();
  return deps.deploys
    .track((signal) => work(signal, slot))
    .finally(() => {
      slot.release();
      metrics.inFlight.dec();
    })
    .catch((error: unknown) => {
      const answer = toErrorResponse(error, 'deployment failed');
      metrics.failed(answer.status);
      logger.warn('deploy failed', { user, status: answer.status, reason: answer.body.error, durationMs: Math.round(performance.now() - started) });
      throw error;
    });
}

/**
 * What every deploy that went live logs, counts and answers (a tarball's, an incremental
 * deploy's publish): the spec's body for POST /api/v1/deploy.
 */
export function deployedAnswer(deps: Pick<HttpDeps, 'settings' | 'metrics' | 'logger'>, user: Username, deployed: Deployed, started: number): Record<string, unknown> {
  const { metrics, logger, settings } = deps;
  if (deployed.pruneError) logger.error('pruning old releases failed', { user, project: deployed.project, error: deployed.pruneError.message });
  if (deployed.recordError) logger.error('recording the deploy failed', { user, project: deployed.project, error: deployed.recordError.message });
  metrics.deployed((performance.now() - started) / 1000, deployed.bytes, deployed.files);
  logger.info('deployed', {
    user,
    project: deployed.project,
    release: deployed.release,
    ...(deployed.preview === undefined ? {} : { preview: deployed.preview }),
    files: deployed.files,
    bytes: deployed.bytes,
    durationMs: Math.round(performance.now() - started),
    phasesMs: deployed.timings,
  });
  const { preview } = deployed;
  return {
    status: 'ok',
    project: deployed.project,
    username: user,
    url: preview === undefined ? siteUrl(settings.publicBase, user, deployed.project) : previewUrl(settings.previewBase, user, deployed.project, preview),
    release: deployed.release,
    ...(preview === undefined ? {} : { preview }),
  };
}

/** The limits every upload's body is read under (upload-body.ts). */
export function uploadLimits(settings: HttpDeps['settings']): UploadLimits {
  return { maxBytes: settings.maxUploadBytes, idleSeconds: settings.uploadIdleSeconds, stallSeconds: settings.uploadStallSeconds };
}

/** POST /api/v1/deploy: the upload, streamed into a release and published. */
export function deployRoutes(
  app: express.Express,
  deps: Pick<HttpDeps, 'settings' | 'useCases' | 'deploys' | 'slots' | 'metrics' | 'logger'>,
  auth: Authentication,
): void {
  const { settings } = deps;
  app
    .route('/api/v1/deploy')
    .post(fallback('deployment failed'), async (req, res) => {
      const { user } = await auth.deployer(req, res);
      // Checked again when publishing: it may be rerolled, or the key revoked, while the archive uploads.
      const token = bearerToken(req) ?? '';
      const started = performance.now();
      // Refused before a byte of the body is read.
      if ((declaredLength(req) ?? 0) > settings.maxUploadBytes) throw new UploadTooLarge();
      const deployed = await inDeploySlot(deps, user, res, started, async (signal, slot) => {
        continueIfExpected(req, res);
        const form = readDeployForm(req, uploadLimits(settings), slot);
        const archive = await form.archive;
        const failure = form.failure();
        if (failure) throw failure;
        try {
          return await deps.useCases(DeployRelease).execute({ user, token, project: form.project, preview: form.preview, archive, signal });
        } catch (error) {
          throw form.failure() ?? error;
        }
      });
      res.json(deployedAnswer(deps, user, deployed, started));
    })
    .all(methodNotAllowed('POST'));
}
