import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EMPTY_DIGEST, manifestOf, type Digest, type ManifestFile } from '../../src/domain/manifest.js';
import { manifestDigest } from '../../src/domain/manifest-digest.js';
import { digestSlot, PackedManifest } from '../../src/domain/packed-manifest.js';
import { sha256 } from '../support/sha256.js';


/** Manifests as a checked one can be: distinct paths of any script, empty files, contents shared, sizes past 4 GiB. */
const manifests = fc
  .uniqueArray(
    fc.record({
      path: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
      content: fc.nat({ max: 30 }),
      size: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2 ** 40 })),
    }),
    { selector: (file) => file.path, maxLength: 60 },
  )
  .map((entries) => {
    // One size per content, as the manifest's rules make it.
    const sizes = new Map<number, number>();
    return entries.map(({ path, content, size }): ManifestFile => {
      if (size === 0) return { path, size: 0, digest: EMPTY_DIGEST };
      const fixed = sizes.get(content) ?? size;
      sizes.set(content, fixed);
      return { path, size: fixed, digest: sha256(`content ${content}`) };
    });
  });

describe('PackedManifest', () => {
  it('gives back the manifest it packed: files in order, objects, bytes; and reads back from a copy of its bytes', () => {
    fc.assert(
      fc.property(manifests, (files) => {
        const manifest = manifestOf(files);
        const packed = PackedManifest.pack(manifest);
        expect(packed.manifest()).toEqual(manifest);
        expect([packed.fileCount, packed.objectCount, packed.bytes]).toEqual([files.length, manifest.objects.size, manifest.bytes]);
        expect(packed.objectBytes()).toBe([...manifest.objects.values()].reduce((a, b) => a + b, 0));
        const copy = PackedManifest.from(new Uint8Array(packed.packed));
        expect(copy.manifest()).toEqual(manifest);
        expect([...copy.files()].map((f) => ({ path: f.path, size: f.size, digest: Buffer.from(f.digest).toString('hex') }))).toEqual(files);
      }),
    );
  });

  it('names itself by the digest of its canonical form, as the manifest it packed does, read back or not', () => {
    fc.assert(
      fc.property(manifests, (files) => {
        const packed = PackedManifest.pack(manifestOf(files));
        expect(packed.canonicalDigest()).toBe(manifestDigest(files));
        expect(PackedManifest.from(Buffer.from(packed.packed)).canonicalDigest()).toBe(manifestDigest(files));
      }),
    );
  });

  it("numbers its objects: each file's object index is its content's, and no two contents share one", () => {
    fc.assert(
      fc.property(manifests, (files) => {
        const manifest = manifestOf(files);
        const packed = PackedManifest.pack(manifest);
        const indexes = [...manifest.objects.keys()].map((digest) => packed.objectIndex(digest));
        expect(new Set(indexes).size).toBe(manifest.objects.size);
        for (const index of indexes) expect(index).toSatisfy((i: number | undefined) => i !== undefined && i >= 0 && i < packed.objectCount);
        for (const file of packed.files()) {
          const hex = Buffer.from(file.digest).toString('hex');
          expect(file.object).toBe(file.size === 0 ? undefined : packed.objectIndex(hex));
        }
        expect(packed.objectIndex(EMPTY_DIGEST)).toBeUndefined();
        expect(packed.objectIndex(sha256('never listed'))).toBeUndefined();
      }),
    );
  });

  it('finds the size of every content it lists, and of no other', () => {
    fc.assert(
      fc.property(manifests, fc.array(fc.nat({ max: 60 })), (files, others) => {
        const manifest = manifestOf(files);
        const packed = PackedManifest.pack(manifest);
        for (const [digest, size] of manifest.objects) expect(packed.sizeOf(digest)).toBe(size);
        for (const other of others) {
          const digest = sha256(`other ${other}`);
          expect(packed.sizeOf(digest)).toBeUndefined();
        }
        // An empty file's content is never an object; nor is anything but 64 lowercase hex digits.
        expect(packed.sizeOf(EMPTY_DIGEST)).toBeUndefined();
        for (const digest of manifest.objects.keys()) expect(packed.sizeOf(digest.toUpperCase())).toBeUndefined();
      }),
    );
  });

  it('finds contents whose digests a client chose to share all but a few bytes', () => {
    // Digests are the client's word until their bytes arrive: nothing makes them look random.
    for (const shape of [(i: number) => '00'.repeat(28) + i.toString(16).padStart(8, '0'), (i: number) => i.toString(16).padStart(8, '0') + 'ff'.repeat(28)]) {
      const files = Array.from({ length: 2000 }, (_, i): ManifestFile => ({ path: `p/${i}.html`, size: i + 1, digest: shape(i) as Digest }));
      const packed = PackedManifest.pack(manifestOf(files));
      for (const file of files) expect(packed.sizeOf(file.digest)).toBe(file.size);
      expect(packed.sizeOf(shape(2000))).toBeUndefined();
    }
  });

  it("spreads digests a client chose alike over the table's slots as it does random ones", () => {
    // Keyed by a digest's first bytes, 40,000 digests sharing them took 82 s to pack and
    // look up (docs/performance.md): every one in the same run of slots.
    const slots = 1 << 16;
    for (const shape of [(i: number) => '00'.repeat(28) + i.toString(16).padStart(8, '0'), (i: number) => i.toString(16).padStart(8, '0') + '00'.repeat(28), (i: number) => '00'.repeat(14) + i.toString(16).padStart(8, '0') + '00'.repeat(14)]) {
      const used = new Set<number>();
      for (let i = 0; i < 20_000; i += 1) used.add(digestSlot(Buffer.from(shape(i), 'hex'), 0) & (slots - 1));
      // Random keys fill 1 - e^(-20000/65536), about 26% of the slots: 17,000 of 20,000 distinct.
      expect(used.size).toBeGreaterThan(16_000);
    }
  });

  it('reads a view into a larger buffer (as the database hands small values out) as its bytes alone', () => {
    const packed = PackedManifest.pack(manifestOf([{ path: 'a.html', size: 3, digest: sha256('a') }])).packed;
    const shared = Buffer.concat([Buffer.alloc(40, 9), packed, Buffer.alloc(100, 9)]);
    const read = PackedManifest.from(new Uint8Array(shared.buffer, shared.byteOffset + 40, packed.length));
    expect(read.manifest()).toEqual(manifestOf([{ path: 'a.html', size: 3, digest: sha256('a') }]));
    expect(read.packed.buffer.byteLength).toBe(packed.length);
  });

  it('refuses bytes of another shape', () => {
    const packed = PackedManifest.pack(manifestOf([{ path: 'a.html', size: 3, digest: sha256('a') }, { path: 'b.html', size: 0, digest: EMPTY_DIGEST }])).packed;
    expect(() => PackedManifest.from(packed.subarray(0, packed.length - 1))).toThrow(/not a packed manifest/);
    expect(() => PackedManifest.from(Buffer.concat([packed, Buffer.from([0])]))).toThrow(/not a packed manifest/);
    expect(() => PackedManifest.from(packed.subarray(0, 10))).toThrow(/not a packed manifest/);
    const wrongIndex = Buffer.from(packed);
    wrongIndex.writeUInt32LE(7, 16 + 40); // the first file's object index, past the one object
    expect(() => PackedManifest.from(wrongIndex)).toThrow(/not a packed manifest/);
    expect(() => PackedManifest.from(null as unknown as Uint8Array)).toThrow(/not a packed manifest/);
    // Packing trusts a checked manifest, and says so when it is not one.
    expect(() => PackedManifest.pack({ files: [{ path: 'a', size: 1, digest: sha256('a') }], objects: new Map(), bytes: 1 })).toThrow(/not a checked manifest/);
  });
});
