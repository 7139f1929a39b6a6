import { inject, injectable } from 'inversify';
import { assertChallengeMet, assertMayVerify, challengeName, type DomainClaim } from '../domain/custom-domain.js';
import { DomainInUse } from '../domain/errors.js';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { existingProject } from './existing-project.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { DNS_TXT, type DnsTxt } from './ports/dns-txt.js';
import { DOMAIN_LINKS, type DomainLinks } from './ports/domain-links.js';
import { DOMAIN_STORE, type DomainStore } from './ports/domain-store.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { domainInPath, ownClaim } from './project-domain.js';

/**
 * Looks up the challenge's TXT records and, when one holds the claim's value, marks the
 * claim verified and links the domain to the project's live site. The lookup runs
 * outside the project's lock (it may take seconds; deploys need not wait for it); the
 * marking and the link run under it, after checking the claim is still there.
 * A claim verified already is linked again with no lookup: verification proves control once.
 */
@injectable()
export class VerifyDomain {
  constructor(
    @inject(DOMAIN_STORE) private readonly domains: DomainStore,
    @inject(DOMAIN_LINKS) private readonly links: DomainLinks,
    @inject(DNS_TXT) private readonly dns: DnsTxt,
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
    @inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute(user: Username, projectName: string, domainText: string): Promise<DomainClaim> {
    const project = ProjectName.parse(projectName);
    const domain = domainInPath(domainText);
    await existingProject(this.releases, user, project);
    const claim = await ownClaim(this.domains, user, project, domain);
    if (claim.verifiedAt === undefined) {
      assertMayVerify(user, project, await this.domains.claimsOf(domain));
      assertChallengeMet(claim, await this.dns.lookup(challengeName(domain)));
    }
    return this.lock.withProject(user, project, async () => {
      const now = await ownClaim(this.domains, user, project, domain);
      // Removed and added again meanwhile: the record proved the old value, not this one.
      if (now.challenge !== claim.challenge) assertChallengeMet(now, { records: [claim.challenge] });
      if (!(await this.domains.markVerified(user, project, domain, this.clock.now()))) throw new DomainInUse();
      await this.links.link(domain, user, project);
      return ownClaim(this.domains, user, project, domain);
    });
  }
}
