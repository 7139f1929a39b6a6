import { inject, injectable } from 'inversify';
import { DeployKeyNotFound } from '../domain/errors.js';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { forgetClosedSessions } from './closed-sessions.js';
import { DEPLOY_KEY_STORE, type DeployKeyStore } from './ports/deploy-key-store.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { DEPLOY_SESSIONS, type DeploySessions } from './ports/deploy-sessions.js';
import { RELEASE_PREPARATION, type ReleasePreparation } from './ports/release-preparation.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';

/**
 * Revokes a key at once. Under the project lock, so a deploy the key signed that is
 * publishing finishes first, and every other re-checks the key and finds it gone:
 * once this returns, nothing the key signed can go live. Its incremental deploys'
 * sessions close too, so none holds a place (DEPLOY_SESSIONS_MAX) or disk until it expires.
 */
@injectable()
export class RevokeDeployKey {
  constructor(
    @inject(DEPLOY_KEY_STORE) private readonly keys: DeployKeyStore,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
    @inject(RELEASE_PREPARATION) private readonly preparation: ReleasePreparation,
  ) {}

  async execute(user: Username, projectName: string, id: string): Promise<void> {
    const project = ProjectName.parse(projectName);
    await this.lock.withProject(user, project, async () => {
      if (!(await this.keys.remove(user, project, id))) throw new DeployKeyNotFound();
      // After the key: a session it opens meanwhile finds the key gone once open (OpenDeploySession).
      await forgetClosedSessions(this.objects, this.preparation, await this.sessions.closeOpenedByKeys(user, project, id));
    });
  }
}
