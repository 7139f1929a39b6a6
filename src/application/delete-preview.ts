import { inject, injectable } from 'inversify';
import { PreviewNotFound } from '../domain/errors.js';
import { PreviewName } from '../domain/preview.js';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { PREVIEW_LINKS, type PreviewLinks } from './ports/preview-links.js';
import { WEB_SERVER, type WebServer } from './ports/web-server.js';
import { PruneReleases } from './prune-releases.js';

/** Removes a preview's link; its release is then pruned like any other beyond the limit. */
@injectable()
export class DeletePreview {
  constructor(
    @inject(PREVIEW_LINKS) private readonly previews: PreviewLinks,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
    @inject(PruneReleases) private readonly prune: PruneReleases,
    @inject(WEB_SERVER) private readonly webServer: WebServer,
  ) {}

  async execute(user: Username, projectName: string, previewName: string): Promise<void> {
    const project = ProjectName.parse(projectName);
    const name = PreviewName.parse(previewName);
    await this.lock.withProject(user, project, async () => {
      await this.prune.preview(user, project, name);
      if (!(await this.previews.unlink(user, project, name))) throw new PreviewNotFound();
      await this.webServer.forget({ user, project, preview: name });
      await this.prune.execute(user, project);
    });
  }
}
