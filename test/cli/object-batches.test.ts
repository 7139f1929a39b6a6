import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchObjects, BATCH_LIMITS, packObjects, type MissingObject } from '../../src/adapters/cli/object-batches.js';
import { alreadyCompressed } from '../../src/adapters/cli/tar-packer.js';
import { bytesOf, tarEntries } from './tar-entries.js';
import { sha256 } from '../support/sha256.js';

const MiB = 1024 * 1024;
const object = (size: number, n = 0): MissingObject => ({ digest: n.toString(16).padStart(64, '0'), size, path: `f${n}` });

describe('batchObjects', () => {
  it('cuts at ~32 MiB of content or 10,000 files, and a larger file goes alone', () => {
    expect(BATCH_LIMITS).toEqual({ bytes: 32 * MiB, files: 10_000 });
    const sizes = (batches: MissingObject[][]) => batches.map((batch) => batch.map((o) => o.size));
    expect(sizes(batchObjects([object(20 * MiB, 1), object(12 * MiB, 2), object(1, 3)]))).toEqual([[20 * MiB, 12 * MiB], [1]]);
    expect(sizes(batchObjects([object(1, 1), object(40 * MiB, 2), object(1, 3)]))).toEqual([[1], [40 * MiB], [1]]);
    const small = Array.from({ length: 25_001 }, (_, i) => object(10, i));
    expect(batchObjects(small).map((batch) => batch.length)).toEqual([10_000, 10_000, 5001]);
    expect(batchObjects([])).toEqual([]);
  });

  it('keeps every object once, in order, each batch within the limits unless it holds one object', () => {
    const limits = { bytes: 100, files: 5 };
    fc.assert(
      fc.property(fc.array(fc.nat(250)), (sizes) => {
        const objects = sizes.map((size, i) => object(size, i));
        const batches = batchObjects(objects, limits);
        expect(batches.flat()).toEqual(objects);
        for (const batch of batches) {
          expect(batch.length).toBeGreaterThan(0);
          expect(batch.length).toBeLessThanOrEqual(limits.files);
          if (batch.length > 1) expect(batch.reduce((sum, o) => sum + o.size, 0)).toBeLessThanOrEqual(limits.bytes);
        }
        // Greedy: no two neighbouring batches would have fitted in one.
        for (let i = 1; i < batches.length; i++) {
          const both = [...batches[i - 1]!, ...batches[i]!];
          expect(both.length > limits.files || both.reduce((sum, o) => sum + o.size, 0) > limits.bytes).toBe(true);
        }
      }),
    );
  });
});

describe('packObjects', () => {
  let root: string;
  const contents: Record<string, Buffer> = {
    'a.html': Buffer.from('<h1>a</h1>'),
    'empty.txt': Buffer.alloc(0),
    'exact.bin': Buffer.alloc(1024, 7),
    // Larger than a read and a gzip window, so it streams in many chunks.
    'big.bin': Buffer.from(Array.from({ length: 3 * MiB + 17 }, (_, i) => (i * 7919) % 251)),
  };
  const objects = () => Object.entries(contents).map(([path, bytes]) => ({ digest: sha256(bytes), size: bytes.length, path }));

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'sitedrop-batch-'));
    for (const [path, bytes] of Object.entries(contents)) await writeFile(join(root, path), bytes);
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('packs a gzip tar of regular files named by digest at the root, 0644, no owner names, exactly the bytes', async () => {
    const reported: number[] = [];
    const entries = await tarEntries(packObjects(root, objects(), (bytes) => reported.push(bytes)));
    expect(entries.map((e) => e.path)).toEqual(objects().map((o) => o.digest));
    for (const entry of entries) {
      expect(entry).toMatchObject({ type: 'File', mode: 0o644, uname: '' });
      expect(sha256(entry.bytes)).toBe(entry.path);
    }
    expect(reported.at(-1)).toBe(Object.values(contents).reduce((sum, b) => sum + b.length, 0));
  });

  it('packs files of compressed formats last, as stored blocks in a second gzip member, the tar whole across both', async () => {
    const zeros = Buffer.alloc(MiB);
    await writeFile(join(root, 'zeros.jpg'), zeros);
    await writeFile(join(root, 'zeros.bin'), zeros);
    const jpg = { digest: sha256(zeros), size: MiB, path: 'zeros.jpg' };
    const bin = { ...jpg, path: 'zeros.bin' };
    const mixed = [jpg, ...objects()];
    const reported: number[] = [];
    const packed = await bytesOf(packObjects(root, mixed, (bytes) => reported.push(bytes)));
    const entries = await tarEntries(packed);
    expect(entries.map((e) => e.path)).toEqual([...objects(), jpg].map((o) => o.digest));
    for (const entry of entries) expect(sha256(entry.bytes)).toBe(entry.path);
    expect(reported.at(-1)).toBe(mixed.reduce((sum, o) => sum + o.size, 0));
    // The second member's header, and the megabyte of zeros kept as it is; as a .bin it deflates to a few KiB.
    expect(packed.indexOf(Buffer.from([0x1f, 0x8b, 8]), 1)).toBeGreaterThan(0);
    expect(packed.length).toBeGreaterThan(MiB);
    const deflated = await bytesOf(packObjects(root, [bin]));
    expect(deflated.length).toBeLessThan(16 * 1024);
    expect(deflated.indexOf(Buffer.from([0x1f, 0x8b, 8]), 1)).toBe(-1);
    // Only compressed formats: stored all the same.
    expect((await tarEntries(packObjects(root, [jpg]))).map((e) => e.path)).toEqual([jpg.digest]);
    // A photo changed since it was hashed is refused from the second member as from the first.
    await writeFile(join(root, 'zeros.jpg'), Buffer.alloc(MiB, 1));
    await expect(tarEntries(packObjects(root, mixed))).rejects.toThrow('zeros.jpg changed while it was being deployed: deploy again');
  });

  it('knows compressed formats by extension, in any case, and nothing by a directory\'s name', () => {
    for (const path of ['a.jpg', 'img/b.JPEG', 'c.png', 'f/d.woff2', 'e.webp', 'v.mp4', 'x.tar.gz', 'y.zip']) expect(alreadyCompressed(path)).toBe(true);
    for (const path of ['a.html', 'b.css', 'c.js', 'd.svg', 'e.json', 'f.wasm', 'jpg', 'photos.jpg/readme', 'g.bin']) expect(alreadyCompressed(path)).toBe(false);
  });

  it('refuses a file that changed since it was hashed, naming it', async () => {
    const changed = join(root, 'changing.txt');
    await writeFile(changed, 'before');
    const digest = sha256(Buffer.from('before'));
    await writeFile(changed, 'after!');
    await expect(tarEntries(packObjects(root, [{ digest, size: 6, path: 'changing.txt' }]))).rejects.toThrow('changing.txt changed while it was being deployed: deploy again');
    await writeFile(changed, 'short');
    await expect(tarEntries(packObjects(root, [{ digest, size: 6, path: 'changing.txt' }]))).rejects.toThrow('changing.txt changed');
    // Grown to 16 MiB (sparse) since: refused all the same (one read of size + 1 bytes,
    // file-chunks' limit, which folder-manifest.test.ts checks).
    await truncate(changed, 16 * 1024 ** 2);
    await expect(tarEntries(packObjects(root, [{ digest, size: 6, path: 'changing.txt' }]))).rejects.toThrow('changing.txt changed');
  });

  it('refuses files removed since they were hashed, naming the first, even while later ones are read ahead', async () => {
    const gone = (path: string) => ({ digest: sha256(Buffer.from(path)), size: path.length, path });
    const batch = [objects()[0]!, gone('gone-1.txt'), gone('gone-2.txt'), gone('gone-3.txt')];
    await expect(tarEntries(packObjects(root, batch))).rejects.toThrow('gone-1.txt was removed while it was being deployed: deploy again');
  });
});
