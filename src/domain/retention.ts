import type { ReleaseId } from './release-id.js';

/** What, besides the live link, holds or excludes a project's releases from retention. */
export interface RetentionHolds {
  /** Releases a preview points to: never removed, and not counted towards `keep`. */
  readonly pinned?: readonly ReleaseId[];
  /**
   * Releases deployed for a preview and never live since: once no preview points to them
   * they are gone for good (removed first, whatever `keep`), and they never count, so a
   * pull request's redeploys cannot push the live site's history out.
   */
  readonly previewOnly?: readonly ReleaseId[];
}

/**
 * Which releases to remove so that at most `keep` of the live history remain: replaced
 * preview releases first, then the oldest, never the live one (a live release older than
 * the newest `keep`, after a rollback, is kept and counts towards `keep`) nor a pinned one.
 */
export function releasesToPrune(releases: readonly ReleaseId[], live: ReleaseId | undefined, keep: number, holds: RetentionHolds = {}): ReleaseId[] {
  if (!Number.isInteger(keep) || keep < 1) throw new RangeError('keep must be a whole number of at least 1');
  const held = new Set((holds.pinned ?? []).filter((id) => id !== live));
  const previewOnly = new Set(holds.previewOnly ?? []);
  const unique = [...new Set(releases)].sort();
  const replaced = unique.filter((id) => previewOnly.has(id) && !held.has(id) && id !== live);
  const newestFirst = unique.reverse().filter((id) => !held.has(id) && !replaced.includes(id));
  const kept = new Set<ReleaseId>();
  if (live !== undefined && newestFirst.includes(live)) kept.add(live);
  for (const id of newestFirst) {
    if (kept.size >= keep) break;
    kept.add(id);
  }
  return [...replaced, ...newestFirst.filter((id) => !kept.has(id)).reverse()];
}
