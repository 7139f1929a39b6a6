import { execFileSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSiteFolder } from '../../src/adapters/cli/folder-manifest.js';
import { hashChangedFiles, RACY_MARGIN_NS, stampOf, stampsHoldUnder } from '../../src/adapters/cli/quick-check.js';
import { UsageError } from '../../src/adapters/cli/usage-error.js';
import type { Digest } from '../../src/domain/manifest.js';
import { sha256 } from '../support/sha256.js';

/** A deploy started this long after the files were written: none of them is racy. */
const LATER = Date.now() + Number(RACY_MARGIN_NS / 1_000_000n) + 60_000;

describe("the CLI's quick check: only files changed since the last deploy from here are read", () => {
  let work: string;
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'sitedrop-quick-'));
  });
  afterAll(() => rm(work, { recursive: true, force: true }));

  const folder = async (name: string, files: Record<string, string>) => {
    const root = join(work, name);
    for (const [path, bytes] of Object.entries(files)) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await writeFile(join(root, path), bytes);
    }
    return readSiteFolder(root);
  };

  it('keeps the remembered digest of a file whose stamp matches, without reading it', async () => {
    const site = await folder('unread', { 'index.html': 'home', 'a.html': 'aaaa' });
    const first = await hashChangedFiles(site, undefined, undefined, { nowMs: LATER });
    expect(first.hashed).toBe(2);
    expect(first.files).toEqual([{ path: 'a.html', size: 4, digest: sha256('aaaa') }, { path: 'index.html', size: 4, digest: sha256('home') }]);
    // A digest no read of the file could give: if it comes back, the file was not read.
    const remembered = { files: [{ ...first.files[0]!, digest: 'f'.repeat(64) as Digest }, first.files[1]!], stamps: first.stamps };
    const again = await hashChangedFiles(site, remembered, undefined, { nowMs: LATER });
    expect(again).toEqual({ files: [remembered.files[0], first.files[1]], stamps: first.stamps, hashed: 0 });
  });

  it('reads again a file rewritten with bytes of the same size and its modification time put back', async () => {
    const site = await folder('same-size', { 'index.html': 'home', 'a.html': 'aaaa' });
    const first = await hashChangedFiles(site, undefined, undefined, { nowMs: LATER });
    const path = join(site.root, 'a.html');
    const times = join(work, 'same-size-times');
    // touch -r copies times to the nanosecond, as a careless build tool might put them back.
    await writeFile(times, '');
    execFileSync('touch', ['-r', path, times]);
    const before = await stat(path, { bigint: true });
    await writeFile(path, 'bbbb');
    execFileSync('touch', ['-r', times, path]);
    expect((await stat(path, { bigint: true })).mtimeNs).toBe(before.mtimeNs);
    const again = await hashChangedFiles(site, first, undefined, { nowMs: LATER });
    expect(again.hashed).toBe(1);
    expect(again.files[0]).toEqual({ path: 'a.html', size: 4, digest: sha256('bbbb') });
  });

  it('reads again a file replaced by another of the same size and time (a new inode)', async () => {
    const site = await folder('replaced', { 'index.html': 'home', 'a.html': 'aaaa', 'spare.txt': 'cccc' });
    const first = await hashChangedFiles(site, undefined, undefined, { nowMs: LATER });
    execFileSync('touch', ['-r', join(site.root, 'a.html'), join(site.root, 'spare.txt')]);
    await rename(join(site.root, 'spare.txt'), join(site.root, 'a.html'));
    const now = await readSiteFolder(site.root);
    const again = await hashChangedFiles(now, first, undefined, { nowMs: LATER });
    expect(again.files).toEqual([{ path: 'a.html', size: 4, digest: sha256('cccc') }, first.files[1]]);
    expect(again.hashed).toBe(1);
  });

  it('does not stamp a file changed within the racy margin before the deploy began, so the next deploy reads it', async () => {
    const site = await folder('racy', { 'index.html': 'home' });
    const info = await lstat(join(site.root, 'index.html'), { bigint: true });
    const changedMs = Number(info.ctimeNs / 1_000_000n);
    const marginMs = Number(RACY_MARGIN_NS / 1_000_000n);
    expect((await hashChangedFiles(site, undefined, undefined, { nowMs: changedMs + marginMs - 1 })).stamps).toEqual([null]);
    expect((await hashChangedFiles(site, undefined, undefined, { nowMs: changedMs + marginMs + 1 })).stamps).toEqual([stampOf(info)]);
    const unstamped = await hashChangedFiles(site, undefined, undefined, { nowMs: changedMs });
    expect((await hashChangedFiles(site, unstamped, undefined, { nowMs: LATER })).hashed).toBe(1);
  });

  it('on a filesystem without a ctime of its own (vfat, a network one), reads every file and stamps none', async () => {
    const site = await folder('no-ctime', { 'index.html': 'home', 'a.html': 'aaaa' });
    const first = await hashChangedFiles(site, undefined, undefined, { nowMs: LATER });
    expect(first.stamps.every((stamp) => stamp !== null)).toBe(true);
    const again = await hashChangedFiles(site, first, undefined, { nowMs: LATER, stampsHold: false });
    expect(again).toEqual({ files: first.files, stamps: [null, null], hashed: 2 });
    // This machine's test directory is on one that keeps it (ext4, tmpfs, overlayfs...).
    expect(stampsHoldUnder(site.root)).toBe(true);
  });

  it('keeps no stamp for a file swapped for another while it was read (stamped before and after, the two differ)', async () => {
    const site = await folder('swapped', { 'index.html': 'home', 'a.html': 'aaaa' });
    const path = join(site.root, 'a.html');
    let swapped = false;
    // Swapped the moment its neighbour is hashed: after the first stamp, before the second.
    const checked = await hashChangedFiles(site, undefined, (file) => {
      if (file.path !== 'a.html' || swapped) return;
      swapped = true;
      execFileSync('cp', ['-p', path, `${path}.new`]);
      execFileSync('mv', [`${path}.new`, path]);
    }, { nowMs: LATER });
    expect(swapped).toBe(true);
    expect(checked.stamps).toEqual([null, expect.any(String)]);
  });

  it('leaves anything that is not a file to the hashing, which refuses it by name', async () => {
    const site = await folder('fifo', { 'index.html': 'home', 'pipe.html': 'was a file' });
    const first = await hashChangedFiles(site, undefined, undefined, { nowMs: LATER });
    await rm(join(site.root, 'pipe.html'));
    execFileSync('mkfifo', [join(site.root, 'pipe.html')]);
    await expect(hashChangedFiles(site, first, undefined, { nowMs: LATER })).rejects.toThrow(new UsageError('pipe.html is not a regular file or directory'));
  });
});
