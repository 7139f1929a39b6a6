import type { ReleaseId } from './release-id.js';

/**
 * Which releases to remove so that at most `keep` remain: the oldest first, and
 * never the live one (a live release older than the newest `keep`, after a rollback,
 * is kept and counts towards `keep`).
 */
export function releasesToPrune(releases: readonly ReleaseId[], live: ReleaseId | undefined, keep: number): ReleaseId[] {
  if (!Number.isInteger(keep) || keep < 1) throw new RangeError('keep must be a whole number of at least 1');
  const newestFirst = [...new Set(releases)].sort().reverse();
  const kept = new Set<ReleaseId>();
  if (live !== undefined && newestFirst.includes(live)) kept.add(live);
  for (const id of newestFirst) {
    if (kept.size >= keep) break;
    kept.add(id);
  }
  return newestFirst.filter((id) => !kept.has(id)).reverse();
}
