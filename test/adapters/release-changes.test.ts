import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { manifestOf, parseManifest, type ManifestFile } from '../../src/domain/manifest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { releaseChanges } from '../../src/adapters/fs/unpack/release-changes.js';
import { sha256 } from '../support/sha256.js';

const BIG = { maxFiles: 100_000, maxBytes: 1e12 };
/** Few names, so that paths meet: the same file kept or changed, a file where a directory was, a directory emptied. */
const path = fc.array(fc.constantFrom('a', 'b', 'é', 'i.html', 'a.b'), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/'));
const entry = fc.record({ path, content: fc.constantFrom('', 'x', 'yy', 'zzz') });
const site = (entries: readonly { path: string; content: string }[]): PackedManifest | undefined => {
  try {
    const files = entries.map(({ path, content }): ManifestFile => ({ path, size: Buffer.byteLength(content), digest: sha256(content) }));
    return PackedManifest.pack(manifestOf([...parseManifest(files, BIG).files]));
  } catch {
    return undefined; // a file where another's directory is: no release holds that
  }
};

/** The rule stated plainly, over the files as objects: what the packed walk must agree with. */
function model(from: PackedManifest, to: PackedManifest, deferred: Uint8Array) {
  const digests = new Map([...from.files()].map((file) => [file.path, Buffer.from(file.digest).toString('hex')]));
  const kept = [...to.files()].map((file) => {
    const waits = file.object !== undefined && deferred[file.object] === 1;
    return !waits && digests.get(file.path) === Buffer.from(file.digest).toString('hex');
  });
  const keptPaths = new Set([...to.files()].filter((_, i) => kept[i]).map((file) => file.path));
  const dirsOf = (m: PackedManifest) => new Set([...m.files()].flatMap((file) => file.path.split('/').slice(0, -1).map((_, k, parts) => parts.slice(0, k + 1).join('/'))));
  const fromDirs = dirsOf(from);
  const toDirs = dirsOf(to);
  return {
    kept,
    unlinked: [...from.files()].map((file) => file.path).filter((p) => !keptPaths.has(p)),
    removedDirs: [...fromDirs].filter((dir) => !toDirs.has(dir)).sort(),
    dirs: [...fromDirs].filter((dir) => toDirs.has(dir)).sort(),
  };
}

describe("a release's changes into the next, worked out from the packed manifests", () => {
  it('keep, unlink and remove what the plain rule does, unlinks in the old order and directories deepest first', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(entry, { selector: (e) => e.path, minLength: 1, maxLength: 16 }),
        // For each file of the first release: kept, given other bytes, or removed; then files added, and the order shuffled.
        fc.array(fc.constantFrom('keep', 'keep', 'change', 'remove'), { minLength: 16, maxLength: 16 }),
        fc.uniqueArray(entry, { selector: (e) => e.path, maxLength: 4 }),
        fc.array(fc.nat(), { minLength: 20, maxLength: 20 }),
        fc.array(fc.boolean(), { maxLength: 4 }),
        (before, actions, added, ranks, deferring) => {
          const next = before.flatMap((e, i) => (actions[i] === 'remove' ? [] : [actions[i] === 'change' ? { ...e, content: `${e.content}!` } : e]));
          const shuffled = [...next, ...added.filter((e) => !next.some((n) => n.path === e.path))]
            .map((e, i) => ({ e, rank: ranks[i % ranks.length]! }))
            .sort((x, y) => x.rank - y.rank)
            .map(({ e }) => e);
          const from = site(before);
          const to = site(shuffled);
          if (!from || !to) return;
          const deferred = Uint8Array.from({ length: to.objectCount }, (_, i) => (deferring[i] ? 1 : 0));
          const expected = model(from, to, deferred);
          const actual = releaseChanges(from, to, deferred);
          expect([...actual.kept].map((flag) => flag === 1)).toEqual(expected.kept);
          const unlinks = actual.undo.filter((step) => step.op === 'unlink').map((step) => step.path);
          const rmdirs = actual.undo.filter((step) => step.op === 'rmdir').map((step) => step.path);
          expect(unlinks).toEqual(expected.unlinked);
          expect(actual.undo.slice(0, unlinks.length).every((step) => step.op === 'unlink')).toBe(true);
          expect([...rmdirs].sort()).toEqual(expected.removedDirs);
          const depths = rmdirs.map((dir) => dir.split('/').length);
          expect(depths).toEqual([...depths].sort((a, b) => b - a));
          expect([...actual.dirs].sort()).toEqual(expected.dirs);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('keeps a path whose bytes are the same, whatever order either manifest lists its files in', () => {
    const from = site([{ path: 'z.html', content: 'x' }, { path: 'a/b.html', content: 'yy' }, { path: 'a/c.html', content: '' }, { path: 'a.b', content: 'zzz' }])!;
    const to = site([{ path: 'a.b', content: 'zzz' }, { path: 'a/c.html', content: '' }, { path: 'new.html', content: 'x' }, { path: 'a/b.html', content: 'x' }])!;
    const changes = releaseChanges(from, to, new Uint8Array(to.objectCount));
    expect([...changes.kept]).toEqual([1, 1, 0, 0]);
    expect(changes.undo).toEqual([{ op: 'unlink', path: 'z.html' }, { op: 'unlink', path: 'a/b.html' }]);
    expect([...changes.dirs]).toEqual(['a']);
  });
});
