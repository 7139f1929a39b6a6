import { inject, injectable } from 'inversify';
import { UserNotFound } from '../domain/errors.js';
import { Username } from '../domain/username.js';
import { forgetClosedSessions } from './closed-sessions.js';
import { DEPLOY_KEY_STORE, type DeployKeyStore } from './ports/deploy-key-store.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { DEPLOY_SESSIONS, type DeploySessions } from './ports/deploy-sessions.js';
import { DOMAIN_LINKS, type DomainLinks } from './ports/domain-links.js';
import { DOMAIN_STORE, type DomainStore } from './ports/domain-store.js';
import { PREVIEW_LINKS, type PreviewLinks } from './ports/preview-links.js';
import { RELEASE_PREPARATION, type ReleasePreparation } from './ports/release-preparation.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';
import { TOKEN_STORE, type TokenStore } from './ports/token-store.js';
import { WEB_SERVER, type WebServer } from './ports/web-server.js';

export type FilesMode = 'persist' | 'delete';

/**
 * Deletes a user, its deploy keys, its custom domains and its open deploy sessions (their
 * uploads, and what was prepared of their releases, ReleasePreparation); with files
 * 'delete' also its live links, previews and releases. The user lock waits for the
 * user's running deploys to publish, and those still waiting find the user gone, so no
 * deploy writes into a tree that is being removed. Sessions go because they are found by
 * user name: a user created again under that name must not inherit a session, or its
 * uploads (one a session opened meanwhile left, the sweep removes: its session is gone).
 */
@injectable()
export class DeleteUser {
  constructor(
    @inject(TOKEN_STORE) private readonly tokens: TokenStore,
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

  async execute(input: { username: string; files: FilesMode }): Promise<void> {
    const user = Username.parse(input.username);
    await this.lock.withUser(user, async () => {
      if (!(await this.tokens.exists(user))) throw new UserNotFound();
      // What the user holds goes before the user does: a crash part-way leaves a user that a
      // DELETE again finishes, never a user gone whose sites are still served, or whose
      // domains or files a user created again under the name would inherit. Keys first:
      // should anything after fail, no key outlives what it deploys to.
      await this.keys.removeUser(user);
      await this.domainLinks.unlinkSites(user);
      await this.domains.removeUser(user);
      if (input.files === 'delete') {
        await this.previews.removeUser(user);
        await this.releases.removeUserFiles(user);
        await this.webServer.forget({ user });
      }
      if (!(await this.tokens.remove(user))) throw new UserNotFound();
      // Sessions are opened without the user lock: once the user is gone, none can be opened meanwhile.
      const open = (await this.sessions.listUser(user)).map((session) => session.id);
      await this.sessions.removeUser(user);
      // Their uploads go now, whatever happens to the files: no one can reach them any more.
      await forgetClosedSessions(this.objects, this.preparation, open);
      // What was prepared for those sessions links the user's bytes: gone with them.
      await this.preparation.forgetPreparedFor(user);
    });
  }
}
