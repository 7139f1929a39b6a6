import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EMPTY_DIGEST, manifestOf, type ManifestFile } from '../../src/domain/manifest.js';
import { PackedManifestBuilder } from '../../src/domain/packed-builder.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { sha256 } from '../support/sha256.js';

const built = (files: readonly ManifestFile[]): PackedManifest => {
  const builder = new PackedManifestBuilder();
  for (const file of files) builder.add(file.path, file.size, Buffer.from(file.digest, 'hex'));
  return builder.build();
};

/** Files as an archive's ledger passes them: distinct paths of any script, empty files, contents shared. */
const archives = fc
  .uniqueArray(fc.record({ path: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), content: fc.nat({ max: 30 }), empty: fc.boolean() }), { selector: (f) => f.path, maxLength: 60 })
  .map((entries) => entries.map(({ path, content, empty }): ManifestFile => (empty ? { path, size: 0, digest: EMPTY_DIGEST } : { path, size: 10 + content, digest: sha256(`content ${content}`) })));

describe('PackedManifestBuilder: a packed manifest made a file at a time', () => {
  it('makes byte for byte what packing the same files makes', () => {
    fc.assert(fc.property(archives, (files) => {
      expect(built(files).packed.equals(PackedManifest.pack(manifestOf(files)).packed)).toBe(true);
    }));
  });

  it('holds as its records fill many pieces and its table grows: 9,000 files of long paths, 7,000 contents', () => {
    // The last 2,000 files share the contents numbered last, held by the second piece of objects.
    const content = (i: number) => (i < 7000 ? i : 13_999 - i);
    const files = Array.from({ length: 9000 }, (_, i): ManifestFile => ({
      path: `section-${i % 40}/${'deep/'.repeat(20)}page-${i}.html`,
      size: 100 + content(i),
      digest: sha256(`page ${content(i)}`),
    }));
    const packed = built(files);
    expect(packed.packed.equals(PackedManifest.pack(manifestOf(files)).packed)).toBe(true);
    expect(packed.objectCount).toBe(7000);
    expect(packed.sizeOf(sha256('page 6999'))).toBe(7099);
  });

  it('makes an empty manifest of no files', () => {
    expect(built([]).packed.equals(PackedManifest.pack(manifestOf([])).packed)).toBe(true);
  });
});
