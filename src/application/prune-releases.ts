import { inject, injectable } from 'inversify';
import type { ProjectName } from '../domain/project-name.js';
import type { ReleaseId } from '../domain/release-id.js';
import { releasesToPrune } from '../domain/retention.js';
import type { Username } from '../domain/username.js';
import { DEPLOY_SETTINGS, type DeploySettings } from './ports/deploy-settings.js';
import { RELEASE_FS, type ReleaseFs } from './ports/release-fs.js';

/** Removes the oldest releases beyond the retention limit. The caller holds the project lock. */
@injectable()
export class PruneReleases {
  constructor(
    @inject(RELEASE_FS) private readonly releases: ReleaseFs,
    @inject(DEPLOY_SETTINGS) private readonly settings: DeploySettings,
  ) {}

  async execute(user: Username, project: ProjectName): Promise<ReleaseId[]> {
    const [all, live] = await Promise.all([this.releases.releases(user, project), this.releases.liveRelease(user, project)]);
    const doomed = releasesToPrune(all, live, this.settings.releasesKeep);
    for (const id of doomed) await this.releases.removeRelease(user, project, id);
    return doomed;
  }
}
