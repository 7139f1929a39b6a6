import { NothingToRollBackTo, ReleaseNotFound } from './errors.js';
import type { ReleaseId } from './release-id.js';

/**
 * The release a rollback makes live: the one asked for, which must exist (a preview's
 * release too: naming it is the owner's choice), or else the newest release older than
 * the live one that was itself live: a plain rollback never goes back to a preview's
 * build (`previewOnly`). With no live release, "older than live" means older than the newest.
 */
export function rollbackTarget(releases: readonly ReleaseId[], live: ReleaseId | undefined, requested?: ReleaseId, previewOnly: readonly ReleaseId[] = []): ReleaseId {
  if (requested !== undefined) {
    if (!releases.includes(requested)) throw new ReleaseNotFound();
    return requested;
  }
  const newestFirst = [...releases].sort().reverse();
  const pivot = live ?? newestFirst[0];
  const older = newestFirst.find((id) => pivot !== undefined && id < pivot && !previewOnly.includes(id));
  if (older === undefined) throw new NothingToRollBackTo();
  return older;
}
