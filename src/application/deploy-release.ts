import { inject, injectable } from 'inversify';
import { ArchiveRejected, DeployAborted, MissingArchive, Unauthorized } from '../domain/errors.js';
import { ProjectName } from '../domain/project-name.js';
import { ReleaseId } from '../domain/release-id.js';
import type { Username } from '../domain/username.js';
import { PruneReleases } from './prune-releases.js';
import { CLOCK, type Clock } from './ports/clock.js';
import { DEPLOY_LOCK, type DeployLock } from './ports/deploy-lock.js';
import { DEPLOY_RECORDS, type DeployRecords } from './ports/deploy-records.js';
import { DEPLOY_SETTINGS, type DeploySettings } from './ports/deploy-settings.js';
import { RELEASE_FS, type ReleaseFs, type StagedRelease } from './ports/release-fs.js';
import { TOKEN_STORE, type TokenStore } from './ports/token-store.js';

export interface DeployInput {
  readonly user: Username;
  /** Settles once the project name is known; it may arrive after the archive. */
  readonly project: Promise<string | undefined>;
  /** Undefined when the request carried no archive at all. */
  readonly archive: AsyncIterable<Uint8Array> | undefined;
  /** Fires to give the deploy up (shutdown); a deploy already publishing finishes. */
  readonly signal: AbortSignal;
}

export interface Deployed {
  readonly user: Username;
  readonly project: ProjectName;
  readonly release: ReleaseId;
  readonly files: number;
  readonly bytes: number;
  readonly compressedBytes: number;
  readonly pruned: ReleaseId[];
  /** Set when the release went live but removing old ones failed. */
  readonly pruneError?: Error;
  /** Set when the release went live but its deploy record could not be written. */
  readonly recordError?: Error;
  /**
   * Milliseconds spent unpacking (upload included), of which flushing the files to disk,
   * waiting for the lock, publishing, pruning.
   */
  readonly timings: { readonly stage: number; readonly flush: number; readonly lockWait: number; readonly publish: number; readonly prune: number };
}

/**
 * Unpacks an archive into staging while the upload streams in, then, under the
 * project lock, names it, moves it into place, swaps the live link and prunes.
 * Until the swap nothing visible changes, and any failure discards the staging area.
 */
@injectable()
export class DeployRelease {
  constructor(
    @inject(TOKEN_STORE) private readonly tokens: TokenStore,
    @inject(RELEASE_FS) private readonly releases: ReleaseFs,
    @inject(DEPLOY_LOCK) private readonly lock: DeployLock,
    @inject(CLOCK) private readonly clock: Clock,
    @inject(DEPLOY_SETTINGS) private readonly settings: DeploySettings,
    @inject(PruneReleases) private readonly prune: PruneReleases,
    @inject(DEPLOY_RECORDS) private readonly records: DeployRecords,
  ) {}

  async execute(input: DeployInput): Promise<Deployed> {
    const project = input.project.then(ProjectName.parse);
    if (input.archive === undefined) {
      await project;
      throw new MissingArchive();
    }

    const stop = new AbortController();
    const giveUp = (): void => stop.abort(new DeployAborted());
    if (input.signal.aborted) giveUp();
    input.signal.addEventListener('abort', giveUp, { once: true });
    // A bad project name makes the upload pointless: stop unpacking at once.
    project.catch(giveUp);

    try {
      const started = this.clock.now().getTime();
      const staged = await this.stageReportingNameFirst(input.archive, project, stop.signal);
      const name = await project.catch(async (error: unknown) => {
        await this.releases.discard(staged);
        throw error;
      });
      return await this.publish(input.user, name, staged, this.clock.now().getTime() - started);
    } finally {
      input.signal.removeEventListener('abort', giveUp);
    }
  }

  /** A bad project name is the client's first mistake, so it is reported before the archive's. */
  private async stageReportingNameFirst(
    archive: AsyncIterable<Uint8Array>,
    project: Promise<ProjectName>,
    signal: AbortSignal,
  ): Promise<StagedRelease> {
    try {
      return await this.releases.stage(archive, this.settings.archiveLimits, signal);
    } catch (error) {
      if (error instanceof ArchiveRejected || error instanceof MissingArchive || error instanceof DeployAborted) {
        await project;
      }
      throw error;
    }
  }

  private async publish(user: Username, project: ProjectName, staged: StagedRelease, stage: number): Promise<Deployed> {
    let committed: ReleaseId | undefined;
    let live = false;
    const ms = () => this.clock.now().getTime();
    const waiting = ms();
    try {
      return await this.lock.withProject(user, project, async () => {
        const locked = ms();
        // The user may have been deleted while the archive was unpacking.
        if (!(await this.tokens.exists(user))) throw new Unauthorized();
        const release = ReleaseId.next(this.clock.now(), await this.releases.releases(user, project));
        await this.releases.commit(staged, user, project, release);
        committed = release;
        await this.releases.activate(user, project, release);
        live = true;
        const swapped = ms();
        // The site is live now: a record that cannot be written is reported, not a failed deploy.
        const recorded = await this.records
          .record({ user, project, release, bytes: staged.bytes, files: staged.files, createdAt: this.clock.now() })
          .then(() => undefined, (error: unknown) => error as Error);
        // The site is live on the new release now; a failed prune is retried by the next deploy.
        const pruned = await this.prune.execute(user, project).catch((error: unknown) => error as Error);
        const timings = { stage, flush: staged.flushMs, lockWait: locked - waiting, publish: swapped - locked, prune: ms() - swapped };
        return {
          user,
          project,
          release,
          files: staged.files,
          bytes: staged.bytes,
          compressedBytes: staged.compressedBytes,
          pruned: Array.isArray(pruned) ? pruned : [],
          ...(pruned instanceof Error ? { pruneError: pruned } : {}),
          ...(recorded ? { recordError: recorded } : {}),
          timings,
        };
      });
    } catch (error) {
      if (committed === undefined) await this.releases.discard(staged);
      else if (!live) await this.releases.removeRelease(user, project, committed);
      throw error;
    }
  }
}
