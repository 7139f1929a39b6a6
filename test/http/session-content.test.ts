import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/service-harness.js';
import { objectPath, storeCollected, storeOf } from '../support/store.js';
import type { Digest } from '../../src/domain/manifest.js';
import { sha256 } from '../support/sha256.js';
import { file, tgz } from '../support/tar-builder.js';

const entry = (path: string, content: string) => ({ path, size: Buffer.byteLength(content), digest: sha256(content) });
/** A batch of objects as the protocol takes them: a .tar.gz of files named by digest. */
const batch = (...contents: string[]) => tgz(contents.map((content) => file(sha256(content), content)));

/** Every file's content under `dir`, by path; none if there is no such directory. */
async function contentsUnder(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(sub: string): Promise<void> {
    for (const e of await readdir(join(dir, sub), { withFileTypes: true }).catch(() => [])) {
      const path = sub ? `${sub}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path);
      else out[path] = await readFile(join(dir, path), 'utf8');
    }
  }
  await walk('');
  return out;
}

/**
 * What an incremental deploy's session is answered from and holds (issue 26, points 5
 * and 9): a deploy key's only from its own project's content, and an upload answered
 * for stays with its session until the publish, whatever the store does meanwhile.
 */
describe('what a session is answered from, and what it holds (real server, real directories)', () => {
  let h: Harness;
  let owner: string;

  const open = (body: unknown, as: string) => h.call('POST', '/api/v1/deploys', { token: as, json: body });
  const state = (id: string, as: string) => h.call('GET', `/api/v1/deploys/${id}`, { token: as });
  const upload = (id: string, objects: Buffer, as: string) => h.call('PUT', `/api/v1/deploys/${id}/objects`, { token: as, body: objects, headers: { 'content-type': 'application/gzip' } });
  const publish = (id: string, as: string) => h.call('POST', `/api/v1/deploys/${id}/publish`, { token: as });
  const makeKey = async (project: string, scope: 'deploy' | 'preview') => {
    const made = await h.call('POST', `/api/v1/projects/${project}/keys`, { token: owner, json: { name: `${project} ${scope}`, scope } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    return made.body.token as string;
  };
  const deployed = async (project: string, files: Record<string, string>, preview?: string) => {
    const reply = await h.deploy(owner, project, tgz(Object.entries(files).map(([path, content]) => file(path, content))), preview === undefined ? {} : { preview });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.body.release as string;
  };
  /** Every content any of the user's releases of `project` (and their previews) serve. */
  const servedBy = async (user: string, project: string) => Object.values(await contentsUnder(join(h.deploysRoot, user, project)));

  beforeAll(async () => {
    h = await startHarness({ RELEASES_KEEP: '2', DEPLOY_SESSIONS_MAX: '20' });
    owner = await h.createUser('owner');
  });
  afterAll(async () => {
    await h.close();
  });

  it("a key's session is told the owner's other project's file is missing, and publishing it without the bytes is 409 with nothing served", async () => {
    const SECRET = '{"pin": "4711"}\n';
    await deployed('internal', { 'config.json': SECRET, 'readme.txt': 'internal notes\n' });
    await deployed('docs', { 'index.html': '<h1>docs</h1>\n' });
    const key = await makeKey('docs', 'preview');
    const guess = entry('index.html', SECRET);
    // The owner's store holds it, and the owner's own token is answered from the whole store.
    const byOwner = await open({ project: 'docs', preview: 'pr-owner', files: [guess] }, owner);
    expect(byOwner.status).toBe(201);
    expect(byOwner.body.missing).toEqual([]);
    await h.call('DELETE', `/api/v1/deploys/${String(byOwner.body.id)}`, { token: owner });

    const opened = await open({ project: 'docs', preview: 'pr-7', files: [guess] }, key);
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    expect(opened.body).toMatchObject({ missing: [guess.digest], missingBytes: guess.size });
    const id = opened.body.id as string;
    expect((await state(id, key)).body).toMatchObject({ missing: [guess.digest], missingBytes: guess.size });

    const published = await publish(id, key);
    expect(published.status).toBe(409);
    expect(published.body).toEqual({ status: 'error', error: 'objects missing', missing: [guess.digest] });
    await expect(readlink(join(h.previewsRoot, 'owner', 'docs', 'pr-7'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await servedBy('owner', 'docs')).not.toContain(SECRET);
    // Still open: with the bytes uploaded it publishes, as any missing object does.
    expect((await upload(id, batch(SECRET), key)).status).toBe(200);
    expect((await publish(id, key)).status).toBe(200);
    expect(await readFile(join(h.previewsRoot, 'owner', 'docs', 'pr-7', 'index.html'), 'utf8')).toBe(SECRET);
  });

  it("a key learns nothing of another project's content: not by a size it contradicts, nor by the order of `missing`", async () => {
    const OTHER = 'held by internal only\n';
    await deployed('internal', { 'other.txt': OTHER });
    const key = await makeKey('docs', 'deploy');
    const ABSENT = 'held by no one\n';
    // The owner's token is refused the lie: its store holds those bytes at another size.
    const lie = { path: 'a.txt', size: Buffer.byteLength(OTHER) + 1, digest: sha256(OTHER) };
    expect((await open({ project: 'docs', files: [lie] }, owner)).status).toBe(400);
    // A key is not told so: to it, that content is missing, as content no one holds is.
    const lying = await open({ project: 'docs', files: [lie] }, key);
    expect(lying.status, JSON.stringify(lying.body)).toBe(201);
    expect(lying.body.missing).toEqual([lie.digest]);
    const asAbsent = await open({ project: 'docs', files: [{ ...lie, digest: sha256(ABSENT), size: Buffer.byteLength(ABSENT) + 1 }] }, key);
    expect(asAbsent.status).toBe(201);
    // Either way round, the two are listed in the same order: the answer is the same whether the store holds one.
    for (const [first, second] of [
      [OTHER, ABSENT],
      [ABSENT, OTHER],
    ] as const) {
      const opened = await open({ project: 'docs', files: [entry('a.txt', first), entry('b.txt', second)] }, key);
      expect(opened.status).toBe(201);
      const manifestOrder = (await open({ project: 'docs', files: [entry('a.txt', `${first}!`), entry('b.txt', `${second}!`)] }, key)).body.missing as string[];
      const positions = manifestOrder.map((digest) => [sha256(`${first}!`), sha256(`${second}!`)].indexOf(digest as Digest));
      expect((opened.body.missing as string[]).map((digest) => [sha256(first), sha256(second)].indexOf(digest as Digest))).toEqual(positions);
    }
  });

  it("a key's session is answered from its project's releases, older ones and previews', and its own earlier session's uploads", async () => {
    const OLD = 'in an older release of site\n';
    const LIVE = 'live in site\n';
    const PREVIEW = 'only in a preview of site\n';
    const UPLOADED = 'uploaded by an earlier session, never published\n';
    await deployed('site', { 'old.txt': OLD });
    await deployed('site', { 'live.txt': LIVE });
    await deployed('site', { 'p.txt': PREVIEW }, 'pr-1');
    const key = await makeKey('site', 'preview');

    const earlier = await open({ project: 'site', preview: 'pr-a', files: [entry('u.txt', UPLOADED)] }, key);
    expect(earlier.body.missing).toEqual([sha256(UPLOADED)]);
    expect((await upload(earlier.body.id as string, batch(UPLOADED), key)).status).toBe(200);

    const files = [entry('old.txt', OLD), entry('live.txt', LIVE), entry('p.txt', PREVIEW), entry('u.txt', UPLOADED)];
    const opened = await open({ project: 'site', preview: 'pr-b', files }, key);
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    expect(opened.body).toMatchObject({ missing: [], missingBytes: 0 });
    const id = opened.body.id as string;
    // The earlier session ends: what it uploaded is still this one's.
    expect((await h.call('DELETE', `/api/v1/deploys/${String(earlier.body.id)}`, { token: key })).status).toBe(204);
    expect((await state(id, key)).body).toMatchObject({ missing: [] });
    const published = await publish(id, key);
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    expect(await contentsUnder(join(h.previewsRoot, 'owner', 'site', 'pr-b'))).toEqual({ 'old.txt': OLD, 'live.txt': LIVE, 'p.txt': PREVIEW, 'u.txt': UPLOADED });
  });

  it("a key's publish links nothing its project no longer holds, even when the open found it there and a release was prepared", async () => {
    const SHARED = 'in an old release of blog, and in notes\n';
    await deployed('notes', { 'n.txt': SHARED });
    await deployed('blog', { 'shared.txt': SHARED });
    const key = await makeKey('blog', 'deploy');
    const opened = await open({ project: 'blog', files: [entry('shared.txt', SHARED)] }, key);
    expect(opened.body.missing).toEqual([]);
    // blog's release holding it is pruned (RELEASES_KEEP=2); notes still has the bytes in the store.
    await deployed('blog', { 'index.html': 'two\n' });
    await deployed('blog', { 'index.html': 'three\n' });
    await h.settled();
    expect(await servedBy('owner', 'blog')).not.toContain(SHARED);
    const published = await publish(opened.body.id as string, key);
    expect(published.status).toBe(409);
    expect(published.body).toMatchObject({ missing: [sha256(SHARED)] });
    expect(await servedBy('owner', 'blog')).not.toContain(SHARED);
  });

  it('an upload answered 200 is still there at the publish after the store lost the object (the issue\'s five steps)', async () => {
    const Z = 'Z: bytes that come and go\n';
    const store = storeOf(h.deploysRoot, 'owner');
    // 1. A session whose missing is [Z].
    const opened = await open({ project: 'five', files: [entry('z.txt', Z)] }, owner);
    expect(opened.body.missing).toEqual([sha256(Z)]);
    const id = opened.body.id as string;
    // 2. Another project's archive brings Z into the store.
    await deployed('carrier', { 'z.txt': Z });
    await expect(readFile(objectPath(store, sha256(Z)), 'utf8')).resolves.toBe(Z);
    // 3. The upload of Z.
    const uploaded = await upload(id, batch(Z), owner);
    expect(uploaded.status).toBe(200);
    expect(uploaded.body).toMatchObject({ stored: 1 });
    // 4. The other project goes, and the store's object of Z with it.
    expect((await h.call('DELETE', '/api/v1/projects/carrier', { token: owner })).status).toBe(200);
    await h.settled();
    await storeCollected(store);
    await expect(readFile(objectPath(store, sha256(Z)))).rejects.toMatchObject({ code: 'ENOENT' });
    // 5. The publish.
    expect((await state(id, owner)).body).toMatchObject({ missing: [] });
    const published = await publish(id, owner);
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    expect(await readFile(join(h.docsRoot, 'owner', 'five', 'z.txt'), 'utf8')).toBe(Z);
  });
});
