import { inject, injectable } from 'inversify';
import type { Username } from '../domain/username.js';
import { DeploySessionAccess } from './deploy-session-access.js';
import { DEPLOY_SESSIONS, type DeploySessions } from './ports/deploy-sessions.js';
import { RELEASE_PREPARATION, type ReleasePreparation } from './ports/release-preparation.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';

/** A client giving up its incremental deploy: the session, what it uploaded and what was prepared of its release go. */
@injectable()
export class CancelDeploySession {
  constructor(
    @inject(DeploySessionAccess) private readonly access: DeploySessionAccess,
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
    @inject(RELEASE_PREPARATION) private readonly preparation: ReleasePreparation,
  ) {}

  async execute(input: { user: Username; token: string; id: string }): Promise<void> {
    const session = await this.access.use(input.user, input.token, input.id);
    await this.sessions.close(session.id);
    await this.objects.removeUploads(session.id);
    await this.preparation.forgetPrepared(session.id);
  }
}
