import { chmod } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNginx, type RunningNginx } from '../support/nginx.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';


describe('previews behind a real nginx running the generated configuration', () => {
  let h: Harness;
  let nginx: RunningNginx;
  let token: string;
  const get = async (path: string) => {
    const r = await fetch(`http://127.0.0.1:${nginx.port}${path}`);
    return { status: r.status, body: await r.text() };
  };

  beforeAll(async () => {
    h = await startHarness();
    // nginx's workers run as nobody: they must be able to reach and read the releases.
    await chmod(h.root, 0o755);
    nginx = await startNginx(h);
    token = await h.createUser('ann');
  });
  afterAll(async () => {
    await nginx?.stop();
    await h.close();
  });

  it('serves a preview at its own address and never at the live one', async () => {
    const site = (marker: string) => tgz([file('index.html', marker), file('docs/page.html', `${marker} page`)]);
    expect((await h.deploy(token, 'site', site('live'))).status).toBe(200);
    const preview = await h.deploy(token, 'site', site('preview'), { preview: 'pr-1' });
    expect(preview.body.url).toBe('https://sites.example.test/_previews/ann/site/pr-1/');

    expect(await get('/ann/site/')).toEqual({ status: 200, body: 'live' });
    expect(await get('/ann/site/docs/page.html')).toEqual({ status: 200, body: 'live page' });
    expect(await get('/_previews/ann/site/pr-1/')).toEqual({ status: 200, body: 'preview' });
    expect(await get('/_previews/ann/site/pr-1/docs/page.html')).toEqual({ status: 200, body: 'preview page' });
    // Nothing of the preview under the live address, and no live site under the previews'.
    expect((await get('/ann/site/pr-1/')).status).toBe(404);
    expect((await get('/_previews/ann/site/')).status).toBe(404);
    expect((await get('/_previews/ann/site/index.html')).status).toBe(404);

    // Promoted, the live address serves it; deleted, the preview's address is gone.
    expect((await h.call('POST', '/api/v1/projects/site/previews/pr-1/promote', { token })).status).toBe(200);
    expect(await get('/ann/site/')).toEqual({ status: 200, body: 'preview' });
    expect((await h.call('DELETE', '/api/v1/projects/site/previews/pr-1', { token })).status).toBe(200);
    expect((await get('/_previews/ann/site/pr-1/')).status).toBe(404);
    expect(await get('/ann/site/')).toEqual({ status: 200, body: 'preview' });
    expect(await nginx.errors()).not.toMatch(/\[(crit|alert|emerg)\]/);
  });
});
