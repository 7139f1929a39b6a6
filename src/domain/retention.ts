import type { ReleaseId } from './release-id.js';

/**
 * Which releases to remove so that at most `keep` remain: the oldest first, and
 * never the live one (a live release older than the newest `keep`, after a rollback,
 * is kept and counts towards `keep`). Releases a preview points to (`pinned`) are never
 * removed either, and do not count: `keep` is the live one and the rest.
 */
export function releasesToPrune(releases: readonly ReleaseId[], live: ReleaseId | undefined, keep: number, pinned: readonly ReleaseId[] = []): ReleaseId[] {
  if (!Number.isInteger(keep) || keep < 1) throw new RangeError('keep must be a whole number of at least 1');
  const held = new Set(pinned.filter((id) => id !== live));
  const newestFirst = [...new Set(releases)].sort().reverse().filter((id) => !held.has(id));
  const kept = new Set<ReleaseId>();
  if (live !== undefined && newestFirst.includes(live)) kept.add(live);
  for (const id of newestFirst) {
    if (kept.size >= keep) break;
    kept.add(id);
  }
  return newestFirst.filter((id) => !kept.has(id)).reverse();
}
