import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CleanUpLeftovers } from './application/clean-up-leftovers.js';
import { ExpirePreviews } from './application/expire-previews.js';
import { ServeSiteRules } from './application/serve-site-rules.js';
import { ExpireDeploySessions } from './application/expire-deploy-sessions.js';
import type { Config } from './adapters/config/config.js';
import { FS_THREADS } from './adapters/fs/threads/fs-threads.js';
import { NodePrecompression } from './adapters/precompress/node-precompression.js';
import { createApp } from './adapters/http/app.js';
import { loadCliBundle } from './adapters/http/cli-bundle.js';
import { DeploySlots, MAX_WAIT_MS } from './adapters/http/deploy-slots.js';
import { DeployTracker } from './adapters/http/deploy-tracker.js';
import { ServiceMetrics } from './adapters/http/metrics.js';
import { SessionOpens } from './adapters/http/session-opens.js';
import { loadOpenApiDocument } from './adapters/http/openapi-document.js';
import type { Logger } from './adapters/log/logger.js';
import { backgroundIdle, buildContainer, disposeContainer } from './container.js';

export interface RunningService {
  readonly port: number;
  readonly url: string;
  /** Stops taking connections, lets deploys finish for up to `graceMs` (SHUTDOWN_GRACE_SECONDS), aborts the rest, closes. */
  stop(graceMs?: number): Promise<void>;
  /** Resolves once the background work queued so far on the store is done (adoptions, deletions, collections): for tests' snapshots. */
  idle(): Promise<void>;
}

/** Builds the service from its configuration and listens; main.ts and the HTTP tests both start it here. */
export async function startService(config: Config, adminToken: string, logger: Logger): Promise<RunningService> {
  const openApi = loadOpenApiDocument();
  const cli = loadCliBundle();
  if (!cli) logger.warn('the CLI is not built: GET /api/v1/cli answers 500 until npm run build makes dist/sitedrop.mjs');
  const container = await buildContainer(config, logger);
  const removed = await container.get(CleanUpLeftovers).execute();
  for (const path of removed) logger.warn('removed leftover from an interrupted deploy', { path });
  // Sites keep being served meanwhile; a web server that cannot be told now is told by the next deploy.
  await container.get(ServeSiteRules).execute().then(
    (sites) => logger.info('sites handed to the web server', { sites }),
    (error: unknown) => logger.error('telling the web server its sites failed', { error: (error as Error).message }),
  );
  container.get(FS_THREADS).warmUp();
  // Releases published before siblings were made (or whose making a stop cut short) get them now, in the background.
  if (config.precompress === 'on') void container.get(NodePrecompression).queueServed().catch((error: unknown) => logger.warn('queueing served releases for precompression failed', { error: (error as Error).message }));

  const deploys = new DeployTracker();
  const slotLimits = { concurrent: config.deploysMaxConcurrent, queued: config.deploysMaxQueued, maxWaitMs: MAX_WAIT_MS, turnMs: config.deployTurnSeconds * 1000 };
  const slots = new DeploySlots(slotLimits);
  // As many manifests read at once as deploys unpack, and as many waiting.
  const opens = new SessionOpens(slotLimits);
  const app = createApp({
    settings: { adminToken, publicBase: config.publicBase, previewBase: config.previewBase, maxUploadBytes: config.maxUploadBytes, maxFiles: config.maxFiles, uploadIdleSeconds: config.uploadIdleSeconds, uploadStallSeconds: config.uploadStallSeconds },
    useCases: (useCase) => container.get(useCase),
    deploys,
    slots,
    opens,
    metrics: new ServiceMetrics(),
    logger,
    openApi,
    cli,
  });
  const server: Server = createServer(app);
  // Handled by the routes: a deploy answers 401 or 413 before asking for the body.
  server.on('checkContinue', app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const sweeps = [
    sweepEvery(config.previewTtlSeconds, logger, 'expired previews swept', 'sweeping expired previews failed', () => container.get(ExpirePreviews).execute()),
    sweepEvery(config.deploySessionSeconds, logger, 'expired deploy sessions swept', 'sweeping expired deploy sessions failed', () =>
      container.get(ExpireDeploySessions).execute(),
    ),
  ];
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;

  let stopping: Promise<void> | undefined;
  const stop = (graceMs = config.shutdownGraceMs): Promise<void> =>
    (stopping ??= (async () => {
      for (const sweep of sweeps) await sweep.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Deploys still waiting for a slot have sent nothing we read: they are told to retry
      // (503) now rather than started during the grace period meant for running ones.
      slots.close();
      opens.close();
      const cut = await deploys.drain(graceMs);
      if (cut > 0) logger.warn('aborted deploys at shutdown', { count: cut });
      // A deploy that just finished still has its answer to send: after close(), each
      // connection ends once its response is out. Only what is left after that is cut.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
      clearTimeout(timer);
      server.closeAllConnections();
      await closed;
      for (const failure of await disposeContainer(container)) logger.error('could not delete a discarded tree', { failure });
    })());

  const idle = () => backgroundIdle(container);
  return { port, url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, stop, idle };
}

/**
 * Removes what has outlived its time in the background: previews past
 * PREVIEW_TTL_SECONDS (and their releases), deploy sessions past DEPLOY_SESSION_SECONDS
 * (and their uploads). Deploys and deletes expire a project's previews too, but a
 * project nobody touches must still lose them. Often enough that nothing outlives its
 * time by more than a tenth of it, from one second to one minute; one sweep at a time.
 */
function sweepEvery(ttlSeconds: number, logger: Logger, swept: string, failed: string, sweep: () => Promise<number>): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const every = Math.min(60_000, Math.max(1000, ttlSeconds * 100));
  const timer = setInterval(() => {
    running ??= sweep()
      .then((removed) => {
        if (removed > 0) logger.info(swept, { removed });
      })
      .catch((error: unknown) => logger.error(failed, { error: (error as Error).message }))
      .finally(() => (running = undefined));
  }, every).unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
