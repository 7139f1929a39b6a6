import { describe, expect, it } from 'vitest';
import { EMPTY_DIGEST, type ManifestFile } from '../../src/domain/manifest.js';
import { manifestDigest } from '../../src/domain/manifest-digest.js';
import { alice, expecting, packed, blog, bob, digestOf, docs, going, LIMITS, manifestOf, objectsOf, over, pathOf, R1, R2, release, type DeploysUnderTest } from './deploys-under-test.js';

const SESSION = '0123456789abcdef0123456789abcdef';
const byPath = (files: readonly ManifestFile[] | undefined) => files && [...files].sort((a, b) => (a.path < b.path ? -1 : 1));

/**
 * What every ReleaseStore must do for the use cases: a release is visible only once
 * committed, live only once activated, and removing one never takes what another serves.
 */
export function releaseStoreContract(name: string, open: () => Promise<DeploysUnderTest>): void {
  describe(`ReleaseStore contract: ${name}`, () => {
    it('a staged release is nowhere until committed; committed, it is listed and readable but not live', over(open, async (d) => {
      const staged = await d.staging.stage(alice, d.archive(['<h1>one</h1>', 'body{}']), LIMITS, going());
      expect(await d.store.projects(alice)).toEqual([]);
      expect(await d.store.releases(alice, docs)).toEqual([]);
      await d.store.commit(staged, alice, docs, R1);
      expect(await d.store.releases(alice, docs)).toEqual([R1]);
      expect(await d.store.projects(alice)).toEqual([docs]);
      expect(await d.served(alice, docs, R1)).toEqual(['<h1>one</h1>', 'body{}']);
      expect(await d.store.liveRelease(alice, docs)).toBeUndefined();
      expect(await d.served(alice, docs)).toBeUndefined();
    }));

    it('lists releases oldest first, whatever order they came in', over(open, async (d) => {
      await release(d, alice, docs, R2, ['two']);
      await release(d, alice, docs, R1, ['one']);
      expect(await d.store.releases(alice, docs)).toEqual([R1, R2]);
    }));

    it('activate points the live site at a release, and moves it on (a rollback, too)', over(open, async (d) => {
      await release(d, alice, docs, R1, ['one']);
      await release(d, alice, docs, R2, ['two']);
      await d.store.activate(alice, docs, R2);
      expect(await d.store.liveRelease(alice, docs)).toBe(R2);
      expect(await d.served(alice, docs)).toEqual(['two']);
      await d.store.activate(alice, docs, R1);
      expect(await d.store.liveRelease(alice, docs)).toBe(R1);
      expect(await d.served(alice, docs)).toEqual(['one']);
      expect(await d.store.releases(alice, docs)).toEqual([R1, R2]);
    }));

    it('removeRelease removes that release only, never a byte the live one serves, shared or not', over(open, async (d) => {
      await release(d, alice, docs, R1, ['shared', 'old']);
      await release(d, alice, docs, R2, ['shared', 'new']);
      await d.store.activate(alice, docs, R2);
      await d.store.removeRelease(alice, docs, R1);
      expect(await d.leftovers()).toEqual([]);
      expect(await d.store.releases(alice, docs)).toEqual([R2]);
      expect(await d.served(alice, docs, R1)).toBeUndefined();
      expect(await d.store.liveRelease(alice, docs)).toBe(R2);
      expect(await d.served(alice, docs)).toEqual(['shared', 'new']);
      expect(await d.store.releaseBytes(alice, docs, R2)).toBe(9);
    }));

    it('releaseBytes is what the staging counted, and 0 for a release that is not there', over(open, async (d) => {
      const staged = await release(d, alice, docs, R1, ['abc', '', 'defgh']);
      expect(staged).toMatchObject({ files: 3, bytes: 8 });
      expect(await d.store.releaseBytes(alice, docs, R1)).toBe(8);
      expect(await d.store.releaseBytes(alice, docs, R2)).toBe(0);
      expect(await d.store.releaseBytes(alice, blog, R1)).toBe(0);
      await d.store.removeRelease(alice, docs, R1);
      expect(await d.store.releaseBytes(alice, docs, R1)).toBe(0);
    }));

    it("projects: the user's projects with a release, sorted, and no one else's", over(open, async (d) => {
      await release(d, alice, docs, R1, ['d']);
      await release(d, alice, blog, R1, ['b']);
      await release(d, bob, 'site' as never, R1, ['s']);
      expect(await d.store.projects(alice)).toEqual([blog, docs]);
      expect(await d.store.projects(bob)).toEqual(['site']);
      expect(await d.store.projects('carol' as never)).toEqual([]);
    }));

    it('removeProject takes its live link and every release, and leaves the other projects be', over(open, async (d) => {
      await release(d, alice, docs, R1, ['d1']);
      await release(d, alice, docs, R2, ['d2']);
      await d.store.activate(alice, docs, R2);
      await release(d, alice, blog, R1, ['b1']);
      await d.store.activate(alice, blog, R1);
      await d.store.removeProject(alice, docs);
      expect(await d.store.liveRelease(alice, docs)).toBeUndefined();
      expect(await d.served(alice, docs)).toBeUndefined();
      expect(await d.store.releases(alice, docs)).toEqual([]);
      expect(await d.store.projects(alice)).toEqual([blog]);
      expect(await d.served(alice, blog)).toEqual(['b1']);
      expect(await d.leftovers()).toEqual([]);
    }));

    it("removeUserFiles takes every project of the user, and no one else's", over(open, async (d) => {
      await release(d, alice, docs, R1, ['d']);
      await d.store.activate(alice, docs, R1);
      await release(d, alice, blog, R1, ['b']);
      await release(d, bob, docs, R1, ['d']);
      await d.store.activate(bob, docs, R1);
      await d.store.removeUserFiles(alice);
      expect(await d.store.projects(alice)).toEqual([]);
      expect(await d.store.liveRelease(alice, docs)).toBeUndefined();
      expect(await d.served(alice, docs)).toBeUndefined();
      expect(await d.served(bob, docs)).toEqual(['d']);
      expect(await d.leftovers()).toEqual([]);
    }));

    it("releasePackedManifest: each file's path, size and SHA-256, the same bytes twice and empty files included", over(open, async (d) => {
      await release(d, alice, docs, R1, ['<h1>one</h1>', 'same', 'same', '']);
      expect(byPath((await d.store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual([
        { path: pathOf(0), size: 12, digest: digestOf('<h1>one</h1>') },
        { path: pathOf(1), size: 4, digest: digestOf('same') },
        { path: pathOf(2), size: 4, digest: digestOf('same') },
        { path: pathOf(3), size: 0, digest: EMPTY_DIGEST },
      ]);
    }));

    it('releasePackedManifest of a release built from a manifest is that manifest, paths in folders included', over(open, async (d) => {
      const wanted = [
        { path: 'index.html', size: 4, digest: digestOf('home') },
        { path: 'docs/guide/深い.html', size: 4, digest: digestOf('deep') },
        { path: 'docs/empty.txt', size: 0, digest: EMPTY_DIGEST },
      ];
      await d.objects.receive(alice, SESSION, d.batch([[digestOf('home'), 'home'], [digestOf('deep'), 'deep']]), expecting(objectsOf('home', 'deep')), going());
      await d.store.commit(await d.staging.assemble(alice, SESSION, packed(wanted)), alice, docs, R1);
      expect(byPath((await d.store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(byPath(wanted));
    }));

    it('releasePackedManifest is named by the canonical digest of its files', over(open, async (d) => {
      await release(d, alice, docs, R1, ['<h1>one</h1>', 'same', 'same', '']);
      const packed = (await d.store.releasePackedManifest(alice, docs, R1))!;
      expect(packed.fileCount).toBe(4);
      expect(packed.canonicalDigest()).toBe(manifestDigest(packed.manifestFiles()));
    }));

    it('releasePackedManifest: undefined for a release, project or user that is not there, or no longer', over(open, async (d) => {
      await release(d, alice, docs, R1, ['one']);
      expect((await d.store.releasePackedManifest(alice, docs, R2))?.manifestFiles()).toBeUndefined();
      expect((await d.store.releasePackedManifest(alice, blog, R1))?.manifestFiles()).toBeUndefined();
      expect((await d.store.releasePackedManifest(bob, docs, R1))?.manifestFiles()).toBeUndefined();
      await d.store.removeRelease(alice, docs, R1);
      expect((await d.store.releasePackedManifest(alice, docs, R1))?.manifestFiles()).toBeUndefined();
    }));

    it("releasePackedManifest holds when the store no longer names a release's files (objects replaced by copies)", over(open, async (d) => {
      await release(d, alice, docs, R1, ['a', 'bb', 'a', '']);
      const before = byPath((await d.store.releasePackedManifest(alice, docs, R1))?.manifestFiles());
      await d.replaceStoredObjects(alice);
      expect(byPath((await d.store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(before);
      expect(before).toEqual(byPath(manifestOf('a', 'bb', 'a', '')));
    }));

    it('releasePackedManifest names every one of many files that share one object', over(open, async (d) => {
      // As many as the suite's limits (MAX_FILES 100) allow.
      const same = Array.from({ length: 90 }, () => 'stub');
      await release(d, alice, docs, R1, same);
      const listed = (await d.store.releasePackedManifest(alice, docs, R1))?.manifestFiles();
      expect(listed).toHaveLength(90);
      expect(new Set(listed!.map((f) => f.digest))).toEqual(new Set([digestOf('stub')]));
      expect(new Set(listed!.map((f) => f.path)).size).toBe(90);
    }));

    it("releasePackedManifest hashes a large file the store no longer names, in pieces, to its digest", over(open, async (d) => {
      // Over three of the walk's 256 KiB reads, within the suite's MAX_EXTRACTED_BYTES.
      const large = 'x'.repeat(900_017);
      await release(d, alice, docs, R1, [large, 'small']);
      await d.replaceStoredObjects(alice);
      expect(byPath((await d.store.releasePackedManifest(alice, docs, R1))?.manifestFiles())).toEqual(byPath(manifestOf(large, 'small')));
    }));

    it('removeLeftovers never takes a release or a live link', over(open, async (d) => {
      await release(d, alice, docs, R1, ['one']);
      await release(d, alice, docs, R2, ['two']);
      await d.store.activate(alice, docs, R1);
      expect(await d.store.removeLeftovers()).toEqual([]);
      expect(await d.store.releases(alice, docs)).toEqual([R1, R2]);
      expect(await d.served(alice, docs)).toEqual(['one']);
    }));
  });
}
