import 'reflect-metadata';
import { Container } from 'inversify';
import { Kysely, PostgresDialect } from 'kysely';
import { AuthenticateDeployer } from './application/authenticate-deployer.js';
import { AuthenticateUser } from './application/authenticate-user.js';
import { CleanUpLeftovers } from './application/clean-up-leftovers.js';
import { CreateDeployKey } from './application/create-deploy-key.js';
import { CreateOrRerollUser } from './application/create-or-reroll-user.js';
import { DeleteUser } from './application/delete-user.js';
import { DeleteProject } from './application/delete-project.js';
import { DeletePreview } from './application/delete-preview.js';
import { ExpirePreviews } from './application/expire-previews.js';
import { DeployRelease } from './application/deploy-release.js';
import { ListDeployKeys } from './application/list-deploy-keys.js';
import { ListPreviews } from './application/list-previews.js';
import { ListProjects } from './application/list-projects.js';
import { PromotePreview } from './application/promote-preview.js';
import { ListReleases } from './application/list-releases.js';
import { ListUsers } from './application/list-users.js';
import { RevokeDeployKey } from './application/revoke-deploy-key.js';
import { RollbackRelease } from './application/rollback-release.js';
import { CLOCK } from './application/ports/clock.js';
import { DEPLOY_KEY_STORE } from './application/ports/deploy-key-store.js';
import { DEPLOY_LOCK } from './application/ports/deploy-lock.js';
import { DEPLOY_RECORDS } from './application/ports/deploy-records.js';
import { DEPLOY_SETTINGS } from './application/ports/deploy-settings.js';
import { ServeSiteRules } from './application/serve-site-rules.js';
import { PRECOMPRESSION } from './application/ports/precompression.js';
import { PREVIEW_LINKS } from './application/ports/preview-links.js';
import { RELEASE_PREPARATION } from './application/ports/release-preparation.js';
import { RELEASE_STORE } from './application/ports/release-store.js';
import { STAGING } from './application/ports/staging.js';
import { TOKEN_GENERATOR } from './application/ports/token-generator.js';
import { TOKEN_STORE } from './application/ports/token-store.js';
import { PruneReleases } from './application/prune-releases.js';
import { PublishRelease } from './application/publish-release.js';
import { DeploySessionAccess } from './application/deploy-session-access.js';
import { OpenDeploySession } from './application/open-deploy-session.js';
import { ReviseDeploySession } from './application/revise-deploy-session.js';
import { ShowDeploySession } from './application/show-deploy-session.js';
import { UploadObjects } from './application/upload-objects.js';
import { PublishDeploySession } from './application/publish-deploy-session.js';
import { CancelDeploySession } from './application/cancel-deploy-session.js';
import { ListDeploySessions } from './application/list-deploy-sessions.js';
import { ExpireDeploySessions } from './application/expire-deploy-sessions.js';
import { DEPLOY_SESSIONS } from './application/ports/deploy-sessions.js';
import { SESSION_OBJECTS } from './application/ports/session-objects.js';
import { KyselyDeploySessions } from './adapters/db/kysely-deploy-sessions.js';
import { SystemClock } from './adapters/clock/system-clock.js';
import type { Config } from './adapters/config/config.js';
import { LOGGER, type Logger } from './adapters/log/logger.js';
import { RandomTokenGenerator } from './adapters/crypto/random-token-generator.js';
import { databaseKind, openDatabase, postgresPool } from './adapters/db/database.js';
import { KyselyDeployKeyStore } from './adapters/db/kysely-deploy-key-store.js';
import { KyselyDeployRecords } from './adapters/db/kysely-deploy-records.js';
import { DATABASE, KyselyTokenStore } from './adapters/db/kysely-token-store.js';
import { ARCHIVE_EXTRACTOR, ArchiveExtractor } from './adapters/fs/threads/archive-extractor.js';
import { BACKGROUND_QUIET, DeploysTree, RELEASE_ROOTS } from './adapters/fs/layout/deploys-tree.js';
import { FS_THREADS, FsThreads, unpackHeapMb } from './adapters/fs/threads/fs-threads.js';
import { WRITER_TASKS, WriterTasks } from './adapters/fs/threads/writer-tasks.js';
import { trimHeap } from './adapters/fs/threads/heap-trim.js';
import { KeptManifests } from './adapters/fs/store/kept-manifests.js';
import { ManifestMemory } from './adapters/fs/store/manifest-memory.js';
import { StoreAdoptions } from './adapters/fs/store/store-adoptions.js';
import { ProjectContent } from './adapters/fs/store/project-content.js';
import { NodeReleaseStore } from './adapters/fs/publish/node-release-store.js';
import { NodeSessionObjects } from './adapters/fs/staging/node-session-objects.js';
import { NodeStaging } from './adapters/fs/staging/node-staging.js';
import { NodePreviewLinks, PREVIEW_ROOTS } from './adapters/fs/publish/node-preview-links.js';
import { ReleaseRulesFiles } from './adapters/fs/publish/release-rules-files.js';
import { NginxWebServer } from './adapters/webserver/nginx/nginx-web-server.js';
import { CADDY_SETTINGS, CaddyWebServer } from './adapters/webserver/caddy/caddy-web-server.js';
import { CaddyDomainLinks } from './adapters/webserver/caddy/caddy-domain-links.js';
import { caddySnippetsDir } from './adapters/webserver/caddy/caddy-config.js';
import { RELEASE_RULES } from './application/ports/release-rules.js';
import { WEB_SERVER } from './application/ports/web-server.js';
import { NodePrecompression } from './adapters/precompress/node-precompression.js';
import { DeployActivity } from './adapters/precompress/deploy-activity.js';
import { ActivitySessionObjects, ActivityStaging } from './adapters/precompress/yielding-ports.js';
import { AddDomain } from './application/add-domain.js';
import { CheckDomain } from './application/check-domain.js';
import { ListDomains } from './application/list-domains.js';
import { RemoveDomain } from './application/remove-domain.js';
import { VerifyDomain } from './application/verify-domain.js';
import { DNS_TXT } from './application/ports/dns-txt.js';
import { DOMAIN_LINKS } from './application/ports/domain-links.js';
import { DOMAIN_SETTINGS } from './application/ports/domain-settings.js';
import { DOMAIN_STORE } from './application/ports/domain-store.js';
import { KyselyDomainStore } from './adapters/db/kysely-domain-store.js';
import { NodeDnsTxt } from './adapters/dns/node-dns-txt.js';
import { DOMAIN_ROOTS, NodeDomainLinks } from './adapters/fs/publish/node-domain-links.js';
import { InProcessDeployLock } from './adapters/lock/in-process-deploy-lock.js';
import { LOCK_DATABASE, PostgresDeployLock } from './adapters/lock/postgres-deploy-lock.js';

/** The composition root: the one place that picks an adapter for each port. */
export async function buildContainer(config: Config, logger: Logger): Promise<Container> {
  const c = new Container();
  c.bind(LOGGER).toConstantValue(logger);
  c.bind(DATABASE).toConstantValue(await openDatabase(config.databaseUrl, { poolMax: config.databasePoolMax }));
  c.bind(TOKEN_STORE).to(KyselyTokenStore).inSingletonScope();
  c.bind(DEPLOY_RECORDS).to(KyselyDeployRecords).inSingletonScope();
  c.bind(DEPLOY_KEY_STORE).to(KyselyDeployKeyStore).inSingletonScope();
  c.bind(RELEASE_ROOTS).toConstantValue({ docsRoot: config.docsRoot, deploysRoot: config.deploysRoot, replica: config.replicaId });
  const threads = new FsThreads({ unpackHeapMb: unpackHeapMb(config.deploysMaxConcurrent, config.maxFiles), whenIdle: trimHeap });
  c.bind(FS_THREADS).toConstantValue(threads);
  c.bind(WRITER_TASKS).toConstantValue(new WriterTasks(threads));
  c.bind(ARCHIVE_EXTRACTOR).toConstantValue(new ArchiveExtractor(threads));
  // Deploys' own work is watched, so that background work (compressed siblings, the store's
  // collections) gives way to it; a collection waits for half a second without one, 5 s at most.
  const activity = new DeployActivity();
  c.bind(BACKGROUND_QUIET).toConstantValue(() => activity.quiet(500, 5000));
  // The three share DEPLOYS_ROOT's layout and one trash: one DeploysTree.
  c.bind(DeploysTree).toSelf().inSingletonScope();
  // What the staging assembled, the release store remembers once it is a release: one memory for both.
  c.bind(ManifestMemory).toSelf().inSingletonScope();
  c.bind(KeptManifests).toSelf().inSingletonScope();
  c.bind(StoreAdoptions).toSelf().inSingletonScope();
  c.bind(ProjectContent).toSelf().inSingletonScope();
  c.bind(NodeStaging).toSelf().inSingletonScope();
  c.bind(DeployActivity).toConstantValue(activity);
  c.bind(STAGING).toDynamicValue((context) => new ActivityStaging(context.get(NodeStaging), activity)).inSingletonScope();
  c.bind(RELEASE_PREPARATION).toService(NodeStaging);
  c.bind(RELEASE_STORE).to(NodeReleaseStore).inSingletonScope();
  c.bind(NodeSessionObjects).toSelf().inSingletonScope();
  c.bind(SESSION_OBJECTS).toDynamicValue((context) => new ActivitySessionObjects(context.get(NodeSessionObjects), activity)).inSingletonScope();
  c.bind(DEPLOY_SESSIONS).to(KyselyDeploySessions).inSingletonScope();
  c.bind(PREVIEW_ROOTS).toConstantValue({ previewsRoot: config.previewsRoot, deploysRoot: config.deploysRoot, replica: config.replicaId });
  c.bind(PREVIEW_LINKS).to(NodePreviewLinks).inSingletonScope();
  c.bind(RELEASE_RULES).to(ReleaseRulesFiles).inSingletonScope();
  if (config.caddyAdmin === undefined) c.bind(WEB_SERVER).to(NginxWebServer).inSingletonScope();
  else {
    // Caddy is reconfigured per site with rules, through its admin API (docs/caddy.md).
    const { caddyAdmin, webServerReload } = config;
    c.bind(CADDY_SETTINGS).toConstantValue({ ...config, caddyAdmin, webServerReload, snippetsDir: caddySnippetsDir(config.dataDir), timeoutMs: 60_000 });
    c.bind(CaddyWebServer).toSelf().inSingletonScope();
    c.bind(WEB_SERVER).toService(CaddyWebServer);
  }
  c.bind(NodePrecompression).toSelf().inSingletonScope();
  if (config.precompress === 'on') c.bind(PRECOMPRESSION).toService(NodePrecompression);
  else c.bind(PRECOMPRESSION).toConstantValue({ queue: () => undefined, idle: async () => undefined });
  if (databaseKind(config.databaseUrl) === 'postgres') {
    // Replicas share one database, so the deploy lock lives there (advisory locks).
    const pool = postgresPool(config.databaseUrl, config.databasePoolMax);
    c.bind(LOCK_DATABASE).toConstantValue(new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) }));
    c.bind(DEPLOY_LOCK).to(PostgresDeployLock).inSingletonScope();
  } else {
    c.bind(DEPLOY_LOCK).to(InProcessDeployLock).inSingletonScope();
  }
  c.bind(DOMAIN_STORE).to(KyselyDomainStore).inSingletonScope();
  c.bind(DNS_TXT).toConstantValue(new NodeDnsTxt(config.dnsServers));
  c.bind(DOMAIN_ROOTS).toConstantValue({ domainsRoot: config.domainsRoot, docsRoot: config.docsRoot, replica: config.replicaId });
  c.bind(NodeDomainLinks).toSelf().inSingletonScope();
  // Caddy loads a route per site with rules at its domains: it hears of each link's change.
  if (config.caddyAdmin === undefined) c.bind(DOMAIN_LINKS).toService(NodeDomainLinks);
  else c.bind(DOMAIN_LINKS).to(CaddyDomainLinks).inSingletonScope();
  c.bind(DOMAIN_SETTINGS).toConstantValue({ max: config.domainsMax, reservedHosts: [config.publicBase, config.previewBase].map((base) => new URL(base).hostname.replace(/^\[|\]$/g, '')) });
  c.bind(CLOCK).to(SystemClock).inSingletonScope();
  c.bind(TOKEN_GENERATOR).to(RandomTokenGenerator).inSingletonScope();
  c.bind(DEPLOY_SETTINGS).toConstantValue({
    releasesKeep: config.releasesKeep,
    archiveLimits: { maxFiles: config.maxFiles, maxBytes: config.maxExtractedBytes },
    ...(config.userMaxBytes === undefined ? {} : { userMaxBytes: config.userMaxBytes }),
    previews: { max: config.previewsMax, ttlSeconds: config.previewTtlSeconds },
    sessions: { maxPerSigner: config.deploySessionsMax, ttlSeconds: config.deploySessionSeconds },
  });
  const useCases = [AuthenticateUser, AuthenticateDeployer, CreateOrRerollUser, DeleteUser, DeployRelease, PruneReleases, CleanUpLeftovers, ListProjects, ListReleases, RollbackRelease, DeleteProject, ListUsers];
  const domains = [AddDomain, ListDomains, VerifyDomain, RemoveDomain, CheckDomain];
  const incremental = [DeploySessionAccess, OpenDeploySession, ReviseDeploySession, ShowDeploySession, UploadObjects, PublishDeploySession, CancelDeploySession, ListDeploySessions, ExpireDeploySessions];
  for (const useCase of [...useCases, PublishRelease, CreateDeployKey, ListDeployKeys, RevokeDeployKey, ListPreviews, PromotePreview, DeletePreview, ExpirePreviews, ServeSiteRules, ...incremental, ...domains]) {
    c.bind(useCase).toSelf().inSingletonScope();
  }
  return c;
}

/** Resolves once the store's background work queued so far is done: adoptions, kept manifests, deletions, collections. */
export async function backgroundIdle(c: Container): Promise<void> {
  await c.get(StoreAdoptions).idle();
  await c.get(KeptManifests).idle();
  await c.get(DeploysTree).idle();
}

/**
 * Finishes the background deletions, then releases what the container holds open:
 * the file-system threads and database connections. Returns the deletions that failed.
 */
export async function disposeContainer(c: Container): Promise<string[]> {
  await c.get(NodeStaging).close();
  // Cut rather than finished: what it leaves (a scratch area, objects no release links) start-up removes.
  await c.get(NodePrecompression).close();
  // Its background loads write under DATA_DIR: done before anything there is removed.
  if (c.isBound(CaddyWebServer)) await c.get(CaddyWebServer).close();
  const failed = await c.get(DeploysTree).settle();
  await c.get(FS_THREADS).close();
  await c.get(DATABASE).destroy();
  if (c.isBound(LOCK_DATABASE)) await c.get(LOCK_DATABASE).destroy();
  return failed;
}
