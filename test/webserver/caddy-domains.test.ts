import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caddyPorts, startCaddy, type RunningCaddy } from '../support/caddy.js';
import { startDnsResponder, type DnsResponder } from '../support/dns-responder.js';
import { SERVICE_BACKENDS, type Backend } from '../support/service-backends.js';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';
import { domainSites } from './domain-sites.js';
import { until } from '../support/until.js';


interface Answer {
  status: number;
  body: string;
  location: string | undefined;
  headers: Record<string, unknown>;
}

describe.each(SERVICE_BACKENDS)('custom domains served by a real Caddy running the generated Caddyfile (%s)', (_name, open) => {
  let h: Harness;
  let backend: Backend;
  let dns: DnsResponder;
  let caddy: RunningCaddy;
  let httpsPort: number;
  let ann: string;
  let bob: string;
  let reloads: string;

  const collect = (resolve: (a: Answer) => void) => (res: import('node:http').IncomingMessage) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (body += chunk));
    res.on('end', () => resolve({ status: res.statusCode ?? 0, body, location: res.headers.location, headers: res.headers }));
  };
  /**
   * A GET through Caddy's HTTP port with this Host header, as a browser at that domain would
   * send it. A connection Caddy closed before answering is tried again, as browsers do for a
   * GET (RFC 9112 9.3.1): Caddy closes its connections when it loads a configuration, and
   * every verified or removed domain loads one. `retried` counts those.
   */
  let retried = 0;
  const get = (host: string, path: string, agent?: false): Promise<Answer> => {
    const once = () =>
      new Promise<Answer>((resolve, reject) => {
        request({ host: '127.0.0.1', port: caddy.port, path, headers: { host }, ...(agent === false ? { agent } : {}) }, collect(resolve)).on('error', reject).end();
      });
    const attempt = (left: number): Promise<Answer> =>
      once().catch((error: NodeJS.ErrnoException) => {
        if (left === 0 || error.code !== 'ECONNRESET') throw error;
        retried += 1;
        return attempt(left - 1);
      });
    return attempt(3);
  };
  /** A GET over HTTPS with SNI = `host`, trusting any certificate (Caddy's internal CA). */
  const getTls = (host: string, path: string) =>
    new Promise<Answer>((resolve, reject) => {
      httpsRequest({ host: '127.0.0.1', port: httpsPort, servername: host, path, headers: { host }, rejectUnauthorized: false, agent: false }, collect(resolve))
        .on('error', reject)
        .end();
    });
  const { own, deploy } = domainSites(() => h, () => dns);
  /** Within 10 s, as the issue allows for a change that needs Caddy to load. */
  const soon = (what: string, check: () => Promise<boolean>) => until(check, what, 10_000);

  beforeAll(async () => {
    backend = await open();
    dns = await startDnsResponder();
    const ports = await caddyPorts();
    httpsPort = ports.httpsPort;
    reloads = await mkdtemp(join(tmpdir(), 'sitedrop-reloads-'));
    // Returns at once, but while a test holds the gate, the first run waits for it to go.
    const reload = `if [ -e ${reloads}/gate ] && mkdir ${reloads}/held 2>/dev/null; then while [ -e ${reloads}/gate ]; do sleep 0.05; done; touch ${reloads}/released; fi`;
    h = await startHarness({ ...backend.env, ...ports.env, DNS_SERVERS: dns.address, WEBSERVER_RELOAD: reload });
    caddy = await startCaddy(h.root, ports);
    ann = await h.createUser('ann');
    bob = await h.createUser('bob');
  });
  afterAll(async () => {
    await caddy?.stop();
    await h?.close();
    await dns?.close();
    await backend?.drop();
    if (reloads) await rm(reloads, { recursive: true, force: true });
  });

  it("serves a verified domain's site without rules at its root, in any case, and a new deploy at once", async () => {
    await deploy(ann, 'plain', { 'index.html': 'ann plain', 'about.html': 'about', '404.html': 'plain lost', 'dir/index.html': 'dir' });
    await own(ann, 'plain', 'plain.example.com');
    expect(await get('plain.example.com', '/')).toMatchObject({ status: 200, body: 'ann plain' });
    expect(await get(`PLAIN.Example.COM:${caddy.port}`, '/about')).toMatchObject({ status: 200, body: 'about' });
    expect(await get('plain.example.com.', '/about.html')).toMatchObject({ status: 200, body: 'about' });
    expect(await get('plain.example.com', '/dir')).toMatchObject({ status: 301, location: '/dir/' });
    // Never '//dir/', which a browser reads as the host 'dir'.
    expect(await get('plain.example.com', '//dir')).toMatchObject({ status: 301, location: '/dir/' });
    expect((await get('plain.example.com', '/a%5Cb')).status).toBe(400);
    expect(await get('plain.example.com', '/missing')).toMatchObject({ status: 404, body: 'plain lost' });
    for (const hidden of ['/_redirects', '/.sitedrop/head.json']) expect((await get('plain.example.com', hidden)).status, hidden).toBe(404);
    await deploy(ann, 'plain', { 'index.html': 'ann plain v2' });
    expect(await get('plain.example.com', '/')).toMatchObject({ status: 200, body: 'ann plain v2' });
    // PUBLIC_BASE's own host still serves path addresses; the domain is no path address.
    expect(await get(`127.0.0.1:${caddy.port}`, '/ann/plain/')).toMatchObject({ status: 200, body: 'ann plain v2' });
    expect((await get('plain.example.com', '/ann/plain/')).status).toBe(404);
  });

  it("serves a site with rules at its domain's root, with its rules as if at /, and its next release's rules", async () => {
    await deploy(ann, 'docs', {
      'index.html': 'ann docs home',
      'new.html': 'the new page',
      '404.html': 'ann docs lost',
      _redirects: '/old /new.html\n/strip/* /:splat 301\n',
      _headers: '/*\n  X-Site: ann-docs\n',
    });
    await own(ann, 'docs', 'docs.example.com');
    await soon('the rules at the domain', async () => (await get('docs.example.com', '/old')).status === 301);
    expect(await get('Docs.Example.com', '/old?x=1')).toMatchObject({ status: 301, location: '/new.html?x=1' });
    // Never '/\\host' from a rule's placeholder, whose value Caddy cannot encode: a backslash is refused at a domain.
    expect(await get('docs.example.com', '/strip/a/b')).toMatchObject({ status: 301, location: '/a/b' });
    expect((await get('docs.example.com', '/strip/%5Cevil.example')).status).toBe(400);
    expect(await get('docs.example.com', '/new')).toMatchObject({ status: 200, body: 'the new page' });
    expect(await get('docs.example.com', '/missing')).toMatchObject({ status: 404, body: 'ann docs lost' });
    expect((await get('docs.example.com', '/')).headers['x-site']).toBe('ann-docs');
    expect((await get('docs.example.com', '/_redirects')).status).toBe(404);
    expect(await get(`127.0.0.1:${caddy.port}`, '/ann/docs/old')).toMatchObject({ status: 301, location: '/ann/docs/new.html' });
    // A deploy loads the domain's route with the path's: no wait.
    await deploy(ann, 'docs', { 'index.html': 'v2', 'newer.html': 'newer', _redirects: '/old /newer.html 302\n' });
    expect(await get('docs.example.com', '/old')).toMatchObject({ status: 302, location: '/newer.html' });
    // Its rules gone, the domain is served through its link, without them.
    await deploy(ann, 'docs', { 'index.html': 'v3' });
    expect((await get('docs.example.com', '/old')).status).toBe(404);
    expect(await get('docs.example.com', '/')).toMatchObject({ status: 200, body: 'v3' });
    // Never a preview.
    await deploy(ann, 'docs', { 'index.html': 'the preview', _redirects: '/p /index.html 302\n' }, 'pr-1');
    expect(await get('docs.example.com', '/')).toMatchObject({ body: 'v3' });
    expect((await get('docs.example.com', '/p')).status).toBe(404);
  });

  it('serves no site for an unknown, an unverified or a removed domain, nor after its project or user is deleted', async () => {
    await deploy(bob, 'site', { 'index.html': 'bob site', _redirects: '/r /index.html 302\n' });
    expect((await get('unknown.example.com', '/')).status).toBe(404);
    expect((await h.call('POST', '/api/v1/projects/site/domains', { token: bob, json: { domain: 'pending.example.com' } })).status).toBe(200);
    expect((await get('pending.example.com', '/')).status).toBe(404);
    await own(bob, 'site', 'bob.example.com');
    await soon('the domain', async () => (await get('bob.example.com', '/r')).status === 302);
    expect((await h.call('DELETE', '/api/v1/projects/site/domains/bob.example.com', { token: bob })).status).toBe(200);
    await soon('no site at the removed domain', async () => (await get('bob.example.com', '/r')).status === 404);
    expect((await get('bob.example.com', '/')).status).toBe(404);
    await own(bob, 'site', 'bob.example.com');
    await soon('the domain again', async () => (await get('bob.example.com', '/r')).status === 302);
    expect((await h.call('DELETE', '/api/v1/projects/site', { token: bob })).status).toBe(200);
    await soon('no site once the project is gone', async () => (await get('bob.example.com', '/')).status === 404);
    await deploy(bob, 'site', { 'index.html': 'bob again' });
    expect((await get('bob.example.com', '/')).status).toBe(404);
    await own(bob, 'site', 'bob.example.com');
    expect(await get('bob.example.com', '/')).toMatchObject({ status: 200, body: 'bob again' });
    expect((await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'bob', files: 'persist' } })).status).toBe(200);
    expect((await get('bob.example.com', '/')).status).toBe(404);
    for (const host of ['..', 'domains', '_', '.bob.example.com', `127.0.0.1:${caddy.port}x`]) expect((await get(host, '/')).status, host).not.toBe(200);
  });

  it('serves a verified domain over HTTPS with a certificate issued on demand, and no certificate for any other host', async () => {
    await deploy(ann, 'secure', { 'index.html': 'secure home', 'a.html': 'A', _redirects: '/go /a.html 302\n' });
    await own(ann, 'secure', 'secure.example.com');
    await own(ann, 'plain', 'www.plain.example.com');
    // The HTTPS site names its hosts: a new one is loaded in the background.
    await soon('the domain over HTTPS', () => getTls('www.plain.example.com', '/').then(() => true, () => false));
    expect(await getTls('www.plain.example.com', '/')).toMatchObject({ status: 200, body: 'ann plain v2' });
    await soon('the rules over HTTPS', async () => (await getTls('secure.example.com', '/go')).status === 302);
    expect(await getTls('secure.example.com', '/go')).toMatchObject({ status: 302, location: '/a.html' });
    expect(await getTls('secure.example.com', '/')).toMatchObject({ status: 200, body: 'secure home' });
    // Claimed but unverified, unknown, or removed: Caddy's check fails, so no certificate and no handshake.
    expect((await h.call('POST', '/api/v1/projects/secure/domains', { token: ann, json: { domain: 'pending.secure.example.com' } })).status).toBe(200);
    await expect(getTls('pending.secure.example.com', '/')).rejects.toThrow();
    await expect(getTls('unknown.example.org', '/')).rejects.toThrow();
    // Removed after its certificate was issued: Caddy still holds it, yet ends the handshake.
    expect((await h.call('DELETE', '/api/v1/projects/plain/domains/www.plain.example.com', { token: ann })).status).toBe(200);
    await soon('no handshake for the removed domain', () => getTls('www.plain.example.com', '/').then(() => false, () => true));
    expect(await getTls('secure.example.com', '/')).toMatchObject({ status: 200, body: 'secure home' });
    // And a handshake again once it is verified again.
    await own(ann, 'plain', 'www.plain.example.com');
    await soon('the domain over HTTPS again', () => getTls('www.plain.example.com', '/').then((a) => a.status === 200, () => false));
  });

  it('shows a new deploy, a rollback and a promote at once, with and without rules; never a preview', async () => {
    for (const [project, rules] of [['moving', {}], ['ruled', { _redirects: '/r /index.html 302\n' }]] as const) {
      const host = `${project}.example.com`;
      const first = await deploy(ann, project, { 'index.html': 'v1', ...rules });
      await own(ann, project, host);
      await soon(`${host} served`, async () => (await get(host, '/')).body === 'v1');
      await soon(`${host} over HTTPS`, () => getTls(host, '/').then((a) => a.body === 'v1', () => false));
      await deploy(ann, project, { 'index.html': 'v2', ...rules });
      expect(await get(host, '/')).toMatchObject({ body: 'v2' });
      expect((await h.call('POST', `/api/v1/projects/${project}/rollback`, { token: ann, json: { release: first } })).status).toBe(200);
      expect(await get(host, '/')).toMatchObject({ body: 'v1' });
      await deploy(ann, project, { 'index.html': 'the preview', 'only-in-preview.html': 'p', ...rules }, 'pr-1');
      expect(await get(host, '/')).toMatchObject({ body: 'v1' });
      expect((await get(host, '/only-in-preview.html')).status).toBe(404);
      expect((await h.call('POST', `/api/v1/projects/${project}/previews/pr-1/promote`, { token: ann })).status).toBe(200);
      expect(await get(host, '/')).toMatchObject({ status: 200, body: 'the preview' });
      expect(await getTls(host, '/only-in-preview.html')).toMatchObject({ status: 200, body: 'p' });
      if ('_redirects' in rules) expect(await get(host, '/r')).toMatchObject({ status: 302, location: '/index.html' });
    }
  });

  it("never makes a deploy wait for a domain change's load and WEBSERVER_RELOAD, and serves every site while domains change", async () => {
    await deploy(ann, 'steady', { 'index.html': 'steady' });
    await deploy(ann, 'rules', { 'index.html': 'rules', _redirects: '/r /index.html 302\n' });
    await own(ann, 'steady', 'steady.example.com');
    // Every site, through Caddy, while domains come and go, each request on a new connection.
    const probes: [string, string, number][] = [
      [`127.0.0.1:${caddy.port}`, '/ann/steady/', 200],
      [`127.0.0.1:${caddy.port}`, '/ann/rules/r', 302],
      ['steady.example.com', '/', 200],
    ];
    const bad: string[] = [];
    let probing = true;
    let answered = 0;
    const prober = (async () => {
      while (probing) {
        for (const [host, path, status] of probes) {
          const got = await get(host, path, false).then((a) => a.status, (e: Error) => e.message);
          answered += 1;
          if (got !== status) bad.push(`${host}${path}: ${got}`);
        }
      }
    })();
    try {
      await writeFile(join(reloads, 'gate'), '');
      // Verifying rules' domain loads its route at the domain and the HTTPS hosts; WEBSERVER_RELOAD then waits on the gate.
      await own(ann, 'rules', 'rules.example.com');
      await until(() => stat(join(reloads, 'held')).then(() => true, () => false), 'the reload command to be held');
      const inTime = <T>(work: Promise<T>) => Promise.race([work, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the deploy waited for the domains reload')), 15_000))]);
      // Neither a site without rules nor one with rules waits for it (the latter's own load and command run).
      await inTime(deploy(ann, 'steady', { 'index.html': 'steady' }));
      await inTime(deploy(ann, 'rules', { 'index.html': 'rules', _redirects: '/r /index.html 302\n/s /index.html 307\n' }));
      expect(await get(`127.0.0.1:${caddy.port}`, '/ann/rules/s')).toMatchObject({ status: 307 });
      // The domains' command is still held: the deploys did not wait for it.
      expect(await stat(join(reloads, 'released')).then(() => true, () => false)).toBe(false);
      for (let i = 0; i < 3; i += 1) {
        expect((await h.call('DELETE', '/api/v1/projects/rules/domains/rules.example.com', { token: ann })).status).toBe(200);
        await own(ann, 'rules', 'rules.example.com');
      }
    } finally {
      await rm(join(reloads, 'gate'), { force: true });
    }
    await until(() => stat(join(reloads, 'released')).then(() => true, () => false), 'the held command to end once the gate went');
    await soon('the rules at the domain', async () => (await get('rules.example.com', '/s')).status === 307);
    probing = false;
    await prober;
    expect(bad).toEqual([]);
    expect(answered).toBeGreaterThan(30);
    // Each try again was a connection Caddy closed, never an answer from the wrong release or no site.
    expect(retried).toBeLessThan(answered / 4);
  });
});
