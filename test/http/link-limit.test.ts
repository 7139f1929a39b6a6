import { readFile, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/service-harness.js';
import { adoptionsDone, objectPath, storeOf } from '../support/store.js';
import { sha256 } from '../support/sha256.js';
import { file, tgz } from '../support/tar-builder.js';

/** statfs(2)'s f_type of ext2, ext3 and ext4, whose inodes take at most 65,000 links (ext2/3: 32,000). */
const EXT_MAGIC = 0xef53;
/** Past ext4's 65,000 links per inode, whichever store or deploy the first 65,000 came from. */
const COPIES = 65_010;
const BYTES = Buffer.from('the same bytes in every file\n');
const pathOf = (i: number): string => `d${i % 100}/copy-${i}.txt`;

/**
 * A link that fails with EMLINK falls back to a copy of its own (docs/content-store.md).
 * Honest only where the limit is that low: ext4 (65,000). Tested with a real archive of
 * 65,010 identical small files, a few seconds per deploy.
 */
describe('more copies of the same bytes than the filesystem allows links to one inode', () => {
  let h: Harness;
  let token: string;
  let archive: Buffer;
  let refused: string | undefined;

  beforeAll(async () => {
    // Built first: a second or more of synchronous work after a request could outlast the
    // keep-alive of the connection the next one reuses (see deployCopies).
    archive = tgz(Array.from({ length: COPIES }, (_, i) => file(pathOf(i), BYTES)));
    h = await startHarness({ MAX_FILES: '70000' });
    const type = (await statfs(h.deploysRoot)).type;
    if (type !== EXT_MAGIC) refused = `DEPLOYS_ROOT is not on ext2/3/4 (statfs type 0x${type.toString(16)})`;
    token = await h.createUser('copier');
  }, 60_000);
  afterAll(async () => {
    await h.close();
  }, 60_000);

  /**
   * Deploys the archive; returns how many of the release's files each of its inodes
   * is, largest first (every file's bytes checked), and the stored object's link count.
   */
  async function deployCopies(): Promise<{ filesPerInode: number[]; storeLinks: number }> {
    const r = await h.deploy(token, 'docs', archive);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const dir = join(h.deploysRoot, 'copier/docs', r.body.release as string);
    const files = new Map<number, { count: number; path: string }>();
    // Asynchronously, a thousand at a time: a synchronous loop over 65,010 files can hold
    // the event loop, which the service shares, past its keep-alive timeout, and the next
    // request then meets a connection the server is closing (ECONNRESET).
    for (let first = 0; first < COPIES; first += 1000) {
      const paths = Array.from({ length: Math.min(1000, COPIES - first) }, (_, i) => join(dir, pathOf(first + i)));
      for (const [i, info] of (await Promise.all(paths.map((path) => stat(path)))).entries()) {
        const seen = files.get(info.ino) ?? { count: 0, path: paths[i]! };
        files.set(info.ino, { ...seen, count: seen.count + 1 });
      }
    }
    // Files that share an inode share its bytes: one read per inode checks them all.
    for (const { path } of files.values()) expect(await readFile(path)).toEqual(BYTES);
    await adoptionsDone(h.deploysRoot);
    return {
      filesPerInode: [...files.values()].map((f) => f.count).sort((a, b) => b - a),
      storeLinks: (await stat(objectPath(storeOf(h.deploysRoot, 'copier'), sha256(BYTES)))).nlink,
    };
  }

  it('in one archive: every file is written, the ones past the limit sharing a second copy', async () => {
    if (refused !== undefined) {
      console.warn(`SKIPPED the EMLINK test: ${refused}`);
      return;
    }
    // The first copy takes 65,000 files, all the links it may; the second takes the other
    // 10, and the store's link once the deploy has answered.
    expect(await deployCopies()).toEqual({ filesPerInode: [65_000, 10], storeLinks: 11 });
  }, 60_000);

  it('again, from the store: the files past the limit of the stored copy share a new one, which the store keeps', async () => {
    if (refused !== undefined) return;
    // The stored copy had 11 links: 64,989 more, then a new copy for the last 21, which
    // takes the store's name once the deploy has answered.
    expect(await deployCopies()).toEqual({ filesPerInode: [64_989, 21], storeLinks: 22 });
  }, 60_000);
});
