import { inject, injectable } from 'inversify';
import { objectScope, sessionExpiry, supersedes } from '../domain/deploy-session.js';
import { TooManyDeploySessions } from '../domain/errors.js';
import { ManifestReader } from '../domain/manifest.js';
import { PreviewName } from '../domain/preview.js';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { forgetClosedSessions } from './closed-sessions.js';
import { notUploadedBefore, sessionHolding, sessionManifest } from './session-manifest.js';
import { stateOf, type SessionState } from './deploy-session-access.js';
import { assertStillAuthorised, NOT_YET_KNOWN } from './deployer.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_KEY_STORE, type DeployKeyStore } from './ports/deploy-key-store.js';
import { DEFAULT_SESSION_SETTINGS, DEPLOY_SETTINGS, type DeploySettings } from './ports/deploy-settings.js';
import { DEPLOY_SESSIONS, type DeploySessions, type NewDeploySession } from './ports/deploy-sessions.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';
import { RELEASE_PREPARATION, type ReleasePreparation } from './ports/release-preparation.js';
import { TOKEN_STORE, type TokenStore } from './ports/token-store.js';

export interface OpenSessionInput {
  readonly user: Username;
  readonly token: string;
  /** The deploy key `token` is, if it is one. */
  readonly keyId?: string;
  readonly project: string;
  readonly preview: string | undefined;
  /**
   * The manifest's `files` and `removed`, each entry checked as the body arrived
   * (`reader()`): the whole site, or with `base` the entries added or changed and the
   * paths of the base's files the site no longer has.
   */
  readonly manifest: ManifestReader;
  /** Absent, the manifest is the whole site; else the release (and its manifest's digest) it changes, as the client sent it. */
  readonly base?: unknown;
}

/**
 * The first step of an incremental deploy: the manifest, checked entry by entry as its
 * body arrived and then whole (every rule an archive's entries obey), kept as a session,
 * and answered with the objects the user's store lacks (a deploy key's: its project's
 * content and its sessions' uploads); staging may start building the release meanwhile
 * (ReleasePreparation.prepare).
 * Nothing of the site changes until the session is published. A manifest
 * relative to a release of the project is made whole first, from that release's files
 * as they are on disk, and only if they are the files the client says they are.
 */
@injectable()
export class OpenDeploySession {
  constructor(
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(TOKEN_STORE) private readonly tokens: TokenStore,
    @inject(DEPLOY_KEY_STORE) private readonly keys: DeployKeyStore,
    @inject(CLOCK) private readonly clock: Clock,
    @inject(DEPLOY_SETTINGS) private readonly settings: DeploySettings,
    @inject(RELEASE_PREPARATION) private readonly preparation: ReleasePreparation,
  ) {}

  /** A reader of a manifest under this service's limits, to fill as its body arrives and hand to `execute`. */
  reader(): ManifestReader {
    return new ManifestReader(this.settings.archiveLimits);
  }

  async execute(input: OpenSessionInput): Promise<SessionState> {
    const project = ProjectName.parse(input.project);
    const preview = input.preview === undefined ? undefined : PreviewName.parse(input.preview);
    await assertStillAuthorised(this.tokens, this.keys, this.clock.now(), { user: input.user, token: input.token, project, preview });
    const { packed, sought, held } = await sessionManifest(this.releases, input.user, project, input.manifest, input.base, this.settings.archiveLimits);
    const { maxPerSigner, ttlSeconds } = this.settings.sessions ?? DEFAULT_SESSION_SETTINGS;
    const now = this.clock.now();
    // First: a manifest that lies about the size of bytes the user's store holds is
    // refused like any other, before a session exists; what the probe did not find is
    // kept as unconfirmed, for the publish to hold against the manifest.
    // A deploy key's session is answered from its project's content alone (domain: objectScope).
    const scope = objectScope(input.keyId, project);
    const earlier = input.keyId === undefined ? [] : await this.sessions.openedBy(input.keyId, now);
    const missing = await this.objects.missing(input.user, undefined, sought, scope);
    const expiresAt = sessionExpiry(now, ttlSeconds);
    // It may upload what the probe did not find, which the user's quota counts from now.
    const session = { user: input.user, project, preview, keyId: input.keyId, ...sessionHolding(packed, held, missing), createdAt: now, expiresAt };
    // Closed only if this one opens: a refused open leaves them as they were.
    const superseded = (await this.sessions.listUser(session.user)).filter((older) => supersedes(session, older, now, ttlSeconds)).map((older) => older.id);
    const id = await this.sessions.open(session, { maxPerSigner, userMaxBytes: this.settings.userMaxBytes }, now, superseded);
    if (id === undefined) throw new TooManyDeploySessions(maxPerSigner);
    await this.unlessRevokedMeanwhile(session, input.token, id);
    // A redeploy: the release is mostly built while the changed objects upload. Not a
    // first deploy, which the client may well send as an archive instead.
    if (missing.length <= packed.objectCount / 2) this.preparation.prepare(input.user, id, packed, missing);
    // What the superseded sessions uploaded is the key's own: kept with this one before it goes.
    const stillMissing = await notUploadedBefore(this.objects, this.sessions, earlier, { id, version: 0 }, missing, packed);
    await forgetClosedSessions(this.objects, this.preparation, superseded);
    return stateOf({ id, ...session, version: 0 }, packed, stillMissing);
  }

  /**
   * A key revoked (or its project deleted) while this opened: revoking removes the key,
   * then closes its sessions, so a session opened after that close finds the key gone here.
   */
  private async unlessRevokedMeanwhile(session: NewDeploySession, token: string, id: string): Promise<void> {
    if (session.keyId === undefined) return;
    try {
      await assertStillAuthorised(this.tokens, this.keys, this.clock.now(), { user: session.user, token, project: session.project, preview: NOT_YET_KNOWN });
    } catch (error) {
      await this.sessions.close(id);
      throw error;
    }
  }
}
