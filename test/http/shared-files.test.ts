import { randomBytes } from 'node:crypto';
import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';
import { file, tgz, type RawEntry } from '../support/tar-builder.js';
import { fileDigests, storeCollected } from '../support/store.js';
import { snapshot } from '../support/tree.js';
import { sha256 } from '../support/sha256.js';

/** What `du -sb` counts under `root`: apparent sizes (a directory's too), each inode once. */
async function diskBytes(root: string): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  async function walk(dir: string): Promise<void> {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      const info = await lstat(path);
      if (seen.has(`${info.dev}:${info.ino}`)) continue;
      seen.add(`${info.dev}:${info.ino}`);
      total += info.size;
      if (entry.isDirectory()) await walk(path);
    }
  }
  await walk(root);
  return total;
}

/**
 * A site of `files` pages (a few large ones among them, streamed rather than sent whole)
 * whose pages numbered in `changed` differ in this version.
 */
function site(version: string, files: number, changed: (i: number) => boolean): Buffer {
  const entries: RawEntry[] = [];
  for (let i = 0; i < files; i += 1) {
    const body = i % 50 === 7 ? Buffer.alloc(300_000, i % 251) : Buffer.from(`page ${i} ${'x'.repeat(3000 + (i % 13) * 100)}\n`);
    entries.push(file(`section-${i % 10}/page-${i}.html`, changed(i) ? Buffer.concat([body, Buffer.from(version)]) : body));
  }
  entries.push(file('empty.txt', ''));
  entries.push(file('index.html', `${version}\n`));
  return tgz(entries);
}

describe('releases made of shared files (real server, real directories)', () => {
  let h: Harness;
  let token: string;
  const releases: string[] = [];
  const user = () => join(h.deploysRoot, 'sharer');
  const release = (id: string) => join(user(), 'docs', id);

  beforeAll(async () => {
    h = await startHarness({ RELEASES_KEEP: '5' });
    token = await h.createUser('sharer');
  });
  afterAll(async () => {
    await h.close();
  });

  it('a redeploy links every unchanged file to the bytes already stored, and leaves the older release as it was', async () => {
    const first = await h.deploy(token, 'docs', site('v0', 400, () => false));
    expect(first.status).toBe(200);
    releases.push(first.body.release as string);
    const before = await fileDigests(release(releases[0]!));

    // 5% of the pages change: every 20th.
    const second = await h.deploy(token, 'docs', site('v1', 400, (i) => i % 20 === 3));
    expect(second.status).toBe(200);
    releases.push(second.body.release as string);

    expect(await fileDigests(release(releases[0]!))).toEqual(before);
    for (let i = 0; i < 400; i += 1) {
      const path = `section-${i % 10}/page-${i}.html`;
      const [a, b] = await Promise.all([stat(join(release(releases[0]!), path)), stat(join(release(releases[1]!), path))]);
      // The same inode for the same bytes, another for changed ones.
      expect(a.ino === b.ino, path).toBe(i % 20 !== 3);
      expect(b.mode & 0o777).toBe(0o644);
    }
    const index = await stat(join(release(releases[1]!), 'index.html'));
    expect(index.nlink).toBe(2); // the release and the store
    expect((await stat(join(release(releases[1]!), 'empty.txt'))).nlink).toBe(1);
    expect((await stat(join(release(releases[1]!), 'section-0'))).mode & 0o777).toBe(0o755);
    // The store is no project.
    const projects = await h.call('GET', '/api/v1/projects', { token });
    expect((projects.body.projects as { name: string }[]).map((p) => p.name)).toEqual(['docs']);
  });

  it('five kept releases at 5% churn take at most 1.35x the disk of one', async () => {
    for (let v = 2; v <= 6; v += 1) {
      const r = await h.deploy(token, 'docs', site(`v${v}`, 400, (i) => i % 20 === v));
      expect(r.status).toBe(200);
      releases.push(r.body.release as string);
    }
    await h.trashEmptied();
    await storeCollected(join(user(), '.objects'));
    const kept = (await readdir(join(user(), 'docs'))).sort();
    expect(kept).toEqual(releases.slice(-5));
    const one = await diskBytes(release(kept[0]!));
    const all = await diskBytes(user());
    expect(all / one).toBeLessThanOrEqual(1.35);
    // Each kept release still serves its own version, whole.
    for (const [i, id] of kept.entries()) {
      expect(await readFile(join(release(id), 'index.html'), 'utf8')).toBe(`v${i + 2}\n`);
    }
  });

  it('objects no kept release links any more are collected once their releases are pruned', async () => {
    await h.trashEmptied();
    const store = join(user(), '.objects');
    await storeCollected(store);
    let objects = 0;
    for (const shard of await readdir(store)) {
      for (const name of await readdir(join(store, shard))) {
        const info = await stat(join(store, shard, name));
        expect(info.nlink).toBeGreaterThan(1);
        objects += 1;
      }
    }
    const linked = new Set<string>();
    for (const id of (await readdir(join(user(), 'docs')))) {
      for (const digest of Object.values(await fileDigests(release(id)))) linked.add(digest);
    }
    linked.delete(sha256(''));
    expect(objects).toBe(linked.size);
  });

  it('a deploy refused after its new files were unpacked leaves the store as it was', async () => {
    await h.trashEmptied();
    const store = join(user(), '.objects');
    await storeCollected(store);
    const before = await snapshot(store);
    const refused = await h.deploy(token, 'docs', tgz([...Array.from({ length: 50 }, (_, i) => file(`new-${i}.html`, `never stored ${i}`)), file('../escape.html', 'x')]));
    expect(refused.status).toBe(500);
    await h.trashEmptied();
    expect(await snapshot(store)).toEqual(before);
    expect(await readdir(join(h.deploysRoot, '.staging'))).toEqual([]);
  });

  it("one user's store never serves another's deploy, and deleting the user's files removes the store", async () => {
    const other = await h.createUser('neighbour');
    const r = await h.deploy(other, 'docs', site('v0', 40, () => false));
    expect(r.status).toBe(200);
    const mine = await stat(join(release(releases[0]!), 'section-1/page-1.html')).catch(() => undefined);
    const theirs = await stat(join(h.deploysRoot, 'neighbour/docs', r.body.release as string, 'section-1/page-1.html'));
    if (mine) expect(theirs.ino).not.toBe(mine.ino);
    expect(theirs.nlink).toBe(2);

    const gone = await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'sharer', files: 'delete' } });
    expect(gone.status).toBe(200);
    await h.trashEmptied();
    await expect(stat(user())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('an archive whose files repeat the same bytes stores them once', async () => {
    const token2 = await h.createUser('repeater');
    const same = randomBytes(5000);
    const r = await h.deploy(token2, 'docs', tgz(Array.from({ length: 30 }, (_, i) => file(`copy-${i}.bin`, same))));
    expect(r.status).toBe(200);
    const info = await stat(join(h.deploysRoot, 'repeater/docs', r.body.release as string, 'copy-0.bin'));
    expect(info.nlink).toBe(31);
  });
});
