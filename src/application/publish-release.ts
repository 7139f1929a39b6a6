import { inject, injectable } from 'inversify';
import { TooManyPreviews } from '../domain/errors.js';
import { mayAddPreview, type PreviewName } from '../domain/preview.js';
import type { ProjectName } from '../domain/project-name.js';
import { ReleaseId } from '../domain/release-id.js';
import { enforceStorageQuota, keptAfterDeploy, type HeldReleases, type StoredRelease } from '../domain/storage-quota.js';
import type { Username } from '../domain/username.js';
import { assertStillAuthorised } from './deployer.js';
import { previewOnlyReleases, PruneReleases } from './prune-releases.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_KEY_STORE, type DeployKeyStore } from './ports/deploy-key-store.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { DEPLOY_RECORDS, type DeployRecords } from './ports/deploy-records.js';
import { DEFAULT_PREVIEW_SETTINGS, DEPLOY_SETTINGS, type DeploySettings } from './ports/deploy-settings.js';
import { PRECOMPRESSION, type Precompression } from './ports/precompression.js';
import { PREVIEW_LINKS, type PreviewLinks } from './ports/preview-links.js';
import { RELEASE_RULES, type ReleaseRules } from './ports/release-rules.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { STAGING, type StagedRelease, type Staging } from './ports/staging.js';
import { TOKEN_STORE, type TokenStore } from './ports/token-store.js';
import { WEB_SERVER, type SiteAddress, type WebServer } from './ports/web-server.js';
import { compileStagedRules, rulesOfRelease } from './release-site-rules.js';

export interface Deployed {
  readonly user: Username;
  readonly project: ProjectName;
  readonly release: ReleaseId;
  /** Set for a preview deploy: the live link did not move, this preview's did. */
  readonly preview?: PreviewName;
  readonly files: number;
  readonly bytes: number;
  readonly pruned: ReleaseId[];
  /** Set when the release went live but removing old ones failed. */
  readonly pruneError?: Error;
  /** Set when the release went live but its deploy record could not be written. */
  readonly recordError?: Error;
  /**
   * Milliseconds spent staging (upload included), waiting for the lock, publishing,
   * pruning. Staging's own phases are the staging adapter's to log.
   */
  readonly timings: { readonly stage: number; readonly lockWait: number; readonly publish: number; readonly prune: number };
}

export interface PublishInput {
  readonly user: Username;
  /** The bearer token the deploy was signed with; it must still be good now. */
  readonly token: string;
  readonly project: ProjectName;
  readonly preview: PreviewName | undefined;
  readonly staged: StagedRelease;
  /** Milliseconds the staging took, for the timings. */
  readonly stageMs: number;
  /**
   * Run under the project's lock before anything changes; throwing refuses the deploy
   * (an incremental deploy's session must still be open).
   */
  readonly claim?: () => Promise<void>;
}

/**
 * The end every deploy shares, once its files are staged: under the project lock,
 * checks the token again and the storage quota, names the release, moves it into place,
 * swaps the live (or preview) link and prunes. Until the swap nothing visible changes;
 * a failure before it discards the staged files.
 */
@injectable()
export class PublishRelease {
  constructor(
    @inject(TOKEN_STORE) private readonly tokens: TokenStore,
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(STAGING) private readonly staging: Staging,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
    @inject(CLOCK) private readonly clock: Clock,
    @inject(DEPLOY_SETTINGS) private readonly settings: DeploySettings,
    @inject(PruneReleases) private readonly prune: PruneReleases,
    @inject(DEPLOY_RECORDS) private readonly records: DeployRecords,
    @inject(DEPLOY_KEY_STORE) private readonly keys: DeployKeyStore,
    @inject(PREVIEW_LINKS) private readonly previews: PreviewLinks,
    @inject(RELEASE_RULES) private readonly rules: ReleaseRules,
    @inject(WEB_SERVER) private readonly webServer: WebServer,
    @inject(PRECOMPRESSION) private readonly precompression: Precompression,
  ) {}

  async execute({ user, token, project, preview, staged, stageMs, claim }: PublishInput): Promise<Deployed> {
    let committed: ReleaseId | undefined;
    let live = false;
    // What the web server served at the site before it was readied for the new release.
    let before: { release: ReleaseId | undefined } | undefined;
    const site: SiteAddress = { user, project, ...(preview === undefined ? {} : { preview }) };
    const ms = () => this.clock.now().getTime();
    const waiting = ms();
    try {
      // Before the lock: a rule file that cannot be honoured refuses the deploy at once.
      const rules = await compileStagedRules(this.rules, staged);
      return await this.lock.withProject(user, project, async (held) => {
        const locked = ms();
        // Only with a quota do the user's projects publish one at a time: without one
        // nothing reads another project's releases, so they need not wait for each other.
        if (this.settings.userMaxBytes !== undefined) await held.lockUserStorage();
        await assertStillAuthorised(this.tokens, this.keys, this.clock.now(), { user, token, project, preview });
        await claim?.();
        await this.prune.expirePreviews(user, project);
        const previews = await this.prune.livePreviews(user, project);
        const { max } = this.settings.previews ?? DEFAULT_PREVIEW_SETTINGS;
        if (preview !== undefined && !mayAddPreview(previews.map((p) => p.name), preview, max)) throw new TooManyPreviews(max);
        const release = ReleaseId.next(this.clock.now(), await this.releases.releases(user, project));
        const others = previews.filter((p) => p.name !== preview).map((p) => p.release);
        const heldAfter: HeldReleases =
          preview === undefined ? { live: release, pinned: others } : { live: await this.releases.liveRelease(user, project), pinned: [...others, release] };
        await this.enforceQuota(user, project, release, staged.bytes, heldAfter);
        const record = { user, project, release, bytes: staged.bytes, files: staged.files, createdAt: this.clock.now(), preview };
        // A preview's release is marked before it exists: unmarked, a plain rollback could
        // make a pull request's build live, and its redeploys would push out live history.
        if (preview !== undefined) await this.records.record(record);
        await this.releases.commit(staged, user, project, release);
        committed = release;
        before = { release: preview === undefined ? await this.releases.liveRelease(user, project) : previews.find((p) => p.name === preview)?.release };
        await this.webServer.willServe({ site, release, rules });
        // A preview's release goes live at its own address; the live link does not move.
        if (preview === undefined) await this.releases.activate(user, project, release);
        else await this.previews.link(user, project, preview, release);
        live = true;
        this.precompression.queue(user, project, release);
        const swapped = ms();
        // The site is live now: a record that cannot be written is reported, not a failed deploy.
        const recorded = preview !== undefined ? undefined : await this.records.record(record).then(() => undefined, (error: unknown) => error as Error);
        // The site is live on the new release now; a failed prune is retried by the next deploy.
        const pruned = await this.prune.execute(user, project).catch((error: unknown) => error as Error);
        const timings = { stage: stageMs, lockWait: locked - waiting, publish: swapped - locked, prune: ms() - swapped };
        return {
          user,
          project,
          release,
          ...(preview === undefined ? {} : { preview }),
          files: staged.files,
          bytes: staged.bytes,
          pruned: Array.isArray(pruned) ? pruned : [],
          ...(pruned instanceof Error ? { pruneError: pruned } : {}),
          ...(recorded ? { recordError: recorded } : {}),
          timings,
        };
      });
    } catch (error) {
      if (before !== undefined && !live) await this.serveAgain(site, before.release);
      if (committed === undefined) await this.staging.discard(staged);
      else if (!live) await this.releases.removeRelease(user, project, committed);
      throw error;
    }
  }

  /** The link did not move after all: the web server goes back to what it served (a new site's link never existed). */
  private async serveAgain(site: SiteAddress, release: ReleaseId | undefined): Promise<void> {
    if (release === undefined) return;
    const rules = await rulesOfRelease(this.rules, { user: site.user, project: site.project, release });
    await this.webServer.willServe({ site, release, rules }).catch(() => undefined);
  }

  /**
   * Refuses the deploy when the user's releases kept after it (its own pruning done)
   * would hold more than the quota. The caller holds the user's storage lock.
   */
  private async enforceQuota(user: Username, project: ProjectName, release: ReleaseId, bytes: number, held: HeldReleases): Promise<void> {
    const limit = this.settings.userMaxBytes;
    if (limit === undefined) return;
    const projects = await this.releases.projects(user);
    const stored = await Promise.all(
      projects.map(async (p) => (await this.releases.releases(user, p)).map((id) => ({ project: p, release: id }))),
    );
    const isNew = (r: StoredRelease) => r.project === project && r.release === release;
    const previewOnly = await previewOnlyReleases(this.records, user, project);
    const earlier = keptAfterDeploy(stored.flat(), { project, release }, this.settings.releasesKeep, { ...held, previewOnly }).filter((r) => !isNew(r));
    const records = await Promise.all([...new Set(earlier.map((r) => r.project))].map((p) => this.records.forProject(user, p)));
    const recorded = new Map(records.flat().map((r) => [`${r.project}/${r.release}`, r.bytes]));
    const sizes = await Promise.all(
      // A release from before deploy records, or whose record failed to write, is measured.
      earlier.map((r) => recorded.get(`${r.project}/${r.release}`) ?? this.releases.releaseBytes(user, r.project, r.release)),
    );
    enforceStorageQuota(limit, [bytes, ...sizes]);
  }
}
