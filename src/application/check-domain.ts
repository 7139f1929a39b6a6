import { inject, injectable } from 'inversify';
import { DomainName } from '../domain/custom-domain.js';
import { DOMAIN_STORE, type DomainStore } from './ports/domain-store.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';

/**
 * Whether a host should be served (and so get a certificate): verified by a project that
 * has a live release. No DNS lookup: it is asked before every certificate is issued.
 */
@injectable()
export class CheckDomain {
  constructor(
    @inject(DOMAIN_STORE) private readonly domains: DomainStore,
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
  ) {}

  async execute(domainText: unknown): Promise<boolean> {
    let domain: DomainName;
    try {
      domain = DomainName.parse(domainText);
    } catch {
      return false;
    }
    const claim = await this.domains.verified(domain);
    if (claim === undefined) return false;
    return (await this.releases.liveRelease(claim.user, claim.project)) !== undefined;
  }
}
