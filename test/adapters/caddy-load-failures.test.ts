import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/adapters/config/config.js';
import { caddySnippetsDir } from '../../src/adapters/webserver/caddy/caddy-config.js';
import { CaddyWebServer } from '../../src/adapters/webserver/caddy/caddy-web-server.js';
import { WebServerFailed } from '../../src/domain/errors.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import { compileSiteRules } from '../../src/domain/site-rules.js';
import type { Username } from '../../src/domain/username.js';
import { SilentLogger } from '../../src/adapters/log/logger.js';

/**
 * Caddy's admin endpoint, standing in: it answers each POST /load as told, and counts
 * them. What a real Caddy does with a load it was slow to answer (it may still apply it,
 * after sitedrop has put its files back) is the reason for the load that follows; the
 * scenarios in test/webserver run the real Caddy.
 */
async function standInAdmin(answer: (load: number) => { status: number; afterMs: number }): Promise<{ address: string; loads: () => number; close: () => Promise<void> }> {
  let loads = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const { status, afterMs } = answer((loads += 1));
      setTimeout(() => res.writeHead(status).end(), afterMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    loads: () => loads,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('CaddyWebServer: a deploy whose load fails', () => {
  const roots: string[] = [];
  afterEach(async () => {
    for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
  });

  async function deployWithRules(answer: (load: number) => { status: number; afterMs: number }) {
    const root = await mkdtemp(join(tmpdir(), 'sitedrop-caddy-load-'));
    roots.push(root);
    const admin = await standInAdmin(answer);
    const config = loadConfig({ DATA_DIR: root });
    const snippetsDir = caddySnippetsDir(config.dataDir);
    const server = new CaddyWebServer({ ...config, caddyAdmin: admin.address, webServerReload: undefined, snippetsDir, timeoutMs: 300 }, new SilentLogger());
    const release = '20261130T010000' as ReleaseId;
    await mkdir(join(config.deploysRoot, 'ann/site', release), { recursive: true });
    await writeFile(join(config.deploysRoot, 'ann/site', release, 'index.html'), 'new');
    const served = { site: { user: 'ann' as Username, project: 'site' as ProjectName }, release, rules: compileSiteRules({ redirects: '/a /index.html 302' }) };
    const failure = await server.willServe(served).then(() => undefined, (error: unknown) => error);
    const pins = await readdir(join(snippetsDir, 'live')).catch(() => []);
    await admin.close();
    return { failure, loads: admin.loads(), pins };
  }

  it('not answered in time: its files go back, and are loaded again, so that Caddy ends on them whatever it did with the first', async () => {
    const { failure, loads, pins } = await deployWithRules((load) => ({ status: 200, afterMs: load === 1 ? 1000 : 0 }));
    expect(failure).toBeInstanceOf(WebServerFailed);
    expect(pins).toEqual([]);
    expect(loads).toBe(2);
  });

  it('refused: its files go back, and nothing is loaded again (Caddy kept what it had)', async () => {
    const { failure, loads, pins } = await deployWithRules(() => ({ status: 400, afterMs: 0 }));
    expect(failure).toBeInstanceOf(WebServerFailed);
    expect(pins).toEqual([]);
    expect(loads).toBe(1);
  });
});
