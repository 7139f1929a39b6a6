import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EMPTY_DIGEST, manifestOf, type ManifestFile } from '../../src/domain/manifest.js';
import { manifestDigest } from '../../src/domain/manifest-digest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { PackedPaths } from '../../src/domain/packed-paths.js';
import { sha256 } from '../support/sha256.js';

/**
 * Paths that meet: prefixes of one another, a directory's name beside its files, and the
 * characters whose UTF-16 order is not their UTF-8 order (a surrogate pair against U+E000 up).
 */
const part = fc.constantFrom('a', 'ab', 'b', '\uE000', '\u{10000}', 'é', 'a.html');
const path = fc.array(part, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/'));
const manifests = fc.uniqueArray(fc.record({ path, empty: fc.boolean() }), { selector: (f) => f.path, maxLength: 40 }).map((entries) =>
  entries.map(({ path, empty }): ManifestFile => (empty ? { path, size: 0, digest: EMPTY_DIGEST } : { path, size: path.length, digest: sha256(path) })),
);
const packed = (files: readonly ManifestFile[]) => new PackedPaths(PackedManifest.pack(manifestOf(files)));

describe('PackedPaths: a packed manifest\'s files read in place', () => {
  it('reads each file as the manifest has it: path, size, directory', () => {
    fc.assert(
      fc.property(manifests, (files) => {
        const paths = packed(files);
        expect(paths.count).toBe(files.length);
        files.forEach((file, i) => {
          expect(paths.path(i)).toBe(file.path);
          expect(paths.size(i)).toBe(file.size);
          expect(paths.parent(i)).toBe(file.path.includes('/') ? file.path.slice(0, file.path.lastIndexOf('/')) : '');
        });
        for (let i = 1; i < files.length; i += 1) expect(paths.sameParent(i - 1, i)).toBe(paths.parent(i - 1) === paths.parent(i));
      }),
    );
  });

  it('finds every path at its place, and no path it does not have', () => {
    fc.assert(
      fc.property(manifests, fc.array(path, { maxLength: 10 }), (files, others) => {
        const paths = packed(files);
        files.forEach((file, i) => expect(paths.find(file.path)).toBe(i));
        for (const other of others) expect(paths.find(other)).toBe(files.findIndex((file) => file.path === other) >= 0 ? files.findIndex((file) => file.path === other) : undefined);
      }),
    );
  });

  it("orders the files by their paths' UTF-8 bytes and names them as manifestDigest does", () => {
    fc.assert(
      fc.property(manifests, (files) => {
        const paths = packed(files);
        const order = [...paths.sorted()].map((i) => Buffer.from(files[i]!.path));
        expect(order).toEqual([...order].sort(Buffer.compare));
        expect(paths.canonicalDigest()).toBe(manifestDigest(files));
      }),
    );
  });

  it('finds a path longer than any looked up before', () => {
    const long = `${'d/'.repeat(1100)}x.html`;
    const paths = packed([{ path: long, size: 1, digest: sha256('x') }, { path: 'a', size: 1, digest: sha256('x') }]);
    expect(paths.find(long)).toBe(0);
    expect(paths.find(`${long}x`)).toBeUndefined();
  });
});
