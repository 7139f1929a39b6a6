import { inject, injectable } from 'inversify';
import { ArchiveRejected, DeployAborted, MissingArchive } from '../domain/errors.js';
import { PreviewName } from '../domain/preview.js';
import { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import { assertStillAuthorised, NOT_YET_KNOWN, type NotYetKnown } from './deployer.js';
import { PublishRelease, type Deployed } from './publish-release.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_KEY_STORE, type DeployKeyStore } from './ports/deploy-key-store.js';
import { DEPLOY_SETTINGS, type DeploySettings } from './ports/deploy-settings.js';
import { STAGING, type StagedRelease, type Staging } from './ports/staging.js';
import { TOKEN_STORE, type TokenStore } from './ports/token-store.js';

export interface DeployInput {
  /** The user, or the owner of the deploy key that signed the deploy. */
  readonly user: Username;
  /**
   * The bearer token the deploy was signed with: `user`'s token, or a deploy key of theirs.
   * It must still be good, and for a key grant this project, when the deploy publishes.
   */
  readonly token: string;
  /** Settles once the project name is known; it may arrive after the archive. */
  readonly project: Promise<string | undefined>;
  /**
   * Settles with the preview's name once it is known, or undefined for a live deploy;
   * absent, the deploy is live.
   */
  readonly preview?: Promise<string | undefined>;
  /** Undefined when the request carried no archive at all. */
  readonly archive: AsyncIterable<Uint8Array> | undefined;
  /** Fires to give the deploy up (shutdown); a deploy already publishing finishes. */
  readonly signal: AbortSignal;
}

export type { Deployed } from './publish-release.js';

/**
 * Unpacks an archive into staging while the upload streams in, then publishes it
 * (publish-release.ts). Any failure discards the staging area.
 */
@injectable()
export class DeployRelease {
  constructor(
    @inject(STAGING) private readonly staging: Staging,
    @inject(CLOCK) private readonly clock: Clock,
    @inject(DEPLOY_SETTINGS) private readonly settings: DeploySettings,
    @inject(PublishRelease) private readonly publisher: PublishRelease,
    @inject(TOKEN_STORE) private readonly tokens: TokenStore,
    @inject(DEPLOY_KEY_STORE) private readonly keys: DeployKeyStore,
  ) {}

  async execute(input: DeployInput): Promise<Deployed> {
    // A key's grant is checked as soon as the project is known, so a deploy of a project
    // the key does not cover stops unpacking at once; and again under the lock.
    const project = input.project.then(ProjectName.parse).then(async (name) => {
      await this.stillAuthorised(input, name, NOT_YET_KNOWN);
      return name;
    });
    // The preview's name is judged after the project's: the client hears of that one first.
    // Then the key's grant whole (a preview key deploys no live site), as soon as it can be.
    const target = project.then(async (name) => {
      const named = await (input.preview ?? Promise.resolve(undefined));
      const preview = named === undefined ? undefined : PreviewName.parse(named);
      await this.stillAuthorised(input, name, preview);
      return { project: name, preview };
    });
    if (input.archive === undefined) {
      await target;
      throw new MissingArchive();
    }

    const stop = new AbortController();
    const giveUp = (): void => stop.abort(new DeployAborted());
    if (input.signal.aborted) giveUp();
    input.signal.addEventListener('abort', giveUp, { once: true });
    // A bad project or preview name makes the upload pointless: stop unpacking at once,
    // and say why rather than that the unpacking stopped.
    let refused: unknown;
    target.catch((error: unknown) => {
      refused = error;
      giveUp();
    });

    try {
      const started = this.clock.now().getTime();
      const staged = await this.stageReportingNameFirst(input.user, input.archive, project, stop.signal).catch((error: unknown) => {
        throw refused ?? error;
      });
      const named = await target.catch(async (error: unknown) => {
        await this.staging.discard(staged);
        throw error;
      });
      const stageMs = this.clock.now().getTime() - started;
      return await this.publisher.execute({ user: input.user, token: input.token, ...named, staged, stageMs });
    } finally {
      input.signal.removeEventListener('abort', giveUp);
    }
  }

  private stillAuthorised(input: DeployInput, project: ProjectName, preview: PreviewName | undefined | NotYetKnown): Promise<void> {
    return assertStillAuthorised(this.tokens, this.keys, this.clock.now(), { user: input.user, token: input.token, project, preview });
  }

  /**
   * A bad project name is the client's first mistake, so it is reported before the
   * archive's. Not the preview's: a field that has not come yet may never come before the
   * client sends the rest, and a deploy given up (shutdown) must not wait for it.
   */
  private async stageReportingNameFirst(
    user: Username,
    archive: AsyncIterable<Uint8Array>,
    project: Promise<ProjectName>,
    signal: AbortSignal,
  ): Promise<StagedRelease> {
    try {
      return await this.staging.stage(user, archive, this.settings.archiveLimits, signal);
    } catch (error) {
      if (error instanceof ArchiveRejected || error instanceof MissingArchive || error instanceof DeployAborted) {
        await project;
      }
      throw error;
    }
  }
}
