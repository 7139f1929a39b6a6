import { inject, injectable } from 'inversify';
import { PREVIEW_LINKS, type PreviewLinks } from './ports/preview-links.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { STAGING, type Staging } from './ports/staging.js';

/**
 * Run at start-up: a crash can leave staging areas and temporary links, never a
 * half-published release, so only those are removed and everything else is left alone.
 */
@injectable()
export class CleanUpLeftovers {
  constructor(
    @inject(STAGING) private readonly staging: Staging,
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(PREVIEW_LINKS) private readonly previews: PreviewLinks,
  ) {}

  async execute(): Promise<string[]> {
    return [...(await this.staging.removeLeftovers()), ...(await this.releases.removeLeftovers()), ...(await this.previews.removeLeftovers())];
  }
}
