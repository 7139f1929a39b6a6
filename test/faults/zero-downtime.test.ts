import { chmod } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNginx, type RunningNginx } from '../support/nginx.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { versionedSite } from '../support/sites.js';


describe('zero downtime behind a real nginx running the generated configuration', () => {
  let h: Harness;
  let nginx: RunningNginx;
  let port: number;

  beforeAll(async () => {
    h = await startHarness();
    // nginx's workers run as nobody: they must be able to reach and read the releases.
    await chmod(h.root, 0o755);
    nginx = await startNginx(h);
    port = nginx.port;
  });
  afterAll(async () => {
    await nginx?.stop();
    await h.close();
  });

  it('serves every request with one complete deployed version while 30 deploys run', async () => {
    const token = await h.createUser('live');
    const files = 40;
    expect((await h.deploy(token, 'site', versionedSite('v0', files))).status).toBe(200);
    const versions = new Set(['v0']);
    const failures: string[] = [];
    let fetched = 0;
    let deploying = true;
    const page = (path: string) => fetch(`http://127.0.0.1:${port}/live/site/${path}`).then(async (r) => ({ status: r.status, body: await r.text() }));
    const client = async () => {
      while (deploying) {
        const index = await page('index.html');
        const deep = await page(`d${fetched % 20}/page-${fetched % files}.html`);
        fetched += 2;
        for (const [name, r] of [['index.html', index], ['a deep page', deep]] as const) {
          const version = r.body.split('\n')[0]!;
          if (r.status !== 200) failures.push(`${name}: HTTP ${r.status}`);
          else if (!versions.has(version)) failures.push(`${name}: unexpected body ${JSON.stringify(r.body.slice(0, 40))}`);
        }
      }
    };
    const clients = Array.from({ length: 4 }, client);
    for (let i = 1; i <= 30; i += 1) {
      versions.add(`v${i}`);
      const r = await h.deploy(token, 'site', versionedSite(`v${i}`, files));
      expect(r.status).toBe(200);
    }
    deploying = false;
    await Promise.all(clients);
    console.log(`zero downtime: ${fetched} requests through nginx during 30 deploys, ${failures.length} failures`);
    expect(failures).toEqual([]);
    expect(fetched).toBeGreaterThan(100);
    expect((await page('index.html')).body).toBe('v30\n');
    expect(await nginx.errors()).not.toMatch(/\[(error|crit|alert|emerg)\]/);
    // 5 s on a quiet machine; a loaded one (load average 6-11 on 2 cores) took over 30.
  }, 120_000);
});
