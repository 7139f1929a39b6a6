import { linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { asideOf, isLegacyName, legacyObjectPath, objectPath } from '../../src/adapters/fs/store/object-names.js';
import { ReleaseManifestWalk } from '../../src/adapters/fs/write/release-manifest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { ObjectNameMigration } from '../../src/adapters/fs/write/store-migration.js';
import { ObjectAdoption, ObjectCollection } from '../../src/adapters/fs/write/store-objects.js';
import { sha256Bytes } from '../support/sha256.js';

const hex = (bytes: Buffer | string): string => sha256Bytes(bytes).toString('hex');

/** Three releases of one site: most files shared by all, some by two, a few each its own; one empty file. */
function sites(): Record<string, Buffer>[] {
  return ['r1', 'r2', 'r3'].map((release, v) => {
    const site: Record<string, Buffer> = { 'empty.txt': Buffer.alloc(0), 'index.html': Buffer.from(`${release}\n`) };
    for (let i = 0; i < 60; i += 1) site[`d${i % 3}/page-${i}.html`] = Buffer.from(`page ${i} ${i % 4 === 0 ? `of ${release}` : i % 5 === 0 ? `since ${Math.max(1, v)}` : 'always'}\n`);
    // The same bytes twice in one release: one object.
    site['copy-of-page-1.html'] = site['d1/page-1.html']!;
    return site;
  });
}

let root: string;
let store: string;
const release = (name: string): string => join(root, 'site', name);

/** Writes `bytes` as an object of the store at `path` (relative to it) unless it is there, then links `file` to it. */
function linkTo(path: string, bytes: Buffer, file: string): void {
  const object = join(store, path);
  mkdirSync(dirname(object), { recursive: true });
  if (!lstatSync(object, { throwIfNoEntry: false })) writeFileSync(object, bytes, { mode: 0o644 });
  mkdirSync(dirname(file), { recursive: true });
  linkSync(object, file);
}

/**
 * A store as one made before base32 names, built by hand: every object under its hex
 * name (`<first hex digit>/<the other 63>`), every non-empty release file a hard link to it.
 */
function oldStore(): void {
  for (const [v, site] of sites().entries()) {
    for (const [path, bytes] of Object.entries(site)) {
      const file = join(release(`r${v + 1}`), path);
      if (bytes.length === 0) {
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, bytes);
      } else linkTo(legacyObjectPath(sha256Bytes(bytes)), bytes, file);
    }
  }
}

/**
 * A release deployed after the upgrade, before the migration: r1's index.html again,
 * stored anew under its new name beside the old one (another inode). Returns that inode.
 */
function twinSinceUpgrade(): number {
  const bytes = sites()[0]!['index.html']!;
  linkTo(objectPath(sha256Bytes(bytes)), bytes, join(release('r4'), 'index.html'));
  return lstatSync(join(store, objectPath(sha256Bytes(bytes)))).ino;
}

/** What the releases' files must be after the migration, given `before` with twinSinceUpgrade(): r1's index.html loses the store's link to it. */
const afterTwin = (before: Record<string, string>): Record<string, string> => ({ ...before, 'r1/index.html': before['r1/index.html']!.replace(' links 2 ', ' links 1 ') });

/** Every file of the releases: its inode, link count and bytes' digest, by path. */
function releaseFiles(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, prefix: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path, `${prefix}${entry.name}/`);
      else {
        const info = lstatSync(path);
        out[`${prefix}${entry.name}`] = `ino ${info.ino} links ${info.nlink} ${hex(readFileSync(path))}`;
      }
    }
  };
  walk(join(root, 'site'), '');
  return out;
}

/** Every entry of the store, `<dir>/<name>`, sorted. */
function storeEntries(): string[] {
  return readdirSync(store)
    .flatMap((dir) => readdirSync(join(store, dir)).map((name) => `${dir}/${name}`))
    .sort();
}

/** The store every release's bytes should end in: each distinct non-empty content under its new name. */
function expectedEntries(): string[] {
  const contents = new Set(sites().flatMap((site) => Object.values(site).filter((b) => b.length > 0).map((b) => b.toString('latin1'))));
  return [...contents].map((c) => objectPath(sha256Bytes(Buffer.from(c, 'latin1')))).sort();
}

function runToEnd(work: { step(budget: number): boolean }, budget: number): number {
  let steps = 1;
  while (!work.step(budget)) steps += 1;
  return steps;
}

/** The manifest the writer derives for a release, by its walk, as path to digest. */
function walkedManifest(name: string): Record<string, string> {
  const walk = new ReleaseManifestWalk(release(name), store);
  runToEnd(walk, 5);
  return Object.fromEntries(PackedManifest.from(walk.result() as Uint8Array).manifestFiles().map((f) => [f.path, f.digest]));
}

const truth = (v: number): Record<string, string> => Object.fromEntries(Object.entries(sites()[v]!).map(([path, bytes]) => [path, hex(bytes)]));

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sitedrop-names-'));
  store = join(root, '.objects');
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('renaming a store made before base32 names (ObjectNameMigration, start-up)', () => {
  it('renames every object to its new name, a few at a time, keeping its inode: every release the same, sharing kept, the old shards gone', async () => {
    oldStore();
    const before = releaseFiles();
    const inodes = new Map(storeEntries().map((entry) => [entry, lstatSync(join(store, entry)).ino]));
    const shards = new Map(readdirSync(store).map((dir) => [dir, lstatSync(join(store, dir)).ino]));
    expect([...inodes.keys()].every((entry) => isLegacyName(entry.slice(2)))).toBe(true);

    expect(runToEnd(new ObjectNameMigration(store), 8)).toBeGreaterThan(10);

    expect(storeEntries()).toEqual(expectedEntries());
    // No shard set aside is left, and no shard but the sixteen, each a new directory
    // (ext4 never shrinks one: the old ones, sized for 72-byte entries, are gone).
    expect(readdirSync(store).every((dir) => /^[0-9a-f]$/.test(dir))).toBe(true);
    for (const dir of readdirSync(store)) expect(lstatSync(join(store, dir)).ino, dir).not.toBe(shards.get(dir));
    for (const [entry, ino] of inodes) {
      const renamed = objectPath(Buffer.from(entry.replace('/', ''), 'hex'));
      expect(lstatSync(join(store, renamed)).ino, entry).toBe(ino);
    }
    // Byte for byte, inode for inode, link count for link count.
    expect(releaseFiles()).toEqual(before);
    // And again: nothing left to do, nothing done.
    const dirs = readdirSync(store).map((dir) => `${dir} ${lstatSync(join(store, dir)).ino}`);
    runToEnd(new ObjectNameMigration(store), 8);
    expect(readdirSync(store).map((dir) => `${dir} ${lstatSync(join(store, dir)).ino}`)).toEqual(dirs);
    expect(releaseFiles()).toEqual(before);
  });

  it('a new name taken already (a deploy since the upgrade stored the same bytes): that object stays, the old name goes, both releases keep their bytes', () => {
    oldStore();
    const bytes = sites()[0]!['index.html']!;
    const oldObject = lstatSync(join(store, legacyObjectPath(sha256Bytes(bytes)))).ino;
    const newObject = twinSinceUpgrade();
    expect(oldObject).not.toBe(newObject);
    const before = releaseFiles();

    runToEnd(new ObjectNameMigration(store), 8);

    expect(lstatSync(join(store, objectPath(sha256Bytes(bytes)))).ino).toBe(newObject);
    expect(storeEntries()).toEqual(expectedEntries());
    // r1 keeps its own link to the old object (one link fewer: the store's), r4 its own to the new one.
    const after = releaseFiles();
    expect(after['r1/index.html']).toBe(`ino ${oldObject} links 1 ${hex(bytes)}`);
    expect(after).toEqual(afterTwin(before));
  });

  it.each([
    ['the old object set aside, the new one in the shard made again', 'old aside'],
    ['the new one set aside, the old name in the shard made again (a replica of before base32 names)', 'new aside'],
  ])('a new name taken already, wherever each is (%s): that object stays', (_name, where) => {
    oldStore();
    const bytes = sites()[0]!['index.html']!;
    const oldPath = legacyObjectPath(sha256Bytes(bytes));
    const shard = oldPath.slice(0, 1);
    let twin: number;
    if (where === 'old aside') {
      renameSync(join(store, shard), join(store, asideOf(shard)));
      twin = twinSinceUpgrade();
    } else {
      twin = twinSinceUpgrade();
      renameSync(join(store, shard), join(store, asideOf(shard)));
      mkdirSync(join(store, shard));
      renameSync(join(store, asideOf(shard), oldPath.slice(2)), join(store, oldPath));
    }
    const before = releaseFiles();

    runToEnd(new ObjectNameMigration(store), 8);

    expect(lstatSync(join(store, objectPath(sha256Bytes(bytes)))).ino).toBe(twin);
    expect(storeEntries()).toEqual(expectedEntries());
    expect(releaseFiles()).toEqual(afterTwin(before));
  });

  it('cut short after any step (a crash), it leaves both kinds of names and shards set aside, which a release walk names, and the next start finishes', () => {
    oldStore();
    let total = 0;
    for (const migration = new ObjectNameMigration(store); !migration.step(4); ) total += 1;
    const states = new Set<string>();
    for (let cut = 1; cut <= total; cut += 1) {
      rmStore();
      oldStore();
      const twin = twinSinceUpgrade();
      const before = releaseFiles();
      const interrupted = new ObjectNameMigration(store);
      for (let step = 0; step < cut; step += 1) interrupted.step(4);
      const entries = storeEntries();
      const old = entries.filter((entry) => isLegacyName(entry.split('/')[1]!)).length;
      states.add(`${old > 0 ? 'old' : ''}+${entries.length > old ? 'new' : ''}+${readdirSync(store).some((dir) => dir.endsWith('.old')) ? 'aside' : ''}`);
      // Between starts, deriving a release's manifest gives its true digests.
      for (const v of [0, 1, 2]) expect(walkedManifest(`r${v + 1}`), `cut after ${cut} steps`).toEqual(truth(v));

      runToEnd(new ObjectNameMigration(store), 4);
      expect(storeEntries(), `cut after ${cut} steps`).toEqual(expectedEntries());
      expect(releaseFiles(), `cut after ${cut} steps`).toEqual(afterTwin(before));
      expect(lstatSync(join(store, objectPath(sha256Bytes(sites()[0]!['index.html']!)))).ino, `cut after ${cut} steps`).toBe(twin);
    }
    expect(states).toContain('old+new+aside');
  });
});

/** Removes the store and releases, so that a case can build them again. */
function rmStore(): void {
  for (const dir of [store, join(root, 'site')]) rmSync(dir, { recursive: true, force: true });
}

describe('a store with old names still in it', () => {
  it("a release walk names a file from the store's old names too, not from its bytes (a name that lies shows which it used)", () => {
    oldStore();
    // An object whose old name says other bytes than it holds: the walk takes the store's word.
    const liar = sites()[0]!['index.html']!;
    const claimed = sha256Bytes('not these bytes');
    renameSync(join(store, legacyObjectPath(sha256Bytes(liar))), join(store, legacyObjectPath(claimed)));
    // In a shard set aside by a migration cut short: walked as well.
    const shard = legacyObjectPath(claimed).slice(0, 1);
    renameSync(join(store, shard), join(store, asideOf(shard)));
    const manifest = walkedManifest('r1');
    expect(manifest['index.html']).toBe(claimed.toString('hex'));
    expect({ ...manifest, 'index.html': hex(liar) }).toEqual(truth(0));
  });

  it('a release walk never takes a name that is no object for a digest: it hashes the file', () => {
    oldStore();
    const bytes = sites()[0]!['index.html']!;
    const object = join(store, legacyObjectPath(sha256Bytes(bytes)));
    const wrong = sha256Bytes('a wrong digest');
    // Names that only look like an object's: one digit short, upper case, a new name in another shard than its own, no shard.
    const [shard, name] = legacyObjectPath(wrong).split('/') as [string, string];
    const otherShard = (Number.parseInt(shard, 16) ^ 1).toString(16);
    const decoys = [`${shard}/${name.slice(1)}`, `${shard}/${name.toUpperCase()}`, `${otherShard}/${objectPath(wrong).split('/')[1]}`, `${shard}.new/${name}`];
    let at = object;
    for (const decoy of decoys) {
      mkdirSync(dirname(join(store, decoy)), { recursive: true });
      renameSync(at, join(store, decoy));
      at = join(store, decoy);
      expect(walkedManifest('r1')['index.html'], decoy).toBe(hex(bytes));
    }
  });

  it('the collection collects unlinked objects under either name, in a shard or one set aside; linked ones stay', () => {
    oldStore();
    // Mid-migration: one shard set aside whole, a few linked objects renamed already.
    const orphans = ['old orphan', 'aside orphan', 'new orphan'].map((text) => Buffer.from(text));
    const asideShard = legacyObjectPath(sha256Bytes(orphans[1]!)).slice(0, 1);
    renameSync(join(store, asideShard), join(store, asideOf(asideShard)));
    for (const entry of storeEntries().slice(0, 10)) {
      const [dir, name] = entry.split('/') as [string, string];
      if (dir === asideOf(asideShard) || !isLegacyName(name)) continue;
      renameSync(join(store, entry), join(store, objectPath(Buffer.from(dir + name, 'hex'))));
    }
    const orphanPaths = [legacyObjectPath(sha256Bytes(orphans[0]!)), `${asideOf(asideShard)}/${legacyObjectPath(sha256Bytes(orphans[1]!)).slice(2)}`, objectPath(sha256Bytes(orphans[2]!))];
    for (const [i, path] of orphanPaths.entries()) {
      mkdirSync(dirname(join(store, path)), { recursive: true });
      writeFileSync(join(store, path), orphans[i]!);
    }
    const linked = storeEntries().filter((entry) => lstatSync(join(store, entry)).nlink > 1);
    expect(linked.some((entry) => entry.startsWith(`${asideShard}.old/`))).toBe(true);
    expect(linked.some((entry) => isLegacyName(entry.slice(2)))).toBe(true);
    const before = releaseFiles();

    runToEnd(new ObjectCollection(store), 8);

    expect(storeEntries()).toEqual(linked);
    for (const path of orphanPaths) expect(lstatSync(join(store, path), { throwIfNoEntry: false }), path).toBeUndefined();
    expect(releaseFiles()).toEqual(before);
  });

  it("a deploy's adoption into a shard another replica has just set aside makes the shard again", () => {
    oldStore();
    const fresh = join(root, 'fresh');
    const bytes = Buffer.from('new since the upgrade');
    const path = objectPath(sha256Bytes(bytes));
    mkdirSync(dirname(join(fresh, path)), { recursive: true });
    writeFileSync(join(fresh, path), bytes);
    // The store has that shard, with something in it: the fresh one cannot move in whole.
    mkdirSync(dirname(join(store, path)), { recursive: true });
    writeFileSync(join(store, dirname(path), 'something'), '');
    const adoption = new ObjectAdoption(fresh, store);
    // The first step lists the store's shard to adopt into (it is there, so not moved whole) ...
    adoption.step(1);
    renameSync(dirname(join(store, path)), join(store, asideOf(path.slice(0, 1))));
    // ... and the rename into it finds it gone.
    runToEnd(adoption, 8);
    expect(readFileSync(join(store, path), 'utf8')).toBe('new since the upgrade');
  });
});
