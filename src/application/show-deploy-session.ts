import { inject, injectable } from 'inversify';
import type { Username } from '../domain/username.js';
import { DeploySessionAccess, type SessionState } from './deploy-session-access.js';

/** Resuming an incremental deploy: what the session still lacks, asked again at any time. */
@injectable()
export class ShowDeploySession {
  constructor(@inject(DeploySessionAccess) private readonly access: DeploySessionAccess) {}

  async execute(input: { user: Username; token: string; id: string }): Promise<SessionState> {
    const { session, manifest } = await this.access.useWithManifest(input.user, input.token, input.id);
    return this.access.state(session, manifest);
  }
}
