// What the web-server benches share: a free port, medians, timed GETs on one kept-alive
// connection, and a real nginx running the configuration `webserver-config` writes.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

export const freePort = () =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });

/** `count` sequential GETs of `path` (with `host`, if given) on one kept-alive connection; the median in ms. */
export async function timedGets(port, path, count, { host, status = 200 } = {}) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const times = [];
  for (let i = 0; i < count; i += 1) {
    const started = performance.now();
    await new Promise((resolve, reject) => {
      get({ host: '127.0.0.1', port, path, agent, headers: host ? { host } : {} }, (res) => {
        if (res.statusCode !== status) reject(new Error(`${host ?? ''}${path}: ${res.statusCode}`));
        res.resume();
        res.on('end', resolve);
      }).on('error', reject);
    });
    times.push(performance.now() - started);
  }
  agent.destroy();
  return median(times);
}

/**
 * A real nginx (one worker, workers as nobody) running the generated configuration for
 * the service whose environment is `env`, with `extraHttp` inside `http { }`. Needs root.
 */
export async function startBenchNginx(root, env, extraHttp = '') {
  const generated = join(root, 'nginx');
  execFileSync(process.execPath, [join(here, '..', 'dist', 'adapters', 'webserver', 'main.js'), 'nginx', '--out', generated], { env: { ...process.env, ...env } });
  mkdirSync(join(root, 'logs'), { recursive: true });
  writeFileSync(join(root, 'nginx.conf'), `daemon off;
include ${generated}/modules.conf;
worker_processes 1;
user nobody nogroup;
pid ${root}/nginx.pid;
error_log ${root}/logs/error.log warn;
events {}
http {
  include /etc/nginx/mime.types;
  access_log off;
  include ${generated}/sitedrop.conf;
  ${extraHttp}
}
`);
  const nginx = spawn('nginx', ['-p', `${root}/`, '-c', join(root, 'nginx.conf')], { stdio: 'inherit' });
  await new Promise((r) => setTimeout(r, 500));
  return { stop: () => nginx.kill('SIGQUIT') };
}

/**
 * A real Caddy running the Caddyfile `webserver-config caddy` writes for the service whose
 * environment is `env` (CADDY_ADMIN among it), its data and home under `root`.
 */
export async function startBenchCaddy(root, env) {
  const generated = join(root, 'caddy');
  execFileSync(process.execPath, [join(here, '..', 'dist', 'adapters', 'webserver', 'main.js'), 'caddy', '--out', generated], { env: { ...process.env, ...env } });
  const caddy = spawn('caddy', ['run', '--config', join(generated, 'Caddyfile'), '--adapter', 'caddyfile'], {
    env: { ...process.env, CADDY_ADMIN: env.CADDY_ADMIN, HOME: generated, XDG_CONFIG_HOME: generated, XDG_DATA_HOME: generated },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  for (let tries = 0; ; tries += 1) {
    try {
      await fetch(`http://${env.CADDY_ADMIN}/config/`);
      break;
    } catch (error) {
      if (tries > 100) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { caddyfile: join(generated, 'Caddyfile'), stop: () => caddy.kill('SIGTERM') };
}
