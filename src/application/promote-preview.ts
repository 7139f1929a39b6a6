import { inject, injectable } from 'inversify';
import { PreviewMoved } from '../domain/errors.js';
import { PreviewName } from '../domain/preview.js';
import { ProjectName } from '../domain/project-name.js';
import { ReleaseId } from '../domain/release-id.js';
import type { Username } from '../domain/username.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { DEPLOY_RECORDS, type DeployRecords } from './ports/deploy-records.js';
import { RELEASE_RULES, type ReleaseRules } from './ports/release-rules.js';
import { PRECOMPRESSION, type Precompression } from './ports/precompression.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { WEB_SERVER, type WebServer } from './ports/web-server.js';
import { rulesOfRelease } from './release-site-rules.js';
import { PruneReleases } from './prune-releases.js';
import type { RolledBack } from './rollback-release.js';

/**
 * Makes a preview's release live, with the same lock and the same atomic swap as a
 * rollback, and part of the live history. The preview stays; nothing is pruned. Given the
 * release that was reviewed, it refuses (PreviewMoved) once the preview has been deployed
 * again: a pull request's key could otherwise put new content under a reviewed name just
 * before the owner promotes it.
 */
@injectable()
export class PromotePreview {
  constructor(
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
    @inject(PruneReleases) private readonly retention: PruneReleases,
    @inject(DEPLOY_RECORDS) private readonly records: DeployRecords,
    @inject(RELEASE_RULES) private readonly rules: ReleaseRules,
    @inject(WEB_SERVER) private readonly webServer: WebServer,
    @inject(PRECOMPRESSION) private readonly precompression: Precompression,
  ) {}

  async execute(user: Username, projectName: string, previewName: string, expected?: string): Promise<RolledBack> {
    const project = ProjectName.parse(projectName);
    const name = PreviewName.parse(previewName);
    const reviewed = expected === undefined ? undefined : ReleaseId.parse(expected);
    return this.lock.withProject(user, project, async () => {
      const preview = await this.retention.preview(user, project, name);
      if (reviewed !== undefined && preview.release !== reviewed) throw new PreviewMoved(preview.release, reviewed);
      const previous = await this.releases.liveRelease(user, project);
      const rules = await rulesOfRelease(this.rules, { user, project, release: preview.release });
      await this.webServer.willServe({ site: { user, project }, release: preview.release, rules });
      // Live from now on: live history that a plain rollback may return to and retention keeps.
      await this.records.markLive(user, project, preview.release);
      await this.releases.activate(user, project, preview.release);
      this.precompression.queue(user, project, preview.release);
      return { release: preview.release, previous };
    });
  }
}
