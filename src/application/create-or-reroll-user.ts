import { inject, injectable } from 'inversify';
import type { Token } from '../domain/token.js';
import { Username } from '../domain/username.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { TOKEN_GENERATOR, type TokenGenerator } from './ports/token-generator.js';
import { TOKEN_STORE, type TokenStore } from './ports/token-store.js';

export interface IssuedToken {
  readonly user: Username;
  readonly token: Token;
  readonly outcome: 'created' | 'rerolled';
}

/**
 * Creates a user, or issues a new token for an existing one (the old token dies). The
 * user lock waits for the user's deploys that are publishing, so once this returns no
 * deploy signed in with the old token can publish: those not yet publishing re-check it.
 */
@injectable()
export class CreateOrRerollUser {
  constructor(
    @inject(TOKEN_STORE) private readonly tokens: TokenStore,
    @inject(TOKEN_GENERATOR) private readonly generator: TokenGenerator,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
  ) {}

  async execute(input: { username: string }): Promise<IssuedToken> {
    const user = Username.parse(input.username);
    const token = this.generator.generate();
    const outcome = await this.lock.withUser(user, () => this.tokens.save(user, token));
    return { user, token, outcome };
  }
}
