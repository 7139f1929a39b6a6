import { inject, injectable } from 'inversify';
import { uploadableObjects } from '../domain/object-batch.js';
import type { Username } from '../domain/username.js';
import { DeploySessionAccess } from './deploy-session-access.js';
import { DeploySessionNotFound } from '../domain/errors.js';
import { DEPLOY_SESSIONS, type DeploySession, type DeploySessions } from './ports/deploy-sessions.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';

export interface UploadObjectsInput {
  readonly user: Username;
  readonly token: string;
  readonly id: string;
  /** A gzip-compressed tar of objects, each named by its digest. */
  readonly batch: AsyncIterable<Uint8Array>;
  readonly signal: AbortSignal;
}

/**
 * One batch of an incremental deploy's objects: each must be one the session was told is
 * missing (the domain's uploadableObjects), of the manifest's size for it, with bytes
 * that hash to its name; a batch with any other is refused whole.
 */
@injectable()
export class UploadObjects {
  constructor(
    @inject(DeploySessionAccess) private readonly access: DeploySessionAccess,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
  ) {}

  /**
   * Returns the session and how many objects the batch held. Not what is still missing:
   * working that out probes every object of the manifest (a second for 40,000 files), on
   * every batch; a client that wants it asks (ShowDeploySession).
   */
  async execute(input: UploadObjectsInput): Promise<{ session: DeploySession; stored: number }> {
    const used = await this.access.useWithManifest(input.user, input.token, input.id);
    try {
      // From here no revision replaces the manifest these uploads answer to.
      const version = await this.sessions.beginUploads(input.id);
      if (version === undefined) throw new DeploySessionNotFound();
      // Replaced between the read and the mark (a revision, objects found missing): as it is now.
      const { session, manifest } = version === used.session.version ? used : await this.access.current(input.id);
      // Only what it was told is missing: its uploads stay within what the quota counted for it.
      const stored = await this.objects.receive(input.user, session.id, input.batch, uploadableObjects(manifest, session.unconfirmed), input.signal);
      // Closed while it uploaded (cancelled, published, superseded): nothing of it stays.
      if (!(await this.sessions.stillOpen([session.id])).has(session.id)) {
        await this.objects.removeUploads(session.id);
        throw new DeploySessionNotFound();
      }
      return { session, stored };
    } catch (error) {
      // A batch refused (or cut off) keeps nothing, the session's expiry included.
      await this.access.refusedUse(used.session, used.keptUntil).catch(() => undefined);
      throw error;
    }
  }
}
