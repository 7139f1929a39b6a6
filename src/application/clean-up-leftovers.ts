import { inject, injectable } from 'inversify';
import { PREVIEW_LINKS, type PreviewLinks } from './ports/preview-links.js';
import { RELEASE_FS, type ReleaseFs } from './ports/release-fs.js';

/**
 * Run at start-up: a crash can leave staging areas and temporary links, never a
 * half-published release, so only those are removed and everything else is left alone.
 */
@injectable()
export class CleanUpLeftovers {
  constructor(
    @inject(RELEASE_FS) private readonly releases: ReleaseFs,
    @inject(PREVIEW_LINKS) private readonly previews: PreviewLinks,
  ) {}

  async execute(): Promise<string[]> {
    return [...(await this.releases.removeLeftovers()), ...(await this.previews.removeLeftovers())];
  }
}
