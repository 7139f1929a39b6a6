import { inject, injectable } from 'inversify';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { existingProject } from './existing-project.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { RELEASE_FS, type ReleaseFs } from './ports/release-fs.js';

/** Removes a project's live link and all its releases; a running deploy of it publishes first. */
@injectable()
export class DeleteProject {
  constructor(
    @inject(RELEASE_FS) private readonly releases: ReleaseFs,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
  ) {}

  async execute(user: Username, projectName: string): Promise<void> {
    const project = ProjectName.parse(projectName);
    await this.lock.withProject(user, project, async () => {
      await existingProject(this.releases, user, project);
      await this.releases.removeProject(user, project);
    });
  }
}
