import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSiteFolder, measureSiteFolder, readSiteFolder } from '../../src/adapters/cli/folder-manifest.js';
import { hashOnThreads } from '../../src/adapters/cli/hash-threads.js';
import { fileChunks, readFileSyncInto } from '../../src/adapters/cli/file-chunks.js';
import { UsageError } from '../../src/adapters/cli/usage-error.js';
import { sha256 } from '../support/sha256.js';

describe('the manifest of a real folder', () => {
  let work: string;
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'sitedrop-manifest-'));
  });
  afterAll(() => rm(work, { recursive: true, force: true }));

  const folder = async (name: string, files: Record<string, string | Buffer>): Promise<string> => {
    const root = join(work, name);
    await mkdir(root, { recursive: true });
    for (const [path, bytes] of Object.entries(files)) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await writeFile(join(root, path), bytes);
    }
    return root;
  };

  it("lists every file by its '/' path, sorted, with its size and the SHA-256 of its bytes, small and streamed alike", async () => {
    const big = Buffer.from(Array.from({ length: 1_000_003 }, (_, i) => (i * 31) % 253));
    const root = await folder('site', {
      'index.html': '<h1>home</h1>',
      'docs/guide/深い/ページ.html': 'ページ',
      'docs/empty.txt': '',
      'assets/big.bin': big,
      'assets/copy.bin': big,
    });
    await mkdir(join(root, 'empty-dir'));
    const site = await readSiteFolder(root);
    expect(site.directories).toEqual(['assets', 'docs', 'docs/guide', 'docs/guide/深い', 'empty-dir']);
    expect(site.warnings).toEqual([]);
    const heard: string[] = [];
    const files = await hashSiteFolder(site, (file) => heard.push(file.path));
    expect(files.map((f) => f.path)).toEqual(['assets/big.bin', 'assets/copy.bin', 'docs/empty.txt', 'docs/guide/深い/ページ.html', 'index.html']);
    expect(heard.sort()).toEqual(files.map((f) => f.path).sort());
    for (const file of files) {
      const bytes = await readFile(join(root, file.path));
      expect(file).toEqual({ path: file.path, size: bytes.length, digest: sha256(bytes) });
    }
    expect(files[2]!.digest).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(files[0]!.digest).toBe(files[1]!.digest);
    expect(await measureSiteFolder(site)).toBe(2 * big.length + 13 + 9);
  });

  it('reads no further than a limit: one read of a file far larger than the buffer', async () => {
    const root = await folder('limited', { 'big.bin': Buffer.alloc(3 * 1024 * 1024, 7) });
    const pieces: number[] = [];
    const read = readFileSyncInto(root, 'big.bin', Buffer.alloc(7), (chunk) => pieces.push(chunk.length), 7);
    expect({ read, pieces }).toEqual({ read: 7, pieces: [7] });
    expect(readFileSyncInto(root, 'big.bin', Buffer.alloc(1024 * 1024), () => undefined)).toBe(3 * 1024 * 1024);
  });

  it('reads a file of several pieces, and one of exactly a piece, whole', async () => {
    const MiB = 1024 * 1024;
    const bytes = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + (i >> 12)) % 256));
    const root = await folder('pieces', { 'index.html': 'x', 'long.bin': bytes(2 * MiB + 7), 'one.bin': bytes(MiB), 'one-less.bin': bytes(MiB - 1) });
    for (const file of await hashSiteFolder(await readSiteFolder(root))) {
      const read = await readFile(join(root, file.path));
      expect({ size: file.size, digest: file.digest }, file.path).toEqual({ size: read.length, digest: sha256(read) });
    }
  });

  it('hashes a large site on several threads, in order, exactly as on one; a refusal on a thread is the same refusal', async () => {
    const many = Object.fromEntries(Array.from({ length: 2100 }, (_, i) => [`d${i % 7}/${String(i).padStart(4, '0')}.txt`, i % 500 === 3 ? Buffer.alloc(1_500_000 + i, i) : `file ${i}`]));
    const root = await folder('threaded', many);
    const site = await readSiteFolder(root);
    let heard = 0;
    // On threads directly: hashSiteFolder keeps a site this size on one (THREADED_FROM).
    const threaded = await hashOnThreads(site.root, site.files, 2, () => (heard += 1));
    expect(heard).toBe(2100);
    expect(threaded).toEqual(await hashSiteFolder(site, undefined, 1));
    expect(threaded[1000]).toEqual({ path: site.files[1000], size: (await readFile(join(root, site.files[1000]!))).length, digest: sha256(await readFile(join(root, site.files[1000]!))) });
    await rm(join(root, 'd6/2099.txt'));
    execFileSync('mkfifo', [join(root, 'd6/2099.txt')]);
    await expect(hashOnThreads(site.root, site.files, 2, () => undefined)).rejects.toThrow(new UsageError('d6/2099.txt is not a regular file or directory'));
  });

  it('hashes many files and keeps their order', async () => {
    const many = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p/${String(i).padStart(3, '0')}.txt`, `file ${i}`]));
    const files = await hashSiteFolder(await readSiteFolder(await folder('many', many)));
    expect(files.map((f) => f.path)).toEqual(Object.keys(many).sort());
    expect(files[123]!.digest).toBe(sha256('file 123'));
  });

  it('warns without index.html, and refuses an empty folder, a link and a named pipe, naming them', async () => {
    expect((await readSiteFolder(await folder('bare', { 'page.html': 'p' }))).warnings).toEqual([`${join(work, 'bare')} has no index.html at its root: the site's address will show no page`]);

    await expect(readSiteFolder(await folder('empty', {}))).rejects.toThrow(new UsageError(`${join(work, 'empty')} is empty: there is nothing to deploy`));

    const linked = await folder('linked', { 'index.html': 'x' });
    await mkdir(join(linked, 'assets'));
    await symlink('/etc/passwd', join(linked, 'assets/passwd'));
    await expect(readSiteFolder(linked)).rejects.toThrow(new UsageError('assets/passwd is a symbolic link: the server refuses links, replace it with the file it points to'));

    const piped = await folder('piped', { 'index.html': 'x' });
    execFileSync('mkfifo', [join(piped, 'queue')]);
    await expect(readSiteFolder(piped)).rejects.toThrow(new UsageError('queue is not a regular file or directory'));
  });

  it('refuses a file replaced by a link between the walk and the hashing', async () => {
    const root = await folder('swapped', { 'index.html': 'x', 'secret.txt': 'x' });
    const site = await readSiteFolder(root);
    await rm(join(root, 'secret.txt'));
    await symlink('/etc/passwd', join(root, 'secret.txt'));
    await expect(hashSiteFolder(site)).rejects.toThrow(new UsageError('secret.txt is a symbolic link: the server refuses links, replace it with the file it points to'));
    // A named pipe is refused too, at once: opening one to read would wait for a writer that never comes.
    await rm(join(root, 'secret.txt'));
    execFileSync('mkfifo', [join(root, 'secret.txt')]);
    await expect(hashSiteFolder(site)).rejects.toThrow(new UsageError('secret.txt is not a regular file or directory'));
  });

  it('streams a large file in chunks, and refuses a named pipe put in its place at once rather than wait on it', async () => {
    const big = Buffer.from(Array.from({ length: 700_001 }, (_, i) => (i * 13) % 251));
    const root = await folder('chunks', { 'index.html': 'x', 'big.bin': big });
    const chunks: Buffer[] = [];
    for await (const chunk of fileChunks(root, 'big.bin')) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(Buffer.concat(chunks).equals(big)).toBe(true);
    await rm(join(root, 'big.bin'));
    execFileSync('mkfifo', [join(root, 'big.bin')]);
    const read = async () => {
      for await (const chunk of fileChunks(root, 'big.bin')) chunks.push(chunk);
    };
    await expect(read()).rejects.toThrow(new UsageError('big.bin is not a regular file or directory'));
  }, 5_000);
});
