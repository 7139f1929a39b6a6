import { StorageQuotaExceeded, UploadsOverQuota } from './errors.js';
import type { ProjectName } from './project-name.js';
import type { ReleaseId } from './release-id.js';
import { releasesToPrune } from './retention.js';

export interface StoredRelease {
  readonly project: ProjectName;
  readonly release: ReleaseId;
}

/** What retention will hold in the deployed project once the deploy is in place. */
export interface HeldReleases {
  /** The live release after the deploy: the new one, unless it is a preview's. */
  readonly live: ReleaseId | undefined;
  /** The releases previews point to after the deploy (a preview deploy's own among them). */
  readonly pinned: readonly ReleaseId[];
  /** The project's releases deployed for a preview and never live (retention.ts). */
  readonly previewOnly?: readonly ReleaseId[];
}

/**
 * The user's releases still on disk once `deployed` is in place and its project pruned to
 * `keep`: the newest of that project, `deployed` among them, and every release of the
 * user's other projects (this deploy prunes none of them). Only these are worth measuring.
 * By default the new release goes live and no preview holds any.
 */
export function keptAfterDeploy(
  stored: readonly StoredRelease[],
  deployed: StoredRelease,
  keep: number,
  held: HeldReleases = { live: deployed.release, pinned: [] },
): StoredRelease[] {
  const sameProject = (r: StoredRelease) => r.project === deployed.project;
  const others = stored.filter((r) => !sameProject(r));
  const siblings = stored.filter((r) => sameProject(r) && r.release !== deployed.release).map((r) => r.release);
  const doomed = new Set(releasesToPrune([...siblings, deployed.release], held.live, keep, { pinned: held.pinned, previewOnly: held.previewOnly ?? [] }));
  const kept = siblings.filter((id) => !doomed.has(id)).map((release) => ({ project: deployed.project, release }));
  return [...others, ...kept, deployed];
}

/**
 * The bytes the user would keep, given the size of each kept release; refuses
 * (StorageQuotaExceeded) when that is over `limit`. Without a limit nothing is refused.
 */
export function enforceStorageQuota(limit: number | undefined, keptBytes: readonly number[]): number {
  const total = keptBytes.reduce((sum, bytes) => sum + bytes, 0);
  if (limit !== undefined && total > limit) throw new StorageQuotaExceeded(total, limit);
  return total;
}

/**
 * What a user's open sessions may upload waits on the host, outside every kept release,
 * until each publishes or ends: those bytes together are held to the quota too, apart
 * from the releases (a redeploy's uploads replace files the publish counts). `held` is
 * what the user's other sessions may upload, `adding` this session's; refuses
 * (UploadsOverQuota) when the two are over `limit`. Without a limit nothing is refused.
 */
export function assertUploadsFit(held: number, adding: number, limit: number | undefined): void {
  if (limit !== undefined && held + adding > limit) throw new UploadsOverQuota(held + adding, limit);
}
