import { inject, injectable } from 'inversify';
import type { DomainClaim } from '../domain/custom-domain.js';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { existingProject } from './existing-project.js';
import { DOMAIN_STORE, type DomainStore } from './ports/domain-store.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';

/** A project's own claims, verified or not; never another project's claim on the same domain. */
@injectable()
export class ListDomains {
  constructor(
    @inject(DOMAIN_STORE) private readonly domains: DomainStore,
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
  ) {}

  async execute(user: Username, projectName: string): Promise<DomainClaim[]> {
    const project = ProjectName.parse(projectName);
    await existingProject(this.releases, user, project);
    return this.domains.list(user, project);
  }
}
