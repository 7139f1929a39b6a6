import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManifestRejected } from '../../src/domain/errors.js';
import { assertExpectedObject, assertObjectBytes, batchLimits, uploadableObjects } from '../../src/domain/object-batch.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { EMPTY_DIGEST, ManifestReader, manifestOf, parseManifest, parseManifestChanges } from '../../src/domain/manifest.js';
import { ArchiveRejected } from '../../src/domain/errors.js';
import { sha256 } from '../support/sha256.js';

const limits = { maxFiles: 1000, maxBytes: 1_000_000 };
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

/** What a call threw: its message if a ManifestRejected, the error itself otherwise; undefined if it returned. */
function refusal(call: () => unknown): string | unknown {
  try {
    call();
    return undefined;
  } catch (error) {
    return error instanceof ManifestRejected ? error.message : error;
  }
}

describe('a manifest read entry by entry (ManifestReader)', () => {
  const small = { maxFiles: 6, maxBytes: 10 };
  // Entries that break every rule now and then: paths that clash, repeat, climb out, go
  // deep or are absolute; sizes over the limit or not whole; digests malformed or sized twice.
  const entry = fc.oneof(
    { weight: 8, arbitrary: fc.record({
      path: fc.oneof(
        fc.array(fc.constantFrom('a', 'b', 'c', '.', '', '..'), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/')),
        fc.constantFrom('/etc/passwd', 'a\\b', 'a\nb', 'a/b/c/d/e/f/g', './', 'x'.repeat(300)),
      ),
      size: fc.constantFrom(0, 1, 2, 3, 9, 11, -1, 1.5, Number.MAX_SAFE_INTEGER + 1),
      digest: fc.constantFrom(EMPTY_DIGEST, sha256('a'), sha256('b'), 'A'.repeat(64), 'x'),
    }) },
    { weight: 1, arbitrary: fc.anything() },
  );

  it('checks each entry as it comes: what `file` takes, `whole` takes, and the entries before a refused one make a manifest', () => {
    const fed = (entries: readonly unknown[]) => {
      const reader = new ManifestReader(small);
      reader.filesField([]);
      let at = 0;
      const refused = refusal(() => {
        for (; at < entries.length; at += 1) reader.file(entries[at]);
      });
      return { reader, at, refused };
    };
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 9 }), (entries) => {
        const { reader, at, refused } = fed(entries);
        if (refused === undefined) {
          // No rule left for the end but that a site has a file.
          expect(refusal(() => reader.whole())).toBe(entries.length === 0 ? 'site contains no files' : undefined);
          if (entries.length > 0) expect(reader.whole()).toEqual(parseManifest(entries, small));
          return;
        }
        expect(typeof refused, String(refused)).toBe('string');
        expect(refusal(() => parseManifest(entries, small))).toBe(entries.length > small.maxFiles ? `more than ${small.maxFiles} files and directories` : refused);
        if (at > 0) expect(refusal(() => fed(entries.slice(0, at)).reader.whole())).toBeUndefined();
      }),
      { numRuns: 2000 },
    );
  });

  it('throws nothing but ManifestRejected, whatever it is fed and in whatever order', () => {
    const call = fc.oneof(
      fc.tuple(fc.constantFrom('filesField', 'file', 'removedField', 'removed') as fc.Arbitrary<'filesField' | 'file' | 'removedField' | 'removed'>, fc.anything()),
      fc.tuple(fc.constant('file' as const), entry),
    );
    fc.assert(
      fc.property(fc.array(call, { maxLength: 12 }), fc.boolean(), (calls, whole) => {
        const reader = new ManifestReader(small);
        for (const [method, value] of calls) {
          const outcome = refusal(() => reader[method](value));
          expect(outcome === undefined || typeof outcome === 'string', String(outcome)).toBe(true);
        }
        const outcome = refusal(() => (whole ? reader.whole() : reader.changes()));
        expect(outcome === undefined || typeof outcome === 'string', String(outcome)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("counts the directories paths imply as they come: 'd<i>/e/f' over MAX_FILES 300 is refused at entry 100, no later one asked for", () => {
    let asked = 0;
    function* entries(): Generator<unknown> {
      for (let i = 0; ; i += 1) {
        asked += 1;
        yield { path: `d${i}/e/f`, size: 1, digest: sha256('f') };
      }
    }
    const reader = new ManifestReader({ maxFiles: 300, maxBytes: 1_000_000 });
    reader.filesField([]);
    expect(() => {
      for (const next of entries()) reader.file(next);
    }).toThrow(/^site has more than 300 files and directories$/);
    // Three entries each (d<i>, d<i>/e, the file): the 101st makes 303.
    expect(asked).toBe(101);
  });

  it('finds a path both changed and removed whichever list comes first; without a base, removed is refused whatever it names', () => {
    const files = [{ path: 'a.html', size: 1, digest: sha256('a') }];
    const read = (order: 'files first' | 'removed first') => {
      const reader = new ManifestReader(small);
      const lists = {
        files: () => {
          reader.filesField([]);
          for (const f of files) reader.file(f);
        },
        removed: () => {
          reader.removedField([]);
          reader.removed('./a.html');
        },
      };
      const [first, second] = order === 'files first' ? [lists.files, lists.removed] : [lists.removed, lists.files];
      first();
      second();
      return reader;
    };
    for (const order of ['files first', 'removed first'] as const) {
      expect(() => read(order).changes(), order).toThrow(/^path both changed and removed: a\.html$/);
      expect(() => read(order).whole(), order).toThrow(/^removed needs a base$/);
    }
    expect(parseManifestChanges(files, [], small)).toEqual({ files, removed: [] });
  });
});

describe('a batch of objects', () => {
  const listed = new Map<string, number>([[sha256('a'), 1]]);
  const expected = { sizeOf: (digest: string) => listed.get(digest) };
  it('takes a listed digest at its size, and nothing else', () => {
    expect(() => assertExpectedObject(expected, 'file', sha256('a'), 1)).not.toThrow();
    expect(() => assertExpectedObject(expected, 'file', sha256('a'), 2)).toThrow(ArchiveRejected);
    expect(() => assertExpectedObject(expected, 'file', sha256('b'), 1)).toThrow(/not an object this deploy is missing/);
    expect(() => assertExpectedObject(expected, 'directory', sha256('a'), 0)).toThrow(/not an object/);
    expect(() => assertExpectedObject(expected, 'file', `x/${sha256('a')}`, 1)).toThrow(/not an object/);
  });
  it('may hold only what the session was told is missing, at the manifest\'s sizes; all of the manifest where that is not known', () => {
    const files = ['a', 'bb', 'ccc', 'dddd'].map((text, i) => ({ path: `f${i}`, size: text.length, digest: sha256(text) }));
    const manifest = PackedManifest.pack(manifestOf([...files, { path: 'copy', size: 3, digest: sha256('ccc') }]));
    fc.assert(
      fc.property(fc.subarray(files), (chosen) => {
        const digests = chosen.map((f) => f.digest);
        // A digest the manifest does not list is no object of the session's, whatever it was told.
        const uploadable = uploadableObjects(manifest, [...digests, sha256('elsewhere')]);
        for (const f of files) expect(uploadable.sizeOf(f.digest)).toBe(digests.includes(f.digest) ? f.size : undefined);
        expect(uploadable.sizeOf(sha256('elsewhere'))).toBeUndefined();
        expect(batchLimits(uploadable)).toEqual({ maxFiles: chosen.length, maxBytes: chosen.reduce((sum, f) => sum + f.size, 0) });
      }),
    );
    expect(uploadableObjects(manifest, undefined).objectBytes()).toBe(10);
  });
  it("checks an object's bytes against its name", () => {
    expect(() => assertObjectBytes(sha256('a'), sha256('a'))).not.toThrow();
    expect(() => assertObjectBytes(sha256('a'), sha256('b'))).toThrow(/do not match its name/);
  });
});
