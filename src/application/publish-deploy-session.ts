import { inject, injectable } from 'inversify';
import { objectScope } from '../domain/deploy-session.js';
import { DeploySessionNotFound, ObjectsMissing } from '../domain/errors.js';
import type { Digest } from '../domain/manifest.js';
import type { PackedManifest } from '../domain/packed-manifest.js';
import type { Username } from '../domain/username.js';
import { DeploySessionAccess } from './deploy-session-access.js';
import { PublishRelease, type Deployed } from './publish-release.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_SESSIONS, type DeploySession, type DeploySessions } from './ports/deploy-sessions.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';
import { STAGING, type Staging } from './ports/staging.js';

/**
 * The last step of an incremental deploy: the sizes of the objects no probe saw when the
 * manifest was checked are held against it (confirmSizes); the release is built from the
 * user's store (a deploy key's: its project's content, whatever the open found) and the
 * session's uploads (ObjectsMissing if some object is in neither: the client uploads it
 * and publishes again), then published as any deploy is, and the session ends. Two
 * publishes of one session publish once: the second finds it closed.
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
    try {
      return await this.publish(input);
    } catch (error) {
      // Cancelled meanwhile, its uploads with it: the session is gone, not short of objects.
      if (error instanceof ObjectsMissing && !(await this.sessions.stillOpen([input.id])).has(input.id)) throw new DeploySessionNotFound();
      throw error;
    }
  }

  private async publish(input: { user: Username; token: string; id: string }): Promise<Deployed> {
    const { session, manifest, keptUntil } = await this.access.useWithManifest(input.user, input.token, input.id, (found, files) => this.confirmSizes(found, files));
    // Refused (or failed) from here, it changes nothing, the session's expiry included.
    return this.build(input.token, session, manifest).catch(async (error: unknown) => {
      await this.access.refusedUse(session, keptUntil).catch(() => undefined);
      throw error;
    });
  }

  private async build(token: string, session: DeploySession, manifest: PackedManifest): Promise<Deployed> {
    const started = this.clock.now().getTime();
    const scope = objectScope(session.keyId, session.project);
    const staged = await this.staging.assemble(session.user, session.id, manifest, scope).catch(async (error: unknown) => {
      // The client is told to upload them: they must be among what it may.
      if (error instanceof ObjectsMissing) await this.access.mayUpload(session, manifest, error.digests as Digest[]);
      throw error;
    });
    const deployed = await this.publisher.execute({
      user: session.user,
      token,
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

  /**
   * The objects no probe found when the manifest was checked have come since (uploaded,
   * or stored by another deploy of the user's): each must be of the size the manifest
   * gives it, which the limits and the quota counted, or the manifest lied (ManifestRejected).
   * One still missing now is missing for the assembly too. What a probe finds is for good:
   * an object's name fixes its bytes.
   */
  private async confirmSizes(session: DeploySession, manifest: PackedManifest): Promise<void> {
    // Not known (a session open across the upgrade that began keeping them): every object.
    const listed = session.unconfirmed === undefined ? [...manifest.objects()] : session.unconfirmed.flatMap((digest) => sizeIn(manifest, digest));
    if (listed.length === 0) return;
    const unconfirmed = new Map(listed);
    const missing = await this.objects.missing(session.user, session.id, unconfirmed, objectScope(session.keyId, session.project));
    if (missing.length > 0) throw new ObjectsMissing(missing);
  }
}

const sizeIn = (manifest: PackedManifest, digest: Digest): [Digest, number][] => {
  const size = manifest.sizeOf(digest);
  return size === undefined ? [] : [[digest, size]];
};
