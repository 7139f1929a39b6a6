import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manifestOf as wholeManifest, type Digest, type ManifestFile } from '../../src/domain/manifest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { file, tgz } from '../support/tar-builder.js';

const alice = 'alice' as Username;
const SESSION = 'fedcba9876543210fedcba9876543210';
const digestOf = (content: string): Digest => createHash('sha256').update(content).digest('hex') as Digest;
const manifestOf = (entries: Record<string, string>): PackedManifest =>
  PackedManifest.pack(wholeManifest(Object.entries(entries).map(([path, c]): ManifestFile => ({ path, size: Buffer.byteLength(c), digest: digestOf(c) }))));
async function* once(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** Waits for `check` to hold, as a background task makes it so; fails after a few seconds. */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; tries < 300; tries += 1) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('never happened');
}

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
    await eventually(async () => {
      const areas = await readdir(staging);
      if (areas.length !== 1) return false;
      area = join(staging, areas[0]!);
      return (await readFile(join(area, 'b/also.html'), 'utf8').catch(() => '')) === 'also';
    });
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

  it('prepares a few at once at most: the next is left to its publish', async () => {
    const manifest = manifestOf({ 'a/kept.html': 'kept' });
    const sessions = Array.from({ length: 6 }, (_, i) => `${String(i).repeat(32)}`);
    for (const session of sessions) d.staging.prepare(alice, session, manifest, []);
    expect(d.staging.preparedSessions()).toEqual(sessions.slice(0, 4));
    for (const session of sessions) await d.staging.forgetPrepared(session);
    await d.settle();
    expect(await readdir(join(d.deploysRoot, '.staging'))).toEqual([]);
  });
});
