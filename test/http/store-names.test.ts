import { lstat, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asideOf, digestOfEntry, isAsideShard, isLegacyName, legacyObjectPath, objectPath } from '../../src/adapters/fs/store/object-names.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';
import { sha256 } from '../support/sha256.js';
import { until } from '../support/until.js';


type Site = Record<string, Buffer>;

/** Version `v` of a site of 120 pages (a few large enough to be streamed), the pages `changed` picks differing. */
function site(v: string, changed: (i: number) => boolean = () => false): Site {
  const out: Site = { 'index.html': Buffer.from(`${v}\n`), 'empty.txt': Buffer.alloc(0) };
  for (let i = 0; i < 120; i += 1) {
    const body = i % 40 === 9 ? Buffer.alloc(200_000 + i, i) : Buffer.from(`page ${i} ${'z'.repeat(300 + i)}\n`);
    out[`p${i % 6}/page-${i}.html`] = changed(i) ? Buffer.concat([body, Buffer.from(v)]) : body;
  }
  return out;
}

const archive = (s: Site): Buffer => tgz(Object.entries(s).map(([path, bytes]) => file(path, bytes)));

/** Every entry of a store, `<dir>/<name>`; a shard the service removes while this lists it (one set aside, emptied) has none. */
async function storeEntries(store: string): Promise<string[]> {
  const entries: string[] = [];
  for (const dir of await readdir(store)) {
    const names = await readdir(join(store, dir)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    });
    for (const name of names) entries.push(`${dir}/${name}`);
  }
  return entries.sort();
}

/** Every file of a project's releases: inode, link count and digest of its bytes, by path. */
async function releaseFiles(project: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(dir: string, prefix: string): Promise<void> {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path, `${prefix}${entry.name}/`);
      else {
        const info = await lstat(path);
        out[`${prefix}${entry.name}`] = `ino ${info.ino} links ${info.nlink} ${sha256(await readFile(path))}`;
      }
    }
  }
  await walk(project, '');
  return out;
}

/** Waits until `done` holds: work the service does in the background after it listens. */
const eventually = (done: () => Promise<boolean>, what: string): Promise<void> => until(done, what, 20_000);

describe('objects are stored under base32 names (real server, real directories)', () => {
  let h: Harness;
  let token: string;

  beforeAll(async () => {
    h = await startHarness();
    token = await h.createUser('namer');
  });
  afterAll(async () => {
    await h.close();
  });

  it('after a tarball deploy and an incremental one, every object is <first hex digit>/<SHA-256 of its bytes in base32>', async () => {
    expect((await h.deploy(token, 'site', archive(site('v1')))).status).toBe(200);
    const v2 = site('v2', (i) => i % 10 === 0);
    const files = Object.entries(v2).map(([path, bytes]) => ({ path, size: bytes.length, digest: sha256(bytes) }));
    const opened = await h.call('POST', '/api/v1/deploys', { token, json: { project: 'site', files } });
    expect(opened.status).toBe(201);
    const missing = opened.body.missing as string[];
    expect(missing.length).toBe(13);
    const byDigest = new Map<string, Buffer>(Object.values(v2).map((bytes) => [sha256(bytes), bytes]));
    const batch = tgz(missing.map((digest) => file(digest, byDigest.get(digest)!)));
    expect((await h.call('PUT', `/api/v1/deploys/${String(opened.body.id)}/objects`, { token, body: batch })).status).toBe(200);
    expect((await h.call('POST', `/api/v1/deploys/${String(opened.body.id)}/publish`, { token })).status).toBe(200);

    const store = join(h.deploysRoot, 'namer', '.objects');
    const entries = await storeEntries(store);
    const contents = new Set([...Object.values(site('v1')), ...Object.values(v2)].filter((b) => b.length > 0).map(sha256));
    expect(entries).toEqual([...contents].map((digest) => objectPath(digest)).sort());
    for (const entry of entries) {
      expect(entry).toMatch(/^[0-9a-f]\/[a-z2-7]{52}$/);
      expect(entry).toBe(objectPath(sha256(await readFile(join(store, entry)))));
    }
  });
});

describe('a store made before base32 names, renamed at start-up (real server, real directories)', () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sitedrop-upgrade-'));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('every release byte for byte and inode for inode as it was, every object under its new name with its inode, no old shard left; the next deploy shares them', async () => {
    const env = { DATA_DIR: dataDir, RELEASES_KEEP: '5' };
    let h = await startHarness(env);
    const token = await h.createUser('upgrader');
    const versions = [site('v1'), site('v2', (i) => i % 20 === 1), site('v3', (i) => i % 20 === 2)];
    for (const v of versions) expect((await h.deploy(token, 'site', archive(v))).status).toBe(200);
    await h.trashEmptied();
    await h.close();

    // As a version before base32 names left it: each object under `<first hex digit>/<the
    // other 63>`, and (as if a migration had been cut short just after setting one aside)
    // a shard set aside; and an object a crash left unlinked, to collect.
    const store = join(dataDir, 'deploys', 'upgrader', '.objects');
    for (const entry of await storeEntries(store)) {
      const [dir, name] = entry.split('/') as [string, string];
      await rename(join(store, entry), join(store, legacyObjectPath(Buffer.from(digestOfEntry(dir, name)!, 'hex'))));
    }
    const [someShard] = await readdir(store);
    await rename(join(store, someShard!), join(store, asideOf(someShard!)));
    const orphan = Buffer.from('left by a crash');
    await writeFile(join(store, legacyObjectPath(Buffer.from(sha256(orphan), 'hex'))), orphan);
    const inodes = new Map<string, number>();
    for (const entry of await storeEntries(store)) {
      const [dir, name] = entry.split('/') as [string, string];
      expect(isLegacyName(name)).toBe(true);
      inodes.set(digestOfEntry(dir, name)!, (await lstat(join(store, entry))).ino);
    }
    const project = join(dataDir, 'deploys', 'upgrader', 'site');
    const before = await releaseFiles(project);

    h = await startHarness(env);
    try {
      await eventually(async () => {
        const entries = await storeEntries(store);
        return !entries.some((entry) => isLegacyName(entry.split('/')[1]!) || isAsideShard(entry.split('/')[0]!));
      }, 'every object renamed');
      await eventually(async () => !(await storeEntries(store)).includes(objectPath(sha256(orphan))), 'the orphan collected');

      expect(await releaseFiles(project)).toEqual(before);
      inodes.delete(sha256(orphan));
      expect((await storeEntries(store)).sort()).toEqual([...inodes.keys()].map((digest) => objectPath(digest)).sort());
      expect((await readdir(store)).every((dir) => /^[0-9a-f]$/.test(dir))).toBe(true);
      for (const [digest, ino] of inodes) expect((await lstat(join(store, objectPath(digest)))).ino, digest).toBe(ino);

      // A deploy after the renaming links the renamed objects: its unchanged files are v3's inodes.
      const v4 = site('v4', (i) => i % 20 === 3);
      const deployed = await h.deploy(token, 'site', archive(v4));
      expect(deployed.status).toBe(200);
      const [last, previous] = [...(await readdir(project))].sort().reverse() as [string, string];
      expect(last).toBe(deployed.body.release);
      for (const [path, bytes] of Object.entries(v4)) {
        if (bytes.length === 0) continue;
        const [now, then] = await Promise.all([lstat(join(project, last, path)), lstat(join(project, previous, path))]);
        expect(now.ino === then.ino, path).toBe(bytes.equals(versions[2]![path]!));
      }
    } finally {
      await h.close();
    }
  }, 60_000);
});
