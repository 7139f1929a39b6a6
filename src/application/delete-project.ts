import { inject, injectable } from 'inversify';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { forgetClosedSessions } from './closed-sessions.js';
import { existingProject } from './existing-project.js';
import { DEPLOY_KEY_STORE, type DeployKeyStore } from './ports/deploy-key-store.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { DEPLOY_SESSIONS, type DeploySessions } from './ports/deploy-sessions.js';
import { DOMAIN_LINKS, type DomainLinks } from './ports/domain-links.js';
import { DOMAIN_STORE, type DomainStore } from './ports/domain-store.js';
import { PREVIEW_LINKS, type PreviewLinks } from './ports/preview-links.js';
import { RELEASE_PREPARATION, type ReleasePreparation } from './ports/release-preparation.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';
import { WEB_SERVER, type WebServer } from './ports/web-server.js';

/**
 * Removes a project's live link, its previews, all its releases, its deploy keys and custom domains, and
 * closes the sessions those keys opened; a running deploy of it publishes first.
 */
@injectable()
export class DeleteProject {
  constructor(
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
    @inject(DEPLOY_KEY_STORE) private readonly keys: DeployKeyStore,
    @inject(PREVIEW_LINKS) private readonly previews: PreviewLinks,
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
    @inject(RELEASE_PREPARATION) private readonly preparation: ReleasePreparation,
    @inject(WEB_SERVER) private readonly webServer: WebServer,
    @inject(DOMAIN_STORE) private readonly domains: DomainStore,
    @inject(DOMAIN_LINKS) private readonly domainLinks: DomainLinks,
  ) {}

  async execute(user: Username, projectName: string): Promise<void> {
    const project = ProjectName.parse(projectName);
    await this.lock.withProject(user, project, async () => {
      await existingProject(this.releases, user, project);
      // Keys first: should removing the files then fail, no key can deploy it again.
      await this.keys.removeProject(user, project);
      // Its domains' links, then their claims: no domain shows it, and none stays claimed.
      await this.domainLinks.unlinkSites(user, project);
      await this.domains.removeProject(user, project);
      await forgetClosedSessions(this.objects, this.preparation, await this.sessions.closeOpenedByKeys(user, project));
      // The previews' links before the releases they point to, as the live link is.
      await this.previews.removeProject(user, project);
      await this.releases.removeProject(user, project);
      await this.webServer.forget({ user, project });
    });
  }
}
