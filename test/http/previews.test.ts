import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_BACKENDS } from '../support/service-backends.js';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';
import { until } from '../support/until.js';
import { file, tgz } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';

const site = (marker: string) => tgz([file('index.html', marker)]);
const UNAUTHORIZED = { status: 401, body: { status: 'error', error: 'unauthorized' } };
const NOT_FOUND = { status: 404, body: { status: 'error', error: 'preview not found' } };


describe.each(SERVICE_BACKENDS)('previews through the real API (%s, real directories)', (_name, open) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let token: string;
  const live = (project = 'site') => readFile(join(h.docsRoot, 'ann', project, 'index.html'), 'utf8');
  const previewPage = (name: string, project = 'site') => readFile(join(h.previewsRoot, 'ann', project, name, 'index.html'), 'utf8');
  const releasesOf = async (project = 'site') => (await readdir(join(h.deploysRoot, 'ann', project))).sort();
  const previews = async (project = 'site') => {
    const r = await h.call('GET', `/api/v1/projects/${project}/previews`, { token });
    expect(r.status).toBe(200);
    return r.body.previews as Record<string, string>[];
  };

  beforeAll(async () => {
    const backend = await open();
    drop = backend.drop;
    h = await startHarness({ ...backend.env, RELEASES_KEEP: '2', PREVIEWS_MAX: '3' });
    token = await h.createUser('ann');
    expect((await h.deploy(token, 'site', site('live one'))).status).toBe(200);
  });
  afterAll(async () => {
    await h.close();
    await drop();
  });

  it('deploys a preview at its own address: the live link does not move', async () => {
    const liveBefore = await readlink(join(h.docsRoot, 'ann/site'));
    const r = await h.deploy(token, 'site', site('preview one'), { preview: 'pr-1' });
    expect(r).toMatchObject({ status: 200 });
    expect(r.body).toEqual({
      status: 'ok',
      project: 'site',
      username: 'ann',
      url: 'https://sites.example.test/_previews/ann/site/pr-1/',
      release: expect.stringMatching(/^\d{8}T\d{6}$/),
      preview: 'pr-1',
    });
    expect(await readlink(join(h.docsRoot, 'ann/site'))).toBe(liveBefore);
    expect(await live()).toBe('live one');
    expect(await readlink(join(h.previewsRoot, 'ann/site/pr-1'))).toBe(`${join(h.deploysRoot, 'ann/site', r.body.release as string)}/`);
    expect(await previewPage('pr-1')).toBe('preview one');
  });

  it('a preview field after the file works as well as before it', async () => {
    const r = await h.deploy(token, 'site', site('file first'), { preview: 'pr-late', fileFirst: true });
    expect(r.body).toMatchObject({ status: 'ok', preview: 'pr-late' });
    expect(await previewPage('pr-late')).toBe('file first');
    expect((await h.call('DELETE', '/api/v1/projects/site/previews/pr-late', { token })).status).toBe(200);
  });

  it('a deploy to an existing preview swaps its link to the new release', async () => {
    const first = (await previews()).find((p) => p.name === 'pr-1')!;
    const r = await h.deploy(token, 'site', site('preview one, again'), { preview: 'pr-1' });
    expect(r.body.release).not.toBe(first.release);
    expect(await previewPage('pr-1')).toBe('preview one, again');
    expect((await lstat(join(h.previewsRoot, 'ann/site/pr-1'))).isSymbolicLink()).toBe(true);
    expect(await live()).toBe('live one');
  });

  it('lists previews with their release, address, last deploy and expiry (7 days by default)', async () => {
    const listed = await previews();
    expect(listed).toEqual([
      { name: 'pr-1', release: expect.any(String), url: 'https://sites.example.test/_previews/ann/site/pr-1/', createdAt: expect.any(String), expiresAt: expect.any(String) },
    ]);
    const [pr] = listed;
    expect(Math.abs(Date.parse(pr!.createdAt!) - Date.now())).toBeLessThan(60_000);
    expect(Date.parse(pr!.expiresAt!) - Date.parse(pr!.createdAt!)).toBe(7 * 86_400_000);
    expect(await previews('no-such-project')).toEqual([]);
  });

  it('retention never removes a release the live link or a preview points to; RELEASES_KEEP counts the rest', async () => {
    const pinned = (await previews()).find((p) => p.name === 'pr-1')!.release!;
    const liveIds: string[] = [];
    for (const marker of ['live two', 'live three', 'live four']) liveIds.push((await h.deploy(token, 'site', site(marker))).body.release as string);
    await h.trashEmptied();
    // RELEASES_KEEP=2: the live one and the one before it, and the preview's besides.
    expect(await releasesOf()).toEqual([pinned, ...liveIds.slice(-2)].sort());
    expect(await previewPage('pr-1')).toBe('preview one, again');
    expect(await live()).toBe('live four');
  });

  it('promotes a preview: its release goes live with an atomic swap, answered like a rollback', async () => {
    const preview = (await previews()).find((p) => p.name === 'pr-1')!;
    const before = await readlink(join(h.docsRoot, 'ann/site'));
    const r = await h.call('POST', '/api/v1/projects/site/previews/pr-1/promote', { token });
    expect(r).toMatchObject({ status: 200, body: { status: 'ok', project: 'site', release: preview.release, previous: before.split('/').filter(Boolean).at(-1) } });
    expect(Object.keys(r.body).sort()).toEqual(['previous', 'project', 'release', 'status']);
    expect(await live()).toBe('preview one, again');
    expect(await previewPage('pr-1')).toBe('preview one, again');
  });

  it('promotes only the release reviewed when it is named: a preview deployed again since is refused with 409, nothing changed', async () => {
    const index = async () => readFile(join(h.docsRoot, 'ann/reviewed/index.html'), 'utf8');
    expect((await h.deploy(token, 'reviewed', site('live before'))).status).toBe(200);
    const reviewed = (await h.deploy(token, 'reviewed', site('reviewed'), { preview: 'pr-1' })).body.release as string;
    // A pull request's key puts new content under the reviewed name before the owner promotes it.
    const swapped = (await h.deploy(token, 'reviewed', site('swapped in after the review'), { preview: 'pr-1' })).body.release as string;
    const promote = (json?: object) => h.call('POST', '/api/v1/projects/reviewed/previews/pr-1/promote', { token, ...(json && { json }) });
    expect(await promote({ release: reviewed })).toMatchObject({
      status: 409,
      body: { status: 'error', error: `the preview is at release ${swapped}, not ${reviewed}: it was deployed again since` },
    });
    expect(await index()).toBe('live before');
    expect(await promote({ release: 'yesterday' })).toMatchObject({ status: 400, body: { error: 'invalid release id' } });
    expect(await index()).toBe('live before');
    expect(await promote({ release: swapped })).toMatchObject({ status: 200, body: { release: swapped } });
    expect(await index()).toBe('swapped in after the review');
  });

  it('deletes a preview: its link goes at once; unknown previews are 404 preview not found', async () => {
    expect((await h.deploy(token, 'site', site('doomed preview'), { preview: 'pr-2' })).status).toBe(200);
    expect(await h.call('DELETE', '/api/v1/projects/site/previews/pr-2', { token })).toMatchObject({ status: 200, body: { status: 'ok' } });
    await expect(lstat(join(h.previewsRoot, 'ann/site/pr-2'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await previews()).map((p) => p.name)).toEqual(['pr-1']);
    expect(await h.call('DELETE', '/api/v1/projects/site/previews/pr-2', { token })).toMatchObject(NOT_FOUND);
    expect(await h.call('POST', '/api/v1/projects/site/previews/pr-2/promote', { token })).toMatchObject(NOT_FOUND);
    expect(await h.call('POST', '/api/v1/projects/other/previews/pr-1/promote', { token })).toMatchObject(NOT_FOUND);
  });

  it('refuses a bad preview name with 400, writing nothing', async () => {
    await h.settled();
    const before = { docs: await snapshot(h.docsRoot), previews: await snapshot(h.previewsRoot), deploys: await snapshot(h.deploysRoot) };
    for (const bad of ['PR-1', '-x', '_previews', 'a/b', 'x'.repeat(65)]) {
      expect(await h.deploy(token, 'site', site('bad'), { preview: bad }), bad).toMatchObject({ status: 400, body: { status: 'error', error: 'invalid preview name format' } });
    }
    const badName = { status: 400, body: { status: 'error', error: 'invalid preview name format' } };
    expect(await h.call('POST', '/api/v1/projects/site/previews/Bad_/promote', { token })).toMatchObject(badName);
    expect(await h.call('DELETE', '/api/v1/projects/site/previews/Bad_', { token })).toMatchObject(badName);
    expect(await h.deploy(token, 'Bad Project', site('bad'), { preview: 'BAD' })).toMatchObject({ status: 400, body: { error: 'invalid project name format' } });
    await h.trashEmptied();
    expect({ docs: await snapshot(h.docsRoot), previews: await snapshot(h.previewsRoot), deploys: await snapshot(h.deploysRoot) }).toEqual(before);
  });

  it('refuses a new preview beyond PREVIEWS_MAX with 409, but a deploy to an existing one goes through', async () => {
    expect((await h.deploy(token, 'site', site('two'), { preview: 'pr-2' })).status).toBe(200);
    expect((await h.deploy(token, 'site', site('three'), { preview: 'pr-3' })).status).toBe(200);
    const before = await snapshot(h.previewsRoot);
    expect(await h.deploy(token, 'site', site('four'), { preview: 'pr-4' })).toMatchObject({
      status: 409,
      body: { status: 'error', error: 'too many previews: PREVIEWS_MAX allows 3 per project, delete one first' },
    });
    expect(await snapshot(h.previewsRoot)).toEqual(before);
    expect((await h.deploy(token, 'site', site('three again'), { preview: 'pr-3' })).status).toBe(200);
    // Another project has a limit of its own.
    expect((await h.deploy(token, 'blog', site('blog preview'), { preview: 'pr-4' })).status).toBe(200);
    expect((await h.call('DELETE', '/api/v1/projects/site/previews/pr-2', { token })).status).toBe(200);
    expect((await h.deploy(token, 'site', site('four'), { preview: 'pr-4' })).status).toBe(200);
  });

  it('a preview key deploys previews of its project only, never live, and cannot promote, list or delete them', async () => {
    const made = await h.call('POST', '/api/v1/projects/site/keys', { token, json: { name: 'pull requests', scope: 'preview' } });
    const key = made.body.token as string;
    const r = await h.deploy(key, 'site', site('from a pull request'), { preview: 'pr-4' });
    expect(r.body).toMatchObject({ status: 'ok', username: 'ann', preview: 'pr-4' });
    expect(await previewPage('pr-4')).toBe('from a pull request');
    expect(await h.deploy(key, 'site', site('not live'))).toMatchObject(UNAUTHORIZED);
    expect(await h.deploy(key, 'blog', site('not my project'), { preview: 'pr-4' })).toMatchObject(UNAUTHORIZED);
    expect(await h.call('POST', '/api/v1/projects/site/previews/pr-4/promote', { token: key })).toMatchObject(UNAUTHORIZED);
    expect(await h.call('DELETE', '/api/v1/projects/site/previews/pr-4', { token: key })).toMatchObject(UNAUTHORIZED);
    expect(await h.call('GET', '/api/v1/projects/site/previews', { token: key })).toMatchObject(UNAUTHORIZED);
    expect(await live()).toBe('preview one, again');
    // A deploy-scoped key deploys previews too.
    const deployKey = (await h.call('POST', '/api/v1/projects/site/keys', { token, json: { name: 'main', scope: 'deploy' } })).body.token as string;
    expect((await h.deploy(deployKey, 'site', site('by the deploy key'), { preview: 'pr-4' })).status).toBe(200);
  });

  it("deleting the project removes its previews' links", async () => {
    expect((await h.deploy(token, 'gone', site('g'))).status).toBe(200);
    expect((await h.deploy(token, 'gone', site('gp'), { preview: 'pr-1' })).status).toBe(200);
    expect((await h.call('DELETE', '/api/v1/projects/gone', { token })).status).toBe(200);
    await expect(lstat(join(h.previewsRoot, 'ann/gone'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await previews('gone')).toEqual([]);
  });

  it("deleting the user with its files removes its previews; keeping the files keeps them", async () => {
    const bob = await h.createUser('bob');
    expect((await h.deploy(bob, 'web', site('b'), { preview: 'pr-1' })).status).toBe(200);
    expect((await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'bob' } })).status).toBe(200);
    expect((await lstat(join(h.previewsRoot, 'bob/web/pr-1'))).isSymbolicLink()).toBe(true);
    const again = await h.createUser('bob');
    expect((await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'bob', files: 'delete' } })).status).toBe(200);
    expect(again).toMatch(/^[A-Za-z0-9]{32}$/);
    await expect(lstat(join(h.previewsRoot, 'bob'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('a preview past PREVIEW_TTL_SECONDS (real server, real directories)', () => {
  let h: Harness;
  let token: string;
  beforeAll(async () => {
    h = await startHarness({ PREVIEW_TTL_SECONDS: '1', RELEASES_KEEP: '1' });
    token = await h.createUser('cy');
  });
  afterAll(async () => {
    await h.close();
  });

  it('is unlisted, loses its link and its release is pruned, with no request to the project', async () => {
    expect((await h.deploy(token, 'site', site('live'))).status).toBe(200);
    const preview = await h.deploy(token, 'site', site('short-lived'), { preview: 'pr-9' });
    const release = preview.body.release as string;
    expect((await readdir(join(h.deploysRoot, 'cy/site'))).sort()).toContain(release);
    await until(async () => {
      try {
        await lstat(join(h.previewsRoot, 'cy/site/pr-9'));
        return false;
      } catch {
        return true;
      }
    }, 'the sweep to remove the expired preview', 10_000);
    // The sweep removes the link first and prunes the release after it.
    await until(async () => !(await readdir(join(h.deploysRoot, 'cy/site'))).includes(release), 'the expired preview\'s release to be pruned', 10_000);
    await h.trashEmptied();
    expect((await h.call('GET', '/api/v1/projects/site/previews', { token })).body.previews).toEqual([]);
    expect(await h.call('POST', '/api/v1/projects/site/previews/pr-9/promote', { token })).toMatchObject(NOT_FOUND);
    expect(await readFile(join(h.docsRoot, 'cy/site/index.html'), 'utf8')).toBe('live');
  });
});
