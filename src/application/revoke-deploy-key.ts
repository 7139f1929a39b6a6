import { inject, injectable } from 'inversify';
import { DeployKeyNotFound } from '../domain/errors.js';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { DEPLOY_KEY_STORE, type DeployKeyStore } from './ports/deploy-key-store.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';

/**
 * Revokes a key at once. Under the project lock, so a deploy the key signed that is
 * publishing finishes first, and every other re-checks the key and finds it gone:
 * once this returns, nothing the key signed can go live.
 */
@injectable()
export class RevokeDeployKey {
  constructor(
    @inject(DEPLOY_KEY_STORE) private readonly keys: DeployKeyStore,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
  ) {}

  async execute(user: Username, projectName: string, id: string): Promise<void> {
    const project = ProjectName.parse(projectName);
    await this.lock.withProject(user, project, async () => {
      if (!(await this.keys.remove(user, project, id))) throw new DeployKeyNotFound();
    });
  }
}
