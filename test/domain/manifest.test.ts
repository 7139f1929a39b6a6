import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManifestRejected } from '../../src/domain/errors.js';
import { assertExpectedObject, assertObjectBytes, EMPTY_DIGEST, manifestOf, parseManifest, type Digest } from '../../src/domain/manifest.js';
import { ArchiveRejected } from '../../src/domain/errors.js';

const limits = { maxFiles: 1000, maxBytes: 1_000_000 };
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex') as Digest;
const segment = fc.stringMatching(/^[a-z0-9_-]{1,8}$/);

describe('a manifest', () => {
  it('of distinct paths is taken whole; its objects are its non-empty contents, each once, with their sizes', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(segment, segment), { minLength: 1, maxLength: 40, selector: ([a, b]) => `${a}/${b}` }), fc.array(fc.string({ maxLength: 20 }), { minLength: 1, maxLength: 5 }), (paths, bodies) => {
        // Directories and files must not clash: put files one level down, in "d-" directories.
        const files = paths.map(([a, b], i) => {
          const body = bodies[i % bodies.length]!;
          return { path: `d-${a}/${b}`, size: Buffer.byteLength(body), digest: sha256(body) };
        });
        const manifest = parseManifest(files, limits);
        expect(manifest.files.map((f) => f.path)).toEqual(files.map((f) => f.path));
        const expected = new Map(files.filter((f) => f.size > 0).map((f) => [f.digest, f.size]));
        expect(manifest.objects).toEqual(expected);
        expect(manifest.bytes).toBe(files.reduce((sum, f) => sum + f.size, 0));
        // Read back from storage, the same manifest.
        expect(manifestOf(manifest.files)).toEqual(manifest);
      }),
    );
  });

  it('normalises paths as an archive entry is, and refuses what an archive would', () => {
    expect(parseManifest([{ path: './a//b.html', size: 0, digest: EMPTY_DIGEST }], limits).files[0]!.path).toBe('a/b.html');
    expect(() => parseManifest([{ path: 'a/../../b', size: 0, digest: EMPTY_DIGEST }], limits)).toThrow(ManifestRejected);
  });

  it('refuses a count over MAX_FILES before looking at any entry', () => {
    const many = Array.from({ length: 1001 }, () => null);
    expect(() => parseManifest(many, limits)).toThrow(/more than 1000 files and directories/);
  });
});

describe('a batch of objects', () => {
  const listed = new Map<string, number>([[sha256('a'), 1]]);
  const expected = { sizeOf: (digest: string) => listed.get(digest) };
  it('takes a listed digest at its size, and nothing else', () => {
    expect(() => assertExpectedObject(expected, 'file', sha256('a'), 1)).not.toThrow();
    expect(() => assertExpectedObject(expected, 'file', sha256('a'), 2)).toThrow(ArchiveRejected);
    expect(() => assertExpectedObject(expected, 'file', sha256('b'), 1)).toThrow(/not an object of this deploy's manifest/);
    expect(() => assertExpectedObject(expected, 'directory', sha256('a'), 0)).toThrow(/not an object/);
    expect(() => assertExpectedObject(expected, 'file', `x/${sha256('a')}`, 1)).toThrow(/not an object/);
  });
  it("checks an object's bytes against its name", () => {
    expect(() => assertObjectBytes(sha256('a'), sha256('a'))).not.toThrow();
    expect(() => assertObjectBytes(sha256('a'), sha256('b'))).toThrow(/do not match its name/);
  });
});
