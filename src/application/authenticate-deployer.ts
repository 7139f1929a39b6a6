import { inject, injectable } from 'inversify';
import { Unauthorized } from '../domain/errors.js';
import { resolveDeployer, type Deployer } from './deployer.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_KEY_STORE, type DeployKeyStore } from './ports/deploy-key-store.js';
import { TOKEN_STORE, type TokenStore } from './ports/token-store.js';

/**
 * Signs in a deploy, before its body is read: a user token, or a deploy key. Which
 * project the key may deploy is checked once the request names one; only then, allowed,
 * is its use recorded (deployer.ts, assertStillAuthorised).
 */
@injectable()
export class AuthenticateDeployer {
  constructor(
    @inject(TOKEN_STORE) private readonly tokens: TokenStore,
    @inject(DEPLOY_KEY_STORE) private readonly keys: DeployKeyStore,
    @inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute(presented: string | undefined): Promise<Deployer> {
    const now = this.clock.now();
    const deployer = await resolveDeployer(this.tokens, this.keys, now, presented);
    if (deployer === undefined) throw new Unauthorized();
    return deployer;
  }
}
