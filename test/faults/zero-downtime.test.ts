import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/service-harness.js';
import { versionedSite } from '../support/sites.js';
import { until } from '../support/slow-upload.js';

function nginxBinary(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v nginx || ls /usr/sbin/nginx'], { encoding: 'utf8' }).trim().split('\n')[0];
  } catch {
    return undefined;
  }
}

const NGINX = nginxBinary();
if (!NGINX) console.warn('SKIPPED zero-downtime test: nginx is not installed here (.ci/run installs nginx-light)');

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** The server block docs/nginx.md recommends, as tested here. */
export function serverBlock(port: number, docsRoot: string): string {
  return `server {
        listen 127.0.0.1:${port};
        root ${docsRoot};
        # Each live site is a symlink to its current release: nginx must follow it.
        disable_symlinks off;
        # A cached path resolution could outlive a swap; keep it off (docs/nginx.md).
        open_file_cache off;
        location / {
            try_files $uri $uri/index.html =404;
        }
    }`;
}

describe.skipIf(!NGINX)('zero downtime behind a real nginx', () => {
  let h: Harness;
  let nginx: ChildProcess;
  let prefix: string;
  let port: number;

  beforeAll(async () => {
    h = await startHarness();
    // nginx's workers run as nobody: they must be able to reach and read the releases.
    await chmod(h.root, 0o755);
    prefix = await mkdtemp(join(tmpdir(), 'sitedrop-nginx-'));
    await mkdir(join(prefix, 'logs'));
    port = await freePort();
    const conf = `daemon off;
worker_processes 2;
user nobody nogroup;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log warn;
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path ${prefix}/client_body;
    proxy_temp_path ${prefix}/proxy;
    ${serverBlock(port, h.docsRoot)}
}
`;
    await writeFile(join(prefix, 'nginx.conf'), conf);
    nginx = spawn(NGINX!, ['-p', `${prefix}/`, '-c', join(prefix, 'nginx.conf'), '-e', join(prefix, 'logs/error.log')], { stdio: 'ignore' });
    await until(async () => {
      try {
        await fetch(`http://127.0.0.1:${port}/`);
        return true;
      } catch {
        return false;
      }
    }, 'nginx to answer');
  });
  afterAll(async () => {
    nginx?.kill('SIGQUIT');
    await h.close();
    await rm(prefix, { recursive: true, force: true });
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
    expect(await readFile(join(prefix, 'logs/error.log'), 'utf8')).not.toMatch(/\[(error|crit|alert|emerg)\]/);
  });
});
