import type { SessionObjects } from '../../application/ports/session-objects.js';
import type { StagedRelease, Staging } from '../../application/ports/staging.js';
import type { DeployActivity } from './deploy-activity.js';

/** Staging whose unpacking and assembling count as deploy activity (deploy-activity.ts). */
export class ActivityStaging implements Staging {
  constructor(
    private readonly staging: Staging,
    private readonly activity: DeployActivity,
  ) {}

  stage(...args: Parameters<Staging['stage']>): Promise<StagedRelease> {
    return this.activity.track(() => this.staging.stage(...args));
  }

  assemble(...args: Parameters<Staging['assemble']>): Promise<StagedRelease> {
    return this.activity.track(() => this.staging.assemble(...args));
  }

  discard(staged: StagedRelease): Promise<void> {
    return this.staging.discard(staged);
  }

  removeLeftovers(): Promise<string[]> {
    return this.staging.removeLeftovers();
  }
}

/** Session objects whose uploads count as deploy activity. */
export class ActivitySessionObjects implements SessionObjects {
  constructor(
    private readonly objects: SessionObjects,
    private readonly activity: DeployActivity,
  ) {}

  missing(...args: Parameters<SessionObjects['missing']>): ReturnType<SessionObjects['missing']> {
    return this.objects.missing(...args);
  }

  shareUploads(...args: Parameters<SessionObjects['shareUploads']>): ReturnType<SessionObjects['shareUploads']> {
    return this.objects.shareUploads(...args);
  }

  receive(...args: Parameters<SessionObjects['receive']>): ReturnType<SessionObjects['receive']> {
    return this.activity.track(() => this.objects.receive(...args));
  }

  removeUploads(session: string): Promise<void> {
    return this.objects.removeUploads(session);
  }

  sessionsWithUploads(): Promise<string[]> {
    return this.objects.sessionsWithUploads();
  }
}
