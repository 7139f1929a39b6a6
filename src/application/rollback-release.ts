import { inject, injectable } from 'inversify';
import { ProjectName } from '../domain/project-name.js';
import { ReleaseId } from '../domain/release-id.js';
import { rollbackTarget } from '../domain/rollback.js';
import type { Username } from '../domain/username.js';
import { existingProject } from './existing-project.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';

export interface RolledBack {
  readonly release: ReleaseId;
  readonly previous: ReleaseId | undefined;
}

/**
 * Points the live site at an older release with the same lock and the same atomic swap
 * as a deploy. Retention does not run: a rollback removes nothing.
 */
@injectable()
export class RollbackRelease {
  constructor(
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
  ) {}

  async execute(user: Username, projectName: string, requested?: string): Promise<RolledBack> {
    const project = ProjectName.parse(projectName);
    const wanted = requested === undefined ? undefined : ReleaseId.parse(requested);
    return this.lock.withProject(user, project, async () => {
      const { ids, live } = await existingProject(this.releases, user, project);
      const release = rollbackTarget(ids, live, wanted);
      await this.releases.activate(user, project, release);
      return { release, previous: live };
    });
  }
}
