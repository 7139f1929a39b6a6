import { inject, injectable } from 'inversify';
import { objectScope, sessionExpiry } from '../domain/deploy-session.js';
import { DeploySessionNotFound, ManifestRejected, SessionUploadedAlready } from '../domain/errors.js';
import { ManifestReader } from '../domain/manifest.js';
import type { Username } from '../domain/username.js';
import { DeploySessionAccess, stateOf, type SessionState } from './deploy-session-access.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEFAULT_SESSION_SETTINGS, DEPLOY_SETTINGS, type DeploySettings } from './ports/deploy-settings.js';
import { DEPLOY_SESSIONS, type DeploySessions } from './ports/deploy-sessions.js';
import { RELEASE_PREPARATION, type ReleasePreparation } from './ports/release-preparation.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';
import { notUploadedBefore, sessionHolding, sessionManifest } from './session-manifest.js';

export interface ReviseSessionInput {
  readonly user: Username;
  readonly token: string;
  readonly id: string;
  /** As the body named them, if it did: they are the session's, and may only be repeated. */
  readonly project: string | undefined;
  readonly preview: string | undefined;
  /** The site's manifest, whole or relative to `base`, checked entry by entry as the body arrived. */
  readonly manifest: ManifestReader;
  readonly base?: unknown;
}

/**
 * A session's manifest replaced by the site as the client has now found it: the client
 * opens a session on its base release before it reads its folder, so that the release is
 * built from the base meanwhile (ReleasePreparation.revise), then sends the difference.
 * Checked exactly as an open's manifest is; refused, it leaves the session as it was.
 */
@injectable()
export class ReviseDeploySession {
  constructor(
    @inject(DeploySessionAccess) private readonly access: DeploySessionAccess,
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(CLOCK) private readonly clock: Clock,
    @inject(DEPLOY_SETTINGS) private readonly settings: DeploySettings,
    @inject(RELEASE_PREPARATION) private readonly preparation: ReleasePreparation,
  ) {}

  /** A reader of a manifest under this service's limits, to fill as its body arrives and hand to `execute`. */
  reader(): ManifestReader {
    return new ManifestReader(this.settings.archiveLimits);
  }

  async execute(input: ReviseSessionInput): Promise<SessionState> {
    // Kept alive by the new manifest alone: a refused one leaves the session as it was, expiry and all.
    const session = await this.access.find(input.user, input.token, input.id);
    const moved = (input.project !== undefined && input.project !== session.project) || (input.preview !== undefined && input.preview !== session.preview);
    if (moved) throw new ManifestRejected("project and preview are the session's: a session's manifest cannot move it");
    if ((await this.objects.sessionsWithUploads()).includes(session.id)) throw new SessionUploadedAlready();
    const { packed: manifest, sought, held } = await sessionManifest(this.releases, session.user, session.project, input.manifest, input.base, this.settings.archiveLimits);
    const scope = objectScope(session.keyId, session.project);
    const missing = await this.objects.missing(session.user, session.id, sought, scope);
    const now = this.clock.now();
    const expiresAt = sessionExpiry(now, (this.settings.sessions ?? DEFAULT_SESSION_SETTINGS).ttlSeconds);
    const holding = sessionHolding(manifest, held, missing);
    // Only the holding it read, and only before any batch has begun (whose uploads answer to it).
    const from = { version: session.version, beforeUploads: true };
    if (!(await this.sessions.replaceManifest(session.id, { holding, from, expiresAt, now, userMaxBytes: this.settings.userMaxBytes }))) throw new DeploySessionNotFound();
    // As an open does: a redeploy's release is built while its objects upload; most of a site new goes as an archive.
    if (missing.length <= manifest.objectCount / 2) this.preparation.revise(session.user, session.id, manifest, missing);
    else await this.preparation.forgetPrepared(session.id);
    const earlier = session.keyId === undefined ? [] : (await this.sessions.openedBy(session.keyId, now)).filter((id) => id !== session.id);
    const stillMissing = await notUploadedBefore(this.objects, this.sessions, earlier, { id: session.id, version: session.version + 1 }, missing, manifest);
    return stateOf({ ...session, ...holding, expiresAt, version: session.version + 1 }, manifest, stillMissing);
  }
}
