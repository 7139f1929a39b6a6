import { chmod, readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { startNginx } from '../support/nginx.js';
import { startHarness } from '../support/service-harness.js';
import { siteRulesScenarios } from './site-rules-scenarios.js';

siteRulesScenarios({
  name: 'nginx',
  async start(env) {
    // nginx reads each release's rules through its link: nothing sitedrop generated ever changes, so nothing reloads.
    const h = await startHarness(env);
    // nginx's workers run as nobody: they must be able to reach and read the releases.
    await chmod(h.root, 0o755);
    const nginx = await startNginx(h);
    return {
      h,
      port: nginx.port,
      problems: async () => (await nginx.errors()).split('\n').filter((line) => /\[(error|crit|alert|emerg)\]/.test(line)),
      async stop() {
        await nginx.stop();
        await h.close();
      },
    };
  },
  plainNotFound: (body) => expect(body).toContain('nginx'),
  more({ deploy, h, token, reloads }) {
    it('never reloads nginx, with rules or without', async () => {
      expect((await deploy(token('ann'), 'quiet', { 'index.html': 'one' })).status).toBe(200);
      expect((await deploy(token('ann'), 'quiet', { 'index.html': 'two', _redirects: '/a /index.html\n' })).status).toBe(200);
      expect((await h().call('POST', '/api/v1/projects/quiet/rollback', { token: token('ann') })).status).toBe(200);
      await expect(readFile(reloads(), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
    });
  },
});
