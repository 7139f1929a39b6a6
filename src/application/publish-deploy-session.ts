import { inject, injectable } from 'inversify';
import { objectScope } from '../domain/deploy-session.js';
import { DeploySessionNotFound } from '../domain/errors.js';
import type { Username } from '../domain/username.js';
import { DeploySessionAccess } from './deploy-session-access.js';
import { PublishRelease, type Deployed } from './publish-release.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_SESSIONS, type DeploySessions } from './ports/deploy-sessions.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';
import { STAGING, type Staging } from './ports/staging.js';

/**
 * The last step of an incremental deploy: the release is built from the user's store (a
 * deploy key's: its project's content, whatever the open found) and the session's
 * uploads (ObjectsMissing if some object is in neither: the client
 * uploads it and publishes again), then published as any deploy is, and the session
 * ends. Two publishes of one session publish once: the second finds it closed.
 */
@injectable()
export class PublishDeploySession {
  constructor(
    @inject(DeploySessionAccess) private readonly access: DeploySessionAccess,
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
    @inject(STAGING) private readonly staging: Staging,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
    @inject(PublishRelease) private readonly publisher: PublishRelease,
    @inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute(input: { user: Username; token: string; id: string }): Promise<Deployed> {
    const { session, manifest } = await this.access.useWithManifest(input.user, input.token, input.id);
    const started = this.clock.now().getTime();
    const staged = await this.staging.assemble(session.user, session.id, manifest, objectScope(session.keyId, session.project));
    const deployed = await this.publisher.execute({
      user: session.user,
      token: input.token,
      project: session.project,
      preview: session.preview,
      staged,
      stageMs: this.clock.now().getTime() - started,
      claim: async () => {
        // Whether it is still open, not the session itself: its manifest was read already.
        if (!(await this.sessions.stillOpen([session.id])).has(session.id)) throw new DeploySessionNotFound();
      },
    });
    // The release is live; a session left open by a failure here expires like any other.
    await this.sessions.close(session.id).catch(() => false);
    await this.objects.removeUploads(session.id).catch(() => undefined);
    return deployed;
  }
}
