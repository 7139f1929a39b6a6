import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManifestRejected } from '../../src/domain/errors.js';
import { applyManifestChanges, manifestOf, parseManifest, parseManifestChanges, type ManifestChanges, type ManifestFile } from '../../src/domain/manifest.js';
import { applyPackedChanges } from '../../src/domain/packed-changes.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { sha256 } from '../support/sha256.js';

const BIG = { maxFiles: 100_000, maxBytes: 1e12 };
/** Few names, so that paths meet: the same file, a file where a directory is, a directory emptied. */
const path = fc.array(fc.constantFrom('a', 'b', 'c', 'i.html'), { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
/** `lie`: a size other than the bytes', as a client may claim. */
const entry = fc.record({ path, content: fc.constantFrom('', 'x', 'yy', 'zzz', 'x'.repeat(40)), lie: fc.constantFrom(0, 0, 0, 1) });
const file = ({ path, content, lie }: { path: string; content: string; lie: number }): ManifestFile => ({
  path,
  size: content === '' ? 0 : Buffer.byteLength(content) + lie,
  digest: sha256(content),
});

/** What the whole check makes of the changes, packed, or its refusal. */
function whole(base: readonly ManifestFile[], changes: ManifestChanges, limits: typeof BIG): PackedManifest | ManifestRejected {
  try {
    return PackedManifest.pack(applyManifestChanges(base, changes, limits));
  } catch (error) {
    if (error instanceof ManifestRejected) return error;
    throw error;
  }
}

function packed(base: PackedManifest, changes: ManifestChanges, limits: typeof BIG): PackedManifest | ManifestRejected {
  try {
    return applyPackedChanges(base, changes, limits);
  } catch (error) {
    if (error instanceof ManifestRejected) return error;
    throw error;
  }
}

describe('changes applied to a packed base, checked only where they touch it', () => {
  it('make byte for byte the packed manifest the whole check makes, and are refused where it refuses', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(entry, { selector: (e) => e.path, minLength: 1, maxLength: 12 }),
        fc.uniqueArray(entry, { selector: (e) => e.path, maxLength: 6 }),
        fc.array(fc.oneof(path, fc.nat({ max: 11 })), { maxLength: 4 }),
        fc.record({ maxFiles: fc.constantFrom(3, 6, 12, 100), maxBytes: fc.constantFrom(5, 60, 1e9) }),
        (baseRaw, changed, removing, limits) => {
          let base: ManifestFile[];
          let changes: ManifestChanges;
          try {
            base = [...parseManifest(baseRaw.map((e) => file({ ...e, lie: 0 })), BIG).files];
            const removed = [...new Set(removing.map((r) => (typeof r === 'number' ? (base[r % base.length]!.path) : r)))];
            changes = parseManifestChanges(changed.map(file), removed, BIG);
          } catch (error) {
            if (error instanceof ManifestRejected) return; // not what a reader would hand on
            throw error;
          }
          const expected = whole(base, changes, limits);
          const actual = packed(PackedManifest.pack(manifestOf(base)), changes, limits);
          if (expected instanceof ManifestRejected) {
            expect(actual, expected.reason).toBeInstanceOf(ManifestRejected);
            return;
          }
          expect(actual, actual instanceof ManifestRejected ? actual.reason : '').toBeInstanceOf(PackedManifest);
          expect((actual as PackedManifest).packed.equals(expected.packed)).toBe(true);
        },
      ),
      { numRuns: 3000 },
    );
  });

  const base = (entries: Record<string, string>) => PackedManifest.pack(manifestOf(Object.entries(entries).map(([p, c]) => file({ path: p, content: c, lie: 0 }))));
  const changes = (files: Record<string, string>, removed: string[] = []): ManifestChanges => parseManifestChanges(Object.entries(files).map(([p, c]) => file({ path: p, content: c, lie: 0 })), removed, BIG);
  const refusal = (b: PackedManifest, c: ManifestChanges, limits = BIG) => (packed(b, c, limits) as ManifestRejected).reason;

  it('says what it refuses in the whole check\'s words', () => {
    const b = base({ 'index.html': 'x', 'docs/a.html': 'yy', 'docs/deep/b.html': 'zzz' });
    expect(refusal(b, changes({}, ['nope.html']))).toBe('removed path is not in the base release: nope.html');
    expect(refusal(b, changes({ docs: 'x' }))).toBe('a file and a directory share the path: docs');
    expect(refusal(b, changes({ 'index.html/x.html': 'x' }))).toBe('a file and a directory share the path: index.html');
    expect(refusal(b, changes({}, ['index.html', 'docs/a.html', 'docs/deep/b.html']))).toBe('site contains no files');
    expect(refusal(b, changes({ 'more.html': 'zzz' }), { maxFiles: 3, maxBytes: 1e9 })).toBe('more than 3 files and directories');
    expect(refusal(b, changes({ 'new/deeper/more.html': 'x' }), { maxFiles: 7, maxBytes: 1e9 })).toBe('site has more than 7 files and directories');
    expect(refusal(b, changes({ 'more.html': 'zzz' }), { maxFiles: 100, maxBytes: 8 })).toBe('site unpacks to more than 8 bytes');
    const lie = parseManifestChanges([{ path: 'other.html', size: 3, digest: sha256('yy') }], [], BIG);
    expect(refusal(b, lie)).toBe('digest listed with two sizes: other.html');
  });

  it('takes what the removed files free: a directory emptied becomes a file, a content removed takes another size', () => {
    const b = base({ 'index.html': 'x', 'docs/a.html': 'yy' });
    const dirToFile = applyPackedChanges(b, changes({ docs: 'zzz' }, ['docs/a.html']), BIG);
    expect(dirToFile.manifestFiles()).toEqual([{ path: 'index.html', size: 1, digest: sha256('x') }, { path: 'docs', size: 3, digest: sha256('zzz') }]);
    const resized = applyPackedChanges(b, parseManifestChanges([{ path: 'b.html', size: 3, digest: sha256('yy') }], ['docs/a.html'], BIG), BIG);
    expect(resized.sizeOf(sha256('yy'))).toBe(3);
  });
});
