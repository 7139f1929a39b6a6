import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { AuthenticateUser } from '../../application/authenticate-user.js';
import type { CreateOrRerollUser } from '../../application/create-or-reroll-user.js';
import type { DeleteUser, FilesMode } from '../../application/delete-user.js';
import type { DeleteProject } from '../../application/delete-project.js';
import type { DeployRelease } from '../../application/deploy-release.js';
import type { ListProjects } from '../../application/list-projects.js';
import type { ListReleases } from '../../application/list-releases.js';
import type { ListUsers } from '../../application/list-users.js';
import type { RollbackRelease } from '../../application/rollback-release.js';
import type { Username } from '../../domain/username.js';
import { siteUrl } from '../../domain/site-url.js';
import { tokensEqual } from '../crypto/token-hash.js';
import type { Logger } from '../log/logger.js';
import { bearerToken } from './bearer.js';
import { readDeployForm } from './deploy-form.js';
import type { DeploySlots, ReleaseSlot } from './deploy-slots.js';
import type { DeployTracker } from './deploy-tracker.js';
import { toErrorResponse } from './error-response.js';
import type { ServiceMetrics } from './metrics.js';
import { InvalidAdminToken, InvalidFilesMode, InvalidRequestBody, MethodNotAllowed, NotFound, UploadTooLarge } from './http-errors.js';

export interface HttpSettings {
  readonly adminToken: string;
  readonly publicBase: string;
  readonly maxUploadBytes: number;
  /** UPLOAD_IDLE_SECONDS: a deploy whose body stops arriving this long fails; 0 never does. */
  readonly uploadIdleSeconds: number;
}

export interface HttpDeps {
  readonly settings: HttpSettings;
  readonly createUser: CreateOrRerollUser;
  readonly deleteUser: DeleteUser;
  readonly authenticate: AuthenticateUser;
  readonly deploy: DeployRelease;
  readonly deploys: DeployTracker;
  readonly slots: DeploySlots;
  readonly listProjects: ListProjects;
  readonly listReleases: ListReleases;
  readonly rollback: RollbackRelease;
  readonly deleteProject: DeleteProject;
  readonly listUsers: ListUsers;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /** docs/openapi.yaml, parsed; served as JSON. */
  readonly openApi: Record<string, unknown>;
}

export const HELLO = {
  message: 'Hello from sitedrop: publish a static site with one upload.',
  author: 'The sitedrop team',
  authorHomepage: 'https://github.com/sitedrop/sitedrop',
} as const;

/** A client that sent `Expect: 100-continue` is told to send its body only once it is wanted. */
function continueIfExpected(req: IncomingMessage, res: ServerResponse): void {
  if (req.headers.expect?.toLowerCase() === '100-continue') res.writeContinue();
}

function declaredLength(req: IncomingMessage): number | undefined {
  const raw = req.headers['content-length'];
  return raw === undefined ? undefined : Number(raw);
}

/** True while a request still has body bytes on the wire that nobody has read. */
function bodyPending(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function usernameOf(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidRequestBody();
  const { username } = body as { username?: unknown };
  if (typeof username !== 'string') throw new InvalidRequestBody();
  return username;
}

/** An optional JSON object with an optional string `release`. */
function releaseOf(body: unknown): string | undefined {
  if (body === undefined) return undefined;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidRequestBody();
  const { release } = body as { release?: unknown };
  if (release === undefined) return undefined;
  if (typeof release !== 'string') throw new InvalidRequestBody();
  return release;
}

function filesModeOf(body: unknown): FilesMode {
  const { files } = body as { files?: unknown };
  if (files === undefined) return 'persist';
  if (files === 'persist' || files === 'delete') return files;
  throw new InvalidFilesMode();
}

export function createApp(deps: HttpDeps): express.Express {
  const { settings, logger, metrics } = deps;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  // One log line per request, and its id to the client, to find that line again.
  app.use((req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    res.set('X-Request-Id', requestId);
    const started = performance.now();
    res.on('finish', () => {
      // The route's pattern, not the path: project names must not multiply the series.
      metrics.request(req.method, (req.route as { path?: string } | undefined)?.path ?? 'unmatched', res.statusCode);
      logger.info('request', {
        requestId,
        method: req.method,
        path: req.path,
        status: res.statusCode,
        durationMs: Math.round(performance.now() - started),
        user: res.locals.user ?? null,
      });
    });
    next();
  });

    // An answer sent before the body was read (401, 413, a refused archive) must reach a
  // client that is still sending: closing the socket makes its next write fail and it
  // never reads the answer. So the rest of the body is read and dropped; a body that has
  // not ended 5 s later (a huge or stalled upload) has its connection closed.
  app.use((req, res, next) => {
    res.on('finish', () => {
      if (!bodyPending(req)) return;
      req.unpipe();
      const timer = setTimeout(() => req.socket.destroy(), 5000).unref();
      req.once('end', () => clearTimeout(timer));
      req.resume();
    });
    next();
  });

  const admin = (req: Request, res: Response, next: NextFunction): void => {
    if (!tokensEqual(bearerToken(req) ?? '', settings.adminToken)) throw new InvalidAdminToken();
    res.locals.user = '(admin)';
    next();
  };
  const jsonBody: express.RequestHandler[] = [
    (req: Request, res: Response, next: NextFunction) => {
      continueIfExpected(req, res);
      next();
    },
    // Any content type: `curl -d '{...}'` sends form encoding by default.
    express.json({ limit: '16kb', strict: true, type: () => true }),
  ];
  const fallback = (message: string) => (_req: Request, res: Response, next: NextFunction) => {
    res.locals.fallback = message;
    next();
  };
  // The user's token, checked before any body is read; the user goes on the request's log line.
  const signedIn = async (req: Request, res?: Response): Promise<Username> => {
    const user = await deps.authenticate.execute(bearerToken(req));
    if (res) res.locals.user = user;
    return user;
  };
  // A deploy waits here before its body is read: its client holds a paused socket, not a
  // job on the unpack threads and a staging area. A client that hangs up leaves the queue at once.
  const deploySlot = async (user: Username, res: Response): Promise<ReleaseSlot> => {
    const gone = new AbortController();
    const onClose = (): void => gone.abort();
    res.once('close', onClose);
    // It may have hung up while its token was being checked: 'close' has been and gone.
    if (res.req.socket.destroyed) gone.abort();
    metrics.waiting.inc();
    try {
      return await deps.slots.acquire(user, gone.signal);
    } finally {
      metrics.waiting.dec();
      res.off('close', onClose);
    }
  };
  const methodNotAllowed = (allow: string) => (_req: Request, res: Response) => {
    res.set('Allow', allow);
    throw new MethodNotAllowed();
  };

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
    .route('/api/v1/auth')
    .post(fallback('failed to create user'), admin, jsonBody, async (req: Request, res: Response) => {
      const issued = await deps.createUser.execute({ username: usernameOf(req.body) });
      logger.info('user token issued', { user: issued.user, outcome: issued.outcome });
      res.json({ status: 'ok', token: issued.token });
    })
    .delete(fallback('failed to delete user'), admin, jsonBody, async (req: Request, res: Response) => {
      const username = usernameOf(req.body);
      const files = filesModeOf(req.body);
      await deps.deleteUser.execute({ username, files });
      logger.info('user deleted', { user: username, files });
      res.json({ status: 'ok' });
    })
    .all(methodNotAllowed('POST, DELETE'));

  app
    .route('/api/v1/deploy')
    .post(fallback('deployment failed'), async (req, res) => {
      const user = await signedIn(req, res);
      // Checked again when publishing: it may be rerolled while the archive uploads.
      const token = bearerToken(req) ?? '';
      const started = performance.now();
      // Refused before a byte of the body is read.
      if ((declaredLength(req) ?? 0) > settings.maxUploadBytes) throw new UploadTooLarge();
      const releaseSlot = await deploySlot(user, res);
      metrics.inFlight.inc();
      const deployed = await deps.deploys.track(async (signal) => {
        continueIfExpected(req, res);
        const form = readDeployForm(req, { maxBytes: settings.maxUploadBytes, idleSeconds: settings.uploadIdleSeconds });
        const archive = await form.archive;
        const failure = form.failure();
        if (failure) throw failure;
        try {
          return await deps.deploy.execute({ user, token, project: form.project, archive, signal });
        } catch (error) {
          throw form.failure() ?? error;
        }
      }).finally(() => {
        releaseSlot();
        metrics.inFlight.dec();
      }).catch((error: unknown) => {
        const answer = toErrorResponse(error, 'deployment failed');
        metrics.failed(answer.status);
        logger.warn('deploy failed', { user, status: answer.status, reason: answer.body.error, durationMs: Math.round(performance.now() - started) });
        throw error;
      });
      if (deployed.pruneError) logger.error('pruning old releases failed', { user, project: deployed.project, error: deployed.pruneError.message });
      if (deployed.recordError) logger.error('recording the deploy failed', { user, project: deployed.project, error: deployed.recordError.message });
      metrics.deployed((performance.now() - started) / 1000, deployed.bytes, deployed.files);
      logger.info('deployed', {
        user,
        project: deployed.project,
        release: deployed.release,
        files: deployed.files,
        bytes: deployed.bytes,
        compressedBytes: deployed.compressedBytes,
        durationMs: Math.round(performance.now() - started),
        phasesMs: deployed.timings,
      });
      res.json({
        status: 'ok',
        project: deployed.project,
        username: user,
        url: siteUrl(settings.publicBase, user, deployed.project),
        release: deployed.release,
      });
    })
    .all(methodNotAllowed('POST'));

  const project = (req: Request): string => String(req.params.project);

  app
    .route('/api/v1/projects')
    .get(fallback('failed to list projects'), async (req: Request, res: Response) => {
      const user = await signedIn(req, res);
      const projects = await deps.listProjects.execute(user);
      res.json({
        status: 'ok',
        projects: projects.map((p) => ({
          name: p.project,
          url: siteUrl(settings.publicBase, user, p.project),
          live: p.live ?? null,
          releases: p.releases,
          lastDeployAt: p.lastDeployAt?.toISOString() ?? null,
        })),
      });
    })
    .all(methodNotAllowed('GET, HEAD'));

  app
    .route('/api/v1/projects/:project/releases')
    .get(fallback('failed to list releases'), async (req: Request, res: Response) => {
      const user = await signedIn(req, res);
      const releases = await deps.listReleases.execute(user, project(req));
      res.json({
        status: 'ok',
        project: project(req),
        releases: releases.map((r) => ({ id: r.release, live: r.live, createdAt: r.createdAt.toISOString(), bytes: r.bytes ?? null, files: r.files ?? null })),
      });
    })
    .all(methodNotAllowed('GET, HEAD'));

  app
    .route('/api/v1/projects/:project/rollback')
    .post(fallback('rollback failed'), async (req: Request, res: Response, next: NextFunction) => {
      // Signed in before the body is read, like every other route.
      res.locals.user = await signedIn(req, res);
      next();
    }, jsonBody, async (req: Request, res: Response) => {
      const user = res.locals.user as Username;
      const rolled = await deps.rollback.execute(user, project(req), releaseOf(req.body));
      logger.info('rolled back', { user, project: project(req), release: rolled.release, previous: rolled.previous });
      res.json({ status: 'ok', project: project(req), release: rolled.release, previous: rolled.previous ?? null });
    })
    .all(methodNotAllowed('POST'));

  app
    .route('/api/v1/projects/:project')
    .delete(fallback('failed to delete project'), async (req: Request, res: Response) => {
      const user = await signedIn(req, res);
      await deps.deleteProject.execute(user, project(req));
      logger.info('project deleted', { user, project: project(req) });
      res.json({ status: 'ok' });
    })
    .all(methodNotAllowed('DELETE'));

  app
    .route('/api/v1/metrics')
    .get(fallback('failed to collect metrics'), admin, async (_req: Request, res: Response) => {
      // Prometheus' text format: the one answer that is not JSON (errors still are).
      res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    })
    .all(methodNotAllowed('GET, HEAD'));

  app
    .route('/api/v1/users')
    .get(fallback('failed to list users'), admin, async (_req: Request, res: Response) => {
      res.json({ status: 'ok', users: await deps.listUsers.execute() });
    })
    .all(methodNotAllowed('GET, HEAD'));

  app.use(() => {
    throw new NotFound();
  });

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const fallbackMessage = typeof res.locals.fallback === 'string' ? res.locals.fallback : 'internal error';
    const answer = toErrorResponse(error, fallbackMessage);
    if (!answer.expected) logger.error('request failed', { method: req.method, path: req.path, error: (error as Error)?.message ?? String(error) });
    if (res.headersSent || req.socket.destroyed) return;
    // For a client that sent `Connection: close`, Node closes the connection as soon as this
    // answer is out, before the drain above: the body bytes left unread make that close a
    // reset, and a client still writing fails on it without reading the answer. Kept open,
    // the connection is drained and closed by the client, or by the drain's 5 s limit.
    if (bodyPending(req)) res.shouldKeepAlive = true;
    res.status(answer.status).set(answer.headers).json(answer.body);
  });

  return app;
}
