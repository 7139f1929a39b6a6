import { inject, injectable } from 'inversify';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_SESSIONS, type DeploySessions } from './ports/deploy-sessions.js';
import { RELEASE_PREPARATION, type ReleasePreparation } from './ports/release-preparation.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';

/**
 * The sweep: sessions past their expiry are closed and their uploads removed. So are the
 * uploads, and the releases prepared for a publish (ReleasePreparation), of sessions that
 * are gone: closed by another replica, their user deleted, or a crash between the close
 * and the removal. A session is opened before anything is uploaded to it or prepared for
 * it, so neither is ever a session's in the making. Returns what it swept.
 */
@injectable()
export class ExpireDeploySessions {
  constructor(
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
    @inject(CLOCK) private readonly clock: Clock,
    @inject(RELEASE_PREPARATION) private readonly preparation: ReleasePreparation,
  ) {}

  async execute(): Promise<number> {
    const expired = await this.sessions.expired(this.clock.now());
    for (const id of expired) {
      await this.sessions.close(id);
      await this.objects.removeUploads(id);
    }
    const uploaded = await this.objects.sessionsWithUploads();
    const open = await this.sessions.stillOpen(uploaded);
    const orphans = uploaded.filter((id) => !open.has(id));
    for (const id of orphans) await this.objects.removeUploads(id);
    const prepared = this.preparation.preparedSessions();
    const live = await this.sessions.stillOpen(prepared);
    const ended = prepared.filter((id) => !live.has(id));
    for (const id of ended) await this.preparation.forgetPrepared(id);
    return expired.length + orphans.length + ended.length;
  }
}
