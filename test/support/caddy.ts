import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/adapters/config/config.js';
import { writeWebServerConfig } from '../../src/adapters/webserver/webserver-config.js';
import { until } from './until.js';

function caddyBinary(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v caddy'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The caddy to run (.ci/run installs Debian's caddy 2.6). */
export const CADDY = caddyBinary();

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** The addresses a Caddy under test and the service it serves for agree on. */
export interface CaddyPorts {
  readonly port: number;
  readonly admin: string;
  /** The service's environment for them: CADDY_ADMIN and PUBLIC_BASE. */
  readonly env: Record<string, string>;
}

export async function caddyPorts(): Promise<CaddyPorts> {
  const port = await freePort();
  const admin = `127.0.0.1:${await freePort()}`;
  return { port, admin, env: { CADDY_ADMIN: admin, PUBLIC_BASE: `http://127.0.0.1:${port}` } };
}

export interface RunningCaddy {
  readonly port: number;
  /** Caddy's log so far (JSON lines on stderr). */
  log(): string;
  /** How many configurations were loaded through the admin API since it started. */
  loads(): number;
  stop(): Promise<void>;
}

/**
 * A real Caddy running the Caddyfile `npm run webserver-config -- caddy` writes for the
 * service whose DATA_DIR is `root`, as docs/caddy.md says to run it, with CADDY_ADMIN in
 * its environment.
 */
export async function startCaddy(root: string, ports: CaddyPorts, env: Record<string, string> = {}): Promise<RunningCaddy> {
  if (!CADDY) throw new Error('caddy is not installed (.ci/run installs it)');
  const dir = await mkdtemp(join(tmpdir(), 'sitedrop-caddy-'));
  writeWebServerConfig('caddy', loadConfig({ DATA_DIR: root, ...ports.env, ...env }), dir);
  let log = '';
  const caddy: ChildProcess = spawn(CADDY, ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {
    env: { ...process.env, CADDY_ADMIN: ports.admin, HOME: dir, XDG_CONFIG_HOME: dir, XDG_DATA_HOME: dir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  caddy.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  await until(async () => {
    try {
      await fetch(`http://127.0.0.1:${ports.port}/`);
      return true;
    } catch {
      return false;
    }
  }, 'caddy to answer');
  return {
    port: ports.port,
    log: () => log,
    loads: () => log.split('\n').filter((line) => line.includes('"uri":"/load"')).length,
    async stop() {
      caddy.kill('SIGTERM');
      await new Promise((resolve) => (caddy.exitCode !== null ? resolve(undefined) : caddy.once('exit', resolve)));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
