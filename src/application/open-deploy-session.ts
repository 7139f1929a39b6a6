import { inject, injectable } from 'inversify';
import { sessionExpiry } from '../domain/deploy-session.js';
import { TooManyDeploySessions } from '../domain/errors.js';
import { parseManifest } from '../domain/manifest.js';
import { PreviewName } from '../domain/preview.js';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { stateOf, type SessionState } from './deploy-session-access.js';
import { PublishRelease } from './publish-release.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEFAULT_SESSION_SETTINGS, DEPLOY_SETTINGS, type DeploySettings } from './ports/deploy-settings.js';
import { DEPLOY_SESSIONS, type DeploySessions } from './ports/deploy-sessions.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';

export interface OpenSessionInput {
  readonly user: Username;
  readonly token: string;
  readonly project: string;
  readonly preview: string | undefined;
  /** The manifest's files as the client sent them, unchecked. */
  readonly files: unknown;
}

/**
 * The first step of an incremental deploy: the manifest is checked whole (every rule an
 * archive's entries obey), kept as a session, and answered with the objects the user's
 * store lacks. Nothing of the site changes until the session is published.
 */
@injectable()
export class OpenDeploySession {
  constructor(
    @inject(DEPLOY_SESSIONS) private readonly sessions: DeploySessions,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
    @inject(PublishRelease) private readonly publisher: PublishRelease,
    @inject(CLOCK) private readonly clock: Clock,
    @inject(DEPLOY_SETTINGS) private readonly settings: DeploySettings,
  ) {}

  async execute(input: OpenSessionInput): Promise<SessionState> {
    const project = ProjectName.parse(input.project);
    const preview = input.preview === undefined ? undefined : PreviewName.parse(input.preview);
    await this.publisher.assertStillAuthorised(input.user, input.token, project, preview);
    const manifest = parseManifest(input.files, this.settings.archiveLimits);
    const { maxPerUser, ttlSeconds } = this.settings.sessions ?? DEFAULT_SESSION_SETTINGS;
    const now = this.clock.now();
    const session = { user: input.user, project, preview, files: manifest.files, createdAt: now, expiresAt: sessionExpiry(now, ttlSeconds) };
    // First: a manifest that lies about the size of bytes the user's store holds is
    // refused like any other, before a session exists.
    const missing = await this.objects.missing(input.user, undefined, manifest.objects);
    const id = await this.sessions.open(session, maxPerUser, now);
    if (id === undefined) throw new TooManyDeploySessions(maxPerUser);
    return stateOf({ id, ...session }, manifest, missing);
  }
}
