import type { PackedManifest } from '../../../domain/packed-manifest.js';

/** What turns a staging area holding the release `from` into one of `to` (AssemblyPart 'amend'). */
export interface ReleaseChanges {
  /**
   * Paths of `to` whose file the area has already: the same path at the same digest in
   * `from`, and an object not `deferred` (one that is, the second part links at every path).
   */
  readonly kept: ReadonlySet<string>;
  /** In order: every file of `from` not kept, unlinked; then its directories `to` does not imply, deepest first. */
  readonly undo: readonly { readonly op: 'unlink' | 'rmdir'; readonly path: string }[];
  /** Directories of `from` that `to` implies too: they stay. */
  readonly dirs: ReadonlySet<string>;
}

/** The directories a manifest's paths imply (a file `a/b/c` implies `a` and `a/b`). */
function impliedDirectories(manifest: PackedManifest): Set<string> {
  const dirs = new Set<string>();
  for (const { path } of manifest.files()) {
    for (let cut = path.lastIndexOf('/'); cut > 0; cut = path.lastIndexOf('/', cut - 1)) {
      const parent = path.slice(0, cut);
      if (dirs.has(parent)) break;
      dirs.add(parent);
    }
  }
  return dirs;
}

const key = (digest: Uint8Array): string => Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength).toString('latin1');
const depth = (path: string): number => path.split('/').length;

/**
 * The changes from one release to the next, both checked manifests: a file changed is
 * unlinked and made again, so that no file of the area is ever written into (its inode
 * is the store's object, which other releases share).
 */
export function releaseChanges(from: PackedManifest, to: PackedManifest, deferred: Uint8Array): ReleaseChanges {
  const before = new Map<string, string>();
  for (const file of from.files()) before.set(file.path, key(file.digest));
  const kept = new Set<string>();
  for (const file of to.files()) {
    const waits = file.object !== undefined && deferred[file.object] === 1;
    if (!waits && before.get(file.path) === key(file.digest)) kept.add(file.path);
  }
  const undo: { op: 'unlink' | 'rmdir'; path: string }[] = [];
  for (const path of before.keys()) if (!kept.has(path)) undo.push({ op: 'unlink', path });
  const fromDirs = impliedDirectories(from);
  const toDirs = impliedDirectories(to);
  const gone = [...fromDirs].filter((dir) => !toDirs.has(dir)).sort((a, b) => depth(b) - depth(a));
  for (const path of gone) undo.push({ op: 'rmdir', path });
  return { kept, undo, dirs: new Set([...fromDirs].filter((dir) => toDirs.has(dir))) };
}
