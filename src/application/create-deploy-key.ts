import { inject, injectable } from 'inversify';
import { keyExpiry, KeyName, KeyScope } from '../domain/deploy-key.js';
import { ProjectName } from '../domain/project-name.js';
import type { Token } from '../domain/token.js';
import type { Username } from '../domain/username.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_KEY_STORE, type DeployKeyStore } from './ports/deploy-key-store.js';
import { TOKEN_GENERATOR, type TokenGenerator } from './ports/token-generator.js';

export interface NewKeyRequest {
  readonly name: string;
  readonly scope: string;
  readonly expiresInDays?: number;
}

/**
 * Makes a deploy key for one of the user's projects (which need not exist yet: a
 * pipeline's first deploy may create it). The token is returned here only.
 */
@injectable()
export class CreateDeployKey {
  constructor(
    @inject(DEPLOY_KEY_STORE) private readonly keys: DeployKeyStore,
    @inject(TOKEN_GENERATOR) private readonly generator: TokenGenerator,
    @inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute(user: Username, projectName: string, request: NewKeyRequest): Promise<{ id: string; token: Token }> {
    const project = ProjectName.parse(projectName);
    const name = KeyName.parse(request.name);
    const scope = KeyScope.parse(request.scope);
    const createdAt = this.clock.now();
    const expiresAt = keyExpiry(createdAt, request.expiresInDays);
    const token = this.generator.generate();
    const id = await this.keys.add({ user, project, name, scope, createdAt, expiresAt }, token);
    return { id, token };
  }
}
