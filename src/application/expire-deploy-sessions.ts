import { inject, injectable } from 'inversify';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_SESSIONS, type DeploySessions } from './ports/deploy-sessions.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';
import { STAGING, type Staging } from './ports/staging.js';

/**
 * The sweep: sessions past their expiry are closed and their uploads removed; so are
 * uploads, and releases prepared for a publish (Staging.prepare), whose session is gone (closed by another replica, its user deleted, or a crash
 * between the two). A session is opened before anything is uploaded to it, so uploads
 * with no open session are never a session's in the making. Returns the sessions swept.
 */
@injectable()
export class ExpireDeploySessions {
  constructor(
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
    @inject(CLOCK) private readonly clock: Clock,
    @inject(STAGING) private readonly staging: Staging,
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
    // Releases prepared here for sessions that ended: expired, or published or cancelled
    // through another replica.
    const prepared = this.staging.preparedSessions();
    const live = await this.sessions.stillOpen(prepared);
    for (const id of prepared) if (!live.has(id)) await this.staging.forgetPrepared(id);
    return expired.length + orphans.length;
  }
}
