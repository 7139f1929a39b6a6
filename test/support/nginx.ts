import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from './until.js';

function nginxBinary(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v nginx || ls /usr/sbin/nginx'], { encoding: 'utf8' }).trim().split('\n')[0];
  } catch {
    return undefined;
  }
}

/** The nginx to run, or undefined when none is installed (.ci/run installs nginx-light). */
export const NGINX = nginxBinary();
if (!NGINX) console.warn('SKIPPED nginx tests: no nginx installed (.ci/run installs nginx-light)');

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** The server block docs/nginx.md recommends, as tested: live sites at /, previews at /_previews/. */
export function serverBlock(port: number, docsRoot: string, previewsRoot: string): string {
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
        # No username can be '_previews': previews never share an address with a live site.
        location /_previews/ {
            alias ${previewsRoot}/;
            try_files $uri $uri/index.html =404;
        }
    }`;
}

export interface RunningNginx {
  readonly port: number;
  /** nginx's error log so far. */
  errors(): Promise<string>;
  stop(): Promise<void>;
}

/** A real nginx, workers as nobody, serving `serverBlock` for the two roots. */
export async function startNginx(docsRoot: string, previewsRoot: string): Promise<RunningNginx> {
  if (!NGINX) throw new Error('nginx is not installed');
  const prefix = await mkdtemp(join(tmpdir(), 'sitedrop-nginx-'));
  await mkdir(join(prefix, 'logs'));
  const port = await freePort();
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
    ${serverBlock(port, docsRoot, previewsRoot)}
}
`;
  await writeFile(join(prefix, 'nginx.conf'), conf);
  const nginx: ChildProcess = spawn(NGINX, ['-p', `${prefix}/`, '-c', join(prefix, 'nginx.conf'), '-e', join(prefix, 'logs/error.log')], { stdio: 'ignore' });
  await until(async () => {
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      return true;
    } catch {
      return false;
    }
  }, 'nginx to answer');
  return {
    port,
    errors: () => readFile(join(prefix, 'logs/error.log'), 'utf8'),
    async stop() {
      nginx.kill('SIGQUIT');
      await rm(prefix, { recursive: true, force: true });
    },
  };
}
