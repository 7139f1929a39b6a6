import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/adapters/config/config.js';
import { writeWebServerConfig } from '../../src/adapters/webserver/webserver-config.js';
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

export interface RunningNginx {
  readonly port: number;
  /** nginx's error log so far. */
  errors(): Promise<string>;
  stop(): Promise<void>;
}

/** The roots a service serves from, as the generated configuration needs them. */
export interface ServedRoots {
  readonly root: string;
}

/**
 * A real nginx, workers as nobody, running the configuration `npm run webserver-config --
 * nginx` writes for the service whose DATA_DIR is `roots.root` (its default roots), as
 * docs/nginx.md says to run it: modules.conf in the main context, sitedrop.conf inside
 * `http { }` with Debian's mime.types.
 */
export async function startNginx(roots: ServedRoots, env: Record<string, string> = {}): Promise<RunningNginx> {
  if (!NGINX) throw new Error('nginx is not installed (.ci/run installs nginx-light and its modules)');
  const prefix = await mkdtemp(join(tmpdir(), 'sitedrop-nginx-'));
  await mkdir(join(prefix, 'logs'));
  const port = await freePort();
  const config = loadConfig({ DATA_DIR: roots.root, PUBLIC_BASE: `http://127.0.0.1:${port}`, ...env });
  writeWebServerConfig('nginx', config, join(prefix, 'generated'));
  const conf = `daemon off;
include ${prefix}/generated/modules.conf;
worker_processes 2;
user nobody nogroup;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log warn;
events { worker_connections 512; }
http {
    include /etc/nginx/mime.types;
    access_log off;
    client_body_temp_path ${prefix}/client_body;
    proxy_temp_path ${prefix}/proxy;
    include ${prefix}/generated/sitedrop.conf;
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
      await new Promise((resolve) => (nginx.exitCode !== null ? resolve(undefined) : nginx.once('exit', resolve)));
      await rm(prefix, { recursive: true, force: true });
    },
  };
}
