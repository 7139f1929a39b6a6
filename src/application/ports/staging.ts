import type { ServiceIdentifier } from 'inversify';
import type { ArchiveLimits } from '../../domain/archive-policy.js';
import type { ProjectScope } from '../../domain/deploy-session.js';
import type { PackedManifest } from '../../domain/packed-manifest.js';
import type { Username } from '../../domain/username.js';

/**
 * A release's files, complete and durable in a staging area, that nothing serves yet:
 * the release store commits it, or staging discards it.
 */
export interface StagedRelease {
  /** The staging area, as the adapter that made it names it. */
  readonly handle: string;
  readonly files: number;
  /** Its files' bytes, as the release store measures the release once it is committed. */
  readonly bytes: number;
}

/** What makes a staged release: an archive unpacked, or an incremental deploy's files assembled. */
export interface Staging {
  /**
   * Unpacks a gzip-compressed tar into a fresh staging area, enforcing the archive
   * policy and `limits`; its files share the bytes of `user`'s other releases. Throws ArchiveRejected for a bad archive, MissingArchive for
   * an empty upload, DeployAborted when `signal` fires, or the source's own error;
   * on any failure the staging area is already gone.
   */
  stage(user: Username, archive: AsyncIterable<Uint8Array>, limits: ArchiveLimits, signal: AbortSignal): Promise<StagedRelease>;
  /**
   * Builds the manifest's files in a fresh staging area from the user's store and the session's
   * uploads (SessionObjects). Throws ObjectsMissing, leaving nothing, when some object
   * is in neither. With `scope` (a deploy key's session), only objects the project's
   * releases hold come from the store, whatever was prepared (ReleasePreparation); any
   * other must be among the session's uploads.
   */
  assemble(user: Username, session: string, manifest: PackedManifest, scope?: ProjectScope): Promise<StagedRelease>;
  /** Throws the staged files away; they never were a release. */
  discard(staged: StagedRelease): Promise<void>;
  /** Removes the staging areas a crash left (run before any deploy starts); returns what it removed. */
  removeLeftovers(): Promise<string[]>;
}

export const STAGING = Symbol.for('sitedrop.Staging') as ServiceIdentifier<Staging>;
