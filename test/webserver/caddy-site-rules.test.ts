import { readFile, rm, writeFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { caddyPorts, startCaddy } from '../support/caddy.js';
import { startHarness } from '../support/service-harness.js';
import { siteRulesScenarios } from './site-rules-scenarios.js';

const lines = async (path: string): Promise<number> => (await readFile(path, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;

siteRulesScenarios({
  name: 'Caddy',
  async start(env) {
    const ports = await caddyPorts();
    // The reload command fails while its `.fail` file exists: a reload that fails, on demand.
    const command = `${env.WEBSERVER_RELOAD} && test ! -e ${env.WEBSERVER_RELOAD!.split('>> ')[1]}.fail`;
    const h = await startHarness({ ...env, ...ports.env, WEBSERVER_RELOAD: command });
    const caddy = await startCaddy(h.root, ports);
    return {
      h,
      port: caddy.port,
      loads: () => caddy.loads(),
      problems: async () => caddy.log().split('\n').filter((line) => /"level":"(error|fatal|panic)"/.test(line)),
      async stop() {
        await caddy.stop();
        await h.close();
      },
    };
  },
  // Caddy's plain 404 has no body.
  plainNotFound: (body) => expect(body).toBe(''),
  more({ deploy, h, token, reloads, running, get }) {
    // Every reload is counted twice: the command's line, and Caddy's own log of each POST /load.
    const count = async () => ({ command: await lines(reloads()), loads: running().loads!() });
    it('loads Caddy only for a deploy whose rules change: never for a site without rules', async () => {
      const ann = token('ann');
      const before = await count();
      expect((await deploy(ann, 'calm', { 'index.html': 'one' })).status).toBe(200);
      expect((await deploy(ann, 'calm', { 'index.html': 'two', 'about.html': 'about' })).status).toBe(200);
      expect(await get('/ann/calm/about')).toMatchObject({ status: 200, body: 'about' });
      expect(await count()).toEqual(before);

      expect((await deploy(ann, 'calm', { 'index.html': 'three', _redirects: '/a /index.html 302\n' })).status).toBe(200);
      expect(await count()).toEqual({ command: before.command + 1, loads: before.loads + 1 });
      expect(await get('/ann/calm/a')).toMatchObject({ status: 302, location: '/ann/calm/index.html' });
      // Rules gone: the site is pinned once more without them, then served at its link again.
      expect((await deploy(ann, 'calm', { 'index.html': 'four' })).status).toBe(200);
      expect((await get('/ann/calm/a')).status).toBe(404);
      expect(await get('/ann/calm/')).toMatchObject({ status: 200, body: 'four' });
      const settled = (await count()).loads;
      expect((await deploy(ann, 'calm', { 'index.html': 'five' })).status).toBe(200);
      expect((await deploy(ann, 'calm', { 'index.html': 'six' })).status).toBe(200);
      expect(await get('/ann/calm/')).toMatchObject({ status: 200, body: 'six' });
      // At most one load drops the pin without rules; after it, none.
      expect((await count()).loads).toBeLessThanOrEqual(settled + 1);
      const quiet = await count();
      expect((await deploy(ann, 'calm', { 'index.html': 'seven' })).status).toBe(200);
      expect(await count()).toEqual(quiet);
    });

    it('fails a deploy with 500 when the reload fails, and leaves the live site as it was', async () => {
      const bob = token('bob');
      expect((await deploy(bob, 'fragile', { 'index.html': 'v1', 'a.html': 'A', _redirects: '/go /a.html 302\n', _headers: '/*\n  X-V: 1\n' })).status).toBe(200);
      await writeFile(`${reloads()}.fail`, '');
      try {
        const failed = await deploy(bob, 'fragile', { 'index.html': 'v2', 'b.html': 'B', _redirects: '/go /b.html 302\n', _headers: '/*\n  X-V: 2\n' });
        expect(failed.status).toBe(500);
        expect(failed.body.error).toBe('deployment failed');
      } finally {
        await rm(`${reloads()}.fail`);
      }
      const go = await get('/bob/fragile/go');
      expect(go).toMatchObject({ status: 302, location: '/bob/fragile/a.html' });
      expect(go.headers.get('x-v')).toBe('1');
      expect(await get('/bob/fragile/')).toMatchObject({ status: 200, body: 'v1' });
      expect((await get('/bob/fragile/b.html')).status).toBe(404);
      const releases = await h().call('GET', '/api/v1/projects/fragile/releases', { token: bob });
      expect((releases.body.releases as unknown[]).length).toBe(1);
    });
  },
});
