import { rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ManifestMemory, REMEMBERED_BYTES_MAX } from '../../src/adapters/fs/store/manifest-memory.js';
import { EMPTY_DIGEST, type ManifestFile } from '../../src/domain/manifest.js';
import { alice, digestOf, docs, going, LIMITS, packed, R1, R2 } from '../contracts/deploys-under-test.js';
import { manifestDigest } from '../../src/domain/manifest-digest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { PackedPaths } from '../../src/domain/packed-paths.js';
import { ASSEMBLED_FILES, commitAssembled } from '../support/assembled-release.js';
import { realDeploys } from '../support/real-deploys.js';
import { file, tgz } from '../support/tar-builder.js';

const byPath = (files: readonly ManifestFile[] | undefined) => files && [...files].sort((a, b) => (a.path < b.path ? -1 : 1));
const many = (n: number, tag: string): ManifestFile[] => Array.from({ length: n }, (_, i) => ({ path: `${tag}/${i}.html`, size: i + 1, digest: digestOf(`${tag} ${i}`) }));

describe('ManifestMemory', () => {
  it('gives back exactly what it was given: paths of any script, empty files, sizes past 4 GiB', () => {
    const memory = new ManifestMemory();
    const files: ManifestFile[] = [
      { path: 'docs/guide/深い/ページ.html', size: 9, digest: digestOf('ページ') },
      { path: 'empty.txt', size: 0, digest: EMPTY_DIGEST },
      { path: 'media/huge.mp4', size: 5 * 1024 ** 3 + 7, digest: digestOf('huge') },
    ];
    memory.remember('/r/1', 'id-1', packed(files));
    expect(memory.recall('/r/1', 'id-1')?.manifest().files).toEqual(files);
    expect(memory.recall('/r/2', 'id-1')).toBeUndefined();
  });

  it('forgets a directory that is not the one remembered any more (another inode)', () => {
    const memory = new ManifestMemory();
    memory.remember('/r/1', 'id-1', packed(many(3, 'a')));
    expect(memory.recall('/r/1', 'id-2')).toBeUndefined();
    // Forgotten, not just hidden: the old identity is no good either.
    expect(memory.recall('/r/1', 'id-1')).toBeUndefined();
  });

  it(`holds at most ${REMEMBERED_BYTES_MAX} bytes of manifests, counted by their paths' length too, forgetting the least recently used first`, () => {
    const memory = new ManifestMemory();
    // 8 bytes an empty file and its path's: a third of the budget each.
    const withPaths = (tag: string, pathBytes: number) => {
      const count = Math.floor(REMEMBERED_BYTES_MAX / 3 / (8 + pathBytes));
      return Array.from({ length: count }, (_, i) => ({ path: `${tag}/${String(i).padStart(pathBytes - tag.length - 1, '0')}`, size: 0, digest: EMPTY_DIGEST }));
    };
    const a = withPaths('a', 40);
    const b = withPaths('b', 900);
    const c = withPaths('c', 40);
    memory.remember('/a', 'a', packed(a));
    memory.remember('/b', 'b', packed(b));
    memory.remember('/c', 'c', packed(c));
    expect(memory.recall('/a', 'a')?.fileCount).toBe(a.length); // now the most recently used
    memory.remember('/d', 'd', packed(withPaths('d', 40)));
    expect(memory.recall('/b', 'b')).toBeUndefined();
    for (const dir of ['/a', '/c', '/d']) expect(memory.recall(dir, dir.slice(1)), dir).toBeDefined();
    // Long paths count: fewer files than before, but more than the whole budget in bytes.
    memory.remember('/huge', 'h', packed([...withPaths('h', 1000), ...withPaths('i', 1000), ...withPaths('j', 1000), ...withPaths('k', 1000)]));
    expect(memory.recall('/huge', 'h')).toBeUndefined();
    expect(memory.recall('/a', 'a')?.fileCount).toBe(a.length);
  });

  it('keeps a staged manifest until it is taken, once', () => {
    const memory = new ManifestMemory();
    memory.stage('/staging/x', packed(many(2, 's')));
    expect(memory.takeStaged('/staging/x')?.manifest().files).toEqual(many(2, 's'));
    expect(memory.takeStaged('/staging/x')).toBeUndefined();
  });
});

describe('the release store and staging share what was assembled (real directories)', () => {
  const wanted = ASSEMBLED_FILES;

  it('answers the manifest of a release it assembled without walking its files; a release from an archive is walked once', async () => {
    const d = await realDeploys('sitedrop-memory-');
    try {
      const walks = vi.spyOn(d.tasks, 'releaseManifest');
      await commitAssembled(d, R1);
      expect(byPath((await d.store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(byPath(wanted));
      expect(walks).not.toHaveBeenCalled();

      await d.store.commit(await d.staging.stage(alice, (async function* () { yield tgz([file('a.html', 'a')]); })(), LIMITS, going()), alice, docs, R2);
      const fromArchive = [{ path: 'a.html', size: 1, digest: digestOf('a') }];
      expect((await d.store.releasePackedManifest(alice, docs, R2))?.manifestFiles()).toEqual(fromArchive);
      expect((await d.store.releasePackedManifest(alice, docs, R2))?.manifestFiles()).toEqual(fromArchive);
      expect(walks).toHaveBeenCalledTimes(1);
    } finally {
      await d.close();
    }
  });

  it("has an assembled release's digest worked out off the main thread by the time the next deploy asks", async () => {
    const d = await realDeploys('sitedrop-memory-');
    try {
      const known = vi.spyOn(PackedManifest.prototype, 'knowDigest');
      const onMain = vi.spyOn(PackedPaths.prototype, 'canonicalDigest');
      await commitAssembled(d, R1);
      await vi.waitFor(() => expect(known).toHaveBeenCalledWith(manifestDigest(wanted)));
      expect((await d.store.releasePackedManifest(alice, docs, R1))?.canonicalDigest()).toBe(manifestDigest(wanted));
      expect(onMain).not.toHaveBeenCalled();
    } finally {
      vi.restoreAllMocks();
      await d.close();
    }
  });

  it("answers a release given compressed siblings since (its directory's ctime changed) without walking it", async () => {
    const d = await realDeploys('sitedrop-memory-');
    try {
      const walks = vi.spyOn(d.tasks, 'releaseManifest');
      await commitAssembled(d, R1);
      // What the precompression does after the answer: siblings beside the files (0444, as it makes them), the root's among them.
      await writeFile(join(d.deploysRoot, alice, docs, R1, 'index.html.gz'), 'gzip', { mode: 0o444 });
      expect(byPath((await d.store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(byPath(wanted));
      expect(walks).not.toHaveBeenCalled();
      // What was remembered is what a walk finds: the sibling is no file of the site.
      const walked = await d.tasks.releaseManifest(join(d.deploysRoot, alice, docs, R1), join(d.deploysRoot, alice, '.objects'));
      expect(byPath(walked?.manifestFiles())).toEqual(byPath(wanted));
    } finally {
      await d.close();
    }
  });

  it('walks a release that another replica removed and made again under the same id, and answers its new files', async () => {
    const d = await realDeploys('sitedrop-memory-');
    try {
      await commitAssembled(d, R1);
      await d.store.commit(await d.staging.stage(alice, (async function* () { yield tgz([file('other.html', 'other')]); })(), LIMITS, going()), alice, docs, R2);
      // What another replica's prune then commit does: the directory goes, another takes its name.
      const project = join(d.deploysRoot, alice, docs);
      await rm(join(project, R1), { recursive: true });
      await rename(join(project, R2), join(project, R1));
      expect((await d.store.releasePackedManifest(alice, docs, R1))?.manifestFiles()).toEqual([{ path: 'other.html', size: 5, digest: digestOf('other') }]);
    } finally {
      await d.close();
    }
  });
});
