import { randomBytes } from 'node:crypto';
import { appendFile, chmod, link, mkdir, mkdtemp, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSiteFolder } from '../../src/adapters/cli/folder-manifest.js';
import { packFolder } from '../../src/adapters/cli/site-archive.js';
import { bytesOf, tarEntries, type TarEntry } from './tar-entries.js';

/** Every entry of the packed stream as node-tar reads it, and the packed bytes. */
async function unpacked(stream: Readable): Promise<{ entries: TarEntry[]; packed: Buffer }> {
  const packed = await bytesOf(stream);
  return { entries: await tarEntries(packed), packed };
}

/** How many bytes the stream gave before it ended (not the bytes: a failed expectation would print them all). */
const gunzipped = promisify(gunzip);

/** The name field of every header block of a tar, as written (ustar's name, after its prefix). */
function headerNames(tar: Buffer): string[] {
  const names: string[] = [];
  const field = (at: number, length: number) => tar.toString('utf8', at, at + length).replace(/\0.*$/s, '');
  for (let at = 0; at + 512 <= tar.length && tar[at] !== 0; ) {
    const prefix = field(at + 345, 155);
    names.push(prefix ? `${prefix}/${field(at, 100)}` : field(at, 100));
    const size = parseInt(field(at + 124, 12), 8) || 0;
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return names;
}

const drained = (stream: Readable): Promise<number> => bytesOf(stream).then((bytes) => bytes.length);

describe('packFolder: a whole folder as one gzip-compressed tar', () => {
  let work: string;
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'sitedrop-pack-'));
  });
  afterAll(() => rm(work, { recursive: true, force: true }));

  it('packs every directory, empty ones too, then every file byte for byte, as plain entries with portable modes; photos last, stored', async () => {
    const root = join(work, 'site');
    const long = `docs/${'a-rather-long-directory-name/'.repeat(6)}${'page-with-a-long-name-'.repeat(4)}.html`;
    // A name whose ustar fields, cut short, would end in '..' (which the server refuses in a header's own name).
    const cut = `${'z'.repeat(100)}/${'p'.repeat(60)}/${'x'.repeat(35)}/..${'y'.repeat(200)}.html`;
    const big = Buffer.from(Array.from({ length: 1_000_003 }, (_, i) => (i * 31) % 253));
    const photo = Buffer.alloc(300_000, 9);
    const files: Record<string, Buffer> = {
      'index.html': Buffer.from('<h1>home</h1>'),
      'docs/guide/深い/ページ.html': Buffer.from('ページ'),
      'docs/empty.txt': Buffer.alloc(0),
      [long]: Buffer.from('deep'),
      [cut]: Buffer.from('cut'),
      'assets/big.bin': big,
      'assets/photo.jpg': photo,
      'bin/run.sh': Buffer.from('#!/bin/sh\n'),
    };
    for (const [path, bytes] of Object.entries(files)) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await writeFile(join(root, path), bytes);
    }
    await mkdir(join(root, 'empty-dir'));
    await chmod(join(root, 'bin/run.sh'), 0o775);
    await chmod(join(root, 'index.html'), 0o600);
    // A hard link of a page: packed as the file it is, never as a link the server refuses.
    await link(join(root, 'index.html'), join(root, 'docs/home-again.html'));
    files['docs/home-again.html'] = files['index.html']!;

    const folder = await readSiteFolder(root);
    const { entries, packed } = await unpacked(packFolder(folder));
    const directories = entries.filter((e) => e.type === 'Directory');
    // node-tar's reader drops the '/' of a name given by a pax header, and a name of 100
    // characters and a '/' is split by node-tar's header code into the prefix '.' and the name.
    expect(directories.map((e) => e.path.replace(/^\.\//, '').replace(/\/$/, ''))).toEqual(folder.directories);
    expect(directories.map((e) => e.path)).toContain('empty-dir/');
    expect(directories.every((e) => e.mode === 0o755 && e.mtime === undefined)).toBe(true);
    const packedFiles = entries.filter((e) => e.type !== 'Directory');
    expect(packedFiles.every((e) => e.type === 'File')).toBe(true);
    // Pages in the folder's order, then the photo in a second member.
    expect(packedFiles.map((e) => e.path)).toEqual([...folder.files.filter((f) => f !== 'assets/photo.jpg'), 'assets/photo.jpg']);
    for (const entry of packedFiles) expect(entry.bytes.equals(files[entry.path]!)).toBe(true);
    expect(packedFiles.find((e) => e.path === long)).toBeDefined();
    // Every header block's own name, pax or not, is one the server takes: no '..' component.
    expect(headerNames(await gunzipped(packed)).filter((name) => name.split('/').includes('..'))).toEqual([]);
    expect(Object.fromEntries(packedFiles.map((e) => [e.path, e.mode]))).toMatchObject({ 'bin/run.sh': 0o755, 'index.html': 0o600, 'docs/empty.txt': 0o644 });
    expect(packed.indexOf(Buffer.from([0x1f, 0x8b, 8]), 1)).toBeGreaterThan(0);
    // The photo's 300 KB of one byte, which deflate would squeeze to almost nothing, went as it is.
    expect(packed.length).toBeGreaterThan(photo.length);
  });

  it('refuses a file that grows while it is packed, or became a link or went since the folder was read, naming it', async () => {
    const root = join(work, 'changing');
    await mkdir(root, { recursive: true });
    await writeFile(join(root, 'index.html'), 'home');
    // Bytes deflate cannot shrink, so that the packing stops once the buffers ahead of a reader are full.
    await writeFile(join(root, 'big.bin'), randomBytes(16 * 1024 * 1024));
    const folder = await readSiteFolder(root);
    // Packed as far as the buffers ahead of a reader take it (a few MiB), then grown: its header holds the size it had.
    const stream = packFolder(folder);
    await once(stream, 'readable');
    await appendFile(join(root, 'big.bin'), 'more');
    await expect(drained(stream)).rejects.toThrow('big.bin changed while it was being deployed: deploy again');
    await unlink(join(root, 'big.bin'));
    await symlink('index.html', join(root, 'big.bin'));
    await expect(drained(packFolder(folder))).rejects.toThrow('big.bin is a symbolic link: the server refuses links');
    await rm(join(root, 'big.bin'));
    await expect(drained(packFolder(folder))).rejects.toThrow('big.bin was removed while it was being deployed: deploy again');
    expect(await readFile(join(root, 'index.html'), 'utf8')).toBe('home');
  });
});
