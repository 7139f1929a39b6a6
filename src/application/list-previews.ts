import { inject, injectable } from 'inversify';
import { isPreviewExpired, previewExpiry, type Preview } from '../domain/preview.js';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEFAULT_PREVIEW_SETTINGS, DEPLOY_SETTINGS, type DeploySettings } from './ports/deploy-settings.js';
import { PREVIEW_LINKS, type PreviewLinks } from './ports/preview-links.js';

export interface ListedPreview extends Preview {
  readonly expiresAt: Date;
}

/** A project's previews still in their time, by name (an expired one waits for the sweep, unlisted). */
@injectable()
export class ListPreviews {
  constructor(
    @inject(PREVIEW_LINKS) private readonly previews: PreviewLinks,
    @inject(DEPLOY_SETTINGS) private readonly settings: DeploySettings,
    @inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute(user: Username, projectName: string): Promise<{ project: ProjectName; previews: ListedPreview[] }> {
    const { ttlSeconds } = this.settings.previews ?? DEFAULT_PREVIEW_SETTINGS;
    const now = this.clock.now();
    const project = ProjectName.parse(projectName);
    const previews = await this.previews.list(user, project);
    return { project, previews: previews.filter((p) => !isPreviewExpired(p, ttlSeconds, now)).map((p) => ({ ...p, expiresAt: previewExpiry(p, ttlSeconds) })) };
  }
}
