import { inject, injectable } from 'inversify';
import type { Username } from '../domain/username.js';
import { DeploySessionAccess, type SessionState } from './deploy-session-access.js';

/** Resuming an incremental deploy: what the session still lacks, asked again at any time. */
@injectable()
export class ShowDeploySession {
  constructor(@inject(DeploySessionAccess) private readonly access: DeploySessionAccess) {}

  async execute(input: { user: Username; token: string; id: string }): Promise<SessionState> {
    // Worked out before the session is kept alive: a manifest found lying (an object stored since at another size) changes nothing.
    let state: SessionState | undefined;
    await this.access.useWithManifest(input.user, input.token, input.id, async (session, manifest) => {
      state = await this.access.state(session, manifest);
    });
    return state!;
  }
}
