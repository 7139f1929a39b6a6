import type { PackedManifest } from '../../../domain/packed-manifest.js';
import { NO_OBJECT } from '../../../domain/packed-layout.js';
import { PackedPaths } from '../../../domain/packed-paths.js';

/** What turns a staging area holding the release `from` into one of `to` (AssemblyPart 'amend'). */
export interface ReleaseChanges {
  /**
   * By position in `to`, 1 for a file the area has already: the same path at the same
   * digest in `from`, and an object not `deferred` (one that is, the second part links at
   * every path).
   */
  readonly kept: Uint8Array;
  /** In order: every file of `from` not kept, unlinked; then its directories `to` does not imply, deepest first. */
  readonly undo: readonly { readonly op: 'unlink' | 'rmdir'; readonly path: string }[];
  /** Directories of `from` that `to` implies too: they stay. */
  readonly dirs: ReadonlySet<string>;
}

/** The directories a manifest's paths imply (a file `a/b/c` implies `a` and `a/b`), a string made only where the directory changes. */
function impliedDirectories(files: PackedPaths): Set<string> {
  const dirs = new Set<string>();
  for (let i = 0; i < files.count; i += 1) {
    if (i > 0 && files.sameParent(i, i - 1)) continue;
    for (let dir = files.parent(i); dir !== '' && !dirs.has(dir); dir = dir.slice(0, Math.max(dir.lastIndexOf('/'), 0))) dirs.add(dir);
  }
  return dirs;
}

const depth = (path: string): number => path.split('/').length;

/**
 * The changes from one release to the next, both checked manifests: a file changed is
 * unlinked and made again, so that no file of the area is ever written into (its inode
 * is the store's object, which other releases share). The two are read where they lie
 * and walked side by side in their paths' byte order: a 40,000-file site made a Map and
 * a Set of its paths and digests, some 200 ms of the thread the uploads pass through
 * (docs/performance.md).
 */
export function releaseChanges(from: PackedManifest, to: PackedManifest, deferred: Uint8Array): ReleaseChanges {
  const before = new PackedPaths(from);
  const after = new PackedPaths(to);
  const kept = new Uint8Array(after.count);
  const stays = new Uint8Array(before.count);
  const older = before.sorted();
  const newer = after.sorted();
  for (let o = 0, n = 0; o < older.length && n < newer.length; ) {
    const i = older[o]!;
    const j = newer[n]!;
    const order = before.compareWith(i, after, j);
    if (order < 0) o += 1;
    else if (order > 0) n += 1;
    else {
      const object = after.object(j);
      const waits = object !== NO_OBJECT && deferred[object] === 1;
      if (!waits && before.sameContent(i, after, j)) {
        kept[j] = 1;
        stays[i] = 1;
      }
      o += 1;
      n += 1;
    }
  }
  const undo: { op: 'unlink' | 'rmdir'; path: string }[] = [];
  for (let i = 0; i < before.count; i += 1) if (stays[i] === 0) undo.push({ op: 'unlink', path: before.path(i) });
  const fromDirs = impliedDirectories(before);
  const toDirs = impliedDirectories(after);
  const gone = [...fromDirs].filter((dir) => !toDirs.has(dir)).sort((a, b) => depth(b) - depth(a));
  for (const path of gone) undo.push({ op: 'rmdir', path });
  return { kept, undo, dirs: new Set([...fromDirs].filter((dir) => toDirs.has(dir))) };
}
