import { inject, injectable } from 'inversify';
import { PreviewNotFound } from '../domain/errors.js';
import { isPreviewExpired, type Preview, type PreviewName } from '../domain/preview.js';
import type { ProjectName } from '../domain/project-name.js';
import type { ReleaseId } from '../domain/release-id.js';
import { releasesToPrune } from '../domain/retention.js';
import type { Username } from '../domain/username.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEFAULT_PREVIEW_SETTINGS, DEPLOY_SETTINGS, type DeploySettings } from './ports/deploy-settings.js';
import { DEPLOY_RECORDS, type DeployRecords } from './ports/deploy-records.js';
import { PREVIEW_LINKS, type PreviewLinks } from './ports/preview-links.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';

/** The project's releases deployed for a preview and never live since, by their deploy records. */
export async function previewOnlyReleases(records: DeployRecords, user: Username, project: ProjectName): Promise<ReleaseId[]> {
  return (await records.forProject(user, project)).filter((r) => r.preview !== undefined).map((r) => r.release);
}

/**
 * Retention, for a project whose lock the caller holds: previews past their time lose
 * their links, then replaced preview releases go, then the oldest of the live history
 * beyond the limit, never the live one nor one a preview still points to.
 */
@injectable()
export class PruneReleases {
  constructor(
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(DEPLOY_SETTINGS) private readonly settings: DeploySettings,
    @inject(PREVIEW_LINKS) private readonly previews: PreviewLinks,
    @inject(CLOCK) private readonly clock: Clock,
    @inject(DEPLOY_RECORDS) private readonly records: DeployRecords,
  ) {}

  async execute(user: Username, project: ProjectName): Promise<ReleaseId[]> {
    await this.expirePreviews(user, project);
    const [all, live, previews, previewOnly] = await Promise.all([
      this.releases.releases(user, project),
      this.releases.liveRelease(user, project),
      this.livePreviews(user, project),
      previewOnlyReleases(this.records, user, project),
    ]);
    const doomed = releasesToPrune(all, live, this.settings.releasesKeep, { pinned: previews.map((p) => p.release), previewOnly });
    for (const id of doomed) await this.releases.removeRelease(user, project, id);
    return doomed;
  }

  /** A preview still in its time, or PreviewNotFound. */
  async preview(user: Username, project: ProjectName, name: PreviewName): Promise<Preview> {
    const found = (await this.livePreviews(user, project)).find((p) => p.name === name);
    if (found === undefined) throw new PreviewNotFound();
    return found;
  }

  /** The project's previews still in their time; it changes nothing. */
  async livePreviews(user: Username, project: ProjectName): Promise<Preview[]> {
    const { ttlSeconds } = this.settings.previews ?? DEFAULT_PREVIEW_SETTINGS;
    const now = this.clock.now();
    return (await this.previews.list(user, project)).filter((preview) => !isPreviewExpired(preview, ttlSeconds, now));
  }

  /** Removes the links of the project's previews past their time; the caller holds the project's lock. */
  async expirePreviews(user: Username, project: ProjectName): Promise<void> {
    const { ttlSeconds } = this.settings.previews ?? DEFAULT_PREVIEW_SETTINGS;
    const now = this.clock.now();
    for (const preview of await this.previews.list(user, project)) {
      if (isPreviewExpired(preview, ttlSeconds, now)) await this.previews.unlink(user, project, preview.name);
    }
  }
}
