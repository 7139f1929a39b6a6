import { NO_OBJECT } from '../../../domain/packed-layout.js';
import { addDirectory, type PackedPaths } from '../../../domain/packed-paths.js';

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
  for (let i = 0; i < files.count; i += 1) if (i === 0 || !files.sameParent(i, i - 1)) addDirectory(dirs, files.parent(i));
  return dirs;
}

const depth = (path: string): number => path.split('/').length;

/**
 * The changes from one release to the next, both checked manifests: a file changed is
 * unlinked and made again, so that no file of the area is ever written into (its inode
 * is the store's object, which other releases share). The two are walked side by side in
 * their paths' byte order, read where they lie: no string is made for a file kept.
 */
export function releaseChanges(from: PackedPaths, to: PackedPaths, deferred: Uint8Array): ReleaseChanges {
  const kept = new Uint8Array(to.count);
  const stays = new Uint8Array(from.count);
  const older = from.sorted();
  const newer = to.sorted();
  for (let o = 0, n = 0; o < older.length && n < newer.length; ) {
    const i = older[o]!;
    const j = newer[n]!;
    const order = from.compareWith(i, to, j);
    if (order < 0) o += 1;
    else if (order > 0) n += 1;
    else {
      const object = to.object(j);
      const waits = object !== NO_OBJECT && deferred[object] === 1;
      if (!waits && from.sameContent(i, to, j)) {
        kept[j] = 1;
        stays[i] = 1;
      }
      o += 1;
      n += 1;
    }
  }
  const undo: { op: 'unlink' | 'rmdir'; path: string }[] = [];
  for (let i = 0; i < from.count; i += 1) if (stays[i] === 0) undo.push({ op: 'unlink', path: from.path(i) });
  const fromDirs = impliedDirectories(from);
  const toDirs = impliedDirectories(to);
  const gone = [...fromDirs].filter((dir) => !toDirs.has(dir)).sort((a, b) => depth(b) - depth(a));
  for (const path of gone) undo.push({ op: 'rmdir', path });
  return { kept, undo, dirs: new Set([...fromDirs].filter((dir) => toDirs.has(dir))) };
}
