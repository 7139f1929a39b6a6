import type { ServiceIdentifier } from 'inversify';
import type { ArchiveLimits } from '../../domain/archive-policy.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { ReleaseId } from '../../domain/release-id.js';
import type { Username } from '../../domain/username.js';

/** An archive unpacked, complete and durable, but not yet a release. */
export interface StagedRelease {
  readonly handle: string;
  readonly files: number;
  readonly bytes: number;
}

/** The release tree: staging areas, release directories and the live symlinks. */
export interface ReleaseFs {
  /**
   * Unpacks a gzip-compressed tar into a fresh staging area, enforcing the archive
   * policy and `limits`; its files share the bytes of `user`'s other releases. Throws ArchiveRejected for a bad archive, MissingArchive for
   * an empty upload, DeployAborted when `signal` fires, or the source's own error;
   * on any failure the staging area is already gone.
   */
  stage(user: Username, archive: AsyncIterable<Uint8Array>, limits: ArchiveLimits, signal: AbortSignal): Promise<StagedRelease>;
  discard(staged: StagedRelease): Promise<void>;
  /** Moves a staged archive into place as release `id`; the live site is unchanged. */
  commit(staged: StagedRelease, user: Username, project: ProjectName, id: ReleaseId): Promise<void>;
  /** Atomically points the live site at release `id`. */
  activate(user: Username, project: ProjectName, id: ReleaseId): Promise<void>;
  releases(user: Username, project: ProjectName): Promise<ReleaseId[]>;
  liveRelease(user: Username, project: ProjectName): Promise<ReleaseId | undefined>;
  removeRelease(user: Username, project: ProjectName, id: ReleaseId): Promise<void>;
  /**
   * The bytes of the files in release `id` as they are on disk (0 once it is gone).
   * A committed release never changes, so the answer may be remembered.
   */
  releaseBytes(user: Username, project: ProjectName, id: ReleaseId): Promise<number>;
  /** The user's projects that have releases or a live link. */
  projects(user: Username): Promise<ProjectName[]>;
  /** Removes the live link first (the site stops being served), then every release. */
  removeProject(user: Username, project: ProjectName): Promise<void>;
  removeUserFiles(user: Username): Promise<void>;
  /** Removes what a crash can leave behind (staging areas, temporary links); returns what it removed. */
  removeLeftovers(): Promise<string[]>;
}

export const RELEASE_FS = Symbol.for('sitedrop.ReleaseFs') as ServiceIdentifier<ReleaseFs>;
