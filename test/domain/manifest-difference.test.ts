import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManifestRejected } from '../../src/domain/errors.js';
import { applyManifestDifference, EMPTY_DIGEST, type ManifestFile } from '../../src/domain/manifest.js';
import { byPathBytes, manifestDifference, manifestDigest } from '../../src/domain/manifest-digest.js';
import { sha256 } from '../support/sha256.js';

const limits = { maxFiles: 1000, maxBytes: 1_000_000 };
const entry = (path: string, body: string): ManifestFile => ({ path, size: Buffer.byteLength(body), digest: body === '' ? EMPTY_DIGEST : sha256(body) });
const base = [entry('index.html', 'home'), entry('a/one.html', 'one'), entry('a/two.html', 'two'), entry('empty.txt', '')];
const bySorted = (files: readonly ManifestFile[]) => [...files].sort((a, b) => (a.path < b.path ? -1 : 1));

/** Sites of distinct paths one level down (no file/directory clash), bodies from a small pool so contents repeat. */
const sites = fc.uniqueArray(fc.tuple(fc.stringMatching(/^[a-c]$/), fc.stringMatching(/^[a-z0-9é深-]{1,6}$/), fc.constantFrom('', 'x', 'y', 'zz', 'long body')), {
  minLength: 1,
  maxLength: 30,
  selector: ([dir, name]) => `${dir}/${name}`,
}).map((rows) => rows.map(([dir, name, body]) => entry(`${dir}/${name}`, body)));

describe('a manifest digest', () => {
  it('is SHA-256 of "<digest> <size> <path>\\n" lines sorted by UTF-8 bytes, whatever order the entries come in', () => {
    const lines = [...base].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path))).map((f) => `${f.digest} ${f.size} ${f.path}\n`).join('');
    expect(manifestDigest(base)).toBe(sha256(lines));
    expect(manifestDigest([...base].reverse())).toBe(manifestDigest(base));
    expect(manifestDigest(base.slice(1))).not.toBe(manifestDigest(base));
    expect(manifestDigest([{ ...base[0]!, size: 5 }, ...base.slice(1)])).not.toBe(manifestDigest(base));
  });

  it('sorts paths as Buffer.compare does, not as JavaScript compares strings (a surrogate pair after U+FFFD)', () => {
    const paths = ['\u{1F600}.html', '\uFFFD.html', 'z.html', 'é.html'];
    expect(byPathBytes(paths.map((path) => ({ path }))).map((e) => e.path)).toEqual(['z.html', 'é.html', '\uFFFD.html', '\u{1F600}.html']);
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', maxLength: 6 }), { maxLength: 20 }), (strings) => {
        const expected = [...strings].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
        expect(byPathBytes(strings.map((path) => ({ path }))).map((e) => e.path)).toEqual(expected);
      }),
    );
  });
});

describe('a manifest relative to a base', () => {
  it('base + difference(base, target) is target, and its digest is target\'s', () => {
    fc.assert(
      fc.property(sites, sites, (before, after) => {
        const { files, removed } = manifestDifference(before, after);
        const applied = applyManifestDifference(before, files, removed, limits);
        expect(bySorted(applied.files)).toEqual(bySorted(after));
        expect(manifestDigest(applied.files)).toBe(manifestDigest(after));
      }),
    );
  });

  it('keeps what it does not name; changes, adds and removes what it does', () => {
    const applied = applyManifestDifference(base, [entry('a/one.html', 'ONE'), entry('b/new.html', 'new')], ['a/two.html'], limits);
    expect(applied.files).toEqual([entry('index.html', 'home'), entry('a/one.html', 'ONE'), entry('empty.txt', ''), entry('b/new.html', 'new')]);
    expect(applied.bytes).toBe(4 + 3 + 3);
    // Nothing changed at all is the base again.
    expect(applyManifestDifference(base, [], [], limits).files).toEqual(base);
  });

  it('takes a path spelled another way for the same path, as an archive entry', () => {
    expect(applyManifestDifference(base, [entry('./a//one.html', 'ONE')], ['./empty.txt'], limits).files.map((f) => f.path)).toEqual(['index.html', 'a/one.html', 'a/two.html']);
  });

  it.each([
    ['a removed path the base lacks', [], ['nope.html'], /^removed path is not in the base release: nope\.html$/],
    ['a path both changed and removed', [entry('a/one.html', 'ONE')], ['a/one.html'], /^path both changed and removed: a\/one\.html$/],
    ['a path changed twice', [entry('new.html', '1'), entry('./new.html', '2')], [], /^duplicate path: \.\/new\.html$/],
    ['a path removed twice', [], ['a/one.html', 'a//one.html'], /^path removed twice: a\/\/one\.html$/],
    ['removed not a list', [], 'a/one.html', /^removed must be an array of paths$/],
    ['a removed entry not a string', [], [7], /^removed\[0\] is not a string$/],
    ['files not a list', {}, [], /^files must be an array/],
    ['a malformed entry', [{ path: 'x', size: -1, digest: EMPTY_DIGEST }], [], /^size must be a whole number of bytes: x$/],
    ['a removed path with ..', [], ['a/../../etc'], /^path contains '\.\.' component which is not allowed/],
    ['a removed path with a control character, shown escaped', [], ['a\u0007b'], /^path contains a control character: a\\u0007b$/],
    ['a long unknown removed path, shortened', [], [`${'x'.repeat(150)}/${'y'.repeat(150)}`], /^removed path is not in the base release: x{150}\/y{49}…$/],
    ['more removed than the base has', [], ['index.html', 'a/one.html', 'a/two.html', 'empty.txt', 'five'], /^removed path is not in the base release: five$/],
    ['more removed than MAX_FILES', [], Array.from({ length: 1001 }, (_, i) => `p${i}`), /^removed lists more than 1000 paths$/],
    ['removing every file', [], base.map((f) => f.path), /^site contains no files$/],
    ['a file where the base has a directory', [entry('a', 'file')], [], /^a file and a directory share the path: a$/],
  ])('refuses %s', (_name, files, removed, message) => {
    expect(() => applyManifestDifference(base, files, removed, limits)).toThrow(ManifestRejected);
    expect(() => applyManifestDifference(base, files, removed, limits)).toThrow(message);
  });

  it('holds the resulting site to MAX_FILES and MAX_EXTRACTED_BYTES, base and difference together', () => {
    // Three files and one directory in the base: two added files reach six entries.
    expect(applyManifestDifference(base, [entry('b.html', 'b')], [], { maxFiles: 6, maxBytes: 100 }).files).toHaveLength(5);
    expect(() => applyManifestDifference(base, [entry('b.html', 'b'), entry('c.html', 'c')], [], { maxFiles: 6, maxBytes: 100 })).toThrow(/^site has more than 6 files and directories$/);
    expect(() => applyManifestDifference(base, [entry('big.bin', 'x'.repeat(91))], [], { maxFiles: 100, maxBytes: 100 })).toThrow(/^site unpacks to more than 100 bytes$/);
    // A difference longer than MAX_FILES is refused before it is walked.
    expect(() => applyManifestDifference(base, Array.from({ length: 7 }, () => null), [], { maxFiles: 6, maxBytes: 100 })).toThrow(/^more than 6 files and directories$/);
  });
});

describe("the canonical digest's example in docs/openapi.yaml", () => {
  it('is what manifestDigest computes', () => {
    expect(manifestDigest([entry('b.html', 'abc'), entry('a.txt', '')])).toBe('e80d5582034d589874ed0ec65bb1b67541ef57c7f7556089e29922345292d7cc');
  });
});
