import { copyFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config/config.js';
import { caddyfile, caddySnippetsDir } from './caddy/caddy-config.js';
import { nginxConfig } from './nginx/nginx-config.js';

/** The router script, beside this module in src/ (dist/ has the same depth, so one path serves both). */
const ROUTER_SOURCE = fileURLToPath(new URL('../../../src/adapters/webserver/nginx/sitedrop-router.js', import.meta.url));

export type WebServerKind = 'nginx' | 'caddy';

// Whole or not at all: a web server reloading meanwhile never reads half a file.
function writeWhole(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

/** Writes the web server's configuration for sitedrop's sites into `out`; returns the files written. */
export function writeWebServerConfig(kind: WebServerKind, config: Config, out: string): string[] {
  const dir = resolve(out);
  mkdirSync(dir, { recursive: true });
  if (kind === 'caddy') {
    const path = join(dir, 'Caddyfile');
    writeWhole(path, caddyfile({ ...config, snippetsDir: caddySnippetsDir(config.dataDir) }));
    return [path];
  }
  const routerPath = join(dir, 'sitedrop-router.js');
  copyFileSync(ROUTER_SOURCE, `${routerPath}.tmp`);
  renameSync(`${routerPath}.tmp`, routerPath);
  const files = nginxConfig({ ...config, routerPath });
  for (const [name, text] of Object.entries(files)) writeWhole(join(dir, name), text);
  return [routerPath, ...Object.keys(files).map((name) => join(dir, name))];
}
