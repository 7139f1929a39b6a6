import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManifestRejected } from '../../src/domain/errors.js';
import { manifestOf, parseManifest, type ManifestFile } from '../../src/domain/manifest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { PackedPaths } from '../../src/domain/packed-paths.js';
import { releaseChanges } from '../../src/adapters/fs/unpack/release-changes.js';
import { sha256 } from '../support/sha256.js';

const BIG = { maxFiles: 100_000, maxBytes: 1e12 };
/**
 * Few names, so that paths meet. '.' and '-' sort just below '/'; U+FF01 and an astral
 * character sort one way in UTF-16 and the other in UTF-8 bytes, the order the walk uses.
 */
const segment = fc.constantFrom('a', 'b', 'a.b', 'a-b', 'é', '\uFF01', '😀');
/**
 * A file's path. Most leaves are names no directory has, so that most sites are valid;
 * some are a directory's name, so that a file becomes a directory from one release to the
 * next, or a directory a file.
 */
const path = fc
  .tuple(fc.array(segment, { maxLength: 3 }), fc.constantFrom('i.html~', 'x~', '😀.txt~', 'i.html~', 'x~', 'a', 'é'))
  .map(([dirs, leaf]) => [...dirs, leaf].join('/'));
const entry = fc.record({ path, content: fc.constantFrom('', 'x', 'yy', 'zzz') });
const site = (entries: readonly { path: string; content: string }[]): PackedManifest => {
  const files = entries.map(({ path, content }): ManifestFile => ({ path, size: Buffer.byteLength(content), digest: sha256(content) }));
  return PackedManifest.pack(manifestOf([...parseManifest(files, BIG).files]));
};
const changesOf = (from: PackedManifest, to: PackedManifest, deferred: Uint8Array) => releaseChanges(new PackedPaths(from), new PackedPaths(to), deferred);

/** The directories a site's paths imply, in the order its files first imply them (the nearest parent first). */
function impliedDirectories(manifest: PackedManifest): string[] {
  const dirs = new Set<string>();
  for (const { path } of manifest.files()) {
    for (let cut = path.lastIndexOf('/'); cut > 0 && !dirs.has(path.slice(0, cut)); cut = path.lastIndexOf('/', cut - 1)) dirs.add(path.slice(0, cut));
  }
  return [...dirs];
}

/** The rule stated plainly, over the files as objects and their paths as strings: what the packed walk must agree with. */
function model(from: PackedManifest, to: PackedManifest, deferred: Uint8Array) {
  const digests = new Map([...from.files()].map((file) => [file.path, Buffer.from(file.digest).toString('hex')]));
  const kept = [...to.files()].map((file) => {
    const waits = file.object !== undefined && deferred[file.object] === 1;
    return !waits && digests.get(file.path) === Buffer.from(file.digest).toString('hex');
  });
  const keptPaths = new Set([...to.files()].filter((_, i) => kept[i]).map((file) => file.path));
  const fromDirs = impliedDirectories(from);
  const toDirs = new Set(impliedDirectories(to));
  const depth = (dir: string) => dir.split('/').length;
  return {
    kept,
    undo: [
      ...[...from.files()].filter((file) => !keptPaths.has(file.path)).map((file) => ({ op: 'unlink', path: file.path })),
      ...fromDirs
        .filter((dir) => !toDirs.has(dir))
        .sort((a, b) => depth(b) - depth(a))
        .map((dir) => ({ op: 'rmdir', path: dir })),
    ],
    dirs: fromDirs.filter((dir) => toDirs.has(dir)).sort(),
  };
}

describe("a release's changes into the next, worked out from the packed manifests", () => {
  it('keep, unlink and remove what the plain rule does, in its order', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(entry, { selector: (e) => e.path, minLength: 1, maxLength: 16 }),
        // For each file of the first release: kept, given other bytes, emptied, removed, made a directory of one file, or put where its directory was; then files added, and the order shuffled.
        fc.array(fc.constantFrom('keep', 'keep', 'change', 'empty', 'remove', 'nest', 'lift'), { minLength: 16, maxLength: 16 }),
        fc.uniqueArray(entry, { selector: (e) => e.path, maxLength: 5 }),
        fc.array(fc.nat(), { minLength: 21, maxLength: 21 }),
        fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
        (before, actions, added, ranks, deferring) => {
          const changed = (e: { path: string; content: string }, action: string) =>
            action === 'change' ? { ...e, content: `${e.content}!` } : action === 'empty' ? { ...e, content: '' } : action === 'nest' ? { ...e, path: `${e.path}/n~` } : action === 'lift' && e.path.includes('/') ? { ...e, path: e.path.slice(0, e.path.lastIndexOf('/')) } : e;
          const next = before.flatMap((e, i) => (actions[i] === 'remove' ? [] : [changed(e, actions[i]!)]));
          const shuffled = [...next, ...added.filter((e) => !next.some((n) => n.path === e.path))]
            .map((e, i) => ({ e, rank: ranks[i]! }))
            .sort((x, y) => x.rank - y.rank)
            .map(({ e }) => e);
          let from: PackedManifest;
          let to: PackedManifest;
          try {
            from = site(before);
            to = site(shuffled);
          } catch (error) {
            if (error instanceof ManifestRejected) return; // no release holds such a site
            throw error;
          }
          const deferred = Uint8Array.from({ length: to.objectCount }, (_, i) => (deferring[i] ? 1 : 0));
          const expected = model(from, to, deferred);
          const actual = changesOf(from, to, deferred);
          expect([...actual.kept].map((flag) => flag === 1)).toEqual(expected.kept);
          expect(actual.undo).toEqual(expected.undo);
          expect([...actual.dirs].sort()).toEqual(expected.dirs);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('keeps a path whose bytes are the same, whatever order either manifest lists its files in, and names by bytes', () => {
    const from = site([{ path: 'z.html', content: 'x' }, { path: 'a/b.html', content: 'yy' }, { path: '\uFF01', content: 'x' }, { path: 'a/c.html', content: '' }, { path: '😀', content: 'zzz' }]);
    const to = site([{ path: '😀', content: 'zzz' }, { path: 'a/c.html', content: '' }, { path: 'new.html', content: 'x' }, { path: 'a/b.html', content: 'x' }, { path: '\uFF01', content: 'x' }]);
    const changes = changesOf(from, to, new Uint8Array(to.objectCount));
    expect([...changes.kept]).toEqual([1, 1, 0, 0, 1]);
    expect(changes.undo).toEqual([{ op: 'unlink', path: 'z.html' }, { op: 'unlink', path: 'a/b.html' }]);
    expect([...changes.dirs]).toEqual(['a']);
  });
});
