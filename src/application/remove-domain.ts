import { inject, injectable } from 'inversify';
import { DomainNotFound } from '../domain/errors.js';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { DOMAIN_LINKS, type DomainLinks } from './ports/domain-links.js';
import { DOMAIN_STORE, type DomainStore } from './ports/domain-store.js';
import { domainInPath, ownClaim } from './project-domain.js';

/**
 * Removes the project's claim on a domain. When it was the verified one, the link goes
 * first, so the site stops showing there before the domain is free for others.
 */
@injectable()
export class RemoveDomain {
  constructor(
    @inject(DOMAIN_STORE) private readonly domains: DomainStore,
    @inject(DOMAIN_LINKS) private readonly links: DomainLinks,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
  ) {}

  async execute(user: Username, projectName: string, domainText: string): Promise<void> {
    const project = ProjectName.parse(projectName);
    const domain = domainInPath(domainText);
    await this.lock.withProject(user, project, async () => {
      const claim = await ownClaim(this.domains, user, project, domain);
      if (claim.verifiedAt !== undefined) await this.links.unlink(domain);
      if (!(await this.domains.remove(user, project, domain))) throw new DomainNotFound();
    });
  }
}
