import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manifestOf as wholeManifest, type ManifestFile } from '../../src/domain/manifest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { file, tgz } from '../support/tar-builder.js';
import { sha256 } from '../support/sha256.js';
import { until } from '../support/until.js';

const alice = 'alice' as Username;
const SESSION = 'fedcba9876543210fedcba9876543210';
const digestOf = sha256;
const manifestOf = (entries: Record<string, string>): PackedManifest =>
  PackedManifest.pack(wholeManifest(Object.entries(entries).map(([path, c]): ManifestFile => ({ path, size: Buffer.byteLength(c), digest: digestOf(c) }))));
async function* once(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** Waits for `check` to hold, as a background task makes it so. */
const eventually = (check: () => Promise<boolean>): Promise<void> => until(check, 'the background work', 3_000);

/** The real adapter builds a prepared release before its publish, in the area the publish then finishes. */
describe('a release prepared while objects upload (real directories)', () => {
  let d: RealDeploys;
  beforeEach(async () => {
    d = await realDeploys('sitedrop-prepared-');
    const staged = await d.staging.stage(alice, once(tgz([file('a/kept.html', 'kept'), file('b/also.html', 'also')])), { maxFiles: 100, maxBytes: 1e6 }, new AbortController().signal);
    await d.store.commit(staged, alice, 'docs' as ProjectName, '20261124T100000' as ReleaseId);
  });
  afterEach(() => d.close());

  it("links the store's files and makes every directory before the upload, and the publish finishes that same area", async () => {
    const manifest = manifestOf({ 'a/kept.html': 'kept', 'b/also.html': 'also', 'c/d/new.html': 'new', 'empty.txt': '' });
    d.staging.prepare(alice, SESSION, manifest, [digestOf('new')]);
    const staging = join(d.deploysRoot, '.staging');
    let area = '';
    const made = (path: string) => stat(join(area, path)).then(() => true, () => false);
    await eventually(async () => {
      const areas = await readdir(staging);
      if (areas.length !== 1) return false;
      area = join(staging, areas[0]!);
      return (await Promise.all(['a/kept.html', 'b/also.html', 'c/d', 'empty.txt'].map(made))).every(Boolean);
    });
    expect(await readFile(join(area, 'b/also.html'), 'utf8')).toBe('also');
    expect((await stat(join(area, 'a/kept.html'))).nlink).toBeGreaterThan(1);
    expect((await stat(join(area, 'c/d'))).isDirectory()).toBe(true);
    expect((await stat(join(area, 'empty.txt'))).size).toBe(0);
    await expect(stat(join(area, 'c/d/new.html'))).rejects.toMatchObject({ code: 'ENOENT' });

    await d.objects.receive(alice, SESSION, once(tgz([file(digestOf('new'), 'new')])), manifest, new AbortController().signal);
    const staged = await d.staging.assemble(alice, SESSION, manifest);
    expect(staged.handle).toBe(area);
    expect(await readFile(join(area, 'c/d/new.html'), 'utf8')).toBe('new');
    expect(staged).toMatchObject({ files: 4, bytes: 11 });
    await d.staging.discard(staged);
  });

  it('prepares four at once at most, one per user; a forgotten one counts until it is thrown away; close throws all away', async () => {
    const manifest = manifestOf({ 'a/kept.html': 'kept' });
    const session = (i: number) => String(i).repeat(32);
    d.staging.prepare(alice, session(0), manifest, []);
    d.staging.prepare(alice, session(1), manifest, []);
    expect(d.staging.preparedSessions()).toEqual([session(0)]);
    const others = Array.from({ length: 5 }, (_, i) => `user${i}` as Username);
    others.forEach((user, i) => d.staging.prepare(user, session(i + 2), manifest, []));
    expect(d.staging.preparedSessions()).toEqual([0, 2, 3, 4].map(session));
    // Forgotten, it still counts while its area goes; then the slot is free.
    const forgetting = d.staging.forgetPrepared(session(0));
    d.staging.prepare(others[4]!, session(6), manifest, []);
    expect(d.staging.preparedSessions()).toEqual([2, 3, 4].map(session));
    await forgetting;
    d.staging.prepare(others[4]!, session(6), manifest, []);
    expect(d.staging.preparedSessions()).toEqual([2, 3, 4, 6].map(session));
    await d.staging.close();
    expect(d.staging.preparedSessions()).toEqual([]);
    await d.settle();
    expect(await readdir(join(d.deploysRoot, '.staging'))).toEqual([]);
  });
});
