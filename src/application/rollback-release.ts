import { inject, injectable } from 'inversify';
import { ProjectName } from '../domain/project-name.js';
import { ReleaseId } from '../domain/release-id.js';
import { rollbackTarget } from '../domain/rollback.js';
import type { Username } from '../domain/username.js';
import { existingProject } from './existing-project.js';
import { previewOnlyReleases } from './prune-releases.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { DEPLOY_RECORDS, type DeployRecords } from './ports/deploy-records.js';
import { RELEASE_RULES, type ReleaseRules } from './ports/release-rules.js';
import { PRECOMPRESSION, type Precompression } from './ports/precompression.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { WEB_SERVER, type WebServer } from './ports/web-server.js';
import { rulesOfRelease } from './release-site-rules.js';

export interface RolledBack {
  readonly release: ReleaseId;
  readonly previous: ReleaseId | undefined;
}

/**
 * Points the live site at an older release with the same lock and the same atomic swap
 * as a deploy. Back one goes through live history only; a preview's release named
 * outright is marked live first, so retention counts it as history from then on.
 * Retention does not run: a rollback removes nothing.
 */
@injectable()
export class RollbackRelease {
  constructor(
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
    @inject(DEPLOY_RECORDS) private readonly records: DeployRecords,
    @inject(RELEASE_RULES) private readonly rules: ReleaseRules,
    @inject(WEB_SERVER) private readonly webServer: WebServer,
    @inject(PRECOMPRESSION) private readonly precompression: Precompression,
  ) {}

  async execute(user: Username, projectName: string, requested?: string): Promise<RolledBack> {
    const project = ProjectName.parse(projectName);
    const wanted = requested === undefined ? undefined : ReleaseId.parse(requested);
    return this.lock.withProject(user, project, async () => {
      const [{ ids, live }, previewOnly] = await Promise.all([existingProject(this.releases, user, project), previewOnlyReleases(this.records, user, project)]);
      const release = rollbackTarget(ids, live, wanted, previewOnly);
      // Its own rules switch with its files (a release from before rules gets them compiled).
      const rules = await rulesOfRelease(this.rules, { user, project, release });
      await this.webServer.willServe({ site: { user, project }, release, rules });
      if (previewOnly.includes(release)) await this.records.markLive(user, project, release);
      await this.releases.activate(user, project, release);
      this.precompression.queue(user, project, release);
      return { release, previous: live };
    });
  }
}
