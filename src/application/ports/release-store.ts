import type { ServiceIdentifier } from 'inversify';
import type { PackedManifest } from '../../domain/packed-manifest.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { ReleaseId } from '../../domain/release-id.js';
import type { Username } from '../../domain/username.js';
import type { StagedRelease } from './staging.js';

/** The releases of each user's projects and their live links: what the web server serves. */
export interface ReleaseStore {
  /**
   * Moves a staged release into place as release `id`, its new bytes into the user's
   * store; the live site is unchanged.
   */
  commit(staged: StagedRelease, user: Username, project: ProjectName, id: ReleaseId): Promise<void>;
  /** Atomically points the live site at release `id`. */
  activate(user: Username, project: ProjectName, id: ReleaseId): Promise<void>;
  /** The project's releases, oldest first. */
  releases(user: Username, project: ProjectName): Promise<ReleaseId[]>;
  liveRelease(user: Username, project: ProjectName): Promise<ReleaseId | undefined>;
  /** Removes the release; bytes it shares with the user's other releases stay theirs. */
  removeRelease(user: Username, project: ProjectName, id: ReleaseId): Promise<void>;
  /**
   * The bytes of the files in release `id` as they are on disk (0 once it is gone).
   * A committed release never changes, so the answer may be remembered.
   */
  releaseBytes(user: Username, project: ProjectName, id: ReleaseId): Promise<number>;
  /**
   * The files of release `id` (path, size, SHA-256), as they are on disk, in no
   * particular order, packed: what a session keeps, with no file made an object;
   * undefined when there is no such release. Directories are not listed: a manifest
   * implies them.
   */
  releasePackedManifest(user: Username, project: ProjectName, id: ReleaseId): Promise<PackedManifest | undefined>;
  /** The user's projects that have releases or a live link. */
  projects(user: Username): Promise<ProjectName[]>;
  /** Removes the live link first (the site stops being served), then every release. */
  removeProject(user: Username, project: ProjectName): Promise<void>;
  /** Removes every live link, release and stored object of the user. */
  removeUserFiles(user: Username): Promise<void>;
  /**
   * Removes what a crash can leave of the store's own work (temporary links, deletions
   * not finished), never a release or a live link; returns what it removed. The stored
   * bytes those leave unused are collected in the background.
   */
  removeLeftovers(): Promise<string[]>;
}

export const RELEASE_STORE = Symbol.for('sitedrop.ReleaseStore') as ServiceIdentifier<ReleaseStore>;
