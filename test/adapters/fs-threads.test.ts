import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArchiveExtractor } from '../../src/adapters/fs/threads/archive-extractor.js';
import { FsThreads } from '../../src/adapters/fs/threads/fs-threads.js';
import { WriterTasks } from '../../src/adapters/fs/threads/writer-tasks.js';
import type { StagingObjects } from '../../src/adapters/fs/threads/fs-protocol.js';
import { BULK_THREAD_NICE } from '../../src/adapters/fs/threads/thread-priority.js';
import { trimHeap } from '../../src/adapters/fs/threads/heap-trim.js';
import { TreeRemoval } from '../../src/adapters/fs/write/tree-removal.js';
import { legacyObjectPath, objectPath } from '../../src/adapters/fs/store/object-names.js';
import { EMPTY_DIGEST, manifestOf, type Digest } from '../../src/domain/manifest.js';
import { manifestDigest } from '../../src/domain/manifest-digest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { releaseVersion, versionedSite } from '../support/sites.js';
import { file, tgz } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';
import { until } from '../support/until.js';

const limits = { maxFiles: 100_000, maxBytes: 1e9 };
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex') as Digest;

/** An upload in chunks of 64 KiB, as a socket delivers it, each after a turn of the event loop. */
async function* chunked(bytes: Buffer): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += 65_536) {
    await new Promise((resolve) => setImmediate(resolve));
    yield bytes.subarray(at, at + 65_536);
  }
}

async function makeTree(root: string): Promise<void> {
  for (let d = 0; d < 12; d += 1) {
    await mkdir(join(root, `d${d}`, 'deeper'), { recursive: true });
    for (let f = 0; f < 60; f += 1) await writeFile(join(root, `d${d}`, f % 2 ? 'deeper' : '', `f${f}`), 'x');
  }
}

describe('FsThreads: one unpack thread and one writer for every deploy (real threads)', () => {
  let root: string;
  const started: Worker[] = [];
  const threads = new FsThreads({
    start: (script, options) => {
      const worker = new Worker(script, options);
      started.push(worker);
      return worker;
    },
  });
  const extractor = new ArchiveExtractor(threads);
  const tasks = new WriterTasks(threads);

  let objects: StagingObjects;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'sitedrop-threads-'));
    objects = { store: join(root, 'store'), fresh: join(root, 'fresh'), writes: 'release' };
    await mkdir(objects.fresh);
  });
  afterAll(async () => {
    await threads.close();
    await rm(root, { recursive: true, force: true });
  });

  it('unpacks several archives at once on the same two threads, each into its own directory', async () => {
    const sites = ['a', 'b', 'c'].map((v) => versionedSite(v, 1500, 200));
    const dirs = await Promise.all(['a', 'b', 'c'].map((v) => mkdtemp(join(root, `site-${v}-`))));
    const before = started.length;
    const results = await Promise.all(sites.map((site, i) => extractor.extract(chunked(site), dirs[i]!, objects, limits, false, new AbortController().signal)));
    expect(results.map((r) => r.files)).toEqual([1501, 1501, 1501]);
    expect(await Promise.all(dirs.map((dir) => releaseVersion(dir, 1500)))).toEqual(['a', 'b', 'c']);
    expect(started.length - before).toBeLessThanOrEqual(2);
  });

  it("one deploy's refused archive beside another's honest one fails only itself", async () => {
    const [bad, good] = await Promise.all([mkdtemp(join(root, 'bad-')), mkdtemp(join(root, 'good-'))]);
    const refused = tgz([...Array.from({ length: 400 }, (_, i) => file(`ok-${i}.html`, 'x'.repeat(2000))), file('../out.html', 'x')]);
    const [outcome, extracted] = await Promise.all([
      extractor.extract(chunked(refused), bad, objects, limits, false, new AbortController().signal).then(() => 'unpacked', (error: Error) => error.constructor.name),
      extractor.extract(chunked(versionedSite('good', 1500, 200)), good, objects, limits, false, new AbortController().signal),
    ]);
    expect(outcome).toBe('ArchiveRejected');
    expect(extracted.files).toBe(1501);
    expect(await releaseVersion(good, 1500)).toBe('good');
  });

  it("works out a manifest's canonical digest on the unpack thread, byte for byte the main thread's, between other deploys", async () => {
    const files = [
      { path: 'z/深い/ページ.html', size: 9, digest: sha256('page') },
      { path: 'a b/empty', size: 0, digest: EMPTY_DIGEST },
      { path: 'media/huge.mp4', size: 5 * 1024 ** 3 + 7, digest: sha256('huge') },
      ...Array.from({ length: 3000 }, (_, i) => ({ path: `docs/${(i * 7919) % 3000}.html`, size: i + 1, digest: sha256(`${i}`) })),
    ];
    await mkdir(join(root, 'digest-meanwhile'));
    const unpacking = extractor.extract(chunked(tgz([file('a.html', 'a')])), join(root, 'digest-meanwhile'), objects, limits, false, new AbortController().signal);
    const [digest] = await Promise.all([extractor.canonicalDigest(PackedManifest.pack(manifestOf(files))), unpacking]);
    expect(digest).toBe(manifestDigest(files));
    // Bytes that are no manifest fail that request alone: the threads go on.
    const threadsBefore = started.length;
    const junk = Buffer.from(new SharedArrayBuffer(14));
    junk.write('not a manifest');
    await expect(extractor.canonicalDigest({ packed: junk } as unknown as PackedManifest)).rejects.toThrow(/not a packed manifest/);
    // Bytes not in shared memory are not posted (the thread would keep a copy): the main thread works it out at the open.
    const unshared = new Uint8Array(new ArrayBuffer(PackedManifest.pack(manifestOf(files)).packed.length));
    unshared.set(PackedManifest.pack(manifestOf(files)).packed);
    await expect(extractor.canonicalDigest(PackedManifest.from(unshared))).rejects.toThrow(/shared memory/);
    expect(await extractor.canonicalDigest(PackedManifest.pack(manifestOf(files)))).toBe(manifestDigest(files));
    expect(started.length).toBe(threadsBefore);
  });

  it('removes a tree without following a link out of it, and a path that is not there', async () => {
    const outside = join(root, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'keep'), 'precious');
    const tree = join(root, 'doomed');
    await makeTree(tree);
    await symlink(outside, join(tree, 'd3', 'link-out'));
    await tasks.remove(tree);
    await expect(stat(tree)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(join(outside, 'keep'), 'utf8')).toBe('precious');
    await tasks.remove(join(root, 'never-there'));
  });

  it('keeps unpacking a deploy while it removes a large tree', async () => {
    // 12,000 entries: with 4,000 a loaded machine once let the removal finish first, though
    // it ran in steps between the deploy's batches.
    const tree = join(root, 'large');
    for (let d = 0; d < 120; d += 1) {
      await mkdir(join(tree, `d${d}`), { recursive: true });
      await Promise.all(Array.from({ length: 100 }, (_, f) => writeFile(join(tree, `d${d}`, `f${f}`), 'x')));
    }
    const dir = await mkdtemp(join(root, 'beside-'));
    let removed = false;
    const removal = tasks.remove(tree).then(() => (removed = true));
    const extracted = await extractor.extract(chunked(versionedSite('v', 300)), dir, objects, limits, false, new AbortController().signal);
    expect(extracted.files).toBe(301);
    // Removed a few hundred entries at a time, it had not finished when the deploy had.
    expect(removed).toBe(false);
    await removal;
    await expect(stat(tree)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it("a release manifest's walk, however long, does not hold back the removals and adoptions queued after it", async () => {
    // 6,000 files of 1 byte, none in a store: the walk lists them, then hashes each, well
    // over one step's 4,096 units; the removal queued after it is one step.
    const release = join(root, 'walked');
    for (let d = 0; d < 60; d += 1) {
      await mkdir(join(release, `d${d}`), { recursive: true });
      await Promise.all(Array.from({ length: 100 }, (_, f) => writeFile(join(release, `d${d}`, `f${f}`), 'x')));
    }
    const small = join(root, 'small-tree');
    await mkdir(small);
    const order: string[] = [];
    const walked = tasks.releaseManifest(release, join(root, 'no-store')).then((files) => {
      order.push('walk');
      return files;
    });
    const removed = tasks.remove(small).then(() => order.push('removal'));
    await Promise.all([walked, removed]);
    // One queue in order would answer the walk first.
    expect(order).toEqual(['removal', 'walk']);
    expect((await walked)?.fileCount).toBe(6000);
  });

  it('answers a probe, which a client waits on, before a removal queued ahead of it', async () => {
    // 12,000 entries: a removal of many steps (256 entries each); the probe is one.
    const tree = join(root, 'removed-after-probe');
    for (let d = 0; d < 120; d += 1) {
      await mkdir(join(tree, `d${d}`), { recursive: true });
      await Promise.all(Array.from({ length: 100 }, (_, f) => writeFile(join(tree, `d${d}`, `f${f}`), 'x')));
    }
    const order: string[] = [];
    const removed = tasks.remove(tree).then(() => order.push('removal'));
    const probed = tasks.probeObjects(join(root, 'no-store'), undefined, new Map([['a'.repeat(64), 1]])).then((answer) => {
      order.push('probe');
      return answer;
    });
    await Promise.all([removed, probed]);
    // One queue in order would answer the removal first.
    expect(order).toEqual(['probe', 'removal']);
    expect((await probed).missing).toEqual(['a'.repeat(64)]);
  });

  it('takes turns between probes and the tasks asked before them: many probes do not hold a removal back', async () => {
    const tree = join(root, 'removed-between-probes');
    await makeTree(tree);
    const order: string[] = [];
    // Ten probes of 20,000 objects each, five steps each; the removal of 734 entries, three steps.
    const many = new Map(Array.from({ length: 20_000 }, (_, i) => [i.toString(16).padStart(64, '0'), 1]));
    const removed = tasks.remove(tree).then(() => order.push('removal'));
    const probes = Array.from({ length: 10 }, () => tasks.probeObjects(join(root, 'no-store'), undefined, many).then(() => order.push('probe')));
    await Promise.all([removed, ...probes]);
    // Probes first whatever was asked before them would answer all ten before the removal.
    expect(order.indexOf('removal')).toBeLessThan(5);
  });

  it('probes a store only once its name migration, asked before, is done: the probe looks under the new names alone', async () => {
    const store = join(root, 'store-to-migrate');
    const bytes = Buffer.from('migrated object');
    const digest = createHash('sha256').update(bytes).digest();
    await mkdir(join(store, legacyObjectPath(digest), '..'), { recursive: true });
    await writeFile(join(store, legacyObjectPath(digest)), bytes);
    const migrated = tasks.migrateObjectNames(store);
    const probed = await tasks.probeObjects(store, undefined, new Map([[digest.toString('hex'), bytes.length]]));
    await migrated;
    expect(probed.missing).toEqual([]);
    expect(await readFile(join(store, objectPath(digest)), 'utf8')).toBe('migrated object');
  });

  it('fails what the threads had in hand when one stops, and starts new ones for the next use', async () => {
    const dir = await mkdtemp(join(root, 'cut-'));
    const gate = { open: undefined as (() => void) | undefined };
    async function* halfThenWait(): AsyncGenerator<Uint8Array> {
      // Far more than a batch, so the writer has files of this job in hand when it stops.
      const site = versionedSite('half', 6000, 400);
      yield site.subarray(0, site.length >> 1);
      await new Promise<void>((resolve) => (gate.open = resolve));
    }
    const cut = extractor.extract(halfThenWait(), dir, objects, limits, false, new AbortController().signal);
    const outcome = cut.then(
      () => 'unpacked',
      (error: Error) => error.message,
    );
    await until(async () => gate.open !== undefined && (await readdir(dir)).length > 0, 'the first half to be written');
    const writer = started.at(-1)!;
    await writer.terminate();
    gate.open!();
    expect(await outcome).toMatch(/^extraction failed: a file-system thread stopped/);
    // Nothing writes into the area once its deploy has been told.
    const after = await snapshot(dir);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await snapshot(dir)).toEqual(after);

    const again = await mkdtemp(join(root, 'again-'));
    const extracted = await extractor.extract(chunked(versionedSite('after', 50)), again, objects, limits, false, new AbortController().signal);
    expect(extracted.files).toBe(51);
    expect(await releaseVersion(again, 50)).toBe('after');
    await tasks.remove(dir);
    await expect(lstat(dir)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

/** Each thread of this process: its kernel id and its nice value (field 19 of its stat line). */
async function threadNices(): Promise<Map<number, number>> {
  const nices = new Map<number, number>();
  for (const tid of await readdir('/proc/self/task')) {
    try {
      // The name, in parentheses, may hold spaces: the fields are counted after it.
      const stat = await readFile(`/proc/self/task/${tid}/stat`, 'utf8');
      nices.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // A thread that ended while we read the list.
    }
  }
  return nices;
}

describe('WriterTasks: the client of the writer thread', () => {
  it('fails the tasks in hand when the threads stop, and runs the next on new threads', async () => {
    const root = await mkdtemp(join(tmpdir(), 'sitedrop-tasks-'));
    const writers: Worker[] = [];
    let deaf = true;
    // The first writer hears nothing, so its task is still in hand when it stops.
    const threads = new FsThreads({
      start: (script, options) => {
        const isWriter = script.includes('writer-thread');
        const worker = isWriter && deaf ? new Worker('setInterval(() => undefined, 1000);', { ...options, eval: true }) : new Worker(script, options);
        if (isWriter) writers.push(worker);
        return worker;
      },
    });
    const tasks = new WriterTasks(threads);
    try {
      await mkdir(join(root, 'tree'));
      const inHand = tasks.remove(join(root, 'tree')).then(
        () => 'removed',
        (error: Error) => error.message,
      );
      deaf = false;
      await writers[0]!.terminate();
      expect(await inHand).toMatch(/^a file-system thread stopped/);
      await tasks.remove(join(root, 'tree'));
      await expect(stat(join(root, 'tree'))).rejects.toMatchObject({ code: 'ENOENT' });
      expect(writers).toHaveLength(2);
    } finally {
      await threads.close();
      await rm(root, { recursive: true, force: true });
    }
  });

  it("names the task and its path in a task's failure", async () => {
    const root = await mkdtemp(join(tmpdir(), 'sitedrop-tasks-'));
    const threads = new FsThreads();
    const tasks = new WriterTasks(threads);
    try {
      // A new objects' shard that is a file, where the store has a directory: rename(2) refuses.
      await mkdir(join(root, 'fresh'));
      await writeFile(join(root, 'fresh', 'a'), 'not a shard');
      await mkdir(join(root, 'store', 'a'), { recursive: true });
      await writeFile(join(root, 'store', 'a', 'x'), 'x');
      const failed = await tasks.adoptObjects(join(root, 'fresh'), join(root, 'store')).then(() => 'adopted', (error: Error) => error.message);
      expect(failed.startsWith(`the writer's adopt task on ${join(root, 'fresh')}: E`)).toBe(true);
    } finally {
      await threads.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('FsThreads: the bulk threads yield the cores to the event loop', () => {
  it.runIf(process.platform === 'linux')('runs the unpack and the writer thread at nice 10, and leaves the main thread as it was', async () => {
    const before = await threadNices();
    const threads = new FsThreads();
    try {
      threads.warmUp();
      // Each thread lowers itself once its script has loaded.
      const lowered = async () => [...(await threadNices())].filter(([tid, nice]) => !before.has(tid) && nice === BULK_THREAD_NICE).length;
      await expect.poll(lowered, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
      expect((await threadNices()).get(process.pid)).toBe(before.get(process.pid));
      expect(BULK_THREAD_NICE).toBe(10);
    } finally {
      await threads.close();
    }
  });
});

describe('FsThreads: memory handed back once the deploys are over', () => {
  it('calls whenIdle once, idleMs after the last of several jobs ends, and not while one is open or soon begins', async () => {
    const calls: number[] = [];
    const threads = new FsThreads({ whenIdle: async () => void calls.push(Date.now()), idleMs: 150 });
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    try {
      const a = threads.openJob(() => undefined);
      const b = threads.openJob(() => undefined);
      a.close();
      await wait(300);
      expect(calls).toEqual([]); // b is still open
      b.close();
      // A job begun within idleMs puts it off again.
      await wait(50);
      const c = threads.openJob(() => undefined);
      await wait(300);
      expect(calls).toEqual([]);
      const ended = Date.now();
      c.close();
      c.close(); // closing twice is one end
      await wait(400);
      expect(calls.length).toBe(1);
      expect(calls[0]! - ended).toBeGreaterThanOrEqual(140);
    } finally {
      await threads.close();
    }
  });

  it.runIf(process.platform === 'linux')('the addon npm ci builds hands freed memory back (glibc malloc_trim)', async () => {
    expect(existsSync(fileURLToPath(new URL('../../build/Release/heap_trim.node', import.meta.url)))).toBe(true);
    expect(typeof (await trimHeap())).toBe('boolean');
  });
});

describe('TreeRemoval', () => {
  it('removes a root that is a link, not what it points to, and takes a directory gone or grown meanwhile in its stride', async () => {
    const root = await mkdtemp(join(tmpdir(), 'sitedrop-removal-'));
    try {
      await mkdir(join(root, 'target'));
      await writeFile(join(root, 'target', 'keep'), 'kept');
      await symlink(join(root, 'target'), join(root, 'link'));
      expect(new TreeRemoval(join(root, 'link')).step(10)).toBe(true);
      expect(await readdir(root)).toEqual(['target']);

      const tree = join(root, 'tree');
      await mkdir(join(tree, 'a', 'b'), { recursive: true });
      await mkdir(join(tree, 'c'));
      const racing = new TreeRemoval(tree);
      racing.step(2); // lists tree, enters c or a
      await rm(join(tree, 'a'), { recursive: true }); // another process removes part of it
      await writeFile(join(tree, 'late'), 'added after the listing');
      while (!racing.step(1));
      expect(await readdir(root)).toEqual(['target']);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });


  it('removes a tree a bounded number of entries per step, deepest first', async () => {
    const root = await mkdtemp(join(tmpdir(), 'sitedrop-removal-'));
    try {
      const tree = join(root, 'tree');
      await makeTree(tree);
      const removal = new TreeRemoval(tree);
      let steps = 0;
      while (!removal.step(100)) steps += 1;
      // 720 files and 25 directories, each listed and removed: at least eight steps of 100.
      expect(steps).toBeGreaterThanOrEqual(7);
      expect(await readdir(root)).toEqual([]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
