import { lstat, readdir, readFile } from 'node:fs/promises';
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
import { snapshot } from '../support/tree.js';
import { until } from '../support/until.js';

const alice = 'alice' as Username;
const SESSION = 'abcdef0123456789abcdef0123456789';
const WHOLE = '0123456789abcdef0123456789abcdef';
const RELEASE = '20261126T100000' as ReleaseId;
const manifestOf = (entries: Record<string, string>): PackedManifest =>
  PackedManifest.pack(wholeManifest(Object.entries(entries).map(([path, c]): ManifestFile => ({ path, size: Buffer.byteLength(c), digest: sha256(c) }))));
async function* once(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield bytes;
}
const never = new AbortController().signal;

/** The base: every kind of entry the next release changes, keeps or removes. */
const BASE = {
  'index.html': 'home',
  'a/keep.html': 'keep',
  'a/change.html': 'old',
  'a/gone.html': 'gone',
  'b/only/x.html': 'x',
  c: 'c was a file',
  'd/inner.html': 'inner',
  'e/empty.txt': '',
  'e/was-empty.txt': '',
  'f/copy.html': 'keep',
};
/** The same directories' entries removed, added and changed, case for case. */
const NEXT = {
  'index.html': 'home', // kept
  'a/keep.html': 'keep', // kept beside a change and a removal in its directory
  'a/change.html': 'new', // changed: a new object, uploaded
  'a/added.html': 'x', // added: an object the store holds
  // a/gone.html removed; b/only/x.html removed, and with it b/only and b
  'c/now-a-dir.html': 'inner', // a file become a directory
  d: 'x', // a directory become a file
  'e/empty.txt': '', // an empty file kept
  'e/was-empty.txt': 'now full', // an empty file given bytes, uploaded
  'f/copy.html': 'gone', // the bytes of a removed file, at another path
  'g/h/new-empty.txt': '', // a new directory of an empty file
};
const UPLOADED = ['new', 'now full'];

/** A release built from its base in the area prepared for that base, then changed, is the site byte for byte, and the base is untouched. */
describe('a release prepared from its base, then changed to the site sent (real directories)', () => {
  let d: RealDeploys;
  let baseDir: string;
  beforeEach(async () => {
    d = await realDeploys('sitedrop-revised-');
    const staged = await d.staging.stage(alice, once(tgz(Object.entries(BASE).map(([path, c]) => file(path, c)))), { maxFiles: 100, maxBytes: 1e6 }, never);
    await d.store.commit(staged, alice, 'docs' as ProjectName, RELEASE);
    baseDir = join(d.deploysRoot, alice, 'docs', RELEASE);
  });
  afterEach(() => d.close());

  const upload = async (session: string, manifest: PackedManifest) =>
    d.objects.receive(alice, session, once(tgz(UPLOADED.map((c) => file(sha256(c), c)))), manifest, never);
  const areas = () => readdir(join(d.deploysRoot, '.staging'));

  it('finishes the area it prepared from the base: the same tree as a release built whole, and the base as it was', async () => {
    const before = await snapshot(baseDir);
    const inodes = await Promise.all(Object.keys(BASE).map(async (path) => (await lstat(join(baseDir, path))).ino));
    d.staging.prepare(alice, SESSION, manifestOf(BASE), []);
    await until(async () => (await areas()).length === 1, 'the area prepared from the base');
    const area = join(d.deploysRoot, '.staging', (await areas())[0]!);
    const next = manifestOf(NEXT);
    d.staging.revise(alice, SESSION, next, UPLOADED.map(sha256));
    await upload(SESSION, next);
    const staged = await d.staging.assemble(alice, SESSION, next);
    // The area prepared, finished: not a release built whole instead.
    expect(staged.handle).toBe(area);
    expect(staged).toMatchObject({ files: Object.keys(NEXT).length, bytes: Object.values(NEXT).reduce((sum, c) => sum + Buffer.byteLength(c), 0) });
    for (const [path, content] of Object.entries(NEXT)) expect(await readFile(join(area, path), 'utf8'), path).toBe(content);

    // A release built whole from the same manifest, without a base, is the same tree.
    await upload(WHOLE, next);
    const whole = await d.staging.assemble(alice, WHOLE, next);
    expect(await snapshot(area)).toEqual(await snapshot(whole.handle));
    expect(Object.keys(await snapshot(area)).filter((path) => path.startsWith('b'))).toEqual([]);

    // The base: the same files, the same inodes (nothing written into a shared one).
    expect(await snapshot(baseDir)).toEqual(before);
    expect(await Promise.all(Object.keys(BASE).map(async (path) => (await lstat(join(baseDir, path))).ino))).toEqual(inodes);
    await d.staging.discard(staged);
    await d.staging.discard(whole);
  });

  it('builds the release whole when the prepared base was not whole (an object missing), and still publishes the site', async () => {
    // The base as the client believes it, with a file whose bytes the store has never had.
    const believed = { ...BASE, 'lost.html': 'never stored' };
    d.staging.prepare(alice, SESSION, manifestOf(believed), []);
    const next = manifestOf(NEXT);
    d.staging.revise(alice, SESSION, next, UPLOADED.map(sha256));
    await upload(SESSION, next);
    const staged = await d.staging.assemble(alice, SESSION, next);
    for (const [path, content] of Object.entries(NEXT)) expect(await readFile(join(staged.handle, path), 'utf8'), path).toBe(content);
    expect(await readFile(join(staged.handle, 'a/keep.html'), 'utf8')).toBe('keep');
    await expect(lstat(join(staged.handle, 'lost.html'))).rejects.toMatchObject({ code: 'ENOENT' });
    // Only the release's own area is left: the prepared one was thrown away.
    expect(await areas()).toEqual([staged.handle.slice(staged.handle.lastIndexOf('/') + 1)]);
    await d.staging.discard(staged);
  });

  it('a kept path whose content is to be uploaded again (a key whose project no longer holds it) is made at the publish, once', async () => {
    d.staging.prepare(alice, SESSION, manifestOf(BASE), []);
    const next = manifestOf(NEXT);
    // 'keep' is asked for too: the second part links every path of it, kept ones included.
    d.staging.revise(alice, SESSION, next, [...UPLOADED, 'keep'].map(sha256));
    await d.objects.receive(alice, SESSION, once(tgz([...UPLOADED, 'keep'].map((c) => file(sha256(c), c)))), next, never);
    const area = join(d.deploysRoot, '.staging', (await areas())[0]!);
    const staged = await d.staging.assemble(alice, SESSION, next);
    expect(staged.handle).toBe(area);
    for (const [path, content] of Object.entries(NEXT)) expect(await readFile(join(area, path), 'utf8'), path).toBe(content);
    await d.staging.discard(staged);
  });

  it('a second revision throws the area away (each is a pass over the site); the publish builds the release whole', async () => {
    d.staging.prepare(alice, SESSION, manifestOf(BASE), []);
    d.staging.revise(alice, SESSION, manifestOf({ ...BASE, 'a/change.html': 'keep', 'z/extra.html': 'x' }), []);
    const next = manifestOf(NEXT);
    d.staging.revise(alice, SESSION, next, UPLOADED.map(sha256));
    expect(d.staging.preparedSessions()).toEqual([]);
    await upload(SESSION, next);
    const staged = await d.staging.assemble(alice, SESSION, next);
    for (const [path, content] of Object.entries(NEXT)) expect(await readFile(join(staged.handle, path), 'utf8'), path).toBe(content);
    await d.staging.discard(staged);
    await d.settle();
    expect(await areas()).toEqual([]);
  });

  it('a session with nothing prepared, or handed to its publish, gets nothing built by a revision', async () => {
    d.staging.revise(alice, SESSION, manifestOf(NEXT), UPLOADED.map(sha256));
    expect(d.staging.preparedSessions()).toEqual([]);
    expect(await areas()).toEqual([]);
  });
});
