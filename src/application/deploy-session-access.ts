import { inject, injectable } from 'inversify';
import { holdsBase, isSessionExpired, mayUseSession, objectScope, sessionExpiry } from '../domain/deploy-session.js';
import { DeploySessionNotFound } from '../domain/errors.js';
import type { Digest } from '../domain/manifest.js';
import type { PackedManifest } from '../domain/packed-manifest.js';
import type { Username } from '../domain/username.js';
import { assertStillAuthorised } from './deployer.js';
import { baseManifest, sessionHolding } from './session-manifest.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_KEY_STORE, type DeployKeyStore } from './ports/deploy-key-store.js';
import { DEFAULT_SESSION_SETTINGS, DEPLOY_SETTINGS, type DeploySettings } from './ports/deploy-settings.js';
import { DEPLOY_SESSIONS, type DeploySession, type DeploySessions } from './ports/deploy-sessions.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';
import { TOKEN_STORE, type TokenStore } from './ports/token-store.js';

/** What a client is told of its session: enough to upload the rest and publish. */
export interface SessionState {
  readonly session: DeploySession;
  readonly files: number;
  readonly bytes: number;
  /** Objects the user's store (a deploy key's: its project's content) and the session's uploads lack, each once. */
  readonly missing: Digest[];
  readonly missingBytes: number;
}

/**
 * A session as its own user sees it: another user's, an expired one or one closed are
 * all "not found" (one user never learns of another's sessions), and so is, to a deploy
 * key, one it did not open (domain: mayUseSession). Using one keeps it alive. The token
 * must still deploy the session's project (and preview): a key revoked mid-session can
 * do nothing more with it.
 */
@injectable()
export class DeploySessionAccess {
  constructor(
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
    @inject(TOKEN_STORE) private readonly tokens: TokenStore,
    @inject(DEPLOY_KEY_STORE) private readonly keys: DeployKeyStore,
    @inject(CLOCK) private readonly clock: Clock,
    @inject(DEPLOY_SETTINGS) private readonly settings: DeploySettings,
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
  ) {}

  async use(user: Username, token: string, id: string): Promise<DeploySession> {
    const session = await this.find(user, token, id);
    await this.keepAlive(id);
    return session;
  }

  /**
   * As `use`, with the session's manifest: found, and judged by `judge` if given, before
   * anything records the request (a key's last use, the session's expiry), so that a base
   * gone meanwhile, or a request refused, changes nothing.
   */
  async useWithManifest(
    user: Username,
    token: string,
    id: string,
    judge?: (session: DeploySession, manifest: PackedManifest) => Promise<void>,
  ): Promise<{ session: DeploySession; manifest: PackedManifest; keptUntil: Date }> {
    let manifest: PackedManifest | undefined;
    const session = await this.find(user, token, id, async (found) => {
      manifest = await this.manifest(found);
      await judge?.(found, manifest);
    });
    return { session, manifest: manifest!, keptUntil: await this.keepAlive(id) };
  }

  private async keepAlive(id: string): Promise<Date> {
    const until = sessionExpiry(this.clock.now(), (this.settings.sessions ?? DEFAULT_SESSION_SETTINGS).ttlSeconds);
    await this.sessions.extend(id, until);
    return until;
  }

  /**
   * A request refused after its use kept the session alive (a long one is kept alive as it
   * starts, so that it never expires under it): the session's expiry goes back to what it
   * was, unless another use has moved it since (`keptUntil`, what this use set).
   */
  async refusedUse(session: DeploySession, keptUntil: Date): Promise<void> {
    await this.sessions.extend(session.id, session.expiresAt, keptUntil);
  }

  /**
   * The session, as `use` finds it, without keeping it alive: the caller does that only
   * once the request is taken. `judge`, the caller's own rule, runs before a key's use is recorded.
   */
  async find(user: Username, token: string, id: string, judge?: (session: DeploySession) => Promise<void>): Promise<DeploySession> {
    const session = await this.sessions.find(id);
    const now = this.clock.now();
    if (session === undefined || session.user !== user || isSessionExpired(session.expiresAt, now)) throw new DeploySessionNotFound();
    await assertStillAuthorised(this.tokens, this.keys, now, { user, token, project: session.project, preview: session.preview }, async (deployer) => {
      if (!mayUseSession(deployer.key?.id, session)) throw new DeploySessionNotFound();
      await judge?.(session);
    });
    return session;
  }

  /**
   * The session as it is now, read again without the checks the caller made already: what
   * a request began on may have been replaced meanwhile. DeploySessionNotFound once closed.
   */
  async current(id: string): Promise<{ session: DeploySession; manifest: PackedManifest }> {
    const session = await this.sessions.find(id);
    if (session === undefined) throw new DeploySessionNotFound();
    return { session, manifest: await this.manifest(session) };
  }

  /**
   * The session's manifest, packed: the one it holds, or its base's files as they are on
   * disk; BaseReleaseChanged once that base is gone or changed.
   */
  private manifest(session: DeploySession): Promise<PackedManifest> {
    const { manifest } = session;
    if (!holdsBase(manifest)) return Promise.resolve(manifest);
    return baseManifest(this.releases, session.user, session.project, manifest);
  }

  async state(session: DeploySession, manifest: PackedManifest): Promise<SessionState> {
    const scope = objectScope(session.keyId, session.project);
    const missing = await this.objects.missing(session.user, session.id, new Map(manifest.objects()), scope);
    return stateOf(await this.mayUpload(session, manifest, missing), manifest, missing);
  }

  /**
   * The session, able to upload `missing` too: objects found when its manifest was checked
   * and lost since (a release pruned meanwhile took the last link to them) are asked of the
   * client again, so they join what it may upload, and what the user's quota counts for it
   * (UploadsOverQuota, changing nothing, when they would pass it). A session closed
   * meanwhile is left to its caller's next step, which finds it gone.
   */
  async mayUpload(session: DeploySession, manifest: PackedManifest, missing: readonly Digest[]): Promise<DeploySession> {
    if (session.unconfirmed === undefined) return session;
    const known = new Set(session.unconfirmed);
    const lost = missing.filter((digest) => !known.has(digest));
    if (lost.length === 0) return session;
    const holding = sessionHolding(manifest, manifest, [...session.unconfirmed, ...lost]);
    const expiresAt = sessionExpiry(this.clock.now(), (this.settings.sessions ?? DEFAULT_SESSION_SETTINGS).ttlSeconds);
    // Only the holding it read: a revision meanwhile is DeploySessionChanged, not undone.
    const from = { version: session.version, beforeUploads: false };
    await this.sessions.replaceManifest(session.id, { holding, from, expiresAt, now: this.clock.now(), userMaxBytes: this.settings.userMaxBytes });
    return { ...session, ...holding, expiresAt, version: session.version + 1 };
  }
}

export function stateOf(session: DeploySession, manifest: PackedManifest, missing: Digest[]): SessionState {
  const missingBytes = missing.reduce((sum, digest) => sum + (manifest.sizeOf(digest) ?? 0), 0);
  return { session, files: manifest.fileCount, bytes: manifest.bytes, missing, missingBytes };
}
