import { cp, mkdir, readdir, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { NodeReleaseStore } from '../../src/adapters/fs/publish/node-release-store.js';
import { ArchiveExtractor } from '../../src/adapters/fs/threads/archive-extractor.js';
import { isWhole, KEPT_MANIFESTS, PACKED_FORMAT, parseKeptHead, readRecords, RECORDS_FORMAT, WRITTEN_RECORDS } from '../../src/adapters/fs/store/kept-manifest-file.js';
import { originOf } from '../../src/adapters/fs/layout/directory-origin.js';
import { ManifestRecords } from '../../src/adapters/fs/write/manifest-records.js';
import { KeptManifests } from '../../src/adapters/fs/store/kept-manifests.js';
import { ManifestMemory } from '../../src/adapters/fs/store/manifest-memory.js';
import type { Logger } from '../../src/adapters/log/logger.js';
import type { ManifestFile } from '../../src/domain/manifest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import { alice, digestOf, docs, going, LIMITS, packed, R1, R2 } from '../contracts/deploys-under-test.js';
import { ASSEMBLED_FILES, commitAssembled } from '../support/assembled-release.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { file, tgz } from '../support/tar-builder.js';

const R3 = '20261123T140000' as ReleaseId;
const byPath = (files: readonly ManifestFile[] | undefined) => files && [...files].sort((a, b) => (a.path < b.path ? -1 : 1));
const wanted = ASSEMBLED_FILES;
const archive = (name: string, content: string) => (async function* () { yield tgz([file(name, content)]); })();

/** What a restart makes of the same directories: a release store with nothing remembered. */
function restarted(d: RealDeploys, logger?: Logger): { store: NodeReleaseStore; walks: ReturnType<typeof vi.spyOn> } {
  const kept = logger ? new KeptManifests(d.tree, logger) : d.kept;
  const store = new NodeReleaseStore(d.tree, d.tasks, new ManifestMemory(), d.adoptions, kept, new ArchiveExtractor(d.threads));
  return { store, walks: vi.spyOn(d.tasks, 'releaseManifest') };
}

async function assembled(d: RealDeploys, id: ReleaseId): Promise<void> {
  await commitAssembled(d, id);
  await d.kept.idle();
}

const within = async (test: (d: RealDeploys) => Promise<void>) => {
  const d = await realDeploys('sitedrop-kept-');
  try {
    await test(d);
  } finally {
    vi.restoreAllMocks();
    await d.close();
  }
};

describe("a release's manifest kept on disk (real directories, a restart as a store with nothing remembered)", () => {
  it("answers an assembled release after a restart without walking it, from one file in the user's directory, in no project's", () => within(async (d) => {
    await assembled(d, R1);
    expect(await readdir(join(d.deploysRoot, alice, KEPT_MANIFESTS))).toEqual([docs]);
    const { store, walks } = restarted(d);
    expect(byPath((await store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(byPath(wanted));
    expect(walks).not.toHaveBeenCalled();
    // Not a file of the release, nor a release, nor a project.
    expect(await readdir(join(d.deploysRoot, alice, docs))).toEqual([R1]);
    expect(await store.projects(alice)).toEqual([docs]);
  }));

  it('keeps its canonical digest with it, which a restart reads instead of working it out', () => within(async (d) => {
    await assembled(d, R1);
    const head = parseKeptHead(await readFile(join(d.deploysRoot, alice, KEPT_MANIFESTS, docs)))!.head;
    expect(head.digest).toMatch(/^[0-9a-f]{64}$/);
    const { store } = restarted(d);
    const read = (await store.releasePackedManifest(alice, docs, R1))!;
    expect(read.knownDigest()).toBe(head.digest);
    expect(PackedManifest.from(Buffer.from(read.packed)).canonicalDigest()).toBe(head.digest);
  }));

  it('still reads a file kept without a digest (before digests were kept), working the digest out when asked', () => within(async (d) => {
    await assembled(d, R1);
    const path = join(d.deploysRoot, alice, KEPT_MANIFESTS, docs);
    const bytes = await readFile(path);
    const found = parseKeptHead(bytes)!;
    const { digest, ...older } = found.head;
    await writeFile(path, Buffer.concat([Buffer.from(`${JSON.stringify(older)}\n`), bytes.subarray(found.length)]));
    const { store, walks } = restarted(d);
    const read = (await store.releasePackedManifest(alice, docs, R1))!;
    expect(walks).not.toHaveBeenCalled();
    expect(read.knownDigest()).toBeUndefined();
    expect(read.canonicalDigest()).toBe(digest);
  }));

  it('walks a release whose packed manifest an older version kept (format 1, before the publish confirmed sizes), and keeps it anew', () => within(async (d) => {
    await assembled(d, R1);
    const path = join(d.deploysRoot, alice, KEPT_MANIFESTS, docs);
    const bytes = await readFile(path);
    const found = parseKeptHead(bytes)!;
    expect(found.head.format).toBe(PACKED_FORMAT);
    await writeFile(path, Buffer.concat([Buffer.from(`${JSON.stringify({ ...found.head, format: 1 })}\n`), bytes.subarray(found.length)]));
    const { store, walks } = restarted(d);
    expect((await store.releasePackedManifest(alice, docs, R1))?.manifestFiles().length).toBeGreaterThan(0);
    expect(walks).toHaveBeenCalledTimes(1);
    await d.kept.idle();
    expect(parseKeptHead(await readFile(path))?.head.format).toBe(PACKED_FORMAT);
  }));

  it('takes no head whose digest is not a string', () => {
    const head = { format: PACKED_FORMAT, origin: 'o', release: R1, sha256: 'a'.repeat(64) };
    const line = (value: object) => Buffer.from(`${JSON.stringify(value)}\n`);
    expect(parseKeptHead(line({ ...head, digest: 'b'.repeat(64) }))?.head.digest).toBe('b'.repeat(64));
    expect(parseKeptHead(line(head))?.head.digest).toBeUndefined();
    expect(parseKeptHead(line({ ...head, digest: 7 }))).toBeUndefined();
  });

  it('keeps a walked release, so the next restart reads it instead; the walk and the file agree', () => within(async (d) => {
    await d.store.commit(await d.staging.stage(alice, archive('a.html', 'a'), LIMITS, going()), alice, docs, R1);
    const first = restarted(d);
    const walked = (await first.store.releasePackedManifest(alice, docs, R1))?.manifestFiles();
    expect(walked).toEqual([{ path: 'a.html', size: 1, digest: digestOf('a') }]);
    expect(first.walks).toHaveBeenCalledTimes(1);
    await d.kept.idle();
    vi.restoreAllMocks();
    const second = restarted(d);
    expect((await second.store.releasePackedManifest(alice, docs, R1))?.manifestFiles()).toEqual(walked);
    expect(second.walks).not.toHaveBeenCalled();
  }));

  it('is the latest release known: a later one replaces it, and an earlier one is walked again', () => within(async (d) => {
    await assembled(d, R1);
    await assembled(d, R2);
    const { store, walks } = restarted(d);
    expect(byPath((await store.releasePackedManifest(alice, docs, R2))?.manifestFiles())).toEqual(byPath(wanted));
    expect(walks).not.toHaveBeenCalled();
    expect(byPath((await store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(byPath(wanted));
    expect(walks).toHaveBeenCalledTimes(1);
  }));

  it('is not taken for a directory made again under the same id (another origin): that one is walked', () => within(async (d) => {
    await assembled(d, R1);
    await d.store.commit(await d.staging.stage(alice, archive('other.html', 'other'), LIMITS, going()), alice, docs, R2);
    const project = join(d.deploysRoot, alice, docs);
    // What another replica's prune then commit does: the directory goes, another takes its name.
    await rm(join(project, R1), { recursive: true });
    await rename(join(project, R2), join(project, R1));
    const { store, walks } = restarted(d);
    expect((await store.releasePackedManifest(alice, docs, R1))?.manifestFiles()).toEqual([{ path: 'other.html', size: 5, digest: digestOf('other') }]);
    expect(walks).toHaveBeenCalledTimes(1);
  }));

  it.each([
    ['cut short', 1, async (path: string) => truncate(path, (await readFile(path)).length - 3)],
    ['a byte of a path changed', 1, async (path: string) => {
      const bytes = await readFile(path);
      bytes[bytes.lastIndexOf('h'.charCodeAt(0))] = 'j'.charCodeAt(0);
      await writeFile(path, bytes);
    }],
    ['its head not one', 0, async (path: string) => writeFile(path, `{"format":1}\n${(await readFile(path)).toString('latin1')}`, 'latin1')],
    ['empty', 0, async (path: string) => writeFile(path, '')],
  ])('damaged (%s): the release is walked instead, and its files are what they are', (_name, warned, damage) => within(async (d) => {
    await assembled(d, R1);
    await damage(join(d.deploysRoot, alice, KEPT_MANIFESTS, docs));
    const warnings: string[] = [];
    const logger: Logger = { info: () => undefined, warn: (message) => void warnings.push(message), error: () => undefined };
    const { store, walks } = restarted(d, logger);
    expect(byPath((await store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(byPath(wanted));
    expect(walks).toHaveBeenCalledTimes(1);
    // A file that says it is one and is not is worth a word in the log.
    expect(warnings).toHaveLength(warned);
  }));

  it('is not taken for a directory made again by hand under the same id: that one is walked', () => within(async (d) => {
    await assembled(d, R1);
    const release = join(d.deploysRoot, alice, docs, R1);
    await rm(release, { recursive: true });
    await mkdir(release);
    await writeFile(join(release, 'by-hand.html'), 'by hand');
    const { store, walks } = restarted(d);
    expect((await store.releasePackedManifest(alice, docs, R1))?.manifestFiles()).toEqual([{ path: 'by-hand.html', size: 7, digest: digestOf('by hand') }]);
    expect(walks).toHaveBeenCalledTimes(1);
  }));

  it('is not left behind by a keep still under way when its release, or its user, goes', () => within(async (d) => {
    await commitAssembled(d, R1);
    await d.store.removeRelease(alice, docs, R1);
    await d.kept.idle();
    expect(await readdir(join(d.deploysRoot, alice, KEPT_MANIFESTS))).toEqual([]);
    // A keep that lands after its user's files went (removeUserFiles) brings none of them back.
    await d.store.removeUserFiles(alice);
    await d.settle();
    await d.kept.keep(alice, docs, R2, 'origin-2', packed(wanted));
    expect(await readdir(d.deploysRoot)).not.toContain(alice);
  }));

  it("does not hold up a prune while the new release's digest is worked out, and is then the new release's, with it", () => within(async (d) => {
    await d.store.commit(await d.staging.stage(alice, archive('a.html', 'a'), LIMITS, going()), alice, docs, R1);
    let answer: (digest: string) => void = () => undefined;
    const worked = vi.spyOn(ArchiveExtractor.prototype, 'canonicalDigest').mockImplementation((manifest) => new Promise((resolve) => (answer = () => resolve(manifest.canonicalDigest()))));
    await commitAssembled(d, R2);
    expect(worked).toHaveBeenCalledTimes(1);
    const pruned = d.store.removeRelease(alice, docs, R1).then(() => 'pruned');
    const first = await Promise.race([pruned, new Promise((resolve) => setTimeout(() => resolve('held up'), 1_000))]);
    answer('');
    expect(first).toBe('pruned');
    await d.kept.idle();
    const head = parseKeptHead(await readFile(join(d.deploysRoot, alice, KEPT_MANIFESTS, docs)))!.head;
    expect(head.release).toBe(R2);
    expect(head.digest).toBe(packed(wanted).canonicalDigest());
  }));

  it('is kept without a digest when the thread cannot work it out', () => within(async (d) => {
    vi.spyOn(ArchiveExtractor.prototype, 'canonicalDigest').mockRejectedValue(new Error('the threads are closing'));
    await assembled(d, R1);
    const head = parseKeptHead(await readFile(join(d.deploysRoot, alice, KEPT_MANIFESTS, docs)))!.head;
    expect(head.release).toBe(R1);
    expect(head.digest).toBeUndefined();
  }));

  it("goes with its release, and stays when another release goes", () => within(async (d) => {
    await assembled(d, R1);
    await d.store.commit(await d.staging.stage(alice, archive('a.html', 'a'), LIMITS, going()), alice, docs, R2);
    await assembled(d, R3);
    const kept = join(d.deploysRoot, alice, KEPT_MANIFESTS);
    await d.store.removeRelease(alice, docs, R1);
    await d.kept.idle();
    expect(await readdir(kept)).toEqual([docs]);
    await d.store.removeRelease(alice, docs, R3);
    await d.kept.idle();
    expect(await readdir(kept)).toEqual([]);
    expect(await d.store.releases(alice, docs)).toEqual([R2]);
  }));

  it('goes with its project, even one kept just before', () => within(async (d) => {
    await d.store.commit(await d.staging.stage(alice, archive('a.html', 'a'), LIMITS, going()), alice, docs, R1);
    await commitAssembled(d, R2);
    await d.store.removeProject(alice, docs);
    await d.kept.idle();
    expect(await readdir(join(d.deploysRoot, alice, KEPT_MANIFESTS))).toEqual([]);
  }));

  it('keeps in the order asked: a large manifest then a small one leaves the small one', () => within(async (d) => {
    await d.store.commit(await d.staging.stage(alice, archive('a.html', 'a'), LIMITS, going()), alice, docs, R1);
    const large = packed(Array.from({ length: 30_000 }, (_, i) => ({ path: `docs/section-${i % 40}/page-${i}.html`, size: i + 1, digest: digestOf(`page ${i}`) })));
    const small = packed(wanted);
    void d.kept.keep(alice, docs, R1, 'origin-1', large);
    void d.kept.keep(alice, docs, R2, 'origin-2', small);
    await d.kept.idle();
    expect(byPath(((await d.kept.read(alice, docs, R2, 'origin-2')) as PackedManifest | undefined)?.manifestFiles())).toEqual(byPath(wanted));
    expect(await d.kept.read(alice, docs, R1, 'origin-1')).toBeUndefined();
  }));

  it('three releases committed one after another: the last is kept, and nothing is left beside the staging areas', () => within(async (d) => {
    for (const id of [R1, R2, R3]) await commitAssembled(d, id);
    await d.kept.idle();
    const { store, walks } = restarted(d);
    expect(byPath((await store.releasePackedManifest(alice, docs, R3))?.manifestFiles())).toEqual(byPath(wanted));
    expect(walks).not.toHaveBeenCalled();
    expect(await readdir(join(d.deploysRoot, '.fresh'))).toEqual([]);
  }));

  describe("a tarball's release, as its writer recorded it", () => {
    const large = 'L'.repeat(300_001);
    const contents: Record<string, string> = {
      'index.html': 'home',
      'docs/深い/ページ.html': 'deep',
      'docs/copy.html': 'home',
      'empty.txt': '',
      'media/large.bin': large,
      _redirects: '/old /new 301',
    };
    const site = () => (async function* () { yield tgz(Object.entries(contents).map(([path, content]) => file(path, content))); })();
    const expected = byPath(Object.entries(contents).map(([path, content]) => ({ path, size: Buffer.byteLength(content), digest: digestOf(content) })));
    const headOf = async (d: RealDeploys) => JSON.parse((await readFile(join(d.deploysRoot, alice, KEPT_MANIFESTS, docs), 'utf8')).split('\n')[0]!) as { format: number };

    it('is kept beside it as records, read after a restart without waiting for its adoption, then kept packed', () => within(async (d) => {
      await d.store.commit(await d.staging.stage(alice, site(), LIMITS, going()), alice, docs, R1);
      await d.kept.idle();
      expect((await headOf(d)).format).toBe(RECORDS_FORMAT);
      const { store, walks } = restarted(d);
      const settled = vi.spyOn(d.adoptions, 'settled');
      expect(byPath((await store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(expected);
      expect(walks).toHaveBeenCalledWith(join(d.deploysRoot, alice, docs, R1), join(d.deploysRoot, alice, '.objects'), join(d.deploysRoot, alice, KEPT_MANIFESTS, docs));
      expect(settled).not.toHaveBeenCalled();
      await d.kept.idle();
      expect((await headOf(d)).format).toBe(PACKED_FORMAT);
      // What the records gave is what a walk of the release finds.
      await d.settle();
      const walked = await d.tasks.releaseManifest(join(d.deploysRoot, alice, docs, R1), join(d.deploysRoot, alice, '.objects'));
      expect(byPath(walked?.manifestFiles())).toEqual(expected);
    }));

    it('are trusted as the writer wrote them, like a remembered manifest: a file changed by hand in the release since is not seen', () => within(async (d) => {
      await d.store.commit(await d.staging.stage(alice, site(), LIMITS, going()), alice, docs, R1);
      await d.kept.idle();
      const page = join(d.deploysRoot, alice, docs, R1, 'index.html');
      await rm(page);
      await writeFile(page, 'edited by hand');
      const { store } = restarted(d);
      expect(byPath((await store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(expected);
    }));

    it('are not taken for another directory under its id (a copy changed by hand): that one is walked', () => within(async (d) => {
      await d.store.commit(await d.staging.stage(alice, site(), LIMITS, going()), alice, docs, R1);
      await d.kept.idle();
      const project = join(d.deploysRoot, alice, docs);
      await cp(join(project, R1), join(project, 'copy'), { recursive: true });
      await writeFile(join(project, 'copy', 'index.html'), 'changed');
      await rm(join(project, R1), { recursive: true });
      await rename(join(project, 'copy'), join(project, R1));
      const { store } = restarted(d);
      const files = byPath((await store.releasePackedManifest(alice, docs, R1))?.manifestFiles());
      expect(files?.find((f) => f.path === 'index.html')).toEqual({ path: 'index.html', size: 7, digest: digestOf('changed') });
    }));

    it.each([
      ['a byte of a record changed', async (path: string) => {
        const bytes = await readFile(path);
        bytes.writeUInt8(bytes.readUInt8(bytes.length - 2) ^ 1, bytes.length - 2);
        await writeFile(path, bytes);
      }],
      ['cut short', async (path: string) => truncate(path, (await readFile(path)).length - 5)],
      ['left without its head, as a writer that failed leaves them', async (path: string) => {
        const bytes = await readFile(path);
        bytes.fill(0, 0, 512);
        await writeFile(path, bytes);
      }],
    ])('whose records are damaged (%s): walked instead, its files what they are', (_name, damage) => within(async (d) => {
      await d.store.commit(await d.staging.stage(alice, site(), LIMITS, going()), alice, docs, R1);
      await d.kept.idle();
      await damage(join(d.deploysRoot, alice, KEPT_MANIFESTS, docs));
      const { store } = restarted(d);
      expect(byPath((await store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(expected);
      await d.kept.idle();
      expect((await headOf(d)).format).toBe(PACKED_FORMAT);
    }));

    it('are not kept for a refused archive, nor for another release of the same project made under its id', () => within(async (d) => {
      // Refused at its last entry (more files than the limits allow): its records go with its area.
      const tooMany = (async function* () { yield tgz(Array.from({ length: LIMITS.maxFiles + 1 }, (_, i) => file(`f${i}.html`, `${i}`))); })();
      await expect(d.staging.stage(alice, tooMany, LIMITS, going())).rejects.toThrow(/more than/);
      expect(await readdir(join(d.deploysRoot, '.fresh'))).toEqual([]);
      await d.store.commit(await d.staging.stage(alice, archive('other.html', 'other'), LIMITS, going()), alice, docs, R1);
      await d.store.commit(await d.staging.stage(alice, site(), LIMITS, going()), alice, docs, R2);
      await d.kept.idle();
      const project = join(d.deploysRoot, alice, docs);
      // R2's records describe R2's directory only: moved under R1's name, they are not its files.
      await rm(join(project, R1), { recursive: true });
      await rename(join(project, R2), join(project, R1));
      await d.store.commit(await d.staging.stage(alice, archive('third.html', 'third'), LIMITS, going()), alice, docs, R2);
      await d.kept.idle();
      const { store } = restarted(d);
      expect(byPath((await store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(expected);
      expect((await store.releasePackedManifest(alice, docs, R2))?.manifestFiles()).toEqual([{ path: 'third.html', size: 5, digest: digestOf('third') }]);
      await d.settle();
      expect(await readdir(join(d.deploysRoot, '.fresh'))).toEqual([]);
    }));
  });

  describe("the writer's records (ManifestRecords, real files)", () => {
    it('give back every file as written, a path of the longest length the policy allows included; none where they cannot be made', () => within(async (d) => {
      const root = join(d.root, 'area');
      const fresh = join(d.root, 'fresh');
      await mkdir(root);
      await mkdir(fresh);
      expect(ManifestRecords.open(root, join(d.root, 'not-there'))).toBeUndefined();
      const longest = `${'d'.repeat(254)}/${'e'.repeat(254)}/${'f'.repeat(254)}/${'g'.repeat(1024 - 3 * 255 - 5)}.html`;
      expect(Buffer.byteLength(longest)).toBe(1024);
      // Past the records' 64 KiB buffer, so that it is written in several pieces.
      const files: ManifestFile[] = [...Array.from({ length: 3000 }, (_, i) => ({ path: `p/${i}.html`, size: i, digest: digestOf(`${i}`) })), { path: longest, size: 5 * 1024 ** 3, digest: digestOf('long') }];
      const records = ManifestRecords.open(root, fresh)!;
      for (const f of files) records.add(f.path, Buffer.from(f.digest, 'hex'), f.size);
      records.finish();
      // A second job's records in the same place are not made: the first's stay as they are.
      expect(ManifestRecords.open(root, fresh)).toBeUndefined();
      const bytes = await readFile(join(fresh, WRITTEN_RECORDS));
      const found = parseKeptHead(bytes.subarray(0, 1024))!;
      expect(found.length).toBe(512);
      expect(found.head.origin).toBe(originOf(await stat(root, { bigint: true })));
      const body = bytes.subarray(found.length);
      expect(isWhole(found.head, body)).toBe(true);
      const read: ManifestFile[] = [];
      expect(readRecords(body, 0, Infinity, (f) => read.push(f))).toBe(body.length);
      expect(read).toEqual(files);
    }));
  });
});
