import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_BACKENDS } from '../support/service-backends.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';

// A pull request's pipeline holds a key of scope `preview`: whatever it deploys must never
// become the live site by the owner's plain rollback, nor push the live history out.

const site = (marker: string) => tgz([file('index.html', marker)]);


describe.each(SERVICE_BACKENDS)("a preview key's releases and the live history (%s, real directories)", (_name, open) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let token: string;
  const live = (project: string) => readFile(join(h.docsRoot, 'ann', project, 'index.html'), 'utf8');
  const onDisk = async (project: string) => (await readdir(join(h.deploysRoot, 'ann', project))).sort();
  const listed = async (project: string) => {
    const r = await h.call('GET', `/api/v1/projects/${project}/releases`, { token });
    expect(r.status).toBe(200);
    return r.body.releases as { id: string; live: boolean; preview?: string }[];
  };
  const previewKey = async (project: string) =>
    (await h.call('POST', `/api/v1/projects/${project}/keys`, { token, json: { name: 'pull requests', scope: 'preview' } })).body.token as string;
  const deployed = async (key: string, project: string, marker: string, preview?: string) => {
    const r = await h.deploy(key, project, site(marker), preview === undefined ? {} : { preview });
    expect(r.status).toBe(200);
    return r.body.release as string;
  };

  beforeAll(async () => {
    const backend = await open();
    drop = backend.drop;
    h = await startHarness({ ...backend.env, RELEASES_KEEP: '3' });
    token = await h.createUser('ann');
  });
  afterAll(async () => {
    await h.close();
    await drop();
  });

  it("a plain rollback passes over a preview's release; the listing marks it; naming it still works", async () => {
    const key = await previewKey('rb');
    const r1 = await deployed(token, 'rb', 'R1 live');
    const r2 = await deployed(key, 'rb', 'R2 from a pull request', 'pr-7');
    const r3 = await deployed(token, 'rb', 'R3 live');
    expect(await listed('rb')).toEqual([
      expect.not.objectContaining({ id: r3, preview: expect.anything() }),
      expect.objectContaining({ id: r2, live: false, preview: 'pr-7' }),
      expect.not.objectContaining({ id: r1, preview: expect.anything() }),
    ]);

    const back = await h.call('POST', '/api/v1/projects/rb/rollback', { token });
    expect(back.body).toMatchObject({ status: 'ok', release: r1, previous: r3 });
    expect(await live('rb')).toBe('R1 live');

    // Naming the preview's build is the owner's choice; it is live history from then on.
    const named = await h.call('POST', '/api/v1/projects/rb/rollback', { token, json: { release: r2 } });
    expect(named.body).toMatchObject({ status: 'ok', release: r2 });
    expect(await live('rb')).toBe('R2 from a pull request');
    expect((await listed('rb')).find((r) => r.id === r2)).toEqual(expect.not.objectContaining({ preview: expect.anything() }));
    expect((await h.call('POST', '/api/v1/projects/rb/rollback', { token })).body).toMatchObject({ release: r1 });
  });

  it('a promoted preview release is live history: a later plain rollback may return to it', async () => {
    const key = await previewKey('pm');
    await deployed(token, 'pm', 'P1 live');
    const p2 = await deployed(key, 'pm', 'P2 reviewed', 'pr-1');
    expect((await h.call('POST', '/api/v1/projects/pm/previews/pr-1/promote', { token })).body).toMatchObject({ status: 'ok', release: p2 });
    expect((await listed('pm')).find((r) => r.id === p2)).toEqual(expect.objectContaining({ live: true }));
    expect((await listed('pm')).find((r) => r.id === p2)).toEqual(expect.not.objectContaining({ preview: expect.anything() }));
    await deployed(token, 'pm', 'P3 live');
    expect((await h.call('POST', '/api/v1/projects/pm/rollback', { token })).body).toMatchObject({ release: p2 });
    expect(await live('pm')).toBe('P2 reviewed');
  });

  it("a preview's redeploys prune its replaced releases, never the live history (RELEASES_KEEP=3)", async () => {
    const key = await previewKey('rb2');
    const history = [await deployed(token, 'rb2', 'L1'), await deployed(token, 'rb2', 'L2'), await deployed(token, 'rb2', 'L3')];
    const builds = [];
    for (const n of [1, 2, 3]) builds.push(await deployed(key, 'rb2', `PR build ${n}`, 'pr-9'));
    // The three live releases and the preview's current one; the replaced builds are gone.
    expect(await onDisk('rb2')).toEqual([...history, builds[2]!].sort());
    expect((await h.call('POST', '/api/v1/projects/rb2/rollback', { token })).body).toMatchObject({ status: 'ok', release: history[1] });
    expect(await live('rb2')).toBe('L2');
    expect((await h.call('POST', '/api/v1/projects/rb2/rollback', { token })).body).toMatchObject({ status: 'ok', release: history[0] });
  });

  it('a preview that expires or is deleted leaves its release to be pruned first, at the next prune', async () => {
    const key = await previewKey('gone');
    const history = [await deployed(token, 'gone', 'G1'), await deployed(token, 'gone', 'G2')];
    await deployed(key, 'gone', 'PR build', 'pr-2');
    expect((await h.call('DELETE', '/api/v1/projects/gone/previews/pr-2', { token })).status).toBe(200);
    const g3 = await deployed(token, 'gone', 'G3');
    // By content, not id: an id pruned within the second may be the next deploy's.
    expect(await onDisk('gone')).toEqual([...history, g3].sort());
    const pages = await Promise.all((await onDisk('gone')).map((id) => readFile(join(h.deploysRoot, 'ann/gone', id, 'index.html'), 'utf8')));
    expect(pages).toEqual(['G1', 'G2', 'G3']);
    expect((await listed('gone')).every((r) => r.preview === undefined)).toBe(true);
  });
});
