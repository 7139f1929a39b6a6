import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';

const site = (marker: string) => tgz([file('index.html', marker)]);

describe('releases users can see and roll back (real server, real directories)', () => {
  let h: Harness;
  let token: string;
  const ids: string[] = [];

  beforeAll(async () => {
    h = await startHarness();
    token = await h.createUser('ops');
    for (const marker of ['one', 'two', 'three']) {
      const r = await h.deploy(token, 'docs', site(marker));
      ids.push(r.body.release as string);
    }
    await h.deploy(token, 'blog', site('blog'));
  });
  afterAll(async () => {
    await h.close();
  });
  const live = async () => readFile(join(h.docsRoot, 'ops/docs/index.html'), 'utf8');

  it('GET /api/v1/projects lists the caller\'s projects', async () => {
    const r = await h.call('GET', '/api/v1/projects', { token });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      status: 'ok',
      projects: [
        { name: 'blog', url: 'https://sites.example.test/ops/blog/', live: expect.any(String), releases: 1, lastDeployAt: expect.stringMatching(/Z$/) },
        { name: 'docs', url: 'https://sites.example.test/ops/docs/', live: ids[2], releases: 3, lastDeployAt: expect.stringMatching(/Z$/) },
      ],
    });
  });

  it('GET /api/v1/projects/{project}/releases lists releases newest first, with sizes recorded', async () => {
    const r = await h.call('GET', '/api/v1/projects/docs/releases', { token });
    expect(r.status).toBe(200);
    const sizes = [5, 3, 3]; // 'three', 'two', 'one': newest first
    expect(r.body.releases).toEqual([...ids].reverse().map((id, i) => ({ id, live: i === 0, createdAt: expect.any(String), bytes: sizes[i], files: 1 })));
  });

  it('POST rollback goes back one release, then to a named one, atomically and without pruning', async () => {
    const back = await h.call('POST', '/api/v1/projects/docs/rollback', { token });
    expect(back.body).toEqual({ status: 'ok', project: 'docs', release: ids[1], previous: ids[2] });
    expect(await live()).toBe('two');
    const named = await h.call('POST', '/api/v1/projects/docs/rollback', { token, json: { release: ids[0] } });
    expect(named.body).toEqual({ status: 'ok', project: 'docs', release: ids[0], previous: ids[1] });
    expect(await live()).toBe('one');
    expect(await readlink(join(h.docsRoot, 'ops/docs'))).toBe(`${join(h.deploysRoot, 'ops/docs', ids[0]!)}/`);
    expect((await readdir(join(h.deploysRoot, 'ops/docs'))).sort()).toEqual(ids);
  });

  it('answers 404 for unknown projects and releases, 409 with nothing older, 400 for bad input', async () => {
    expect(await h.call('POST', '/api/v1/projects/nope/rollback', { token })).toMatchObject({ status: 404, body: { status: 'error', error: 'project not found' } });
    expect(await h.call('POST', '/api/v1/projects/docs/rollback', { token, json: { release: '20000101T000000' } })).toMatchObject({ status: 404, body: { status: 'error', error: 'release not found' } });
    expect(await h.call('POST', '/api/v1/projects/docs/rollback', { token })).toMatchObject({ status: 409, body: { status: 'error', error: 'no older release to roll back to' } });
    expect(await h.call('POST', '/api/v1/projects/docs/rollback', { token, json: { release: 'last tuesday' } })).toMatchObject({ status: 400, body: { status: 'error', error: 'invalid release id' } });
    expect(await h.call('POST', '/api/v1/projects/docs/rollback', { token, json: { release: 7 } })).toMatchObject({ status: 400, body: { status: 'error', error: 'invalid request body' } });
    expect(await h.call('GET', '/api/v1/projects/Not%20Valid/releases', { token })).toMatchObject({ status: 400, body: { status: 'error', error: 'invalid project name format' } });
    expect(await h.call('GET', '/api/v1/projects/nope/releases', { token })).toMatchObject({ status: 404, body: { status: 'error', error: 'project not found' } });
  });

  it('needs the user token; the admin lists users with project counts, never tokens', async () => {
    expect(await h.call('GET', '/api/v1/projects', {})).toMatchObject({ status: 401, body: { status: 'error', error: 'unauthorized' } });
    expect(await h.call('GET', '/api/v1/users', { token })).toMatchObject({ status: 401, body: { status: 'error', error: 'invalid admin token' } });
    const users = await h.call('GET', '/api/v1/users', { token: ADMIN_TOKEN });
    expect(users.body).toEqual({ status: 'ok', users: [{ username: 'ops', projects: 2 }] });
    expect(JSON.stringify(users.body)).not.toContain(token);
  });

  it('DELETE /api/v1/projects/{project} removes the live link and every release', async () => {
    const r = await h.call('DELETE', '/api/v1/projects/blog', { token });
    expect(r.body).toEqual({ status: 'ok' });
    await expect(readlink(join(h.docsRoot, 'ops/blog'))).rejects.toThrow(/ENOENT/);
    await expect(readdir(join(h.deploysRoot, 'ops/blog'))).rejects.toThrow(/ENOENT/);
    await h.trashEmptied();
    expect(await h.call('DELETE', '/api/v1/projects/blog', { token })).toMatchObject({ status: 404, body: { error: 'project not found' } });
    expect((await h.call('GET', '/api/v1/projects', { token })).body.projects).toEqual([expect.objectContaining({ name: 'docs' })]);
  });
});
