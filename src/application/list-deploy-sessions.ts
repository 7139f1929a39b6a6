import { inject, injectable } from 'inversify';
import { isSessionExpired } from '../domain/deploy-session.js';
import type { Username } from '../domain/username.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_SESSIONS, type DeploySessions, type DeploySessionSummary } from './ports/deploy-sessions.js';

/**
 * A user's open incremental deploys, oldest first, their keys' included (by the key's id),
 * so that the owner can see what holds a place and cancel it. Listing uses none of them:
 * no expiry moves. An expired one the sweep has not removed yet is not listed.
 */
@injectable()
export class ListDeploySessions {
  constructor(
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
    @inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute(user: Username): Promise<DeploySessionSummary[]> {
    const now = this.clock.now();
    return (await this.sessions.listUser(user)).filter((session) => !isSessionExpired(session.expiresAt, now));
  }
}
