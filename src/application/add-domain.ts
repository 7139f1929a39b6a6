import { inject, injectable } from 'inversify';
import { claimDecision, DomainName, type DomainClaim } from '../domain/custom-domain.js';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { existingProject } from './existing-project.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { DOMAIN_SETTINGS, type DomainSettings } from './ports/domain-settings.js';
import { DOMAIN_STORE, type DomainStore } from './ports/domain-store.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { TOKEN_GENERATOR, type TokenGenerator } from './ports/token-generator.js';

/**
 * Claims a custom domain for a project and returns the TXT record that will prove it.
 * Under the project's lock, so DOMAINS_MAX holds against concurrent adds and a project
 * being deleted gets no claim after its claims went.
 */
@injectable()
export class AddDomain {
  constructor(
    @inject(DOMAIN_STORE) private readonly domains: DomainStore,
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
    @inject(TOKEN_GENERATOR) private readonly generator: TokenGenerator,
    @inject(CLOCK) private readonly clock: Clock,
    @inject(DOMAIN_SETTINGS) private readonly settings: DomainSettings,
  ) {}

  async execute(user: Username, projectName: string, domainText: unknown): Promise<DomainClaim> {
    const project = ProjectName.parse(projectName);
    const domain = DomainName.parse(domainText, this.settings.reservedHosts);
    return this.lock.withProject(user, project, async () => {
      await existingProject(this.releases, user, project);
      const [claims, own] = await Promise.all([this.domains.claimsOf(domain), this.domains.list(user, project)]);
      const decision = claimDecision(user, project, claims, own.length, this.settings.max);
      if (decision.kind === 'existing') return decision.claim;
      // A token's 32 random alphanumerics: the challenge is this claim's own, never guessable.
      const challenge = this.generator.generate();
      return this.domains.add({ user, project, domain, challenge, createdAt: this.clock.now(), verifiedAt: undefined });
    });
  }
}
