import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WRITTEN_RECORDS } from '../../src/adapters/fs/store/kept-manifest-file.js';
import { NewObjects } from '../../src/adapters/fs/write/new-objects.js';
import { ReleaseAdoption } from '../../src/adapters/fs/write/store-objects.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { objectPath, storeObjects, storeOf } from '../support/store.js';
import { file, tgz } from '../support/tar-builder.js';
import { sha256 } from '../support/sha256.js';
import { until } from '../support/until.js';

const alice = 'alice' as Username;
const docs = 'docs' as ProjectName;
const RELEASE = '20261126T120000' as ReleaseId;
async function* once(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield bytes;
}
const large = Buffer.alloc(3 * 1024 * 1024, 7);
const SITE = { 'index.html': 'home', 'a/copy.html': 'home', 'b/other.html': 'other', 'big/one.bin': large, 'big/two.bin': large, 'empty.txt': '' };
const limits = { maxFiles: 100, maxBytes: 1e8 };

/** A tarball's new files are written once, where the release has them, and the store adopts them after the commit. */
describe("a tarball release's new objects, adopted into the store after its publish (real directories)", () => {
  let d: RealDeploys;
  const store = () => storeOf(d.deploysRoot, alice);
  beforeEach(async () => {
    d = await realDeploys('sitedrop-adoption-');
  });
  afterEach(() => d.close());

  it('writes each file once in the staging area (the same bytes one inode), leaving the store and its fresh objects untouched until the commit', async () => {
    const staged = await d.staging.stage(alice, once(tgz(Object.entries(SITE).map(([p, c]) => file(p, c)))), limits, new AbortController().signal);
    const inode = async (path: string) => (await stat(join(staged.handle, path))).ino;
    expect(await inode('a/copy.html')).toBe(await inode('index.html'));
    expect(await inode('big/two.bin')).toBe(await inode('big/one.bin'));
    expect(await inode('b/other.html')).not.toBe(await inode('index.html'));
    expect(await storeObjects(store())).toEqual([]);
    // Beside the area, only the writer's records of its files (kept-manifest-file.ts).
    expect(await readdir(d.tree.freshObjectsOf(staged.handle))).toEqual([WRITTEN_RECORDS]);
    await d.staging.discard(staged);
    await d.settle();
    expect(await storeObjects(store())).toEqual([]);
  });

  it('links every new object of the release into the store once it is committed, each the inode the release serves', async () => {
    const staged = await d.staging.stage(alice, once(tgz(Object.entries(SITE).map(([p, c]) => file(p, c)))), limits, new AbortController().signal);
    await d.store.commit(staged, alice, docs, RELEASE);
    const release = join(d.deploysRoot, alice, docs, RELEASE);
    await until(async () => (await storeObjects(store())).length === 3, 'the adoption');
    for (const [path, content] of Object.entries(SITE)) {
      if (content === '') continue;
      const object = await stat(objectPath(store(), sha256(content)));
      expect(object.ino, path).toBe((await stat(join(release, path))).ino);
    }
    // The store's link and the release's (two files of the same bytes share one).
    expect((await stat(objectPath(store(), sha256('other')))).nlink).toBe(2);
    expect((await stat(objectPath(store(), sha256('home')))).nlink).toBe(3);

  });

  it("makes the user's next deploy, right after the commit, wait for them: it links them rather than write them again", async () => {
    // A writer slow to start the adoption (busy with other work): the next deploy must wait for it.
    const adopt = d.tasks.adoptReleaseObjects.bind(d.tasks);
    d.tasks.adoptReleaseObjects = async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return adopt(...args);
    };
    const pages = Array.from({ length: 3000 }, (_, i) => file(`p/${i}.html`, `page ${i}`));
    const staged = await d.staging.stage(alice, once(tgz(pages)), { maxFiles: 5000, maxBytes: 1e8 }, new AbortController().signal);
    await d.store.commit(staged, alice, docs, RELEASE);
    const next = await d.staging.stage(alice, once(tgz(pages)), { maxFiles: 5000, maxBytes: 1e8 }, new AbortController().signal);
    const release = join(d.deploysRoot, alice, docs, RELEASE);
    const written = [];
    for (let i = 0; i < 3000; i += 1) {
      if ((await stat(join(next.handle, `p/${i}.html`))).ino !== (await stat(join(release, `p/${i}.html`))).ino) written.push(i);
    }
    expect(written).toEqual([]);
    await d.staging.discard(next);
  });
});

describe('ReleaseAdoption (the writer task), over real directories', () => {
  let root: string;
  let d: RealDeploys;
  beforeEach(async () => {
    d = await realDeploys('sitedrop-adoption-task-');
    root = d.root;
  });
  afterEach(() => d.close());

  /** What a tarball job lists of its new objects: each file's digest and path in the release. */
  const listed = (files: Record<string, string>): Uint8Array => {
    const objects = new NewObjects();
    for (const [path, content] of Object.entries(files)) objects.add(Buffer.from(sha256(content), 'hex'), path);
    return objects.packed();
  };

  it("stops, adopting nothing more, once the release is gone; an object the store has already gives way to the release's copy", async () => {
    const release = join(root, 'release');
    const store = join(root, 'store');
    const files = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`p/${i}.html`, `page ${i}`]));
    await mkdir(join(release, 'p'), { recursive: true });
    for (const [path, content] of Object.entries(files)) await writeFile(join(release, path), content);
    // One object the store has already, another deploy's copy of the same bytes.
    await mkdir(join(objectPath(store, sha256('page 0')), '..'), { recursive: true });
    await writeFile(objectPath(store, sha256('page 0')), 'page 0');
    const before = (await stat(objectPath(store, sha256('page 0')))).ino;

    const task = new ReleaseAdoption(release, store, listed(files));
    expect(task.step(256)).toBe(false);
    expect((await stat(objectPath(store, sha256('page 0')))).ino).not.toBe(before);
    expect((await stat(objectPath(store, sha256('page 0')))).ino).toBe((await stat(join(release, 'p/0.html'))).ino);
    expect((await readdir(join(objectPath(store, sha256('page 0')), '..'))).filter((name) => name.startsWith('.'))).toEqual([]);
    expect((await stat(objectPath(store, sha256('page 1')))).ino).toBe((await stat(join(release, 'p/1.html'))).ino);
    const adopted = (await storeObjects(store)).length;
    expect(adopted).toBe(256);

    await rm(release, { recursive: true });
    expect(task.step(256)).toBe(true);
    expect((await storeObjects(store)).length).toBe(adopted);
  });
});
