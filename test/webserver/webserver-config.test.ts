import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/adapters/config/config.js';
import { caddySnippetsDir } from '../../src/adapters/webserver/caddy/caddy-config.js';
import { HTTPS_FILE, httpsBlock } from '../../src/adapters/webserver/caddy/caddy-domains.js';
import { CADDY } from '../support/caddy.js';
import { NGINX } from '../support/nginx.js';
import { runNode } from '../cli/run-cli.js';

const MAIN = fileURLToPath(new URL('../../dist/adapters/webserver/main.js', import.meta.url));

describe('webserver-config, as `npm run webserver-config` runs it (the built entry point)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sitedrop-webserver-config-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes modules.conf and sitedrop.conf that nginx accepts, from the service environment', async () => {
    const env = { DATA_DIR: join(dir, 'data'), PUBLIC_BASE: 'http://127.0.0.1:18765', PREVIEW_BASE: 'http://previews.example.test:18766' };
    const run = await runNode([MAIN, 'nginx', '--out', join(dir, 'out')], { env });
    expect(run.code, run.stderr).toBe(0);
    const conf = await readFile(join(dir, 'out', 'sitedrop.conf'), 'utf8');
    expect(conf).toContain('listen 127.0.0.1:18765;');
    expect(conf).toContain('listen 18766;');
    expect(conf).toContain('server_name previews.example.test;');
    // PUBLIC_BASE's host keeps its server by name; every other host on its port is a custom domain's.
    expect(conf).toContain('server_name 127.0.0.1;');
    expect(conf).toContain('listen 127.0.0.1:18765 default_server;');
    expect(conf).not.toContain('listen 18766 default_server;');
    expect(conf).toContain(`set $sitedrop_link ${join(dir, 'data', 'domains')}/$host;`);
    expect(conf).toContain(`set $sitedrop_link ${join(dir, 'data', 'previews')}/$sitedrop_user/$sitedrop_project/$sitedrop_preview;`);
    expect(conf).toContain(`js_import sitedrop from ${join(dir, 'out', 'sitedrop-router.js')};`);
    expect(await readFile(join(dir, 'out', 'modules.conf'), 'utf8')).toMatch(/^load_module \/usr\/lib\/nginx\/modules\/ngx_http_js_module\.so;$/m);
    await writeFile(join(dir, 'nginx.conf'), `include ${dir}/out/modules.conf;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents {}\nhttp {\n include /etc/nginx/mime.types;\n include ${dir}/out/sitedrop.conf;\n}\n`);
    expect(NGINX).toBeDefined();
    expect(() => execFileSync(NGINX!, ['-t', '-q', '-p', `${dir}/`, '-c', join(dir, 'nginx.conf')], { stdio: 'pipe' })).not.toThrow();
  });

  it.each([
    ['acme', undefined],
    ['internal', 'internal'],
  ] as const)("writes a Caddyfile that Caddy adapts, its verified domains on demand over HTTPS with DOMAINS_TLS=%s", async (tls, issuer) => {
    const data = join(dir, `caddy-${tls}`);
    const env = { DATA_DIR: data, PUBLIC_BASE: 'http://127.0.0.1:18767', PORT: '18770', DOMAINS_HTTPS_PORT: '18771', ...(tls === 'acme' ? {} : { DOMAINS_TLS: tls }) };
    const run = await runNode([MAIN, 'caddy', '--out', join(data, 'out')], { env });
    expect(run.code, run.stderr).toBe(0);
    const adapt = () => JSON.parse(execFileSync(CADDY!, ['adapt', '--config', join(data, 'out', 'Caddyfile'), '--adapter', 'caddyfile'], { encoding: 'utf8', env: { ...process.env, CADDY_ADMIN: '127.0.0.1:18772' }, stdio: ['ignore', 'pipe', 'pipe'] }));
    expect(CADDY).toBeDefined();
    // No verified domain yet: no HTTPS server, nothing to issue.
    const before = adapt();
    expect(JSON.stringify(before.apps.http.servers)).not.toContain(':18771');
    expect(before.apps.tls.automation.on_demand.ask).toBe('http://127.0.0.1:18770/api/v1/domains/check');
    // What the service writes once a.example.com and b.example.com are verified.
    const config = loadConfig(env);
    await mkdir(caddySnippetsDir(data), { recursive: true });
    await writeFile(join(caddySnippetsDir(data), HTTPS_FILE), httpsBlock(['b.example.com', 'a.example.com'], { ...config, snippetsDir: caddySnippetsDir(data) })!);
    const after = adapt();
    const https = Object.values(after.apps.http.servers as Record<string, { listen: string[]; routes: { match?: { host?: string[] }[] }[] }>).find((srv) => srv.listen.includes(':18771'))!;
    expect(https.routes[0]!.match![0]!.host).toEqual(['a.example.com', 'b.example.com']);
    const policy = after.apps.tls.automation.policies.find((p: { subjects?: string[] }) => p.subjects?.includes('a.example.com'));
    expect(policy).toMatchObject({ subjects: ['a.example.com', 'b.example.com'], on_demand: true });
    // acme: Caddy's default issuers (Let's Encrypt, then ZeroSSL); internal: its own CA.
    expect(policy.issuers?.map((i: { module: string }) => i.module)[0]).toBe(issuer);
    expect(after.apps.tls.automation.on_demand.ask).toBe('http://127.0.0.1:18770/api/v1/domains/check');
  });

  it('refuses a bad environment with the variable named, and an unknown server', async () => {
    const bad = await runNode([MAIN, 'nginx', '--out', join(dir, 'bad')], { env: { DATA_DIR: join(dir, 'data'), PUBLIC_BASE: 'ftp://nowhere' } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('PUBLIC_BASE');
    const unknown = await runNode([MAIN, 'apache', '--out', join(dir, 'x')], { env: { DATA_DIR: join(dir, 'data') } });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/apache/);
  });
});
