import { inject, injectable } from 'inversify';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { PREVIEW_LINKS, type PreviewLinks } from './ports/preview-links.js';
import { PruneReleases } from './prune-releases.js';

/**
 * The sweep: every project with previews, under its lock, loses the links of previews
 * past PREVIEW_TTL_SECONDS and is pruned, so their releases go too. Returns the releases removed.
 */
@injectable()
export class ExpirePreviews {
  constructor(
    @inject(PREVIEW_LINKS) private readonly previews: PreviewLinks,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
    @inject(PruneReleases) private readonly prune: PruneReleases,
  ) {}

  async execute(): Promise<number> {
    let removed = 0;
    for (const { user, project } of await this.previews.projectsWithPreviews()) {
      removed += (await this.lock.withProject(user, project, () => this.prune.execute(user, project))).length;
    }
    return removed;
  }
}
