import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/service-harness.js';
import { objectPath, sha256, storeCollected, storeOf } from '../support/store.js';
import { file, tgz } from '../support/tar-builder.js';

const entry = (path: string, content: string) => ({ path, size: Buffer.byteLength(content), digest: sha256(content) });
/** A batch of objects as the protocol takes them: a .tar.gz of files named by digest. */
const batch = (...contents: string[]) => tgz(contents.map((content) => file(sha256(content), content)));

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
  const deployed = async (project: string, files: Record<string, string>, preview?: string) => {
    const reply = await h.deploy(owner, project, tgz(Object.entries(files).map(([path, content]) => file(path, content))), preview === undefined ? {} : { preview });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.body.release as string;
  };
  beforeAll(async () => {
    h = await startHarness({ RELEASES_KEEP: '2', DEPLOY_SESSIONS_MAX: '20' });
    owner = await h.createUser('owner');
  });
  afterAll(async () => {
    await h.close();
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
