import { inject, injectable } from 'inversify';
import { DOMAIN_LINKS, type DomainLinks } from './ports/domain-links.js';
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
    @inject(DOMAIN_LINKS) private readonly domains: DomainLinks,
  ) {}

  async execute(): Promise<string[]> {
    return [...(await this.staging.removeLeftovers()), ...(await this.releases.removeLeftovers()), ...(await this.previews.removeLeftovers()), ...(await this.domains.removeLeftovers())];
  }
}
