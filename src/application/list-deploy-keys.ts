import { inject, injectable } from 'inversify';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { DEPLOY_KEY_STORE, type DeployKey, type DeployKeyStore } from './ports/deploy-key-store.js';

/** A project's deploy keys, oldest first, expired ones included (never their tokens). */
@injectable()
export class ListDeployKeys {
  constructor(@inject(DEPLOY_KEY_STORE) private readonly keys: DeployKeyStore) {}

  async execute(user: Username, projectName: string): Promise<DeployKey[]> {
    return this.keys.list(user, ProjectName.parse(projectName));
  }
}
